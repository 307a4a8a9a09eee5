// serve_bench: the serving benchmarks (run_benchmarks.py, group "serve"), in one process, on the
// Fashion-MNIST CNN (LibTorch's layers) trained one step on random images and exported:
//   - Predictor::predict at batch 1 and at --max-batch-size against the hand-written limit: the
//     same module with the export's weights called directly under torch::InferenceMode, making
//     the same predictions, on the same threads; repetitions interleaved;
//   - est-serve (a ModelServer on 127.0.0.1) under 1, 8 and 64 client threads sending KServe v2
//     ModelInfer requests of one image as fast as they can, with and without dynamic batching,
//     and the most clients batched in open loop (Poisson arrivals, MLPerf's server scenario) at
//     --open-loop-load of the closed loop's requests/s;
//   - hot reload under load: clients sending while new versions are exported and reloaded.
// Prints a table, then one JSON line per figure. --threads holds for every thread that computes
// (the Predictor gives a server's threads the process's intra-op thread count).
//
//   serve_bench [--threads T] [--requests N] [--warmup-requests W] [--clients 1,8,64]
//               [--channels C] [--predict-calls N] [--repetitions R] [--max-batch-size B]
//               [--max-queue-delay-us D] [--instances N] [--open-loop-load F] [--reloads K]
//               [--reload-clients C] [--reload-pause-ms P] [--dir DIR]

#include <grpcpp/grpcpp.h>
#include <torch/torch.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/bench/bench_models.h"
#include "apps/common/parse_flags.h"
#include "common/error.h"
#include "common/logging.h"
#include "estimator/estimator.h"
#include "estimator/export/export_directory.h"
#include "serving/model_server.h"
#include "serving/predictor.h"
#include "serving/proto/grpc_inference_service.grpc.pb.h"
#include "serving/kserve_rest.h"
#include "serving/proto/kserve_v2.pb.h"
#include "serving/tf_serving_rest.h"

namespace {

namespace fs = std::filesystem;
namespace serving = est::serving;
using Clock = std::chrono::steady_clock;
using Stub = inference::GRPCInferenceService::Stub;


/// How long one ModelInfer call may take before it counts as failed.
constexpr std::chrono::seconds kCallDeadline{60};

struct Flags {
  std::string model = "cnn";     ///< the model served: "cnn" or "mlp" (NetOf)
  int threads = 1;               ///< LibTorch's intra-op threads, for every figure
  int64_t requests = 500;        ///< timed ModelInfer requests of each client in each configuration
  int64_t warmup_requests = 20;  ///< untimed requests of each client first
  std::vector<int> clients = {1, 8, 64};
  int channels = 8;              ///< gRPC channels (connections) the clients share, at most one each
  int64_t predict_calls = 2000;  ///< Predictor calls a repetition at batch 1 (1/16 of them at the large batch)
  int repetitions = 5;
  int64_t max_batch_size = 64;  ///< the batcher's, and the Predictor figure's large batch
  int64_t max_queue_delay_us = 2000;
  int64_t instances = 1;  ///< the server's model instances: batches (or requests) that run at once
  double open_load = 0.5;     ///< the open-loop figure's rate, a fraction of the closed loop's; 0: none
  int reloads = 5;  ///< versions exported and reloaded under load
  int reload_clients = 8;
  int64_t reload_pause_ms = 200;  ///< load before, between and after the reloads
  std::string dir;
  /// TorchServe's virtual environment and apps/bench/torchserve_handler.py: the peer of est-serve
  /// on the same model.pt; none when empty.
  std::string torchserve_venv;
  std::string torchserve_handler;
};

double Seconds(Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }
double Milliseconds(Clock::duration duration) { return std::chrono::duration<double, std::milli>(duration).count(); }

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// The nearest-rank `percent` percentile of `values` (0 for none).
double Percentile(std::vector<double> values, double percent) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(percent / 100 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::max(rank, 1.0)) - 1;
  return values[std::min(index, values.size() - 1)];
}

/// One row of the table and one JSON line.
struct Figure {
  std::string name;
  std::string label;
  std::string unit;
  double ours = 0;
  std::optional<double> reference;  ///< none: a figure without a peer
  std::string target = "none";
  nlohmann::json extra = nlohmann::json::object();
  std::optional<double> ratio() const {
    if (!reference || *reference == 0) return std::nullopt;
    return ours / *reference;
  }
};

// ---- The model ----

/// A model the benchmark serves: est-train's Fashion-MNIST CNN ("cnn", input [N, 1, 28, 28]),
/// or bench_models.h's 21 M-parameter MLP ("mlp", input [N, 1024]), whose batch-1 call reads
/// every weight for one example (memory-bound) where a batch shares the read.
struct ServedNet {
  est::ModelIdentity identity;
  std::vector<int64_t> example;  ///< one example's sizes
  std::function<torch::nn::Sequential()> make;
  std::string description;
};

const ServedNet& NetOf(const std::string& model) {
  static const ServedNet cnn{{"fashion_mnist_cnn", "1"}, {1, 28, 28}, [] { return est_bench::MakeCnn(false); },
                             "Fashion-MNIST CNN (LibTorch's layers)"};
  static const ServedNet mlp{{"mlp", "1"}, {1024}, [] { return est_bench::MakeMlp(false); },
                             "MLP 1024-4096-4096-10, 21 M parameters (LibTorch's layers)"};
  return model == "mlp" ? mlp : cnn;
}

/// `batch` random examples of `net`'s input.
at::Tensor RandomExamples(const ServedNet& net, int64_t batch) {
  std::vector<int64_t> sizes{batch};
  sizes.insert(sizes.end(), net.example.begin(), net.example.end());
  return torch::rand(sizes);
}

