#pragma once
/// EvalResult: what an evaluation gives (TensorFlow's dict of metrics), and what a task of
/// train_and_evaluate that does not evaluate gives instead.

#include <map>
#include <string>
#include <utility>

namespace est {

/// Evaluation results: every metric, "loss" and "global_step", by name. Reading a metric
/// that is not there (at() or operator[]) is a ModelError naming it and the metrics present.
/// A task of a cluster's train_and_evaluate other than the evaluator (the chief, a worker, a
/// ps task) gets a result with no metrics whose evaluated() is false: reading one says that
/// the evaluator task evaluates and where its results are.
class EvalResult : public std::map<std::string, double> {
 public:
  using Map = std::map<std::string, double>;
  using Map::Map;
  EvalResult() = default;
  /// The results `metrics`.
  EvalResult(Map metrics) : Map(std::move(metrics)) {}  // NOLINT: implicit, as a std::map converts

  /// A result of a task that did not evaluate; `why` says which task does and where its
  /// results are.
  static EvalResult NotEvaluated(std::string why);

  /// False for a task that did not evaluate (see NotEvaluated).
  bool evaluated() const { return not_evaluated_because_.empty(); }
  /// Why this task did not evaluate; empty where it did.
  const std::string& not_evaluated_because() const { return not_evaluated_because_; }

  /// The value of metric `name`; a ModelError where there is none (see the class comment).
  double at(const std::string& name) const;
  /// The value of metric `name`, as at(): reading never inserts.
  double operator[](const std::string& name) const { return at(name); }

 private:
  std::string not_evaluated_because_;
};

}  // namespace est
