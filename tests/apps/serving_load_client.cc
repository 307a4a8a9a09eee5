// serving_load_client: sends est-serve one scenario of Fashion-MNIST CNN requests and prints one
// parseable line of what happened; serving_memory_limit_test.sh runs it against est-serve inside
// a memory cgroup. A scenario is --requests requests of one --shape, sent at once, each on a
// connection of its own, over TF Serving's Predict (--protocol tf) or KServe v2's ModelInfer
// (--protocol kserve); their pixels are one float_val broadcast to the whole shape (--fill
// broadcast, TF Serving only: a request of a few bytes) or every value sent (--fill full:
// tensor_content, raw_input_contents). With --probe-interval-ms, 1-image requests are timed one
// after another on another connection while those run. Afterwards 1-image reference requests
// check every row of every answer.
//
//   serving_load_client --address HOST:PORT --protocol tf|kserve --shape N,1,28,28
//                       [--fill broadcast|full] [--requests K] [--probe-interval-ms P]
//                       [--probe-start-ms S] [--deadline-s D]
//
// Prints "serving_load_client: key=value ... message=<the first failure's message>"; exits 0 once
// the scenario is sent, whatever the server answered (UNAVAILABLE included), 1 for an error of its
// own, 2 for bad flags.

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/common/number_checks.h"
#include "apps/common/parse_flags.h"
#include "serving/proto/grpc_inference_service.grpc.pb.h"
#include "serving/proto/prediction_service.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kImagePixels = 28 * 28;
constexpr int64_t kClasses = 10;
/// Image k of a --fill full request is pattern k % kPatterns (PatternPixel).
constexpr int64_t kPatterns = 7;
/// The most a logit may differ from a 1-image request's: rows computed in batches of other sizes
/// differ by float rounding only.
constexpr double kTolerance = 1e-4;

struct Flags {
  std::string address;
  std::string protocol = "tf";
  std::string model = "fashion_mnist_cnn";
  std::vector<int64_t> shape;
  std::string fill = "full";
  float value = 0.5f;
  int64_t requests = 1;
  int64_t probe_interval_ms = 0;
  int64_t probe_start_ms = 300;
  double deadline_s = 300;
};

/// What one call answered: its status, and the logits it returned as [rows, kClasses].
struct Answer {
  grpc::Status status;
  std::vector<float> logits;
  int64_t rows = 0;
  double milliseconds = 0;
};

std::string CodeName(grpc::StatusCode code) {
  static const char* const names[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  const int index = static_cast<int>(code);
  return index >= 0 && index < 17 ? names[index] : "CODE_" + std::to_string(index);
}

/// Pixel `j` of pattern `k`: images that differ, so a row answered out of order shows.
float PatternPixel(int64_t k, int64_t j) { return static_cast<float>((k * 37 + j * 3) % 256) / 255.f; }

/// The pixels of `examples` images: image i is pattern i % kPatterns.
std::vector<float> PatternImages(int64_t examples, int64_t pixels_per_example) {
  std::vector<float> pixels(static_cast<size_t>(examples * pixels_per_example));
  if (pixels.empty()) return pixels;
  for (int64_t k = 0; k < std::min(examples, kPatterns); ++k)
    for (int64_t j = 0; j < pixels_per_example; ++j) pixels[k * pixels_per_example + j] = PatternPixel(k, j);
  for (int64_t i = kPatterns; i < examples; ++i)
    std::memcpy(&pixels[i * pixels_per_example], &pixels[(i % kPatterns) * pixels_per_example],
                pixels_per_example * sizeof(float));
  return pixels;
}

/// The elements of `shape`, at most int64's largest (sizes below 0 count as 0).
int64_t Product(const std::vector<int64_t>& shape) {
  if (std::any_of(shape.begin(), shape.end(), [](int64_t size) { return size <= 0; })) return 0;
  int64_t product = 1;
  for (int64_t size : shape)
    product =
        product > std::numeric_limits<int64_t>::max() / size ? std::numeric_limits<int64_t>::max() : product * size;
  return product;
}

/// A channel of its own (its own TCP connection: gRPC shares one between channels otherwise),
/// taking answers of any size.
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address) {
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
}