/// The model_fn of `net`, as est-train's CNN's: predictions logits, class and probabilities of
/// input "x"; a plain SGD step in training (the benchmark trains one step only).
est::ModelFn ModelFnOf(const ServedNet& net) {
  return [&net](const est::Features& features, const torch::Tensor& labels, est::Mode mode, est::ModelContext& ctx) {
    auto module = ctx.module("net", net.make);
    auto logits = module->forward(features.at("x"));
    if (mode == est::Mode::kPredict)
      return est::EstimatorSpec::Predict(
          {{"logits", logits}, {"class", logits.argmax(1)}, {"probabilities", logits.softmax(1)}});
    auto loss = torch::nn::functional::cross_entropy(logits, labels);
    if (mode == est::Mode::kEval) return est::EstimatorSpec::Eval(loss);
    auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(module->parameters(), 0.01); });
    return est::EstimatorSpec::Train(loss, sgd);
  };
}

/// The serving input of `net`: "x", float32 [-1, example...].
est::ServingInputFn ServingInputOf(const ServedNet& net) {
  return [&net] {
    std::vector<int64_t> shape{-1};
    shape.insert(shape.end(), net.example.begin(), net.example.end());
    return est::ServingInputReceiver{{{"x", torch::kFloat32, shape}}, nullptr};
  };
}

est::RunConfig QuietConfig() {
  est::RunConfig config;
  config.save_summary_steps = 0;
  config.save_checkpoints_steps = 1'000'000;  // the final save only
  config.log_step_count_steps = 1'000'000;
  return config;
}

/// Trains `estimator` (of `net`) one step on a batch of 64 random examples.
void TrainOneStep(est::Estimator& estimator, const ServedNet& net) {
  auto input = [&net] {
    return est::data::Dataset::FromTensors({{"x", RandomExamples(net, 64)}}, torch::randint(10, {64})).batch(64);
  };
  estimator.train(input, est::TrainOptions().max_steps(1));
}

/// A new version of `estimator`'s latest checkpoint under `base`; its directory.
std::string ExportVersion(est::Estimator& estimator, const ServedNet& net, const std::string& base) {
  return estimator.export_saved_model(base, ServingInputOf(net), est::ExportOptions().model(net.identity));
}

serving::PredictorOptions PredictorOptionsOf(const ServedNet& net) {
  return serving::PredictorOptions().model(net.identity).serving_input_fn(ServingInputOf(net));
}

/// The limit: `net`'s module holding an export's weights, called directly, making the same
/// predictions as ModelFnOf(net).
class HandWrittenNet {
 public:
  HandWrittenNet(const ServedNet& net, const std::string& version_dir) : module_(net.make()) {
    const est::LoadedExport loaded = est::ReadExport(version_dir);
    torch::NoGradGuard no_grad;
    auto load = [&](const std::string& key, at::Tensor& value) {
      const auto found = loaded.weights.find("net/" + key);
      EST_CHECK(found != loaded.weights.end(), est::CheckpointError, "export '", version_dir, "' lacks 'net/", key,
                "'");
      value.copy_(found->second);
    };
    for (auto& item : module_->named_parameters()) load(item.key(), item.value());
    for (auto& item : module_->named_buffers()) load(item.key(), item.value());
    module_->eval();
  }

  est::TensorMap predict(const at::Tensor& x) {
    c10::InferenceMode inference;
    at::Tensor logits = module_->forward(x);
    return {{"logits", logits}, {"class", logits.argmax(1)}, {"probabilities", logits.softmax(1)}};
  }

 private:
  torch::nn::Sequential module_;
};

// ---- Predictor vs the limit ----

/// Seconds of `calls` calls of `call`; each call's milliseconds are appended to `latencies_ms`.
double TimeCalls(const std::function<void()>& call, int64_t calls, std::vector<double>& latencies_ms) {
  const auto start = Clock::now();
  auto before = start;
  for (int64_t i = 0; i < calls; ++i) {
    call();
    const auto after = Clock::now();
    latencies_ms.push_back(Milliseconds(after - before));
    before = after;
  }
  return Seconds(Clock::now() - start);
}

/// `ours` against `peer`, each a call on `batch` examples, examples/s (medians of the
/// repetitions, which alternate which goes first); latencies over every timed call.
Figure MeasureAgainst(const std::string& name, const std::string& label, const std::function<void()>& ours,
                      const std::function<void()>& peer, int64_t batch, int64_t calls, int repetitions) {
  std::vector<double> ignored;
  const int64_t warmup = std::max<int64_t>(2, calls / 10);
  TimeCalls(ours, warmup, ignored);
  TimeCalls(peer, warmup, ignored);
  std::vector<double> ours_rates, peer_rates, ours_ms, peer_ms;
  const double examples = static_cast<double>(batch * calls);
  for (int rep = 0; rep < repetitions; ++rep) {
    if (rep % 2 == 0) {
      ours_rates.push_back(examples / TimeCalls(ours, calls, ours_ms));
      peer_rates.push_back(examples / TimeCalls(peer, calls, peer_ms));
    } else {
      peer_rates.push_back(examples / TimeCalls(peer, calls, peer_ms));
      ours_rates.push_back(examples / TimeCalls(ours, calls, ours_ms));
    }
  }
  Figure figure{name, label, "examples/s", Median(ours_rates), Median(peer_rates), ">= 0.95"};
  figure.extra = {{"batch", batch},
                  {"calls", calls},
                  {"p50_ms", Percentile(ours_ms, 50)},
                  {"p99_ms", Percentile(ours_ms, 99)},
                  {"peer_p50_ms", Percentile(peer_ms, 50)},
                  {"peer_p99_ms", Percentile(peer_ms, 99)}};
  return figure;
}

