#include "distribute/rendezvous/listener_filter.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/error.h"

// The filter is classic BPF run by the kernel on every packet that reaches the socket:
// a listening socket sees the SYN that opens a connection, so a dropped SYN never becomes
// a connection. Loads at SKF_NET_OFF read the IP header (the packet data starts at TCP's):
//
//   version = ip[0] >> 4
//   IPv4: accept when ip[16..20) (destination) is one of the host's IPv4 addresses
//   IPv6: accept when ip[24..40) (destination) is one of the host's IPv6 addresses
//   otherwise drop

namespace est::distribute {
namespace {

struct HostAddresses {
  std::vector<uint32_t> v4;                     ///< host byte order
  std::vector<std::array<uint32_t, 4>> v6;      ///< four words, host byte order
  bool wildcard = false;
};

HostAddresses Resolve(uint16_t port, const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  EST_CHECK(error == 0, CommunicationError, "TCP store port ", port, ": cannot resolve the chief's host '", host,
            "' to confine the store to it: ", ::gai_strerror(error));
  HostAddresses addresses;
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_family == AF_INET) {
      const uint32_t address = ntohl(reinterpret_cast<const sockaddr_in*>(entry->ai_addr)->sin_addr.s_addr);
      addresses.wildcard = addresses.wildcard || address == INADDR_ANY;
      addresses.v4.push_back(address);
    } else if (entry->ai_family == AF_INET6) {
      const in6_addr& address = reinterpret_cast<const sockaddr_in6*>(entry->ai_addr)->sin6_addr;
      addresses.wildcard = addresses.wildcard || IN6_IS_ADDR_UNSPECIFIED(&address);
      std::array<uint32_t, 4> words{};
      for (size_t i = 0; i < 4; ++i) {
        uint32_t word;
        std::memcpy(&word, address.s6_addr + 4 * i, 4);
        words[i] = ntohl(word);
      }
      addresses.v6.push_back(words);
    }
  }
  ::freeaddrinfo(found);
  return addresses;
}

// A classic BPF program with forward jumps to two labels, "accept" and "drop", and to the
// start of the next candidate address.
class Program {
 public:
  void Load(uint16_t size, int32_t offset) {
    code_.push_back(BPF_STMT(static_cast<uint16_t>(BPF_LD | size | BPF_ABS), static_cast<uint32_t>(offset)));
  }
  void And(uint32_t mask) { code_.push_back(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask)); }
  // Jumps to the instruction at index `if_equal` or `otherwise` (both later ones).
  void JumpIfEqual(uint32_t value, size_t if_equal, size_t otherwise) {
    const size_t next = code_.size() + 1;
    EST_ASSERT(if_equal >= next && otherwise >= next && if_equal - next < 256 && otherwise - next < 256,
               "socket filter jump out of range");
    code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, static_cast<uint8_t>(if_equal - next),
                             static_cast<uint8_t>(otherwise - next)));
  }
  void Return(uint32_t value) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, value)); }
  size_t size() const { return code_.size(); }
  std::vector<sock_filter>& code() { return code_; }

 private:
  std::vector<sock_filter> code_;
};

// Instructions the checks take, so that jump targets are known before they are emitted.
constexpr size_t kHeader = 4;  // load version byte, mask, jump IPv4, jump IPv6
size_t V4Length(const HostAddresses& a) { return 1 + a.v4.size() + 1; }  // load, compares, jump-to-drop
size_t V6Length(const HostAddresses& a) { return a.v6.size() * 8 + 1; }  // (load, compare) x 4 each, drop

std::vector<sock_filter> BuildFilter(const HostAddresses& addresses) {
  const size_t v4_start = kHeader;
  const size_t v6_start = v4_start + V4Length(addresses);
  const size_t accept = v6_start + V6Length(addresses);
  const size_t drop = accept + 1;
  Program program;
  program.Load(BPF_B, SKF_NET_OFF);
  program.And(0xf0);
  program.JumpIfEqual(0x40, v4_start, program.size() + 1);
  program.JumpIfEqual(0x60, v6_start, drop);
  program.Load(BPF_W, SKF_NET_OFF + 16);
  for (uint32_t address : addresses.v4) program.JumpIfEqual(address, accept, program.size() + 1);
  program.JumpIfEqual(0, drop, drop);  // an unconditional jump to drop, within range
  for (const auto& words : addresses.v6) {
    const size_t next_address = program.size() + 8;
    for (size_t i = 0; i < 4; ++i) {
      program.Load(BPF_W, SKF_NET_OFF + 24 + static_cast<int32_t>(4 * i));
      program.JumpIfEqual(words[i], i == 3 ? accept : program.size() + 1, next_address);
    }
  }
  program.JumpIfEqual(0, drop, drop);
  EST_ASSERT(program.size() == accept, "socket filter layout");
  program.Return(0xffffffffu);
  program.Return(0);
  return std::move(program.code());
}

// Whether `fd` is a listening TCP socket on `port` bound to every interface.
bool IsWildcardListener(int fd, uint16_t port) {
  int listening = 0;
  socklen_t length = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || listening == 0) return false;
  sockaddr_storage address{};
  length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    return ntohs(in.sin_port) == port && in.sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    return ntohs(in6.sin6_port) == port && IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr);
  }
  return false;
}

// This process's listening sockets on `port` bound to every interface.
std::vector<int> WildcardListeners(uint16_t port) {
  std::vector<int> listeners;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    if (IsWildcardListener(fd, port)) listeners.push_back(fd);
  }
  return listeners;
}

}  // namespace

void ConfineListenerToHost(uint16_t port, const std::string& host) {
  const HostAddresses addresses = Resolve(port, host);
  if (addresses.wildcard) return;
  std::vector<sock_filter> code = BuildFilter(addresses);
  sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
  const std::vector<int> listeners = WildcardListeners(port);
  EST_CHECK(!listeners.empty(), CommunicationError, "TCP store port ", port,
            ": found no listening socket bound to every interface on that port to confine to '", host, "'");
  for (int fd : listeners) {
    EST_CHECK(::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) == 0, CommunicationError,
              "TCP store port ", port, ": the kernel refused the socket filter that confines the store to '", host,
              "': ", std::strerror(errno));
  }
}

void LimitListenerIoTime(uint16_t port, std::chrono::milliseconds limit) {
  const std::vector<int> listeners = WildcardListeners(port);
  EST_CHECK(!listeners.empty(), CommunicationError, "TCP store port ", port,
            ": found no listening socket bound to every interface on that port to limit its I/O time");
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(limit).count();
  timeval time{static_cast<time_t>(micros / 1000000), static_cast<suseconds_t>(micros % 1000000)};
  for (int fd : listeners) {
    for (int option : {SO_RCVTIMEO, SO_SNDTIMEO}) {
      EST_CHECK(::setsockopt(fd, SOL_SOCKET, option, &time, sizeof(time)) == 0, CommunicationError, "TCP store port ",
                port, ": the kernel refused an I/O timeout on its listening socket: ", std::strerror(errno));
    }
  }
}

}  // namespace est::distribute
