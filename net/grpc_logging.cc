#include "net/grpc_logging.h"

#include <grpc/support/log.h>

#include <cstdlib>
#include <mutex>

#include "common/logging.h"

namespace est::net {
namespace {

void LogGrpcLine(gpr_log_func_args* line) {
  Log().debug("gRPC {}:{}: {}", line->file, line->line, line->message);
}

}  // namespace

void RouteGrpcLogs() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("GRPC_VERBOSITY") != nullptr || std::getenv("GRPC_TRACE") != nullptr) return;
    Log();  // made here, not by a gRPC thread that logs first while the process exits
    gpr_set_log_function(LogGrpcLine);
  });
}

}  // namespace est::net
