#pragma once
/// gRPC's own log lines go to ours, at debug level: what a user needs from the store comes
/// as our errors and warnings, which name the store, the peer and the job.

namespace est::net {

/// Routes gRPC's log to Log() at debug level, once per process; the user's GRPC_VERBOSITY
/// or GRPC_TRACE, when set, leave gRPC's own logging as it is.
void RouteGrpcLogs();

}  // namespace est::net
