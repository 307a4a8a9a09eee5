#include "distribute/parameter_server/optimizer_agreement.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <sstream>

namespace est::distribute {
namespace {

/// One option's value as a user wrote it: 0.01, true, "Adam".
std::string FieldText(const google::protobuf::Message& message, const google::protobuf::FieldDescriptor& field) {
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  std::ostringstream text;
  switch (field.cpp_type()) {
    case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE:
      text << reflection.GetDouble(message, &field);
      break;
    case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
      text << (reflection.GetBool(message, &field) ? "true" : "false");
      break;
    case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
      text << reflection.GetString(message, &field);
      break;
    default:
      text << "(a value)";
  }
  return text.str();
}

}  // namespace

std::string OptimizerDifference(const ps::OptimizerConfig& a, const ps::OptimizerConfig& b) {
  const google::protobuf::Descriptor& descriptor = *ps::OptimizerConfig::descriptor();
  std::string difference;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& field = *descriptor.field(i);
    const std::string left = FieldText(a, field);
    const std::string right = FieldText(b, field);
    if (left == right) continue;
    difference += (difference.empty() ? "" : ", ") + field.name() + " " + left + " and " + right;
  }
  return difference;
}

std::string OptimizerAgreement::check(uint32_t worker, int64_t step,
                                      const std::map<uint32_t, ps::OptimizerConfig>& optimizers,
                                      const std::function<std::string(uint32_t shard)>& shard_name) {
  std::map<uint32_t, Pushed>& pushed = by_step_[step];
  for (const auto& [shard, options] : optimizers) {
    auto earlier = pushed.find(shard);
    if (earlier == pushed.end() || earlier->second.worker == worker) continue;
    const std::string difference = OptimizerDifference(earlier->second.options, options);
    if (difference.empty()) continue;
    return "the optimizers of the workers differ: at global step " + std::to_string(step) + ", " + shard_name(shard) +
           " is stepped by worker " + std::to_string(earlier->second.worker) + " and worker " +
           std::to_string(worker) + " with " + difference +
           ". Every worker's model_fn must build the same optimizer (a learning-rate schedule must depend on the "
           "global step alone)";
  }
  for (const auto& [shard, options] : optimizers) pushed.try_emplace(shard, Pushed{worker, options});
  while (by_step_.size() > kStepsKept) by_step_.erase(by_step_.begin());
  return "";
}

}  // namespace est::distribute
