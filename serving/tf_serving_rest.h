#pragma once
/// TensorFlow Serving's REST API over the gRPC service's calls, as its documentation writes it:
/// model status and metadata (/v1/models/NAME[/versions/V|/labels/L][/metadata]), :predict in
/// the row ("instances") and columnar ("inputs") formats, and :classify and :regress of examples.

#include <chrono>
#include <optional>

#include "net/http_server.h"
#include "estimator/export/export_manifest.h"
#include "serving/prediction_service.h"
#include "serving/proto/tf_serving.pb.h"

namespace est::serving {

/// Decodes a :predict body (TensorFlow Serving's row or columnar format) into `request`'s
/// inputs (and signature name), each input's dtype the signature's in `manifest`; true for the
/// row format. RequestError naming what is wrong; nothing beyond `max_bytes` per input is
/// allocated.
bool DecodePredictJson(const std::string& body, const ExportManifest& manifest, int64_t max_bytes,
                       tf::PredictRequest& request);

namespace detail {

/// The /v1 routes.
class TfServingRest {
 public:
  explicit TfServingRest(const PredictionService& service) : service_(service) {}

  /// The answer to `request` when its path is under /v1/; nullopt otherwise. Errors are
  /// {"error": "<message>"} with the HTTP status of the call's gRPC status. A :predict waits
  /// for the model until `deadline` at most.
  std::optional<net::HttpResponse> handle(const net::HttpRequest& request,
                                          std::chrono::steady_clock::time_point deadline) const;

 private:
  /// :classify (`classify`) or :regress.
  net::HttpResponse examples(const net::HttpRequest& request, tf::ModelSpec spec, bool classify,
                             std::chrono::steady_clock::time_point deadline) const;
  net::HttpResponse predict(const net::HttpRequest& request, const tf::ModelSpec& spec,
                            std::chrono::steady_clock::time_point deadline) const;

  const PredictionService& service_;
};

}  // namespace detail
}  // namespace est::serving
