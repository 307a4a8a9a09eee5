#pragma once
/// Errors of TorchEstimator: a user-input tier (est::Error subclasses with an actionable
/// message, thrown by EST_CHECK) and an internal-invariant tier (EST_ASSERT).

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace est {

/// Base of every error caused by user input, configuration or the environment.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Invalid configuration: flags, RunConfig fields, TF_CONFIG, specs.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// Missing, truncated or malformed input data, or an input pipeline misused.
class DataError : public Error {
 public:
  using Error::Error;
};

/// A checkpoint that cannot be written, read, verified or restored.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

/// A peer or transport failure in a collective or the rendezvous.
class CommunicationError : public Error {
 public:
  using Error::Error;
};

/// A wait that ran past its deadline.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

/// A model_fn that produced an invalid spec, a non-scalar loss, or a NaN/Inf loss.
class ModelError : public Error {
 public:
  using Error::Error;
};

/// A file-system operation that failed: the message names the path and the OS error.
class IoError : public Error {
 public:
  using Error::Error;
};

/// A run stopped early by SIGTERM, SIGINT or SIGHUP (see StopSignalGuard), after the chief saved a
/// checkpoint. Programs exit with status 128 + signal_number(), as a shell reports a signal.
class Interrupted : public Error {
 public:
  Interrupted(const std::string& message, int signal_number) : Error(message), signal_number_(signal_number) {}
  /// The signal that stopped the run (SIGTERM, SIGINT or SIGHUP).
  int signal_number() const { return signal_number_; }

 private:
  int signal_number_;
};

/// A broken internal invariant: a bug in TorchEstimator, never the user's input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Every argument streamed into one string, as the EST_CHECK family builds its messages.
template <typename... Args>
std::string Concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

}  // namespace est

/// Throws ErrorType(message parts...) when cond is false. For user input.
#define EST_CHECK(cond, ErrorType, ...)                                   \
  do {                                                                    \
    if (!(cond)) throw ErrorType(::est::Concat(__VA_ARGS__));     \
  } while (false)

/// Throws ErrorType(message parts...) unconditionally.
#define EST_THROW(ErrorType, ...) throw ErrorType(::est::Concat(__VA_ARGS__))

/// Checks an internal invariant; a failure is a bug and names the source line.
#define EST_ASSERT(cond, ...)                                                        \
  do {                                                                               \
    if (!(cond))                                                                     \
      throw ::est::InternalError(::est::Concat(                              \
          __FILE__, ":", __LINE__, ": internal error: ", #cond, " ", ##__VA_ARGS__)); \
  } while (false)
