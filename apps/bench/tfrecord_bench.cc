// tfrecord_bench: the `input` group of the performance issue. Reads Fashion-MNIST TFRecord
// shards (est-idx-to-tfrecord's, plain and GZIP) and reports records/s and MB/s (10^6 bytes
// of the files as stored, read from the page cache) of
//   raw      a plain sequential read(2) of the same files in 256 KiB chunks: the limit;
//   framing  TFRecordReader::next over every record (checksums verified), each a view into
//            the reader's buffer; and the same without verifying the checksums, which
//            separates the reader's own cost from the CRC32C's;
//   parse    TFRecordDataset + ParseExample(FashionMnistExampleSpec) + batch(64) on one
//            thread, and InterleaveFiles (cycle 4) with --threads reading threads + batch(64),
//            as est-train streams them; the batching is inside the timing;
// each with its ratio to the raw read of the same files; raw and framing again with the
// plain files dropped from the page cache before every pass (posix_fadvise DONTNEED, checked
// with mincore), where the disk is the limit; then the memory of streaming
// about 1 GB of records (a temporary file written with TFRecordWriter, removed afterwards)
// through TFRecordDataset + parse + batch(64): the peak RSS at 10%, 50% and 100% of the
// stream. Every repetition runs each figure once (their order rotating); the table holds the
// medians, and one JSON line per figure follows it.

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/common/fashion_mnist_cnn.h"
#include "common/error.h"
#include "data/list_files.h"
#include "data/tfrecord.h"
#include "data/tfrecord_dataset.h"

namespace {

using est::data::Dataset;
using est::data::TFRecordCompression;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBatchSize = 64;
constexpr size_t kChunkBytes = 256 << 10;

/// What the command line chose.
struct BenchOptions {
  std::string plain_files;  ///< glob of uncompressed shards
  std::string gzip_files;   ///< glob of GZIP shards; empty: none
  int64_t threads = 2;
  int repetitions = 3;
  double min_seconds = 1.0;
  double memory_mb = 1000;
  std::string temp_dir = std::filesystem::temp_directory_path().string();
  bool quick = false;
};

/// One set of shards and what they hold.
struct FileSet {
  std::string name;  ///< "plain" or "gzip"
  TFRecordCompression compression = TFRecordCompression::kNone;
  std::vector<std::string> files;
  uint64_t stored_bytes = 0;
  int64_t records = 0;
};

/// What one pass over a file set read.
struct Pass {
  int64_t records = 0;
  uint64_t bytes = 0;  ///< of the files as stored
};

/// A rate measured over whole passes.
struct Rate {
  double records_per_sec = 0;
  double mb_per_sec = 0;
};

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

/// Whole passes until `min_seconds` of them have gone by; `prepare` (if any) runs before each
/// pass, outside the timing.
Rate TimePasses(const std::function<void()>& prepare, const std::function<Pass()>& pass, double min_seconds) {
  Pass total;
  double seconds = 0;
  do {
    if (prepare) prepare();
    const Clock::time_point start = Clock::now();
    const Pass one = pass();
    seconds += SecondsSince(start);
    total.records += one.records;
    total.bytes += one.bytes;
  } while (seconds < min_seconds);
  return {static_cast<double>(total.records) / seconds, static_cast<double>(total.bytes) / 1e6 / seconds};
}

/// Reads `path` with read(2) in kChunkBytes chunks into `buffer`; returns its bytes.
uint64_t ReadRaw(const std::string& path, char* buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EST_CHECK(fd >= 0, est::IoError, "cannot open '", path, "': ", std::strerror(errno));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t bytes = 0;
  for (;;) {
    const ssize_t got = ::read(fd, buffer, kChunkBytes);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = errno;
      ::close(fd);
      EST_CHECK(got == 0, est::IoError, "cannot read '", path, "': ", std::strerror(error));
      return bytes;
    }
    bytes += static_cast<uint64_t>(got);
  }
}

