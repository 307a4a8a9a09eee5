#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// LeakSanitizer (sanitizer builds): allocations of OpenSSL are left out of leak reports. gRPC
// leaves the OpenSSL state of a TLS handshake cut short (a client that does not trust the
// server's authority) allocated at exit, now and then, with no frame of ours; this project
// calls OpenSSL only through gRPC.
extern "C" const char* __lsan_default_suppressions() { return "leak:CRYPTO_zalloc\n"; }
