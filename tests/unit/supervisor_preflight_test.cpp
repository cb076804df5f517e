// What the preflight probe reads without running anything: a job's command line, torch's
// version.py, the interface names NCCL and gloo are given, a script's #! line, and a Python's
// torch beside it in a made-up tree.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include <filesystem>
#include <fstream>

#include "supervisor/preflight/command_line.h"
#include "supervisor/preflight/network_probe.h"
#include "supervisor/preflight/python_probe.h"

namespace traindoc::supervisor {
namespace {

namespace fs = std::filesystem;
using store::Launcher;

TEST(PreflightCommand, Torchrun) {
  ParsedCommand p =
      parse_command({"torchrun", "--nnodes=1:2", "--nproc-per-node", "4", "--rdzv_endpoint",
                     "node0:29400", "train.py", "--workers", "8", "--batch-size=16"});
  EXPECT_EQ(p.facts.launcher, Launcher::kTorchrun);
  EXPECT_EQ(p.facts.nproc_per_node, 4);
  EXPECT_EQ(p.facts.nnodes, 2);
  EXPECT_EQ(p.facts.master_addr, "node0");
  EXPECT_EQ(p.facts.master_port, 29400);
  EXPECT_EQ(p.facts.script, "train.py");
  EXPECT_EQ(p.facts.workers, 8);
  EXPECT_EQ(p.facts.batch_size, 16);
  EXPECT_FALSE(p.facts.redirects_given);
  EXPECT_TRUE(p.python.empty());
}

TEST(PreflightCommand, PythonModuleLauncherAndItsFlags) {
  ParsedCommand p =
      parse_command({"env", "CUDA_VISIBLE_DEVICES=0,1", "/usr/bin/python3", "-u", "-m",
                     "torch.distributed.run", "--standalone", "--nproc_per_node", "gpu",
                     "--redirects", "3", "-m", "pkg.train", "-j", "4", "-b", "32"});
  EXPECT_EQ(p.env.at("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(p.python, "/usr/bin/python3");
  EXPECT_EQ(p.facts.launcher, Launcher::kTorchrun);
  EXPECT_TRUE(p.facts.standalone);
  EXPECT_TRUE(p.facts.nproc_from_gpus);
  EXPECT_EQ(p.facts.nproc_per_node, std::nullopt);
  EXPECT_EQ(p.facts.redirects, 3);
  EXPECT_TRUE(p.facts.script.empty());  // a module
  EXPECT_EQ(p.facts.workers, 4);
  EXPECT_EQ(p.facts.batch_size, 32);
}

TEST(PreflightCommand, PlainPythonAndOtherPrograms) {
  ParsedCommand p = parse_command({"python3.11", "-W", "ignore", "train.py", "--num_workers", "2"});
  EXPECT_EQ(p.facts.launcher, Launcher::kPython);
  EXPECT_EQ(p.facts.script, "train.py");
  EXPECT_EQ(p.facts.workers, 2);
  EXPECT_EQ(parse_command({"python", "-c", "print(1)"}).facts.script, "");
  ParsedCommand other = parse_command({"accelerate", "launch", "train.py", "--batch_size", "8"});
  EXPECT_EQ(other.facts.launcher, Launcher::kOther);
  EXPECT_EQ(other.facts.batch_size, 8);
  EXPECT_EQ(parse_command({}).facts.launcher, Launcher::kNone);
  EXPECT_TRUE(is_python_name("/opt/venv/bin/python3.12"));
  EXPECT_FALSE(is_python_name("python-config"));
}

// GNU env's options, alone, combined and long: none is taken for the program.
TEST(PreflightCommand, EnvOptionsBeforeTheCommand) {
  ParsedCommand p = parse_command({"env", "-u", "HOME", "-C", "/job", "--unset=X", "-i0", "--",
                                   "A=1", "python3", "train.py", "--workers", "2"});
  EXPECT_EQ(p.facts.program, "python3");
  EXPECT_EQ(p.facts.script, "train.py");
  EXPECT_EQ(p.facts.workers, 2);
  EXPECT_EQ(p.unset, (std::set<std::string>{"HOME", "X"}));
  EXPECT_EQ(p.chdir, "/job");
  EXPECT_TRUE(p.ignore_environment);
  EXPECT_EQ(p.env.at("A"), "1");
  EXPECT_EQ(from_here(p, "train.py"), "/job/train.py");
  EXPECT_EQ(from_here(p, "/abs/train.py"), "/abs/train.py");
  ParsedCommand combined = parse_command({"env", "-iuHOME", "-C/job", "--chd", "/d", "--unset", "Y",
                                          "torchrun", "--nproc_per_node", "2", "x.py"});
  EXPECT_EQ(combined.facts.launcher, Launcher::kTorchrun);
  EXPECT_EQ(combined.facts.script, "x.py");
  EXPECT_EQ(combined.unset, (std::set<std::string>{"HOME", "Y"}));
  EXPECT_EQ(combined.chdir, "/d");
  ParsedCommand dash = parse_command({"env", "-", "python3", "x.py"});
  EXPECT_TRUE(dash.ignore_environment);
  EXPECT_EQ(dash.facts.script, "x.py");
  // What env refuses, or where it runs nothing, names no program.
  EXPECT_EQ(parse_command({"env", "-i python3", "x.py"}).facts.program, "");
  EXPECT_EQ(parse_command({"env", "--help", "python3"}).facts.program, "");
  EXPECT_EQ(parse_command({"env", "-u"}).facts.program, "");
}

// -S splits its string into words, options and assignments among them, as env does.
TEST(PreflightCommand, EnvSplitString) {
  ParsedCommand p = parse_command({"env", "-S", "python3 -u train.py", "--workers", "4"});
  EXPECT_EQ(p.facts.program, "python3");
  EXPECT_EQ(p.facts.script, "train.py");
  EXPECT_EQ(p.facts.workers, 4);
  ParsedCommand attached = parse_command({"env", "-vS-i A=1\tpython3 'my train.py'"});
  EXPECT_TRUE(attached.ignore_environment);
  EXPECT_EQ(attached.env.at("A"), "1");
  EXPECT_EQ(attached.facts.script, "my train.py");
  EXPECT_EQ(parse_command({"env", "--split-string=python3 x.py"}).facts.script, "x.py");
  EXPECT_EQ(split_string(" a  'b c' \"d\\\"e\" f\\_g '' h\\tk # comment"),
            (std::vector<std::string>{"a", "b c", "d\"e", "f", "g", "", "h\tk"}));
  EXPECT_EQ(split_string("a\\cb c"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(split_string("'it\\'s' \\\\"), (std::vector<std::string>{"it's", "\\"}));
}

// CPython's short options cluster; -m takes the rest of its cluster, or the next word.
TEST(PreflightCommand, PythonsClusteredOptions) {
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {"python", "-mtorch.distributed.run", "--nproc_per_node", "2", "x.py"},
           {"python", "-um", "torch.distributed.run", "--nproc_per_node", "2", "x.py"},
           {"python", "-u", "-mtorch.distributed.launch", "--nproc_per_node", "2", "x.py"},
           {"python", "-Bm", "torch.distributed.run", "--nproc_per_node=2", "x.py"},
           {"python", "-Wignore", "-X", "dev", "-m", "torch.distributed.run", "--nproc_per_node",
            "2", "x.py"}}) {
    ParsedCommand p = parse_command(argv);
    EXPECT_EQ(p.facts.launcher, Launcher::kTorchrun) << argv[1];
    EXPECT_EQ(p.facts.nproc_per_node, 2) << argv[1];
    EXPECT_EQ(p.facts.script, "x.py") << argv[1];
  }
  EXPECT_EQ(parse_command({"python", "-Xdev", "-Wignore", "train.py"}).facts.script, "train.py");
  EXPECT_EQ(parse_command({"python", "-W", "ignore", "-uX", "dev", "train.py"}).facts.script,
            "train.py");
  EXPECT_EQ(parse_command({"python", "-uc", "print(1)", "train.py"}).facts.script, "");
  EXPECT_EQ(parse_command({"python", "-ctrain.py"}).facts.script, "");
  EXPECT_EQ(parse_command({"python", "-mpkg.train", "x.py"}).facts.script, "");
}

// Hosts as torch's parse_rendezvous_endpoint reads them, brackets off.
TEST(PreflightCommand, RendezvousHostsAndPorts) {
  struct Case {
    std::string endpoint, host;
    std::optional<int> port;
  };
  for (const Case& c : {Case{"[::1]", "::1", std::nullopt}, Case{"[::1]:29500", "::1", 29500},
                        Case{"host:29500", "host", 29500}, Case{"host", "host", std::nullopt},
                        Case{"[fe80::1%eth0]:1234", "fe80::1%eth0", 1234}}) {
    ParsedCommand p = parse_command({"torchrun", "--rdzv_endpoint", c.endpoint, "x.py"});
    EXPECT_EQ(p.facts.master_addr, c.host) << c.endpoint;
    EXPECT_EQ(p.facts.master_port, c.port) << c.endpoint;
  }
  EXPECT_EQ(parse_command({"torchrun", "--master_addr", "[::1]", "x.py"}).facts.master_addr, "::1");
}

// A host alone: torchrun's static rendezvous (its default) refuses it, c10d's takes port 29400.
TEST(PreflightCommand, AnEndpointWithoutAPort) {
  auto none = [](const char*) -> const char* { return nullptr; };
  ParsedCommand alone = parse_command({"torchrun", "--rdzv_endpoint", "localhost", "x.py"});
  EXPECT_TRUE(alone.facts.endpoint_without_port);
  store::NetworkFacts net = probe_network(alone.facts, none);
  EXPECT_TRUE(net.endpoint_port_missing);
  EXPECT_EQ(net.master_port, std::nullopt);
  EXPECT_FALSE(net.port_checked);  // no port to probe
  ParsedCommand c10d = parse_command(
      {"torchrun", "--rdzv-backend=c10d", "--rdzv_endpoint", "localhost", "--nnodes", "1", "x.py"});
  EXPECT_EQ(c10d.facts.rdzv_backend, "c10d");
  net = probe_network(c10d.facts, none);
  EXPECT_FALSE(net.endpoint_port_missing);
  EXPECT_EQ(net.master_port, kC10dDefaultPort);
  ParsedCommand given = parse_command({"torchrun", "--rdzv_endpoint", "localhost:29511", "x.py"});
  EXPECT_FALSE(given.facts.endpoint_without_port);
  EXPECT_FALSE(probe_network(given.facts, none).endpoint_port_missing);
}

// A port that is none is kept as given, never wrapped into another.
TEST(PreflightCommand, PortsOutsideTheRange) {
  for (const char* port : {"70000", "-1", "abc", ""}) {
    ParsedCommand p = parse_command({"torchrun", "--master_port", port, "x.py"});
    EXPECT_EQ(p.facts.master_port, std::nullopt) << port;
    EXPECT_EQ(p.facts.port_invalid, std::string("--master_port=") + port);
  }
  ParsedCommand endpoint = parse_command({"torchrun", "--rdzv-endpoint=h:99999", "x.py"});
  EXPECT_EQ(endpoint.facts.port_invalid, "--rdzv_endpoint=h:99999");
  EXPECT_EQ(parse_command({"torchrun", "--master_port", "65535", "x.py"}).facts.master_port, 65535);
  auto env = [](const char* name) -> const char* {
    if (std::string_view(name) == "MASTER_ADDR") return "127.0.0.1";
    return std::string_view(name) == "MASTER_PORT" ? "99999" : nullptr;
  };
  store::NetworkFacts net = probe_network(parse_command({"python3", "x.py"}).facts, env);
  EXPECT_EQ(net.master_port, std::nullopt);
  EXPECT_EQ(net.port_invalid, "MASTER_PORT=99999");
  EXPECT_FALSE(net.port_checked);
  EXPECT_EQ(probe_network(parse_command({"torchrun", "--master_port", "70000", "x.py"}).facts, env)
                .port_invalid,
            "--master_port=70000");
}

TEST(PreflightTorchVersion, OldAndNewVersionFiles) {
  std::string version, cuda;
  parse_torch_version("__version__ = '1.13.0a0'\ndebug = False\ncuda = None\n", version, cuda);
  EXPECT_EQ(version, "1.13.0a0");
  EXPECT_EQ(cuda, "");
  parse_torch_version(
      "from typing import Optional\n__version__ = '2.4.0+cu124'\ncuda: Optional[str] = '12.4'\n",
      version, cuda);
  EXPECT_EQ(version, "2.4.0+cu124");
  EXPECT_EQ(cuda, "12.4");
}

TEST(PreflightNetwork, InterfaceListsAsNcclAndGlooReadThem) {
  std::vector<std::string> here = {"lo", "eth0", "docker0"};
  EXPECT_TRUE(ifname_matches("eth", here, false));
  EXPECT_FALSE(ifname_matches("ib", here, false));
  EXPECT_FALSE(ifname_matches("=eth", here, false));
  EXPECT_TRUE(ifname_matches("=eth0", here, false));
  EXPECT_TRUE(ifname_matches("^docker,lo", here, false));
  EXPECT_FALSE(ifname_matches("^docker,lo,eth", here, false));
  EXPECT_TRUE(ifname_matches("eth1,eth0", here, true));
  EXPECT_FALSE(ifname_matches("eth", here, true));
}

// A venv of its own, with a torch whose extension names its Python, found through pyvenv.cfg.
TEST(PreflightPython, ATorchInAVenv) {
  fs::path root = fs::temp_directory_path() / ("preflight-" + std::to_string(getpid()));
  fs::path site = root / "lib/python3.12/site-packages";
  fs::create_directories(site / "torch");
  fs::create_directories(site / "nvidia_nccl_cu12-2.21.5.dist-info");
  fs::create_directories(root / "bin");
  std::ofstream(root / "pyvenv.cfg") << "home = /nonexistent/bin\nversion = 3.12.3\n";
  std::ofstream(site / "torch/__init__.py") << "";
  std::ofstream(site / "torch/version.py") << "__version__ = '2.4.0'\ncuda = '12.4'\n";
  std::ofstream(site / "torch/_C.cpython-311-x86_64-linux-gnu.so") << "";
  std::ofstream(root / "bin/python") << "";
  fs::permissions(root / "bin/python", fs::perms::owner_all);
  std::ofstream(root / "bin/torchrun") << "#!" << (root / "bin/python").string() << "\nimport x\n";
  EXPECT_EQ(shebang_interpreter((root / "bin/torchrun").string(), ""),
            (root / "bin/python").string());
  store::PythonFacts py = probe_python((root / "bin/python").string(), {});
  EXPECT_EQ(py.version, "3.12");
  EXPECT_EQ(py.torch_dir, (site / "torch").string());
  EXPECT_EQ(py.torch_version, "2.4.0");
  EXPECT_EQ(py.torch_cuda, "12.4");
  EXPECT_EQ(py.torch_python, "3.11");
  EXPECT_EQ(py.nccl_version, "2.21.5");
  EXPECT_EQ(find_program("python", (root / "bin").string()), (root / "bin/python").string());
  EXPECT_EQ(probe_python((root / "bin/none").string(), {}).interpreter, "");
  // site.py reads a pyvenv.cfg beside the interpreter first; the packages stay the venv's.
  std::ofstream(root / "bin/pyvenv.cfg") << "home = /nonexistent/bin\nversion = 3.13.1\n";
  py = probe_python((root / "bin/python").string(), {});
  EXPECT_EQ(py.version, "3.13");
  EXPECT_EQ(py.torch_dir, "");  // lib/python3.13 has none
  fs::remove_all(root);
}

// The kernel reads a #! line up to a NUL: what follows names no file.
TEST(PreflightPython, AShebangLineEndsAtANul) {
  using namespace std::string_literals;
  fs::path root = fs::temp_directory_path() / ("preflight-nul-" + std::to_string(getpid()));
  fs::create_directories(root / "bin");
  std::ofstream(root / "bin/python3") << "";
  fs::permissions(root / "bin/python3", fs::perms::owner_all);
  fs::path script = root / "torchrun";
  std::ofstream(script, std::ios::binary) << "#!/usr/bin/python3\0.11\nimport re\n"s;
  EXPECT_EQ(shebang_interpreter(script.string(), ""), "/usr/bin/python3");
  std::ofstream(script, std::ios::binary) << "#!/usr/bin/env python3\0x\n"s;
  EXPECT_EQ(shebang_interpreter(script.string(), (root / "bin").string()),
            (root / "bin/python3").string());
  // pip's trampoline: a NUL in its program's path leaves it unknown (fuzz_preflight).
  std::ofstream(script, std::ios::binary)
      << "#!/bin/sh\n'''exec' \"/venv/torch\0run\0/bin/python3\" \"$0\" \"$@\"\n' '''\n"s;
  EXPECT_EQ(shebang_interpreter(script.string(), ""), "");
  std::ofstream(script) << "#!/bin/sh\n'''exec' \"/venv/bin/python3\" \"$0\" \"$@\"\n' '''\n";
  EXPECT_EQ(shebang_interpreter(script.string(), ""), "/venv/bin/python3");
  fs::remove_all(root);
}

// The kernel's #! line: spaces and tabs after #!, one argument after the first gap; env's
// argument read as env reads it.
TEST(PreflightPython, ShebangLinesWithTabsAndEnvS) {
  fs::path root = fs::temp_directory_path() / ("preflight-tab-" + std::to_string(getpid()));
  fs::create_directories(root / "bin");
  std::ofstream(root / "bin/python3") << "";
  fs::permissions(root / "bin/python3", fs::perms::owner_all);
  std::string bin = (root / "bin").string();
  fs::path script = root / "torchrun";
  auto interpreter_of = [&](const std::string& line) {
    std::ofstream(script) << line << "\nimport re\n";
    return shebang_interpreter(script.string(), bin);
  };
  EXPECT_EQ(interpreter_of("#!\t/usr/bin/python3\t-u"), "/usr/bin/python3");
  EXPECT_EQ(interpreter_of("#! \t/usr/bin/python3 \t "), "/usr/bin/python3");
  EXPECT_EQ(interpreter_of("#!/usr/bin/env\t python3\t"), bin + "/python3");
  EXPECT_EQ(interpreter_of("#!/usr/bin/env -S python3 -u"), bin + "/python3");
  EXPECT_EQ(interpreter_of("#!/usr/bin/env -S A=1 python3 -u"), bin + "/python3");
  EXPECT_EQ(interpreter_of("#!/usr/bin/env -i python3"), "");  // env refuses "-i python3"
  fs::remove_all(root);
}

// Another node's view of the first's port, through real sockets on 127.0.0.2 (this machine's,
// with --node_rank 1): a listener connects, a closed port refuses, a listener whose backlog is
// full drops the handshake, which times out in kConnectTimeoutMs.
TEST(PreflightNetwork, TheFirstNodesPortFromAnother) {
  auto listener = [](int backlog, sockaddr_in& address) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(0x7f000002);
    socklen_t size = sizeof(address);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), size), 0);
    EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
    if (backlog >= 0) {
      EXPECT_EQ(listen(fd, backlog), 0);
    }
    return fd;
  };
  // A node rank from the command line, or (-1) from torchrun's PET_NODE_RANK.
  auto probe = [](const sockaddr_in& address, int node_rank) {
    store::CommandFacts command = parse_command({"torchrun", "x.py"}).facts;
    command.master_addr = "127.0.0.2";
    command.master_port = ntohs(address.sin_port);
    if (node_rank >= 0) command.node_rank = node_rank;
    return probe_network(command, [](const char* name) -> const char* {
      return std::string_view(name) == "PET_NODE_RANK" ? "1" : nullptr;
    });
  };
  sockaddr_in address{};
  int listening = listener(16, address);
  EXPECT_EQ(probe(address, 1).connect_error, 0);
  EXPECT_EQ(probe(address, -1).connect_error, 0);
  EXPECT_EQ(probe(address, 0).connect_error, std::nullopt);  // the first node binds it instead
  close(listening);
  int closed = listener(-1, address);
  EXPECT_EQ(probe(address, 1).connect_error, ECONNREFUSED);
  close(closed);
  // Backlog 0 admits one connection, which fills it; the next handshake is dropped.
  int full = listener(0, address);
  int first = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(first, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  store::NetworkFacts dropped = probe(address, 1);
  EXPECT_EQ(dropped.connect_error, ETIMEDOUT);
  EXPECT_GE(dropped.connect_ms, kConnectTimeoutMs);
  EXPECT_LT(dropped.connect_ms, kConnectTimeoutMs + 200);
  close(first);
  close(full);
}

}  // namespace
}  // namespace traindoc::supervisor