/// Predictor::predict (model_fn) vs the hand-written limit at `batch`.
Figure MeasurePredictor(const serving::Predictor& predictor, const ServedNet& net, HandWrittenNet& limit,
                        int64_t batch, int64_t calls, int repetitions) {
  const at::Tensor images = RandomExamples(net, batch);
  const est::Features request{{"x", images}};
  EST_CHECK(torch::allclose(predictor.predict(request).at("logits"), limit.predict(images).at("logits")),
            est::ModelError, "the Predictor's logits differ from the hand-written module's at batch ", batch);
  const std::string size = std::to_string(batch);
  return MeasureAgainst("serve_predictor_batch_" + size, "Predictor::predict batch " + size + " vs hand-written",
                        [&] { predictor.predict(request); }, [&] { limit.predict(images); }, batch, calls,
                        repetitions);
}

/// The export's traced program (Predictor without model_fn) vs model_fn's forward (Predictor
/// with it) at `batch`: the same answers, and what running the program costs or saves.
Figure MeasureProgram(const serving::Predictor& program, const serving::Predictor& model_fn, const ServedNet& net,
                      int64_t batch, int64_t calls, int repetitions) {
  const est::Features request{{"x", RandomExamples(net, batch)}};
  EST_CHECK(torch::allclose(program.predict(request).at("logits"), model_fn.predict(request).at("logits"), 1e-5, 1e-6),
            est::ModelError, "the traced program's logits differ from model_fn's at batch ", batch);
  const std::string size = std::to_string(batch);
  return MeasureAgainst("serve_program_batch_" + size, "traced program batch " + size + " vs model_fn",
                        [&] { program.predict(request); }, [&] { model_fn.predict(request); }, batch, calls,
                        repetitions);
}

// ---- The load generator: gRPC clients of est-serve ----

/// Holds threads until all `count` have arrived: the clients start their timed requests together.
class StartLine {
 public:
  explicit StartLine(int count) : left_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--left_ == 0)
      all_.notify_all();
    else
      all_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_;
  int left_;
};

/// The API clients call: KServe v2's ModelInfer over gRPC, or over HTTP/JSON (KServe v2's infer,
/// TensorFlow Serving's :predict, or that :predict body posted to TorchServe's
/// /predictions/MODEL, which apps/bench/torchserve_handler.py reads).
enum class Api { kGrpc, kKServeRest, kTfServingRest, kTorchServe };

/// What clients send.
struct Load {
  Api api = Api::kGrpc;
  uint16_t port = 0;  ///< the gRPC port, or the REST port
  std::string model_name;
  const ServedNet* net = nullptr;  ///< what a request holds
  int clients = 1;
  int channels = 1;
  int64_t warmup = 0;
  /// Timed requests per client (in open loop, on average); negative: until `stop`.
  int64_t requests = 0;
  const std::atomic<bool>* stop = nullptr;
  /// Open loop: requests/s over all clients, each client sending on a Poisson schedule of its
  /// own, at the scheduled time or, when its last request is still unanswered, once it is; a
  /// request's latency counts from its scheduled time. 0: closed loop, each client sending its
  /// next request as soon as it is answered.
  double rate = 0;
};

/// What clients saw (one client's, or all of them merged).
struct LoadResult {
  std::vector<double> latencies_ms;  ///< every timed request's, failed ones included
  int64_t answered = 0;
  int64_t failed = 0;
  std::string first_error;
  std::set<std::string> versions;  ///< the model versions that answered
  Clock::time_point start = Clock::time_point::max();
  Clock::time_point end = Clock::time_point::min();

  double requests_per_sec() const { return end > start ? static_cast<double>(answered) / Seconds(end - start) : 0; }
  void merge(const LoadResult& other) {
    latencies_ms.insert(latencies_ms.end(), other.latencies_ms.begin(), other.latencies_ms.end());
    answered += other.answered;
    failed += other.failed;
    if (first_error.empty()) first_error = other.first_error;
    versions.insert(other.versions.begin(), other.versions.end());
    start = std::min(start, other.start);
    end = std::max(end, other.end);
  }
};

/// A ModelInfer request of `image` (one example) as raw little-endian bytes.
serving::v2::ModelInferRequest MakeInferRequest(const std::string& model_name, const at::Tensor& image) {
  serving::v2::ModelInferRequest request;
  request.set_model_name(model_name);
  auto* input = request.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  for (int64_t size : image.sizes()) input->add_shape(size);
  const at::Tensor bytes = image.contiguous();
  request.add_raw_input_contents(static_cast<const char*>(bytes.data_ptr()), bytes.nbytes());
  return request;
}

/// One ModelInfer call, recorded in `result` when `timed`, its latency counted from `since`
/// (default: the call).
void Infer(Stub& stub, const serving::v2::ModelInferRequest& request, bool timed, LoadResult& result,
           Clock::time_point since = Clock::time_point::min()) {
  serving::v2::ModelInferResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  const auto start = since == Clock::time_point::min() ? Clock::now() : since;
  const grpc::Status status = stub.ModelInfer(&context, request, &response);
  const double ms = Milliseconds(Clock::now() - start);
  if (!timed) return;
  result.latencies_ms.push_back(ms);
  std::string error;
  if (!status.ok())
    error = "status " + std::to_string(static_cast<int>(status.error_code())) + ": " + status.error_message();
  else if (response.outputs_size() == 0 || response.outputs_size() != response.raw_output_contents_size())
    error = "an answer of " + std::to_string(response.outputs_size()) + " outputs and " +
            std::to_string(response.raw_output_contents_size()) + " contents";
  if (error.empty()) {
    ++result.answered;
    result.versions.insert(response.model_version());
  } else {
    ++result.failed;
    if (result.first_error.empty()) result.first_error = error;
  }
}

