// The network a multi-process job will use: whether its rendezvous host resolves and, on this
// machine, whether its port is free; from another node, whether its port answers a TCP connect;
// whether the interfaces NCCL and gloo are told to use exist. Supervisor process, main thread
// (traindoc check, the start of a run). Bounded in time: a resolver that does not answer in
// kResolveTimeoutMs counts as not resolved, a connect is given up on after kConnectTimeoutMs.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "store/preflight.h"

namespace traindoc::supervisor {

inline constexpr int kResolveTimeoutMs = 500;
// A handshake within a cluster takes well under a millisecond; one across a WAN, tens.
inline constexpr int kConnectTimeoutMs = 300;

// torchrun's rendezvous port where it is given none.
inline constexpr int kTorchrunDefaultPort = 29500;
// The port of a c10d rendezvous endpoint that names none (torch's parse_rendezvous_endpoint).
inline constexpr int kC10dDefaultPort = 29400;

// `env`: the job's environment (nullptr for a variable it lacks).
store::NetworkFacts probe_network(const store::CommandFacts& command,
                                  const std::function<const char*(const char*)>& env);

// Whether an interface name list as NCCL reads it ("eth", "^docker,lo", "=eth0") or as gloo
// does (`exact`: "eth0,eth1") leaves an interface of `interfaces` to use.
bool ifname_matches(const std::string& value, const std::vector<std::string>& interfaces,
                    bool exact);

}  // namespace traindoc::supervisor
