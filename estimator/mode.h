#pragma once
/// Mode: what model_fn is asked to build (tf.estimator.ModeKeys).

namespace est {

/// The three modes of an Estimator, as tf.estimator.ModeKeys.
enum class Mode { kTrain, kEval, kPredict };

/// A mode's name as the API spells it, for messages: "Mode::kTrain", "Mode::kEval" or
/// "Mode::kPredict".
inline const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kTrain: return "Mode::kTrain";
    case Mode::kEval: return "Mode::kEval";
    case Mode::kPredict: return "Mode::kPredict";
  }
  return "an unknown mode";
}

}  // namespace est
