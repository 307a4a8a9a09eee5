// checkpoint_bench: checkpoint save and restore throughput against raw sequential file
// I/O of the same bytes, and the step time of a training loop while an asynchronous save
// runs against the step time without one. Prints a table, then one JSON line per figure.

#include <fcntl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/async_checkpoint_writer.h"
#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/error.h"
#include "common/malloc_tuning.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Tensors = est::checkpoint::AsyncCheckpointWriter::Tensors;

constexpr int64_t kMegabyte = 1 << 20;
/// The model: kLargeTensors tensors hold 15/16 of its bytes, kSmallTensors the rest.
constexpr int kLargeTensors = 4;
constexpr int kSmallTensors = 256;

struct Flags {
  int64_t megabytes = 256;
  int repetitions = 5;
  bool quick = false;
  std::string dir;
};

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Tensors MakeModel(int64_t bytes) {
  const int64_t small_elements = std::max<int64_t>(bytes / 16 / kSmallTensors / 4, 1);
  const int64_t large_elements = (bytes / 4 - small_elements * kSmallTensors) / kLargeTensors;
  Tensors model;
  for (int i = 0; i < kLargeTensors; ++i)
    model.emplace_back("large/" + std::to_string(i), torch::randn({large_elements}));
  for (int i = 0; i < kSmallTensors; ++i)
    model.emplace_back("small/" + std::to_string(i), torch::randn({small_elements}));
  return model;
}

int64_t ByteSize(const Tensors& model) {
  int64_t bytes = 0;
  for (const auto& [name, tensor] : model) bytes += static_cast<int64_t>(tensor.nbytes());
  return bytes;
}

/// Every byte of the model, concatenated: what the raw write and read move.
std::vector<char> Concatenate(const Tensors& model) {
  std::vector<char> bytes;
  bytes.reserve(static_cast<size_t>(ByteSize(model)));
  for (const auto& [name, tensor] : model) {
    const char* data = static_cast<const char*>(tensor.data_ptr());
    bytes.insert(bytes.end(), data, data + tensor.nbytes());
  }
  return bytes;
}

/// Empties the page cache so that reads come from the disk; false when not permitted.
bool DropPageCache() {
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  drop << "3" << std::flush;
  return static_cast<bool>(drop);
}

void CheckSyscall(bool ok, const std::string& what, const std::string& path) {
  EST_CHECK(ok, est::IoError, what, " '", path, "': ", std::strerror(errno));
}

/// One write() of the whole buffer (repeated only on short writes), then fsync.
double RawWrite(const std::string& path, const std::vector<char>& bytes) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CheckSyscall(fd >= 0, "cannot create", path);
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    CheckSyscall(n > 0, "cannot write", path);
    done += static_cast<size_t>(n);
  }
  CheckSyscall(::fsync(fd) == 0, "cannot fsync", path);
  ::close(fd);
  return SecondsSince(start);
}

