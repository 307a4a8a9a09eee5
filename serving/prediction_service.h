#pragma once
/// TensorFlow Serving's gRPC PredictionService (Predict, Classify, Regress, GetModelMetadata)
/// over the served models, for clients written for TF Serving.

#include <string>
#include <vector>

#include "serving/inference_service.h"
#include "serving/proto/prediction_service.grpc.pb.h"

namespace est::serving::detail {

/// tensorflow.serving.PredictionService.
class PredictionService final : public tensorflow::serving::PredictionService::Service {
 public:
  explicit PredictionService(ServiceContext context) : context_(std::move(context)) {}

  grpc::Status Predict(grpc::ServerContext* context, const tf::PredictRequest* request,
                       tf::PredictResponse* response) override;
  grpc::Status GetModelMetadata(grpc::ServerContext* context, const tf::GetModelMetadataRequest* request,
                                tf::GetModelMetadataResponse* response) override;
  grpc::Status Classify(grpc::ServerContext* context, const tf::ClassificationRequest* request,
                        tf::ClassificationResponse* response) override;
  grpc::Status Regress(grpc::ServerContext* context, const tf::RegressionRequest* request,
                       tf::RegressionResponse* response) override;

  /// Predict past the token check, as the REST API's :predict makes it too, waiting until
  /// `deadline` at most.
  grpc::Status predict(const tf::PredictRequest& request, tf::PredictResponse& response,
                       std::chrono::steady_clock::time_point deadline) const;

  /// Classify past the token check (and the REST API's :classify): the examples' rows of the
  /// model's "scores" (else "probabilities") output, each class labelled by its index.
  /// FAILED_PRECONDITION for a model of neither output.
  grpc::Status classify(const tf::ClassificationRequest& request, tf::ClassificationResponse& response,
                        std::chrono::steady_clock::time_point deadline) const;
  /// Regress past the token check (and :regress): the examples' values of the model's "outputs",
  /// else "predictions", else its one float output of a value per example.
  grpc::Status regress(const tf::RegressionRequest& request, tf::RegressionResponse& response,
                       std::chrono::steady_clock::time_point deadline) const;

  /// GetModelStatus's answer: the status of the version `spec` names, or of every version
  /// served when it names none (TF Serving's NOT_FOUND otherwise).
  grpc::Status model_status(const tf::ModelSpec& spec, tf::GetModelStatusResponse& response) const;

  /// OK with the version `spec` names (by number or label; the newest when it names none) when
  /// it is served (TF Serving's NOT_FOUND, INVALID_ARGUMENT and FAILED_PRECONDITION otherwise).
  grpc::Status find(const tf::ModelSpec& spec, Servable& servable) const;
  /// The most bytes one input may decode to.
  int64_t max_request_bytes() const { return context_.max_request_bytes; }

 private:
  /// The examples of `input` run on the version `spec` names: the float values of the output
  /// Classify (`classify`) or Regress answers with, the spec of the version that answered, and
  /// (where asked) the export's names of the classes.
  grpc::Status examples_output(const tf::ModelSpec& spec, const tf::Input& input, bool classify,
                               std::chrono::steady_clock::time_point deadline, at::Tensor& values,
                               tf::ModelSpec& answered, std::vector<std::string>* class_labels = nullptr) const;

  const ServiceContext context_;
};

}  // namespace est::serving::detail
