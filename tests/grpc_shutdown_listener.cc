// Test programs that use gRPC hold one reference to the library for the whole run and drop it
// with grpc_shutdown_blocking() at the end: gRPC otherwise frees what the last channels and
// servers leave (a TLS handshake cut short, its OpenSSL state) on a thread of its own after
// main returns, and LeakSanitizer, checking at exit, would sometimes find it still allocated.

#include <grpc/grpc.h>

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener base class
#include <catch2/catch.hpp>

namespace {

class GrpcShutdownListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testRunStarting(const Catch::TestRunInfo& info) override {
    grpc_init();
    TestEventListenerBase::testRunStarting(info);
  }
  void testRunEnded(const Catch::TestRunStats& stats) override {
    TestEventListenerBase::testRunEnded(stats);
    grpc_shutdown_blocking();
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(GrpcShutdownListener)