/// A keep-alive HTTP/1.1 connection to 127.0.0.1, one request at a time.
class HttpConnection {
 public:
  explicit HttpConnection(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EST_CHECK(fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0,
              est::CommunicationError, "cannot connect to the REST port ", port);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~HttpConnection() { ::close(fd_); }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// POSTs `body` to `path`; the answer's status (0 when the connection failed), its body in `answer`.
  int post(const std::string& path, const std::string& body, std::string& answer) {
    const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    for (size_t sent = 0; sent < request.size();) {
      const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return 0;
      sent += static_cast<size_t>(n);
    }
    size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return 0;
    std::string head = buffer_.substr(0, head_end);
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    const size_t length_at = head.find("content-length:");
    const size_t length = length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 15));
    while (buffer_.size() < head_end + 4 + length)
      if (!fill()) return 0;
    answer = buffer_.substr(head_end + 4, length);
    buffer_.erase(0, head_end + 4 + length);
    return std::stoi(head.substr(9, 3));
  }

 private:
  bool fill() {
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  std::string buffer_;
};

/// `image` (one example) as the JSON body of `api`'s call: KServe v2's infer, or TensorFlow
/// Serving's :predict in the row format.
std::string RestBody(Api api, const at::Tensor& image) {
  const at::Tensor flat = image.contiguous().flatten();
  const std::vector<float> values(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  if (api == Api::kTfServingRest) {
    nlohmann::json instance = values;
    for (int64_t d = image.dim() - 1; d >= 1; --d) {  // nested as the example's shape
      nlohmann::json rows = nlohmann::json::array();
      const int64_t size = image.size(d);
      for (size_t i = 0; i < instance.size(); i += static_cast<size_t>(size))
        rows.push_back(nlohmann::json(std::vector<nlohmann::json>(instance.begin() + static_cast<long>(i),
                                                                  instance.begin() + static_cast<long>(i) + size)));
      instance = rows;
    }
    return nlohmann::json{{"instances", instance}}.dump();
  }
  return nlohmann::json{{"inputs", {{{"name", "x"}, {"shape", image.sizes().vec()}, {"datatype", "FP32"},
                                     {"data", values}}}}}
      .dump();
}

/// What decoding one REST body of one example costs: KServe v2's infer JSON and TensorFlow
/// Serving's :predict row format, microseconds a request (medians of the repetitions).
std::vector<Figure> MeasureJsonDecoding(const ServedNet& net, const est::ExportManifest& manifest, int64_t calls,
                                        int repetitions) {
  const at::Tensor image = RandomExamples(net, 1);
  std::vector<Figure> figures;
  for (Api api : {Api::kKServeRest, Api::kTfServingRest}) {
    const std::string body = RestBody(api, image);
    auto decode = [&] {
      if (api == Api::kKServeRest) {
        serving::DecodeKServeJsonRequest(body, "", int64_t{64} << 20);
      } else {
        serving::tf::PredictRequest request;
        serving::DecodePredictJson(body, manifest, int64_t{64} << 20, request);
      }
    };
    std::vector<double> per_call_us, ignored;
    TimeCalls(decode, std::max<int64_t>(2, calls / 10), ignored);
    for (int rep = 0; rep < repetitions; ++rep)
      per_call_us.push_back(1e6 * TimeCalls(decode, calls, ignored) / static_cast<double>(calls));
    Figure figure{api == Api::kKServeRest ? "serve_json_decode_kserve_us" : "serve_json_decode_tf_us",
                  std::string("JSON decoding, one ") + std::to_string(image.numel()) + "-float example, " +
                      (api == Api::kKServeRest ? "KServe infer" : "TF :predict"),
                  "us", Median(per_call_us), std::nullopt, "none"};
    figure.extra = {{"body_bytes", body.size()}, {"calls", calls}};
    figures.push_back(std::move(figure));
  }
  return figures;
}

/// One REST call, recorded in `result` when `timed`, its latency counted from `since` (default:
/// the call).
void RestInfer(HttpConnection& connection, const std::string& path, const std::string& body, bool timed,
               LoadResult& result, Clock::time_point since = Clock::time_point::min()) {
  const auto start = since == Clock::time_point::min() ? Clock::now() : since;
  std::string answer;
  const int status = connection.post(path, body, answer);
  const double ms = Milliseconds(Clock::now() - start);
  if (!timed) return;
  result.latencies_ms.push_back(ms);
  if (status == 200) {
    ++result.answered;
  } else {
    ++result.failed;
    if (result.first_error.empty()) result.first_error = "HTTP " + std::to_string(status) + ": " + answer.substr(0, 200);
  }
}

/// Runs `load.clients` client threads against the server at `load.port` and merges what they saw.
LoadResult GenerateLoad(const Load& load) {
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // each channel a connection of its own
  std::vector<std::unique_ptr<Stub>> stubs;
  const std::string address = "127.0.0.1:" + std::to_string(load.port);
  for (int i = 0; i < std::min(load.clients, load.channels); ++i)
    stubs.push_back(inference::GRPCInferenceService::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments)));
  std::vector<LoadResult> results(static_cast<size_t>(load.clients));
  StartLine start_line(load.clients);
  std::vector<std::thread> clients;
  for (int c = 0; c < load.clients; ++c) {
    clients.emplace_back([&, c] {
      Stub& stub = *stubs[static_cast<size_t>(c) % stubs.size()];
      LoadResult& result = results[static_cast<size_t>(c)];
      const at::Tensor image = RandomExamples(*load.net, 1);
      const serving::v2::ModelInferRequest request = MakeInferRequest(load.model_name, image);
      std::unique_ptr<HttpConnection> connection;
      if (load.api != Api::kGrpc) connection = std::make_unique<HttpConnection>(load.port);
      const std::string path = load.api == Api::kTfServingRest ? "/v1/models/" + load.model_name + ":predict"
                               : load.api == Api::kTorchServe  ? "/predictions/" + load.model_name
                                                               : "/v2/models/" + load.model_name + "/infer";
      const std::string body =
          load.api == Api::kGrpc ? "" : RestBody(load.api == Api::kTorchServe ? Api::kTfServingRest : load.api, image);
      auto call = [&](bool timed, Clock::time_point since) {
        if (connection)
          RestInfer(*connection, path, body, timed, result, since);
        else
          Infer(stub, request, timed, result, since);
      };
      for (int64_t i = 0; i < load.warmup; ++i) call(/*timed=*/false, Clock::time_point::min());
      start_line.arrive_and_wait();
      result.start = Clock::now();
      if (load.rate <= 0) {
        for (int64_t i = 0; load.requests < 0 ? !load.stop->load() : i < load.requests; ++i)
          call(/*timed=*/true, Clock::time_point::min());
      } else {
        // Requests scheduled over the time that `requests` a client take on average at this rate.
        const double per_client = load.rate / load.clients;
        std::mt19937_64 random(static_cast<uint64_t>(c) + 1);
        std::exponential_distribution<double> gap_seconds(per_client);
        const Clock::time_point end = result.start + std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double>(load.requests / per_client));
        Clock::time_point scheduled = result.start;
        while (true) {
          scheduled += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap_seconds(random)));
          if (scheduled >= end || (load.stop != nullptr && load.stop->load())) break;
          std::this_thread::sleep_until(scheduled);
          call(/*timed=*/true, scheduled);
        }
      }
      result.end = Clock::now();
    });
  }
  for (auto& client : clients) client.join();
  LoadResult merged;
  for (const auto& result : results) merged.merge(result);
  return merged;
}