/// A request of one protocol, built once and sent on any channel.
class Request {
 public:
  virtual ~Request() = default;
  virtual Answer send(const std::shared_ptr<grpc::Channel>& channel,
                      std::chrono::system_clock::time_point deadline) const = 0;
};

class PredictRequest : public Request {
 public:
  PredictRequest(const Flags& flags, const std::vector<int64_t>& shape, const std::vector<float>* pixels) {
    request_.mutable_model_spec()->set_name(flags.model);
    request_.add_output_filter("logits");
    auto& input = (*request_.mutable_inputs())["image"];
    input.set_dtype(est::serving::tf::DT_FLOAT);
    for (int64_t size : shape) input.mutable_tensor_shape()->add_dim()->set_size(size);
    if (pixels == nullptr)
      input.add_float_val(flags.value);
    else
      input.set_tensor_content(
          std::string(reinterpret_cast<const char*>(pixels->data()), pixels->size() * sizeof(float)));
  }

  Answer send(const std::shared_ptr<grpc::Channel>& channel,
              std::chrono::system_clock::time_point deadline) const override {
    grpc::ClientContext context;
    context.set_deadline(deadline);
    est::serving::tf::PredictResponse response;
    Answer answer;
    answer.status = tensorflow::serving::PredictionService::NewStub(channel)->Predict(&context, request_, &response);
    if (!answer.status.ok()) return answer;
    const auto found = response.outputs().find("logits");
    if (found == response.outputs().end()) {
      answer.status = grpc::Status(grpc::StatusCode::DATA_LOSS, "the answer has no output 'logits'");
      return answer;
    }
    const std::string& bytes = found->second.tensor_content();
    answer.logits.resize(bytes.size() / sizeof(float));
    std::memcpy(answer.logits.data(), bytes.data(), answer.logits.size() * sizeof(float));
    const auto& dims = found->second.tensor_shape().dim();
    answer.rows = dims.empty() ? 0 : dims[0].size();
    return answer;
  }

 private:
  est::serving::tf::PredictRequest request_;
};

class InferRequest : public Request {
 public:
  InferRequest(const Flags& flags, const std::vector<int64_t>& shape, const std::vector<float>& pixels) {
    request_.set_model_name(flags.model);
    request_.add_outputs()->set_name("logits");
    auto* input = request_.add_inputs();
    input->set_name("image");
    input->set_datatype("FP32");
    for (int64_t size : shape) input->add_shape(size);
    request_.add_raw_input_contents(
        std::string(reinterpret_cast<const char*>(pixels.data()), pixels.size() * sizeof(float)));
  }

  Answer send(const std::shared_ptr<grpc::Channel>& channel,
              std::chrono::system_clock::time_point deadline) const override {
    grpc::ClientContext context;
    context.set_deadline(deadline);
    est::serving::v2::ModelInferResponse response;
    Answer answer;
    answer.status = inference::GRPCInferenceService::NewStub(channel)->ModelInfer(&context, request_, &response);
    if (!answer.status.ok()) return answer;
    for (int i = 0; i < response.outputs_size(); ++i) {
      if (response.outputs(i).name() != "logits" || i >= response.raw_output_contents_size()) continue;
      const std::string& bytes = response.raw_output_contents(i);
      answer.logits.resize(bytes.size() / sizeof(float));
      std::memcpy(answer.logits.data(), bytes.data(), answer.logits.size() * sizeof(float));
      answer.rows = response.outputs(i).shape_size() > 0 ? response.outputs(i).shape(0) : 0;
      return answer;
    }
    answer.status =
        grpc::Status(grpc::StatusCode::DATA_LOSS, "the answer has no output 'logits' in raw_output_contents");
    return answer;
  }

 private:
  est::serving::v2::ModelInferRequest request_;
};

/// The request of `shape` the flags describe; `pixels` for --fill full (nullptr: broadcast).
std::unique_ptr<Request> MakeRequest(const Flags& flags, const std::vector<int64_t>& shape,
                                     const std::vector<float>* pixels) {
  if (flags.protocol == "tf") return std::make_unique<PredictRequest>(flags, shape, pixels);
  return std::make_unique<InferRequest>(flags, shape, *pixels);
}

