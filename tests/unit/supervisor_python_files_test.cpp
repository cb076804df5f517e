// What the files beside a Python interpreter say, from their text and names: pyvenv.cfg as venv
// and uv write it, interpreters', torch's extensions', NCCL's wheels' and libraries' names.
#include <gtest/gtest.h>

#include "supervisor/preflight/python_files.h"

namespace traindoc::supervisor {
namespace {

TEST(PythonFiles, PyvenvCfgOfVenvAndUv) {
  VenvConfig venv = parse_pyvenv_cfg(
      "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n"
      "executable = /usr/bin/python3.11\ncommand = /usr/bin/python3 -m venv /opt/venv\n");
  EXPECT_EQ(venv.version, "3.11");
  EXPECT_EQ(venv.home, "/usr/bin");
  EXPECT_FALSE(venv.system_site_packages);
  VenvConfig uv = parse_pyvenv_cfg(
      "home = /usr/local/bin\nimplementation = CPython\nuv = 0.4.18\nversion_info = 3.12.7\n"
      "include-system-site-packages = true\n");
  EXPECT_EQ(uv.version, "3.12");
  EXPECT_TRUE(uv.system_site_packages);
  EXPECT_EQ(parse_pyvenv_cfg("").version, "");
}

// As site.py's venv() reads it: the key before the first '=' in any case, stripped; the last of
// a key wins; a line without '=' is skipped; system site-packages unless it says otherwise.
TEST(PythonFiles, PyvenvCfgAsSitePyReadsIt) {
  VenvConfig cfg = parse_pyvenv_cfg(
      "Home=/opt/py/bin\r\nno equals sign here\r\nVERSION = 3.10.1 = x\n"
      "include-system-site-packages = False\r  home  =  /usr/bin  \n");
  EXPECT_EQ(cfg.home, "/usr/bin");
  EXPECT_EQ(cfg.version, "3.10");
  EXPECT_FALSE(cfg.system_site_packages);
  EXPECT_TRUE(parse_pyvenv_cfg("home = /usr/bin\n").system_site_packages);
  EXPECT_TRUE(parse_pyvenv_cfg("Include-System-Site-Packages = True\n").system_site_packages);
  EXPECT_FALSE(parse_pyvenv_cfg("include-system-site-packages = no\n").system_site_packages);
}

// The kernel's split of a #! line: spaces and tabs, one argument, a '\r' kept.
TEST(PythonFiles, ShebangAsTheKernelSplitsIt) {
  auto split = [](std::string_view head) {
    Shebang s = parse_shebang(head);
    return std::vector<std::string>{s.interpreter, s.argument};
  };
  using Words = std::vector<std::string>;
  EXPECT_EQ(split("#!\t /usr/bin/env \t python3 -u \t\nx"), (Words{"/usr/bin/env", "python3 -u"}));
  EXPECT_EQ(split("#!/usr/bin/python3\r\n"), (Words{"/usr/bin/python3\r", ""}));
  EXPECT_EQ(split("#!/bin/sh"), (Words{"/bin/sh", ""}));
  EXPECT_EQ(split("#! \t\n"), (Words{"", ""}));
  EXPECT_EQ(split("# !/bin/sh"), (Words{"", ""}));
  EXPECT_EQ(split("#!/usr/bin/env python3" + std::string(300, ' ') + "x"),
            (Words{"/usr/bin/env", "python3"}));
}

TEST(PythonFiles, VersionsInFileNames) {
  EXPECT_EQ(interpreter_name_version("python3.11"), "3.11");
  EXPECT_EQ(interpreter_name_version("python3.12d"), "3.12");
  EXPECT_EQ(interpreter_name_version("python3"), "");
  EXPECT_EQ(extension_python_version("_C.cpython-311-x86_64-linux-gnu.so"), "3.11");
  EXPECT_EQ(extension_python_version("_C_flatbuffer.cpython-311-x86_64-linux-gnu.so"), "");
  EXPECT_EQ(nccl_wheel_version("nvidia_nccl_cu12-2.28.3.dist-info"), "2.28.3");
  EXPECT_EQ(nccl_library_version("/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3"), "2.18.3");
  EXPECT_EQ(nccl_library_version("/usr/lib64/libnccl.so.2"), "");
}

// The name libnccl.so.2 resolves to is the file's; a folder named like it tells nothing.
TEST(PythonFiles, NcclLibraryVersionFromTheFileNameAlone) {
  EXPECT_EQ(nccl_library_version("/opt/libnccl.so.d/lib/libnccl.so.2.18.3"), "2.18.3");
  EXPECT_EQ(nccl_library_version("/opt/libnccl.so.2.x/libnccl.so.2"), "");
}

// A dist-info folder's version follows the first '-'; the suffix's own is none.
TEST(PythonFiles, NcclWheelWithoutAVersion) {
  EXPECT_EQ(nccl_wheel_version("nvidia_nccl_cu12.dist-info"), "");
  EXPECT_EQ(nccl_wheel_version("nvidia_nccl_.dist-info"), "");
  EXPECT_EQ(nccl_wheel_version("nvidia_nccl_cu12-.dist-info"), "");
}

}  // namespace
}  // namespace traindoc::supervisor
