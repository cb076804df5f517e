// The network of a multi-process job. Supervisor process, main thread.
#include "supervisor/preflight/network_probe.h"

#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

#include "common/file_descriptor.h"
#include "supervisor/preflight/command_line.h"
#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {
namespace {

struct AddrInfoFree {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoFree>;

// getaddrinfo in a thread of its own, given up on after kResolveTimeoutMs (a resolver that does
// not answer): the thread is left to end on its own.
AddrInfo resolve(const std::string& host) {
  auto task = std::make_shared<std::promise<addrinfo*>>();
  std::future<addrinfo*> result = task->get_future();
  std::thread([task, host] {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) found = nullptr;
    task->set_value(found);
  }).detach();
  if (result.wait_for(std::chrono::milliseconds(kResolveTimeoutMs)) != std::future_status::ready) {
    return nullptr;
  }
  return AddrInfo(result.get());
}

sockaddr_storage with_port(const sockaddr* address, socklen_t size, int port) {
  sockaddr_storage copy{};
  memcpy(&copy, address, size);
  if (copy.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&copy)->sin_port = htons(static_cast<uint16_t>(port));
  } else if (copy.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&copy)->sin6_port = htons(static_cast<uint16_t>(port));
  }
  return copy;
}

// Binds `port` on `address` as a rendezvous store would (SO_REUSEADDR: a connection of an
// earlier job in TIME_WAIT does not hold it). True when it bound; `local` false when the address
// is not this machine's.
bool port_free(const sockaddr* address, socklen_t size, int port, bool& local) {
  sockaddr_storage copy = with_port(address, size, port);
  common::FileDescriptor fd(socket(copy.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return true;
  int on = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&copy), size) == 0) return true;
  local = errno != EADDRNOTAVAIL;
  return errno != EADDRINUSE;
}

// A TCP connect to `port` on `address`, closed as soon as it is made: nothing is sent beyond the
// handshake. Its errno, 0 when it connected, ETIMEDOUT when no answer came in kConnectTimeoutMs.
int connect_error(const sockaddr* address, socklen_t size, int port) {
  sockaddr_storage copy = with_port(address, size, port);
  common::FileDescriptor fd(socket(copy.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return errno;
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&copy), size) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd wait{fd.get(), POLLOUT, 0};
  int ready = poll(&wait, 1, kConnectTimeoutMs);
  if (ready == 0) return ETIMEDOUT;
  int error = 0;
  socklen_t length = sizeof(error);
  if (ready < 0 || getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

std::vector<std::string> interface_names() {
  std::vector<std::string> out;
  struct if_nameindex* names = if_nameindex();
  if (names == nullptr) return out;
  for (struct if_nameindex* at = names; at->if_index != 0; ++at) out.emplace_back(at->if_name);
  if_freenameindex(names);
  return out;
}

// `first_node`: this node starts the rendezvous store where the host is this machine.
void probe_master(store::NetworkFacts& out, bool first_node) {
  AddrInfo found = resolve(out.master_addr);
  out.master_addr_resolved = found != nullptr;
  if (!found || !out.master_port) return;
  bool local = true;
  bool free = port_free(found->ai_addr, found->ai_addrlen, *out.master_port, local);
  out.master_addr_local = local;
  out.port_checked = local;
  out.port_in_use = local && !free;
  if (!local || !first_node) {
    auto start = std::chrono::steady_clock::now();
    out.connect_error = connect_error(found->ai_addr, found->ai_addrlen, *out.master_port);
    out.connect_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
}

}  // namespace

bool ifname_matches(const std::string& value, const std::vector<std::string>& interfaces,
                    bool exact) {
  std::string list = value;
  bool exclude = !exact && list.starts_with("^");
  if (exclude) list.erase(0, 1);
  bool whole = exact || list.starts_with("=");
  if (!exact && whole) list.erase(0, 1);
  std::vector<std::string> names = text::split(list, ',');
  auto named = [&](const std::string& interface) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& name) {
      return whole ? interface == name : interface.starts_with(name);
    });
  };
  return std::any_of(interfaces.begin(), interfaces.end(),
                     [&](const std::string& interface) { return named(interface) != exclude; });
}

store::NetworkFacts probe_network(const store::CommandFacts& command,
                                  const std::function<const char*(const char*)>& env) {
  store::NetworkFacts out;
  out.interfaces = interface_names();
  for (const char* variable : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}) {
    const char* value = env(variable);
    if (value == nullptr || *value == '\0') continue;
    bool exact = std::string_view(variable).starts_with("GLOO");
    out.ifnames.push_back({variable, value, ifname_matches(value, out.interfaces, exact)});
  }
  // --standalone makes a rendezvous of its own on a free port: nothing to check.
  if (command.standalone) return out;
  // torchrun reads its options' defaults from PET_<OPTION>, and sets MASTER_ADDR and MASTER_PORT
  // for its ranks itself.
  bool torchrun = command.launcher == store::Launcher::kTorchrun;
  const char* addr = env(torchrun ? "PET_MASTER_ADDR" : "MASTER_ADDR");
  const char* port_variable = torchrun ? "PET_MASTER_PORT" : "MASTER_PORT";
  const char* port = env(port_variable);
  out.master_addr = !command.master_addr.empty() ? command.master_addr : addr ? addr : "";
  out.master_port = command.master_port;
  out.port_invalid = command.port_invalid;
  if (!out.master_port && out.port_invalid.empty() && port != nullptr) {
    out.master_port = parse_port(port);
    if (!out.master_port) out.port_invalid = std::string(port_variable) + "=" + port;
  }
  if (torchrun) {
    if (out.master_addr.empty()) out.master_addr = "127.0.0.1";
    // A host alone: c10d's rendezvous takes its own default port; the static one (torchrun's
    // default) stops with "port is missing in endpoint", whatever --master_port says.
    bool c10d = command.rdzv_backend == "c10d";
    out.endpoint_port_missing = command.endpoint_without_port && !c10d;
    if (command.endpoint_without_port && c10d) out.master_port = kC10dDefaultPort;
    if (!out.master_port && out.port_invalid.empty() && !out.endpoint_port_missing) {
      out.master_port = kTorchrunDefaultPort;
    }
  }
  std::optional<int> node_rank = command.node_rank;
  if (const char* rank = env("PET_NODE_RANK"); torchrun && !node_rank && rank != nullptr) {
    node_rank = parse_count(rank);
  }
  if (!out.master_addr.empty()) probe_master(out, node_rank.value_or(0) == 0);
  return out;
}

}  // namespace traindoc::supervisor