serving::ModelServerOptions ServerOptions(const Flags& flags, bool batching) {
  const auto batching_options = serving::BatchingOptions()
                                    .max_batch_size(flags.max_batch_size)
                                    .max_queue_delay(std::chrono::microseconds(flags.max_queue_delay_us));
  // No watcher: the hot-reload figure calls ServedModel::reload() itself.
  const auto model = serving::ServedModelOptions()
                         .predictor(PredictorOptionsOf(NetOf(flags.model)).instances(flags.instances))
                         .batching(batching)
                         .batching_options(batching_options)
                         .reload_interval(std::chrono::milliseconds(0));
  return serving::ModelServerOptions().host("127.0.0.1").port(0).rest_port(0).model(model);
}

/// "1 client", "8 clients".
std::string Clients(int count) { return std::to_string(count) + (count == 1 ? " client" : " clients"); }

/// est-serve's requests/s under each client count (closed loop), with batching or without; the
/// reference is the Predictor's examples/s at the batch the server runs (`ceiling`), in process.
/// With `open_load` > 0, one more figure: the most clients in open loop at that fraction of the
/// closed loop's requests/s there.
std::vector<Figure> MeasureServer(const Flags& flags, const std::string& base, bool batching, double ceiling,
                                  double open_load = 0) {
  const ServedNet& net = NetOf(flags.model);
  serving::ModelServer server(ModelFnOf(net), base, ServerOptions(flags, batching));
  std::vector<Figure> figures;
  const std::string mode = batching ? "batched" : "unbatched";
  auto measure = [&](int clients, double rate, Api api) {
    const serving::BatchingStats before = server.model()->batching_stats();
    Load load;
    load.api = api;
    load.port = api == Api::kGrpc ? server.port() : server.rest_port();
    load.model_name = server.model_names().front();
    load.net = &net;
    load.clients = clients;
    load.channels = flags.channels;
    load.warmup = flags.warmup_requests;
    load.requests = flags.requests;
    load.rate = rate;
    const LoadResult result = GenerateLoad(load);
    const serving::BatchingStats after = server.model()->batching_stats();
    const std::string count = std::to_string(clients);
    const std::string loop = rate > 0 ? "_open" : "";
    const char* api_name = api == Api::kGrpc ? "grpc" : api == Api::kKServeRest ? "kserve_rest" : "tf_rest";
    Figure figure{std::string("serve_") + api_name + "_" + mode + loop + "_" + count + "_clients",
                  "est-serve " + mode + ", " + Clients(clients) + (rate > 0 ? " open loop" : "") + " vs Predictor",
                  "requests/s", result.requests_per_sec(), ceiling, "none"};
    figure.extra = {{"clients", clients},
                    {"batching", batching},
                    {"open_loop_rate", rate},
                    {"p50_ms", Percentile(result.latencies_ms, 50)},
                    {"p99_ms", Percentile(result.latencies_ms, 99)},
                    {"answered", result.answered},
                    {"failed", result.failed}};
    if (batching && after.batches > before.batches)
      figure.extra["mean_batch"] =
          static_cast<double>(after.requests - before.requests) / static_cast<double>(after.batches - before.batches);
    if (!result.first_error.empty()) figure.extra["first_error"] = result.first_error;
    return figure;
  };
  for (int clients : flags.clients) figures.push_back(measure(clients, 0, Api::kGrpc));
  const int most = *std::max_element(flags.clients.begin(), flags.clients.end());
  double closed = 0;
  for (const Figure& figure : figures)
    if (figure.extra.at("clients").get<int>() == most) closed = figure.ours;
  if (open_load > 0) figures.push_back(measure(most, open_load * closed, Api::kGrpc));
  if (batching) {
    // The REST APIs at the most clients, against gRPC's ModelInfer there.
    for (Api api : {Api::kKServeRest, Api::kTfServingRest}) {
      Figure rest = measure(most, 0, api);
      rest.label = std::string(api == Api::kKServeRest ? "REST KServe infer" : "REST TF :predict") +
                   " vs gRPC ModelInfer, " + Clients(most);
      rest.reference = closed;
      rest.target = "none";
      figures.push_back(std::move(rest));
    }
  }
  server.shutdown();
  return figures;
}

/// A TCP port on 127.0.0.1 free now (bound, then let go): TorchServe takes its ports by number.
uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  EST_CHECK(fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0,
            est::CommunicationError, "no free port for TorchServe");
  ::close(fd);
  return ntohs(address.sin_port);
}