/// Sequential read() of a whole file of `size` bytes into `destination`.
void RawRead(const std::string& path, char* destination, size_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  CheckSyscall(fd >= 0, "cannot open", path);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::read(fd, destination + done, size - done);
    CheckSyscall(n > 0, "cannot read", path);
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

/// RawRead into memory already mapped and touched (`bytes`), as in a reused buffer.
double RawReadIntoBuffer(const std::string& path, std::vector<char>& bytes) {
  const auto start = Clock::now();
  RawRead(path, bytes.data(), bytes.size());
  return SecondsSince(start);
}

/// RawRead into memory allocated for the read, as CheckpointReader allocates its tensors:
/// the kernel maps in every page on first touch.
double RawReadIntoNewMemory(const std::string& path, size_t size) {
  const auto start = Clock::now();
  at::Tensor destination = at::empty({static_cast<int64_t>(size)}, at::kByte);
  RawRead(path, static_cast<char*>(destination.data_ptr()), size);
  return SecondsSince(start);
}

double CheckpointRead(const std::string& prefix) {
  const auto start = Clock::now();
  est::checkpoint::CheckpointReader reader(prefix);
  for (const auto& name : reader.tensor_names()) reader.tensor(name);
  return SecondsSince(start);
}

/// A small MLP trained on one fixed random batch: the loop whose step time is measured.
class Mlp {
 public:
  Mlp()
      : net_(torch::nn::Linear(128, 256), torch::nn::ReLU(), torch::nn::Linear(256, 256), torch::nn::ReLU(),
             torch::nn::Linear(256, 10)),
        sgd_(net_->parameters(), 0.01),
        inputs_(torch::randn({64, 128})),
        labels_(torch::randint(10, {64})) {}

  void step() {
    sgd_.zero_grad();
    torch::nn::functional::cross_entropy(net_->forward(inputs_), labels_).backward();
    sgd_.step();
  }

 private:
  torch::nn::Sequential net_;
  torch::optim::SGD sgd_;
  torch::Tensor inputs_;
  torch::Tensor labels_;
};

struct Figure {
  std::string name;
  std::string label;
  std::string unit;
  double ours = 0;
  double reference = 0;
  std::string target;
  nlohmann::json extra = nlohmann::json::object();
  double ratio() const { return ours / reference; }
};

Figure MeasureSave(const Tensors& model, const std::vector<char>& bytes, const std::string& dir, int repetitions) {
  const double megabytes = static_cast<double>(bytes.size()) / kMegabyte;
  std::vector<double> ours;
  std::vector<double> raw;
  const std::string raw_path = dir + "/raw_write";
  for (int rep = 0; rep < repetitions; ++rep) {
    const std::string prefix = est::checkpoint::CheckpointPrefix(dir, rep);
    const auto start = Clock::now();
    est::checkpoint::WriteCheckpoint(prefix, model, {}, rep);
    ours.push_back(megabytes / SecondsSince(start));
    est::checkpoint::RemoveCheckpointFiles(prefix);
    raw.push_back(megabytes / RawWrite(raw_path, bytes));
    fs::remove(raw_path);
  }
  return {"save_vs_raw_write", "save MB/s vs write()+fsync", "MB/s", Median(ours), Median(raw), ">= 0.8"};
}

Figure MeasureRestore(const Tensors& model, std::vector<char> bytes, const std::string& dir, int repetitions,
                      bool drop_caches) {
  const double megabytes = static_cast<double>(bytes.size()) / kMegabyte;
  const std::string prefix = est::checkpoint::CheckpointPrefix(dir, 0);
  const std::string raw_path = dir + "/raw_read";
  est::checkpoint::WriteCheckpoint(prefix, model, {}, 0);
  RawWrite(raw_path, bytes);
  bool dropped = drop_caches;
  std::vector<double> ours;
  std::vector<double> raw;
  std::vector<double> raw_new_memory;
  for (int rep = 0; rep < repetitions; ++rep) {
    if (dropped) dropped = DropPageCache();
    ours.push_back(megabytes / CheckpointRead(prefix));
    if (dropped) dropped = DropPageCache();
    raw.push_back(megabytes / RawReadIntoBuffer(raw_path, bytes));
    if (dropped) dropped = DropPageCache();
    raw_new_memory.push_back(megabytes / RawReadIntoNewMemory(raw_path, bytes.size()));
  }
  est::checkpoint::RemoveCheckpointFiles(prefix);
  fs::remove(raw_path);
  Figure figure{"restore_vs_raw_read", "restore MB/s vs read()", "MB/s", Median(ours), Median(raw), "none"};
  figure.extra["page_cache_dropped"] = dropped;
  figure.extra["raw_into_new_memory"] = Median(raw_new_memory);
  return figure;
}

Figure MeasureStepTime(const Tensors& model, const std::string& dir, int repetitions) {
  torch::manual_seed(0);
  Mlp mlp;
  for (int i = 0; i < 20; ++i) mlp.step();
  est::checkpoint::AsyncCheckpointWriter writer(
      est::checkpoint::CheckpointManager(dir + "/async", est::checkpoint::RetentionOptions().keep_checkpoint_max(1)));
  std::vector<double> during;
  std::vector<double> without;
  std::vector<double> ratios;
  std::vector<double> snapshots;
  int64_t steps_during = 0;
  // The first save allocates the writer's snapshot memory; later ones reuse it.
  auto first = Clock::now();
  writer.save(0, model, {});
  const double first_snapshot_ms = SecondsSince(first) * 1e3;
  writer.wait();
  for (int rep = 0; rep < repetitions; ++rep) {
    // Steps from the save() call (its snapshot included) until the files are written.
    auto start = Clock::now();
    writer.save(rep + 1, model, {});
    snapshots.push_back(SecondsSince(start) * 1e3);
    int steps = 0;
    do {
      mlp.step();
      ++steps;
    } while (writer.saving());
    during.push_back(SecondsSince(start) * 1e3 / steps);
    writer.wait();
    steps_during += steps;
    start = Clock::now();
    for (int i = 0; i < steps; ++i) mlp.step();
    without.push_back(SecondsSince(start) * 1e3 / steps);
    ratios.push_back(during.back() / without.back());
  }
  Figure figure{"step_time_async_save_vs_none", "step ms during async save vs none", "ms", Median(during),
                Median(without), "<= 1.2"};
  figure.extra["median_ratio_of_pairs"] = Median(ratios);
  figure.extra["snapshot_ms"] = Median(snapshots);
  figure.extra["first_snapshot_ms"] = first_snapshot_ms;
  figure.extra["mean_steps_per_save"] = static_cast<double>(steps_during) / repetitions;
  return figure;
}

void Print(const std::vector<Figure>& figures, const Flags& flags, int64_t bytes) {
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  std::printf("checkpoint_bench: %.0f MB model (%d large + %d small float32 tensors), %d repetitions, medians\n",
              static_cast<double>(bytes) / kMegabyte, kLargeTensors, kSmallTensors, flags.repetitions);
  std::printf("machine: %ld cores, %d torch threads, load average %.2f\n", ::sysconf(_SC_NPROCESSORS_ONLN),
              torch::get_num_threads(), load[0]);
  std::printf("%-36s %12s %12s %8s %8s\n", "figure", "ours", "reference", "ratio", "target");
  for (const auto& f : figures)
    std::printf("%-36s %9.1f %-2s %9.1f %-2s %8.3f %8s\n", f.label.c_str(), f.ours, f.unit == "ms" ? "ms" : "",
                f.reference, f.unit == "ms" ? "ms" : "", f.ratio(), f.target.c_str());
  for (const auto& f : figures)
    if (!f.extra.empty()) std::printf("  %s: %s\n", f.name.c_str(), f.extra.dump().c_str());
  for (const auto& f : figures) {
    nlohmann::json line = {{"bench", "checkpoint"},        {"figure", f.name},
                           {"unit", f.unit},                {"ours", f.ours},
                           {"reference", f.reference},      {"ratio", f.ratio()},
                           {"target", f.target},            {"megabytes", bytes / kMegabyte},
                           {"repetitions", flags.repetitions}};
    line.update(f.extra);
    std::printf("%s\n", line.dump().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  est::TuneMallocForTraining();  // as est-train does: the loops here train like it
  Flags flags;
  CLI::App app{"Checkpoint save/restore throughput and step time during an asynchronous save"};
  app.add_option("--megabytes", flags.megabytes, "Size of the model")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--repetitions", flags.repetitions, "Repetitions of each measurement")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--quick", flags.quick, "An 8 MB model, 3 repetitions, page cache kept (for CI)");
  app.add_option("--dir", flags.dir, "Directory for the files (default: a new one under the temp directory)");
  CLI11_PARSE(app, argc, argv);
  if (flags.quick) {
    flags.megabytes = 8;
    flags.repetitions = 3;
  }
  const bool own_dir = flags.dir.empty();
  if (own_dir) flags.dir = (fs::temp_directory_path() / ("checkpoint_bench-" + std::to_string(::getpid()))).string();
  fs::create_directories(flags.dir);

  torch::manual_seed(0);
  const Tensors model = MakeModel(flags.megabytes * kMegabyte);
  const std::vector<char> bytes = Concatenate(model);
  std::vector<Figure> figures;
  figures.push_back(MeasureSave(model, bytes, flags.dir, flags.repetitions));
  figures.push_back(MeasureRestore(model, bytes, flags.dir, flags.repetitions, /*drop_caches=*/!flags.quick));
  figures.push_back(MeasureStepTime(model, flags.dir, flags.repetitions));
  Print(figures, flags, static_cast<int64_t>(bytes.size()));
  if (own_dir) fs::remove_all(flags.dir);
  return 0;
}