/// One pass of the raw read: the limit. Its buffer is page-aligned, as the reader's is: the
/// kernel copies into a buffer off a 64-byte boundary at a third of the speed on some CPUs.
Pass RawPass(const FileSet& set) {
  const std::unique_ptr<char, decltype(&std::free)> buffer(static_cast<char*>(std::aligned_alloc(4096, kChunkBytes)),
                                                           &std::free);
  EST_CHECK(buffer != nullptr, est::IoError, "cannot allocate the raw read's buffer");
  Pass pass;
  for (const std::string& file : set.files) pass.bytes += ReadRaw(file, buffer.get());
  pass.records = set.records;
  return pass;
}

/// Drops `files` from the page cache; returns the fraction of their pages still resident
/// afterwards (mincore), so a cache that would not drop them is noticed.
double DropFromPageCache(const std::vector<std::string>& files) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  uint64_t pages = 0;
  uint64_t resident = 0;
  for (const std::string& file : files) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    EST_CHECK(fd >= 0, est::IoError, "cannot open '", file, "': ", std::strerror(errno));
    const auto size = static_cast<size_t>(std::filesystem::file_size(file));
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (size > 0) {
      void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
      if (map != MAP_FAILED) {
        std::vector<unsigned char> in_core((size + page - 1) / page);
        if (::mincore(map, size, in_core.data()) == 0) {
          pages += in_core.size();
          for (unsigned char flags : in_core) resident += flags & 1u;
        }
        ::munmap(map, size);
      }
    }
    ::close(fd);
  }
  return pages == 0 ? 1.0 : static_cast<double>(resident) / static_cast<double>(pages);
}

/// One pass of TFRecordReader::next over every record (checksums verified, as by default, or not).
Pass FramingPass(const FileSet& set, bool verify_checksums = true) {
  Pass pass;
  std::string_view record;
  for (const std::string& file : set.files) {
    est::data::TFRecordReader reader(
        file, est::data::TFRecordReaderOptions().compression(set.compression).verify_checksums(verify_checksums));
    while (reader.next(&record)) ++pass.records;
  }
  pass.bytes = set.stored_bytes;
  return pass;
}

/// The records of `set` parsed and batched: on the consumer's thread alone (threads 1), or
/// as est-train streams them, InterleaveFiles with `threads` reading threads.
Dataset ParsedBatches(const FileSet& set, int64_t threads) {
  if (threads == 1) {
    const auto options = est::data::TFRecordDatasetOptions()
                             .reader(est::data::TFRecordReaderOptions().compression(set.compression))
                             .parser(est::data::ParseExample(est_apps::FashionMnistExampleSpec(), "label"));
    return est::data::TFRecordDataset(set.files, options).batch(kBatchSize);
  }
  return est_apps::FashionMnistRecords(set.files, set.compression, 1, 0, threads).batch(kBatchSize);
}

/// Examples in the batches of one pass over `dataset`.
int64_t CountExamples(const Dataset& dataset) {
  int64_t examples = 0;
  auto iterator = dataset.make_iterator();
  while (auto batch = iterator->next()) examples += batch->labels.size(0);
  return examples;
}

/// One pass of ParsedBatches, checked to hold every record.
Pass ParsePass(const FileSet& set, int64_t threads) {
  Pass pass;
  pass.records = CountExamples(ParsedBatches(set, threads));
  EST_CHECK(pass.records == set.records, est::DataError, "a parsed pass over the ", set.name, " shards gave ",
            pass.records, " examples; the framing pass counted ", set.records);
  pass.bytes = set.stored_bytes;
  return pass;
}

/// A file set from a glob, counted by a framing pass (which also brings it into the page cache).
FileSet LoadFileSet(const std::string& name, const std::string& pattern, TFRecordCompression compression) {
  FileSet set;
  set.name = name;
  set.compression = compression;
  set.files = est::data::ListFiles(pattern, /*shuffle=*/false);
  for (const std::string& file : set.files) set.stored_bytes += std::filesystem::file_size(file);
  set.records = FramingPass(set).records;
  return set;
}

