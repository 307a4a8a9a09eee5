#include "estimator/eval_result.h"

#include <vector>

#include "common/error.h"
#include "common/quoted_text.h"

namespace est {

EvalResult EvalResult::NotEvaluated(std::string why) {
  EvalResult result;
  result.not_evaluated_because_ = std::move(why);
  return result;
}

double EvalResult::at(const std::string& name) const {
  const auto found = find(name);
  if (found != end()) return found->second;
  EST_CHECK(evaluated(), ModelError, "no metric '", name, "' in the result of train_and_evaluate: ",
            not_evaluated_because_, ". Check result.evaluated() before reading a metric");
  std::vector<std::string> present;
  for (const auto& entry : *this) present.push_back(entry.first);
  EST_THROW(ModelError, "no metric '", name, "' in this evaluation's results; they hold ",
            present.empty() ? std::string("none") : QuotedList(present),
            " (model_fn's EstimatorSpec::Eval metrics, 'loss' and 'global_step')");
}

}  // namespace est