/// TorchServe (frontend and Python worker) in a process group of its own, stopped when destroyed.
class TorchServeProcess {
 public:
  /// Starts `venv`'s torchserve on `store` with `config`, its output in `log`, LibTorch on
  /// `threads` threads.
  TorchServeProcess(const std::string& venv, const std::string& store, const std::string& config,
                    const std::string& log, int threads) {
    const std::string logs = (fs::path(log).parent_path() / "logs").string();  // not the working directory's
    std::vector<std::string> args{venv + "/bin/torchserve", "--start",     "--foreground", "--ncs",
                                  "--model-store",          store,         "--ts-config",  config};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> environment{"PATH=" + venv + "/bin:/usr/bin:/bin", "OMP_NUM_THREADS=" + std::to_string(threads),
                                         "HOME=" + std::string(std::getenv("HOME") ? std::getenv("HOME") : "/tmp"),
                                         "LOG_LOCATION=" + logs, "METRICS_LOCATION=" + logs};
    std::vector<char*> envp;
    for (auto& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, &attributes, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    EST_CHECK(rc == 0, est::IoError, "cannot start ", argv[0], ": ", std::strerror(rc));
  }
  ~TorchServeProcess() {
    ::kill(-pid_, SIGTERM);
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    while (::waitpid(pid_, nullptr, WNOHANG) == 0 && Clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::kill(-pid_, SIGKILL);  // the Python worker, where it outlived the frontend
    ::waitpid(pid_, nullptr, WNOHANG);
  }
  TorchServeProcess(const TorchServeProcess&) = delete;
  TorchServeProcess& operator=(const TorchServeProcess&) = delete;

  /// Whether the frontend still runs.
  bool running() const { return ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

/// est-serve (by the export's traced program, no model code) and TorchServe (the same model.pt
/// through apps/bench/torchserve_handler.py), both batching as flags say, under the most clients
/// in closed loop with the same :predict body over keep-alive HTTP: est-serve's requests/s vs
/// TorchServe's.
Figure MeasureTorchServe(const Flags& flags, const std::string& base, const std::string& version_dir,
                         const std::string& work) {
  const ServedNet& net = NetOf(flags.model);
  const int most = *std::max_element(flags.clients.begin(), flags.clients.end());
  const fs::path dir = fs::path(work) / "torchserve";
  fs::create_directories(dir / "store");
  const std::string archive = flags.torchserve_venv + "/bin/torch-model-archiver --model-name served --version 1 " +
                              "--serialized-file '" + version_dir + "/model.pt' --handler '" +
                              flags.torchserve_handler + "' --export-path '" + (dir / "store").string() +
                              "' --force > '" + (dir / "archive.log").string() + "' 2>&1";
  EST_CHECK(std::system(archive.c_str()) == 0, est::IoError, "torch-model-archiver failed: ", archive);
  const uint16_t port = FreePort();
  const int64_t delay_ms = std::max<int64_t>(1, flags.max_queue_delay_us / 1000);
  const nlohmann::json models = {
      {"served", {{"1", {{"marName", "served.mar"}, {"minWorkers", flags.instances}, {"maxWorkers", flags.instances},
                         {"batchSize", flags.max_batch_size}, {"maxBatchDelay", delay_ms}, {"responseTimeout", 120}}}}}};
  std::ofstream((dir / "config.properties").string())
      << "inference_address=http://127.0.0.1:" << port << "\nmanagement_address=http://127.0.0.1:" << FreePort()
      << "\nmetrics_address=http://127.0.0.1:" << FreePort()
      << "\ndisable_token_authorization=true\ninstall_py_dep_per_model=false\nload_models=served.mar\nmodels="
      << models.dump() << "\n";
  TorchServeProcess torchserve(flags.torchserve_venv, (dir / "store").string(), (dir / "config.properties").string(),
                               (dir / "torchserve.log").string(), flags.threads);
  // Ready once a prediction is answered.
  const std::string body = RestBody(Api::kTfServingRest, RandomExamples(net, 1));
  const auto give_up = Clock::now() + std::chrono::seconds(180);
  for (bool ready = false; !ready;) {
    EST_CHECK(torchserve.running() && Clock::now() < give_up, est::CommunicationError,
              "TorchServe did not answer within 180 s; see ", (dir / "torchserve.log").string());
    try {
      HttpConnection connection(port);
      std::string answer;
      ready = connection.post("/predictions/served", body, answer) == 200;
    } catch (const est::CommunicationError&) {
    }
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  serving::ModelServer server(nullptr, base, ServerOptions(flags, /*batching=*/true));
  auto measure = [&](Api api, uint16_t at, const std::string& name) {
    Load load;
    load.api = api;
    load.port = at;
    load.model_name = name;
    load.net = &net;
    load.clients = most;
    load.warmup = flags.warmup_requests;
    load.requests = flags.requests;
    return GenerateLoad(load);
  };
  const LoadResult ours = measure(Api::kTfServingRest, server.rest_port(), server.model_names().front());
  const LoadResult theirs = measure(Api::kTorchServe, port, "served");
  server.shutdown();
  Figure figure{"serve_vs_torchserve_" + std::to_string(most) + "_clients",
                "est-serve vs TorchServe, same model.pt, " + Clients(most), "requests/s", ours.requests_per_sec(),
                theirs.requests_per_sec(), "none"};
  figure.extra = {{"clients", most},
                  {"p50_ms", Percentile(ours.latencies_ms, 50)},
                  {"p99_ms", Percentile(ours.latencies_ms, 99)},
                  {"torchserve_p50_ms", Percentile(theirs.latencies_ms, 50)},
                  {"torchserve_p99_ms", Percentile(theirs.latencies_ms, 99)},
                  {"failed", ours.failed},
                  {"torchserve_failed", theirs.failed}};
  if (!theirs.first_error.empty()) figure.extra["torchserve_first_error"] = theirs.first_error;
  return figure;
}

/// Clients sending while `flags.reloads` new versions are exported into `base` and reloaded:
/// the failed requests (target 0), and the versions served against those exported.
std::vector<Figure> MeasureHotReload(const Flags& flags, est::Estimator& estimator, const std::string& base) {
  const ServedNet& net = NetOf(flags.model);
  serving::ModelServer server(ModelFnOf(net), base, ServerOptions(flags, /*batching=*/true));
  std::atomic<bool> stop{false};
  Load load;
  load.port = server.port();
  load.model_name = server.model_names().front();
  load.net = &net;
  load.clients = flags.reload_clients;
  load.channels = flags.channels;
  load.requests = -1;
  load.stop = &stop;
  LoadResult result;
  std::exception_ptr client_error;
  std::thread clients([&] {
    try {
      result = GenerateLoad(load);
    } catch (...) {
      client_error = std::current_exception();
    }
  });
  const auto pause = std::chrono::milliseconds(flags.reload_pause_ms);
  int served = 0;
  const auto start = Clock::now();
  try {
    for (int i = 0; i < flags.reloads; ++i) {
      std::this_thread::sleep_for(pause);
      ExportVersion(estimator, net, base);
      if (server.model()->reload()) ++served;
    }
    std::this_thread::sleep_for(pause);
  } catch (...) {
    stop = true;
    clients.join();
    throw;
  }
  stop = true;
  clients.join();
  if (client_error) std::rethrow_exception(client_error);
  const double seconds = Seconds(Clock::now() - start);
  server.shutdown();
  Figure failed{"serve_hot_reload_failed", "failed requests, " + Clients(flags.reload_clients) + ", reloads",
                "requests", static_cast<double>(result.failed), static_cast<double>(result.answered + result.failed),
                "== 0"};
  failed.extra = {{"clients", flags.reload_clients},
                  {"seconds", seconds},
                  {"p50_ms", Percentile(result.latencies_ms, 50)},
                  {"p99_ms", Percentile(result.latencies_ms, 99)},
                  {"versions_answered", result.versions.size()}};
  if (!result.first_error.empty()) failed.extra["first_error"] = result.first_error;
  Figure versions{"serve_hot_reload_versions", "versions served vs exported under load", "versions",
                  static_cast<double>(served), static_cast<double>(flags.reloads), "== 1"};
  versions.extra = {{"reloads_counted", server.model()->stats().reloads},
                    {"failed_reloads", server.model()->stats().failed_reloads}};
  return {failed, versions};
}

// ---- Output ----

void Print(const std::vector<Figure>& figures, const Flags& flags) {
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) < 0) load[0] = -1;
  std::printf("serve_bench: %s, %lld timed requests a client, "
              "batching at most %lld examples, %lld us queue delay, %lld model instances, medians of %d repetitions\n",
              NetOf(flags.model).description.c_str(), static_cast<long long>(flags.requests), static_cast<long long>(flags.max_batch_size),
              static_cast<long long>(flags.max_queue_delay_us), static_cast<long long>(flags.instances),
              flags.repetitions);
  std::printf("machine: %ld cores, %d torch threads, load average %.2f\n", ::sysconf(_SC_NPROCESSORS_ONLN),
              torch::get_num_threads(), load[0]);
  std::printf("%-46s %12s %12s %8s %8s  %s\n", "figure", "ours", "reference", "ratio", "target", "unit");
  for (const auto& f : figures) {
    char ratio[32] = "-";
    if (f.ratio()) std::snprintf(ratio, sizeof ratio, "%.3f", *f.ratio());
    char ours[32];
    char peer[32] = "-";
    std::snprintf(ours, sizeof ours, "%.4g", f.ours);
    if (f.reference) std::snprintf(peer, sizeof peer, "%.4g", *f.reference);
    std::printf("%-46s %12s %12s %8s %8s  %s\n", f.label.c_str(), ours, peer, ratio, f.target.c_str(),
                f.unit.c_str());
  }
  for (const auto& f : figures)
    if (!f.extra.empty()) std::printf("  %s: %s\n", f.name.c_str(), f.extra.dump().c_str());
  // The CNN's figures are serve_*, the MLP's serve_mlp_*.
  auto name_of = [&](const Figure& f) { return flags.model == "cnn" ? f.name : "serve_mlp_" + f.name.substr(6); };
  for (const auto& f : figures) {
    nlohmann::json line = {{"bench", "serve"},
                           {"figure", name_of(f)},
                           {"model", flags.model},
                           {"unit", f.unit},
                           {"ours", f.ours},
                           {"reference", f.reference ? nlohmann::json(*f.reference) : nlohmann::json(nullptr)},
                           {"ratio", f.ratio() ? nlohmann::json(*f.ratio()) : nlohmann::json(nullptr)},
                           {"target", f.target},
                           {"threads", flags.threads},
                           {"requests", flags.requests},
                           {"repetitions", flags.repetitions}};
    line.update(f.extra);
    std::printf("%s\n", line.dump().c_str());
  }
}

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--model", flags.model, "The model served: est-train's Fashion-MNIST CNN, or a 21 M-parameter MLP")
      ->check(CLI::IsMember({"cnn", "mlp"}))
      ->capture_default_str();
  app.add_option("--threads", flags.threads, "LibTorch's intra-op threads, in every thread (as OMP_NUM_THREADS)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--requests", flags.requests, "Timed ModelInfer requests of each client in each configuration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup-requests", flags.warmup_requests, "Untimed requests of each client before them")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--clients", flags.clients, "Concurrent clients, one configuration each (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--channels", flags.channels, "gRPC channels (connections) the clients of a configuration share")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--predict-calls", flags.predict_calls,
                 "Timed Predictor calls a repetition at batch 1 (1/16 as many, at least 3, at --max-batch-size)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--repetitions", flags.repetitions, "Interleaved repetitions of the Predictor and its limit")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-batch-size", flags.max_batch_size, "The batcher's largest batch")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-queue-delay-us", flags.max_queue_delay_us, "The batcher's wait for a batch to fill")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--instances", flags.instances, "The server's model instances: batches (or requests) that run at once")
      ->check(CLI::Range(int64_t{1}, serving::kMaxModelInstances))
      ->capture_default_str();
  app.add_option("--open-loop-load", flags.open_load,
                 "The batched open-loop figure's rate at the most clients, as a fraction of the closed loop's "
                 "requests/s there; 0: no such figure")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--reloads", flags.reloads, "Versions exported and hot-reloaded under load")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--reload-clients", flags.reload_clients, "Clients sending during the reloads")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--reload-pause-ms", flags.reload_pause_ms, "Load before, between and after the reloads")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--torchserve-venv", flags.torchserve_venv,
                 "A virtual environment with torchserve and torch-model-archiver: TorchServe serves the export's "
                 "model.pt beside est-serve (needs --torchserve-handler and Java)");
  app.add_option("--torchserve-handler", flags.torchserve_handler, "apps/bench/torchserve_handler.py");
  app.add_option("--dir", flags.dir,
                 "Directory for the model and its exports (default: a new one, removed at the end)");
}