Answer Timed(const Request& request, const std::shared_ptr<grpc::Channel>& channel, double deadline_s) {
  const auto start = Clock::now();
  Answer answer = request.send(
      channel, std::chrono::system_clock::now() + std::chrono::microseconds(static_cast<int64_t>(deadline_s * 1e6)));
  answer.milliseconds = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return answer;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string Joined(const std::vector<int64_t>& values) {
  std::string joined;
  for (int64_t value : values) joined += (joined.empty() ? "" : ",") + std::to_string(value);
  return joined;
}

/// The most any logit of `answer` differs from the reference row of its pattern (row i against
/// reference row i % `patterns`); infinity when it has not the rows expected, NaN for a NaN.
double LargestDifference(const Answer& answer, int64_t rows, const std::vector<float>& reference, int64_t patterns) {
  if (answer.rows != rows || static_cast<int64_t>(answer.logits.size()) != rows * kClasses)
    return std::numeric_limits<double>::infinity();
  double largest = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < kClasses; ++c) {
      const double difference =
          std::abs(static_cast<double>(answer.logits[i * kClasses + c]) - reference[(i % patterns) * kClasses + c]);
      if (!(difference <= largest)) largest = difference;  // a NaN sticks
    }
  return largest;
}

int Run(const Flags& flags) {
  if (flags.fill == "broadcast" && flags.protocol != "tf") {
    std::fprintf(stderr, "serving_load_client: error: --fill broadcast is TF Serving's float_val; use --protocol tf\n");
    return 2;
  }
  const int64_t elements = Product(flags.shape);
  const int64_t examples = flags.shape.empty() ? 0 : flags.shape[0];
  const int64_t pixels_per_example = examples > 0 ? elements / examples : 0;
  if (flags.fill == "full" && elements > (int64_t{1} << 29)) {
    std::fprintf(stderr, "serving_load_client: error: --shape %s holds %lld values; --fill full sends at most 2^29\n",
                 Joined(flags.shape).c_str(), static_cast<long long>(elements));
    return 2;
  }
  std::vector<float> pixels;
  if (flags.fill == "full") pixels = PatternImages(examples, pixels_per_example);
  const auto load = MakeRequest(flags, flags.shape, flags.fill == "full" ? &pixels : nullptr);

  std::vector<Answer> answers(static_cast<size_t>(flags.requests));
  std::vector<std::thread> senders;
  std::atomic<int64_t> running{flags.requests};
  const auto start = Clock::now();
  for (int64_t r = 0; r < flags.requests; ++r)
    senders.emplace_back([&, r] {
      auto channel = OwnChannel(flags.address);
      answers[r] = Timed(*load, channel, flags.deadline_s);
      --running;
    });

  // 1-image probes, pattern 0, one after another while the load runs.
  const std::vector<float> one_image = PatternImages(1, kImagePixels);
  const auto probe = MakeRequest(flags, {1, 1, 28, 28}, flags.fill == "full" ? &one_image : nullptr);
  std::vector<Answer> probes;
  if (flags.probe_interval_ms > 0) {
    auto channel = OwnChannel(flags.address);
    const auto first = start + std::chrono::milliseconds(flags.probe_start_ms);
    while (running > 0 && Clock::now() < first) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    while (running > 0) {
      probes.push_back(Timed(*probe, channel, flags.deadline_s));
      std::this_thread::sleep_for(std::chrono::milliseconds(flags.probe_interval_ms));
    }
  }
  for (auto& sender : senders) sender.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // References, sent alone afterwards: the patterns' images (or the broadcast value) in one request.
  const int64_t patterns = flags.fill == "full" ? kPatterns : 1;
  const std::vector<float> reference_pixels = PatternImages(patterns, kImagePixels);
  const auto reference_request =
      MakeRequest(flags, {patterns, 1, 28, 28}, flags.fill == "full" ? &reference_pixels : nullptr);
  auto channel = OwnChannel(flags.address);
  const Answer reference = Timed(*reference_request, channel, flags.deadline_s);

  int64_t ok = 0;
  const Answer* failure = nullptr;
  double largest = 0;
  int64_t checked = 0;
  const bool checkable =
      reference.status.ok() && reference.rows == patterns && examples > 0 && pixels_per_example == kImagePixels;
  for (const Answer& answer : answers) {
    if (!answer.status.ok()) {
      if (failure == nullptr) failure = &answer;
      continue;
    }
    ++ok;
    if (!checkable) continue;
    const double difference = LargestDifference(answer, examples, reference.logits, patterns);
    if (!(difference <= largest)) largest = difference;
    ++checked;
  }
  int64_t probes_failed = 0;
  std::vector<double> probe_ms;
  for (const Answer& answer : probes) {
    probe_ms.push_back(answer.milliseconds);
    if (!answer.status.ok() ||
        (reference.status.ok() && !(LargestDifference(answer, 1, reference.logits, patterns) <= kTolerance)))
      ++probes_failed;
  }
  const char* check = checked == 0 ? "none" : largest <= kTolerance ? "ok" : "failed";

  std::ostringstream line;
  line << "serving_load_client: protocol=" << flags.protocol << " shape=" << Joined(flags.shape)
       << " fill=" << flags.fill << " requests=" << flags.requests << " ok=" << ok
       << " code=" << CodeName(failure ? failure->status.error_code() : grpc::StatusCode::OK) << " seconds=" << seconds
       << " check=" << check << " max_diff=" << largest << " probes=" << probes.size()
       << " probes_failed=" << probes_failed << " probe_ms_median=" << Median(probe_ms)
       << " probe_ms_max=" << (probe_ms.empty() ? 0 : *std::max_element(probe_ms.begin(), probe_ms.end()))
       << " reference=" << CodeName(reference.status.error_code()) << " logits=";
  for (int64_t c = 0;
       c < kClasses && reference.status.ok() && static_cast<int64_t>(reference.logits.size()) >= kClasses; ++c)
    line << (c ? "," : "") << reference.logits[c];
  line << " message="
       << (failure                 ? OneLine(failure->status.error_message())
           : reference.status.ok() ? ""
                                   : OneLine(reference.status.error_message()));
  std::printf("%s\n", line.str().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("serving_load_client: send est-serve one scenario of Fashion-MNIST CNN requests", "serving_load_client");
  Flags flags;
  app.add_option("--address", flags.address, "est-serve's HOST:PORT")->required();
  app.add_option("--protocol", flags.protocol,
                 "tf (PredictionService/Predict) or kserve (GRPCInferenceService/ModelInfer)")
      ->check(CLI::IsMember({"tf", "kserve"}))
      ->capture_default_str();
  app.add_option("--model", flags.model, "The model name the requests ask for")->capture_default_str();
  app.add_option("--shape", flags.shape, "The input's shape, e.g. 21399,1,28,28")->required()->delimiter(',');
  app.add_option("--fill", flags.fill,
                 "broadcast: one float_val (--value) for the whole shape (tf only); full: every pixel sent")
      ->check(CLI::IsMember({"broadcast", "full"}))
      ->capture_default_str();
  app.add_option("--value", flags.value, "The broadcast pixel value")->capture_default_str();
  app.add_option("--requests", flags.requests, "Requests sent at once, each on a connection of its own")
      ->check(est_apps::IntegerIn<int64_t>(1, 256))
      ->capture_default_str();
  app.add_option("--probe-interval-ms", flags.probe_interval_ms,
                 "Time 1-image requests, this far apart, while the requests run; 0: none")
      ->check(est_apps::IntegerIn<int64_t>(0, 60'000))
      ->capture_default_str();
  app.add_option("--probe-start-ms", flags.probe_start_ms, "When the first probe goes, after the requests")
      ->check(est_apps::IntegerIn<int64_t>(0, 600'000))
      ->capture_default_str();
  app.add_option("--deadline-s", flags.deadline_s, "Each call's deadline, seconds")
      ->check(est_apps::NumberIn(0, 86'400, "a number of seconds", true))
      ->capture_default_str();
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "serving_load_client")) return *exit_status;
  try {
    return Run(flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serving_load_client: error: %s\n", e.what());
    return 1;
  }
}