/// One figure of the table: what it runs and its rates per repetition.
struct Figure {
  std::string key;    ///< the JSON line's "figure"
  std::string label;  ///< the table's
  bool cold = false;  ///< the files leave the page cache before every pass
  const FileSet* set = nullptr;
  int64_t threads = 1;
  std::function<Pass()> pass;
  std::vector<double> records_per_sec;
  std::vector<double> mb_per_sec;
  std::function<void()> prepare;      ///< runs before every pass, untimed
  std::vector<double> ratio_to_raw;  ///< per repetition, to the raw read of the same set and cache
};

/// A kB value of /proc/self/status ("VmHWM", "VmRSS") in MiB; -1 where it cannot be read.
double StatusMib(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return -1;
}

/// Resets VmHWM to the current RSS (Linux 4.0's clear_refs "5"); false where refused.
bool ResetPeakRss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

/// A directory made for this run, removed with everything in it when this goes.
class TemporaryDirectory {
 public:
  explicit TemporaryDirectory(const std::string& parent) {
    std::string pattern = (std::filesystem::path(parent) / "tfrecord_bench-XXXXXX").string();
    EST_CHECK(::mkdtemp(pattern.data()) != nullptr, est::IoError, "cannot create a directory in '", parent,
              "': ", std::strerror(errno));
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The memory of streaming one large file through parse + batch.
struct MemoryRun {
  double file_mb = 0;
  int64_t records = 0;
  double records_per_sec = 0;
  double peak_mib[3] = {0, 0, 0};  ///< VmHWM at 10%, 50% and 100% of the records
  double rss_mib[3] = {0, 0, 0};   ///< VmRSS at the same points
  bool peak_reset = false;         ///< the peak was reset before the stream (else: since start)
};

/// Writes the records of `source` again and again into `path` until it holds `bytes`.
int64_t WriteLargeFile(const FileSet& source, const std::string& path, double bytes) {
  est::data::TFRecordWriter writer(path);
  int64_t records = 0;
  uint64_t written = 0;
  std::string record;
  while (static_cast<double>(written) < bytes) {
    for (const std::string& file : source.files) {
      est::data::TFRecordReader reader(file, est::data::TFRecordReaderOptions().compression(source.compression));
      while (reader.next(&record) && static_cast<double>(written) < bytes) {
        writer.write(record);
        written += record.size() + 16;  // its framing: a 12-byte header and a 4-byte footer
        ++records;
      }
    }
  }
  writer.close();
  return records;
}

/// Writes a file of about options.memory_mb MB of `source`'s records into a temporary
/// directory, streams it through parse + batch sampling the peak RSS, and removes it.
MemoryRun StreamLargeFile(const FileSet& source, const BenchOptions& options) {
  TemporaryDirectory dir(options.temp_dir);
  const std::string path = (std::filesystem::path(dir.path()) / "large.tfrecord").string();
  MemoryRun run;
  run.records = WriteLargeFile(source, path, options.memory_mb * 1e6);
  run.file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  FileSet large;
  large.name = "large";
  large.files = {path};
  const int64_t marks[3] = {run.records / 10, run.records / 2, run.records};
  run.peak_reset = ResetPeakRss();
  const Clock::time_point start = Clock::now();
  auto iterator = ParsedBatches(large, 1).make_iterator();
  int64_t examples = 0;
  int next_mark = 0;
  while (auto batch = iterator->next()) {
    examples += batch->labels.size(0);
    for (; next_mark < 3 && examples >= marks[next_mark]; ++next_mark) {
      run.peak_mib[next_mark] = StatusMib("VmHWM");
      run.rss_mib[next_mark] = StatusMib("VmRSS");
    }
  }
  run.records_per_sec = static_cast<double>(examples) / SecondsSince(start);
  EST_CHECK(examples == run.records, est::DataError, "the large file gave ", examples, " examples; ", run.records,
            " were written");
  return run;
}

/// The table of medians, then one JSON line per figure.
void PrintReport(const std::vector<Figure>& figures, const std::vector<MemoryRun>& memory,
                 const BenchOptions& options) {
  std::printf("\n%-52s %12s %10s %13s\n", "figure (parse includes batch 64)", "records/s", "MB/s",
              "ratio to raw");
  for (const Figure& figure : figures) {
    std::printf("  %-50s %12.0f %10.1f %13.3f\n", figure.label.c_str(), Median(figure.records_per_sec),
                Median(figure.mb_per_sec), Median(figure.ratio_to_raw));
  }
  std::vector<double> peaks[3];
  std::vector<double> growth;
  for (const MemoryRun& run : memory) {
    for (int i = 0; i < 3; ++i) peaks[i].push_back(run.peak_mib[i]);
    growth.push_back(run.peak_mib[2] - run.peak_mib[0]);
  }
  if (!memory.empty()) {
    const MemoryRun& last = memory.back();
    std::printf("\nstreaming %.0f MB (%lld records) through TFRecordDataset + parse + batch %lld, 1 thread:\n",
                last.file_mb, static_cast<long long>(last.records), static_cast<long long>(kBatchSize));
    std::printf("  peak RSS (VmHWM%s) at 10%% %.1f MiB, 50%% %.1f MiB, 100%% %.1f MiB: growth 10%%->100%% %.1f MiB\n",
                last.peak_reset ? ", reset before the stream" : " since the process started", Median(peaks[0]),
                Median(peaks[1]), Median(peaks[2]), Median(growth));
  }
  std::printf("\n");
  for (const Figure& figure : figures) {
    const nlohmann::json line = {{"bench", "tfrecord"},
                                 {"figure", figure.key},
                                 {"compression", est::data::TFRecordCompressionName(figure.set->compression)},
                                 {"page_cache", figure.cold ? "cold" : "warm"},
                                 {"threads", figure.threads},
                                 {"records_per_sec", Median(figure.records_per_sec)},
                                 {"mb_per_sec", Median(figure.mb_per_sec)},
                                 {"ratio_to_raw", Median(figure.ratio_to_raw)},
                                 {"files", figure.set->files.size()},
                                 {"stored_mb", static_cast<double>(figure.set->stored_bytes) / 1e6},
                                 {"records_per_pass", figure.set->records},
                                 {"repetitions", options.repetitions}};
    std::cout << line.dump() << "\n";
  }
  if (!memory.empty()) {
    std::vector<double> rates;
    for (const MemoryRun& run : memory) rates.push_back(run.records_per_sec);
    const nlohmann::json line = {{"bench", "tfrecord"},
                                 {"figure", "memory"},
                                 {"stream_mb", memory.back().file_mb},
                                 {"records", memory.back().records},
                                 {"records_per_sec", Median(rates)},
                                 {"peak_rss_mib_at_10", Median(peaks[0])},
                                 {"peak_rss_mib_at_50", Median(peaks[1])},
                                 {"peak_rss_mib_at_100", Median(peaks[2])},
                                 {"growth_mib", Median(growth)},
                                 {"peak_reset", memory.back().peak_reset},
                                 {"repetitions", options.repetitions}};
    std::cout << line.dump() << "\n";
  }
  std::cout << std::flush;
}

int Run(BenchOptions options) {
  if (options.quick) {
    options.repetitions = 1;
    options.min_seconds = 0.01;
    options.memory_mb = std::min(options.memory_mb, 8.0);
  }
  std::vector<FileSet> sets;
  sets.push_back(LoadFileSet("plain", options.plain_files, TFRecordCompression::kNone));
  if (!options.gzip_files.empty()) sets.push_back(LoadFileSet("gzip", options.gzip_files, TFRecordCompression::kGzip));

  // Cold figures only where the page cache lets these files go (not on tmpfs, say).
  const bool cold_cache = DropFromPageCache(sets[0].files) < 0.1;
  FramingPass(sets[0]);  // back into the cache for the warm figures
  if (!cold_cache) std::printf("the page cache keeps these files when asked to drop them: no cold-cache figures\n");
  std::vector<Figure> figures;
  auto add = [&figures](std::string key, std::string label, const FileSet& set, int64_t threads,
                        std::function<Pass()> pass) {
    Figure figure;
    figure.key = std::move(key);
    figure.label = std::move(label) + " (" + set.name + ")";
    figure.set = &set;
    figure.threads = threads;
    figure.pass = std::move(pass);
    figures.push_back(std::move(figure));
  };
  for (const FileSet& set : sets) {
    add("raw", "raw read, 256 KiB chunks", set, 1, [&set] { return RawPass(set); });
    add("framing", "framing, TFRecordReader::next", set, 1, [&set] { return FramingPass(set); });
    add("framing_unchecked", "framing, checksums not verified", set, 1, [&set] { return FramingPass(set, false); });
    if (set.compression == TFRecordCompression::kNone && cold_cache) {
      add("raw", "raw read, cold cache", set, 1, [&set] { return RawPass(set); });
      add("framing", "framing, cold cache", set, 1, [&set] { return FramingPass(set); });
      for (size_t k = figures.size() - 2; k < figures.size(); ++k) {
        figures[k].cold = true;
        figures[k].prepare = [&set] { DropFromPageCache(set.files); };
      }
    }
    add("parse", "parse + batch, TFRecordDataset, 1 thread", set, 1, [&set] { return ParsePass(set, 1); });
    if (options.threads > 1) {
      add("parse", "parse + batch, InterleaveFiles, " + std::to_string(options.threads) + " threads", set,
          options.threads, [&set, &options] { return ParsePass(set, options.threads); });
    }
  }
  std::printf(
      "TFRecord input benchmark: Fashion-MNIST shards, %zu set(s); plain: %zu files, %.1f MB, %lld records\n"
      "medians of %d repetitions, each figure at least %.2f s of whole passes per repetition\n",
      sets.size(), sets[0].files.size(), static_cast<double>(sets[0].stored_bytes) / 1e6,
      static_cast<long long>(sets[0].records), options.repetitions, options.min_seconds);

  std::vector<MemoryRun> memory;
  for (int repetition = 0; repetition < options.repetitions; ++repetition) {
    // First in the process: the peak it reports is then the stream's, even where clear_refs is refused.
    if (options.memory_mb > 0) memory.push_back(StreamLargeFile(sets[0], options));
    std::vector<Rate> rates(figures.size());
    for (size_t i = 0; i < figures.size(); ++i) {
      const size_t k = (i + static_cast<size_t>(repetition)) % figures.size();  // rotate the order
      rates[k] = TimePasses(figures[k].prepare, figures[k].pass, options.min_seconds);
      if (figures[k].cold) FramingPass(*figures[k].set);  // warm again for the figures that follow
    }
    for (size_t k = 0; k < figures.size(); ++k) {
      const auto raw = std::find_if(figures.begin(), figures.end(), [&](const Figure& f) {
        return f.key == "raw" && f.set == figures[k].set && f.cold == figures[k].cold;
      });
      figures[k].records_per_sec.push_back(rates[k].records_per_sec);
      figures[k].mb_per_sec.push_back(rates[k].mb_per_sec);
      figures[k].ratio_to_raw.push_back(rates[k].mb_per_sec / rates[raw - figures.begin()].mb_per_sec);
    }
  }
  PrintReport(figures, memory, options);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options;
  CLI::App app{"TFRecord input benchmark: raw reads, TFRecord framing and parsing of Fashion-MNIST shards, and "
               "the memory of streaming a large file"};
  app.add_option("--plain-files", options.plain_files, "glob of uncompressed TFRecord shards of Fashion-MNIST")
      ->required();
  app.add_option("--gzip-files", options.gzip_files, "glob of GZIP TFRecord shards of Fashion-MNIST (optional)");
  app.add_option("--threads", options.threads, "reading threads of the parallel parse (InterleaveFiles)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--repetitions", options.repetitions, "repetitions; medians are reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--min-seconds", options.min_seconds, "each figure reads whole passes for at least this long")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--memory-mb", options.memory_mb,
                 "MB of records streamed for the memory figure, from a temporary file; 0 skips it")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--temp-dir", options.temp_dir, "where the memory figure's temporary file goes")
      ->capture_default_str();
  app.add_flag("--quick", options.quick, "tiny sizes (1 repetition, 8 MB stream) to check it runs");
  CLI11_PARSE(app, argc, argv);
  try {
    return Run(options);
  } catch (const std::exception& error) {
    std::cerr << "tfrecord_bench: " << error.what() << "\n";
    return 1;
  }
}
