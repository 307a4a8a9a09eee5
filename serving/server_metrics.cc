#include "serving/server_metrics.h"

#include <algorithm>
#include <sstream>

#include "serving/served_model.h"

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

std::string ServerMetrics::text(const std::string& name, const ServedModel& model) const {
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
  const BatchingStats batching = model.batching_stats();
  const std::string label = "{model=\"" + LabelValue(name) + "\"}";
  Header(out, "est_serve_batches_total", "counter", "Model calls of the dynamic batcher.");
  out << "est_serve_batches_total" << label << ' ' << batching.batches << '\n';
  Header(out, "est_serve_batch_size", "histogram", "Examples in one model call of the dynamic batcher.");
  int64_t cumulative = 0;
  for (size_t i = 0; i < batching.batch_sizes.size(); ++i) {
    cumulative += batching.batch_sizes[i];
    out << "est_serve_batch_size_bucket{model=\"" << LabelValue(name) << "\",le=\"";
    if (i < std::size(kBatchSizeBounds))
      out << kBatchSizeBounds[i];
    else
      out << "+Inf";
    out << "\"} " << cumulative << '\n';
  }
  out << "est_serve_batch_size_sum" << label << ' ' << batching.examples << '\n';
  out << "est_serve_batch_size_count" << label << ' ' << batching.batches << '\n';
  Header(out, "est_serve_queue_depth", "gauge", "Requests waiting for a batch now.");
  out << "est_serve_queue_depth" << label << ' ' << batching.queued << '\n';
  Header(out, "est_serve_queue_refused_total", "counter", "Requests refused because the queue was full.");
  out << "est_serve_queue_refused_total" << label << ' ' << batching.refused << '\n';
  const ServedModelStats stats = model.stats();
  Header(out, "est_serve_reloads_total", "counter", "New versions served, and versions that did not load.");
  out << "est_serve_reloads_total{model=\"" << LabelValue(name) << "\",result=\"loaded\"} " << stats.reloads << '\n';
  out << "est_serve_reloads_total{model=\"" << LabelValue(name) << "\",result=\"failed\"} " << stats.failed_reloads
      << '\n';
  Header(out, "est_serve_model_version", "gauge", "The version served, by model.");
  out << "est_serve_model_version" << label << ' ' << model.current()->version() << '\n';
  return out.str();
}

}  // namespace est::serving
