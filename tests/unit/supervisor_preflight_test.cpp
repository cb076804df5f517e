// What the preflight probe reads without running anything: a job's command line, torch's
// version.py, the interface names NCCL and gloo are given, a script's #! line, and a Python's
// torch beside it in a made-up tree.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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
  fs::remove_all(root);
}

}  // namespace
}  // namespace traindoc::supervisor
