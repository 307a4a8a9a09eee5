#include "serving/server_metrics.h"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "serving/model_registry.h"

namespace est::serving {
namespace {

/// `text` as a label value: backslash, quote and newline escaped.
std::string LabelValue(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

void Header(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

void ServerMetrics::record(const std::string& api, const std::string& code, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{api, code}];
  Latency& latency = latency_[api];
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) - kLatencyBounds.begin());
  ++latency.buckets[bucket];
  latency.sum += seconds;
  ++latency.count;
}

std::string ServerMetrics::text(const ModelRegistry& models) const {
  std::ostringstream out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Header(out, "est_serve_requests_total", "counter", "Calls answered, by API and status.");
    for (const auto& [key, count] : requests_)
      out << "est_serve_requests_total{api=\"" << LabelValue(key.first) << "\",code=\"" << LabelValue(key.second)
          << "\"} " << count << '\n';
    Header(out, "est_serve_request_duration_seconds", "histogram", "Time from a call's arrival to its answer.");
    for (const auto& [api, latency] : latency_) {
      int64_t cumulative = 0;
      for (size_t i = 0; i <= kLatencyBounds.size(); ++i) {
        cumulative += latency.buckets[i];
        out << "est_serve_request_duration_seconds_bucket{api=\"" << LabelValue(api) << "\",le=\"";
        if (i < kLatencyBounds.size())
          out << kLatencyBounds[i];
        else
          out << "+Inf";
        out << "\"} " << cumulative << '\n';
      }
      out << "est_serve_request_duration_seconds_sum{api=\"" << LabelValue(api) << "\"} " << latency.sum << '\n';
      out << "est_serve_request_duration_seconds_count{api=\"" << LabelValue(api) << "\"} " << latency.count << '\n';
    }
  }
  struct Counted {
    std::string label;  ///< {model="name"}
    BatchingStats batching;
    ServedModelStats stats;
    std::map<int64_t, std::shared_ptr<const Predictor>> versions;
  };
  std::vector<Counted> counted;
  for (const auto& [name, model] : models.models())
    counted.push_back({"model=\"" + LabelValue(name) + "\"", model->batching_stats(), model->stats(), model->versions()});
  Header(out, "est_serve_batches_total", "counter", "Model calls of the dynamic batcher.");
  for (const Counted& model : counted) out << "est_serve_batches_total{" << model.label << "} " << model.batching.batches << '\n';
  Header(out, "est_serve_batch_size", "histogram", "Examples in one model call of the dynamic batcher.");
  for (const Counted& model : counted) {
    int64_t cumulative = 0;
    for (size_t i = 0; i < model.batching.batch_sizes.size(); ++i) {
      cumulative += model.batching.batch_sizes[i];
      out << "est_serve_batch_size_bucket{" << model.label << ",le=\"";
      if (i < std::size(kBatchSizeBounds))
        out << kBatchSizeBounds[i];
      else
        out << "+Inf";
      out << "\"} " << cumulative << '\n';
    }
    out << "est_serve_batch_size_sum{" << model.label << "} " << model.batching.examples << '\n';
    out << "est_serve_batch_size_count{" << model.label << "} " << model.batching.batches << '\n';
  }
  Header(out, "est_serve_queue_depth", "gauge", "Requests waiting for a batch now.");
  for (const Counted& model : counted) out << "est_serve_queue_depth{" << model.label << "} " << model.batching.queued << '\n';
  Header(out, "est_serve_queue_refused_total", "counter", "Requests refused because the queue was full.");
  for (const Counted& model : counted)
    out << "est_serve_queue_refused_total{" << model.label << "} " << model.batching.refused << '\n';
  Header(out, "est_serve_reloads_total", "counter", "Versions loaded after the first, and versions that did not load.");
  for (const Counted& model : counted) {
    out << "est_serve_reloads_total{" << model.label << ",result=\"loaded\"} " << model.stats.reloads << '\n';
    out << "est_serve_reloads_total{" << model.label << ",result=\"failed\"} " << model.stats.failed_reloads << '\n';
  }
  Header(out, "est_serve_model_version", "gauge", "The newest version served, by model.");
  for (const Counted& model : counted)
    out << "est_serve_model_version{" << model.label << "} " << model.versions.rbegin()->first << '\n';
  Header(out, "est_serve_model_versions_loaded", "gauge", "How many versions are served, by model.");
  for (const Counted& model : counted)
    out << "est_serve_model_versions_loaded{" << model.label << "} " << model.versions.size() << '\n';
  return out.str();
}

}  // namespace est::serving
