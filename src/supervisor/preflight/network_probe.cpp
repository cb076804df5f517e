// The network of a multi-process job. Supervisor process, main thread.
#include "supervisor/preflight/network_probe.h"

#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

#include "common/file_descriptor.h"
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

// Binds `port` on `address` as a rendezvous store would (SO_REUSEADDR: a connection of an
// earlier job in TIME_WAIT does not hold it). True when it bound; `local` false when the address
// is not this machine's.
bool port_free(const sockaddr* address, socklen_t size, int port, bool& local) {
  sockaddr_storage copy{};
  memcpy(&copy, address, size);
  if (copy.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&copy)->sin_port = htons(static_cast<uint16_t>(port));
  } else if (copy.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&copy)->sin6_port = htons(static_cast<uint16_t>(port));
  }
  common::FileDescriptor fd(socket(copy.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return true;
  int on = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&copy), size) == 0) return true;
  local = errno != EADDRNOTAVAIL;
  return errno != EADDRINUSE;
}

std::vector<std::string> interface_names() {
  std::vector<std::string> out;
  struct if_nameindex* names = if_nameindex();
  if (names == nullptr) return out;
  for (struct if_nameindex* at = names; at->if_index != 0; ++at) out.emplace_back(at->if_name);
  if_freenameindex(names);
  return out;
}

void probe_master(store::NetworkFacts& out) {
  AddrInfo found = resolve(out.master_addr);
  out.master_addr_resolved = found != nullptr;
  if (!found || !out.master_port) return;
  bool local = true;
  bool free = port_free(found->ai_addr, found->ai_addrlen, *out.master_port, local);
  out.master_addr_local = local;
  out.port_checked = local;
  out.port_in_use = local && !free;
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
  const char* addr = env("MASTER_ADDR");
  const char* port = env("MASTER_PORT");
  out.master_addr = !command.master_addr.empty() ? command.master_addr : addr ? addr : "";
  out.master_port = command.master_port;
  if (!out.master_port && port != nullptr) out.master_port = atoi(port);
  if (command.launcher == store::Launcher::kTorchrun) {
    if (out.master_addr.empty()) out.master_addr = "127.0.0.1";
    if (!out.master_port) out.master_port = kTorchrunDefaultPort;
  }
  if (!out.master_addr.empty()) probe_master(out);
  return out;
}

}  // namespace traindoc::supervisor
