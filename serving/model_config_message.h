#pragma once
/// The models of TensorFlow Serving's ModelServerConfig message, as a model config file and
/// ModelService.HandleReloadConfigRequest carry it (internal to serving/).

#include <string>
#include <vector>

#include "serving/model_config.h"
#include "serving/proto/model_server_config.pb.h"

namespace est::serving {

/// The models `message` names, a relative base path taken from `folder` (kept as it is when
/// `folder` is empty); ConfigError beginning with `what` (where the message came from) as
/// ParseModelConfig's.
std::vector<ModelConfig> ModelConfigsOf(const tf::ModelServerConfig& message, const std::string& folder,
                                        const std::string& what);

}  // namespace est::serving