/// Removes the directory it names when destroyed, where it made it.
struct OwnedDirectory {
  std::string path;
  bool owned = false;
  ~OwnedDirectory() {
    std::error_code ignored;
    if (owned) fs::remove_all(path, ignored);
  }
};

int Run(const Flags& flags) {
  torch::set_num_threads(flags.threads);
  est::Log().set_level(spdlog::level::warn);  // the servers' and reloads' lines would bury the table
  OwnedDirectory dir{flags.dir, flags.dir.empty()};
  if (dir.owned) dir.path = (fs::temp_directory_path() / ("serve_bench-" + std::to_string(::getpid()))).string();
  fs::create_directories(dir.path);

  torch::manual_seed(0);
  const ServedNet& net = NetOf(flags.model);
  est::Estimator estimator(ModelFnOf(net), dir.path + "/model", QuietConfig());
  TrainOneStep(estimator, net);
  const std::string base = dir.path + "/export";
  const std::string version_dir = ExportVersion(estimator, net, base);

  std::vector<Figure> figures;
  const serving::Predictor predictor(ModelFnOf(net), version_dir, PredictorOptionsOf(net));
  HandWrittenNet limit(net, version_dir);
  const Figure single = MeasurePredictor(predictor, net, limit, 1, flags.predict_calls, flags.repetitions);
  const Figure batched = MeasurePredictor(predictor, net, limit, flags.max_batch_size,
                                          std::max<int64_t>(3, flags.predict_calls / 16), flags.repetitions);
  figures.push_back(single);
  figures.push_back(batched);
  const serving::Predictor program(version_dir);
  figures.push_back(MeasureProgram(program, predictor, net, 1, flags.predict_calls, flags.repetitions));
  figures.push_back(MeasureProgram(program, predictor, net, flags.max_batch_size,
                                   std::max<int64_t>(3, flags.predict_calls / 16), flags.repetitions));
  for (Figure& figure : MeasureJsonDecoding(net, predictor.manifest(), flags.predict_calls, flags.repetitions))
    figures.push_back(std::move(figure));

  const std::vector<Figure> unbatched_server = MeasureServer(flags, base, /*batching=*/false, single.ours);
  const std::vector<Figure> batched_server =
      MeasureServer(flags, base, /*batching=*/true, batched.ours, flags.open_load);
  figures.insert(figures.end(), unbatched_server.begin(), unbatched_server.end());
  figures.insert(figures.end(), batched_server.begin(), batched_server.end());

  // At the most clients: batching's gain, and the batched p99 against 2 x the queue delay + one
  // batch's compute (the Predictor's p50 at the batcher's largest batch).
  const size_t most = static_cast<size_t>(
      std::max_element(flags.clients.begin(), flags.clients.end()) - flags.clients.begin());
  const std::string count = std::to_string(flags.clients[most]);
  const std::string who = Clients(flags.clients[most]);
  figures.push_back({"serve_batching_gain_" + count + "_clients", "est-serve batched vs unbatched, " + who,
                     "requests/s", batched_server[most].ours, unbatched_server[most].ours, ">= 3"});
  const double compute_ms = batched.extra["p50_ms"].get<double>();
  const double delay_ms = static_cast<double>(flags.max_queue_delay_us) / 1000;
  Figure bound{"serve_p99_bound_" + count + "_clients",
               "batched p99 vs 2 delays + batch, " + who, "ms",
               batched_server[most].extra["p99_ms"].get<double>(), 2 * delay_ms + compute_ms, "<= 1"};
  bound.extra = {{"max_queue_delay_ms", delay_ms}, {"batch_compute_ms", compute_ms}};
  figures.push_back(bound);
  if (flags.open_load > 0) {
    const Figure& open = *std::find_if(batched_server.begin(), batched_server.end(), [](const Figure& figure) {
      return figure.extra.at("open_loop_rate").get<double>() > 0;
    });
    Figure open_bound{"serve_p99_bound_open_" + count + "_clients",
                      "open-loop p99 vs 2 delays + batch, " + who, "ms", open.extra["p99_ms"].get<double>(),
                      2 * delay_ms + compute_ms, "<= 1"};
    open_bound.extra = bound.extra;
    open_bound.extra["open_loop_rate"] = open.extra["open_loop_rate"];
    figures.push_back(open_bound);
  }

  for (Figure& figure : MeasureHotReload(flags, estimator, base)) figures.push_back(std::move(figure));
  if (!flags.torchserve_venv.empty()) figures.push_back(MeasureTorchServe(flags, base, version_dir, dir.path));
  Print(figures, flags);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("serve_bench: the Predictor against hand-written LibTorch, est-serve under concurrent gRPC clients "
               "with and without dynamic batching, and hot reload under load (see apps/bench/run_benchmarks.py)",
               "serve_bench");
  Flags flags;
  AddFlags(app, flags);
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "serve_bench")) return *exit_status;
  try {
    return Run(flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_bench: error: %s\n", e.what());
    return 1;
  }
}
