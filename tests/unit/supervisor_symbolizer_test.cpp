// Tests of the native-frame symbolizer. A small program and shared library (fixtures/symbolizer)
// are built here with the system compiler (-g -O2, PIE) in a folder whose name has spaces, run
// once, and the maps and addresses they print are symbolized; copies are stripped, given
// debuglinks or build-id debug files, deleted and corrupted. Skipped where no compiler exists.
#include "supervisor/symbolizer.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace traindoc::supervisor {
namespace {

namespace fs = std::filesystem;
using store::NativeFrame;

// ---- helpers ---------------------------------------------------------------------------------

struct RunResult {
  int status = -1;  // exit code, or -1 when it did not exit normally
  std::string out;
};

// Runs argv without a shell (paths with spaces stay whole), capturing stdout.
RunResult run(const std::vector<std::string>& argv) {
  RunResult result;
  int fds[2];
  if (pipe(fds) != 0) return result;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  char buffer[4096];
  ssize_t n = 0;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) {
    result.out.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
    result.status = WEXITSTATUS(status);
  }
  return result;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string base_name(const std::string& path) {
  return fs::path(path).filename().string();
}

// "// LINE:name" markers of a fixture source -> line numbers.
std::map<std::string, int> marker_lines(const fs::path& source) {
  std::map<std::string, int> lines;
  std::istringstream in(read_file(source));
  std::string line;
  std::regex marker(R"(// LINE:(\w+))");
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch match;
    if (std::regex_search(line, match, marker)) lines[match[1]] = number;
  }
  return lines;
}

std::string build_id_hex(const fs::path& path) {
  std::string out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  elf_version(EV_CURRENT);
  if (Elf* elf = elf_begin(fd, ELF_C_READ, nullptr)) {
    const void* bits = nullptr;
    ssize_t len = dwelf_elf_gnu_build_id(elf, &bits);
    for (ssize_t i = 0; i < len; ++i) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<const unsigned char*>(bits)[i]);
      out += hex;
    }
    elf_end(elf);
  }
  close(fd);
  return out;
}

// ---- the built program -----------------------------------------------------------------------

struct Built {
  bool ok = false;
  std::string why;
  fs::path dir;      // the built files, shared by the test processes (ctest runs one per test)
  fs::path scratch;  // this process's files, removed at the end
  std::string exe;
  std::string lib;
  std::string maps;
  std::map<std::string, uint64_t> addr;
  std::vector<std::pair<std::string, uint64_t>> libc;
  uint64_t exe_bias = 0;
  uint64_t lib_bias = 0;
  std::map<std::string, int> main_lines;
  std::map<std::string, int> lib_lines;
};

Built* g_built = nullptr;

bool step(Built& b, const std::vector<std::string>& argv) {
  RunResult r = run(argv);
  if (r.status != 0) {
    b.why = "failed: " + argv[0] + " ... " + argv.back();
    return false;
  }
  return true;
}

// Compiles the program and library into b.dir and makes the stripped and split copies.
bool compile(Built& b, const fs::path& sources) {
  if (run({"c++", "--version"}).status != 0) {
    b.why = "no C++ compiler (c++) on this machine";
    return false;
  }
  if (!step(b, {"c++", "-g", "-O2", "-fPIC", "-shared", "-o", b.lib,
                (sources / "fixture_lib.cpp").string()}) ||
      !step(b, {"c++", "-g", "-O2", "-fPIE", "-pie", "-o", b.exe,
                (sources / "fixture_main.cpp").string(), "-L" + b.dir.string(), "-lsymfixture",
                "-Wl,-rpath," + b.dir.string(), "-ldl"})) {
    return false;
  }
  // Copies: stripped of DWARF only, of everything, and with DWARF split off (debuglink, build id).
  std::string id = build_id_hex(b.exe);
  if (id.size() < 4) {
    b.why = "the fixture has no build id";
    return false;
  }
  fs::path by_id = b.dir / "debugroot" / ".build-id" / id.substr(0, 2) / (id.substr(2) + ".debug");
  fs::create_directories(by_id.parent_path());
  fs::create_directories(b.dir / "debuglink" / ".debug");
  for (const char* sub : {"strip-debug", "strip-all", "debuglink", "buildid"}) {
    fs::create_directories(b.dir / sub);
    fs::copy_file(b.exe, b.dir / sub / "symfixture");
    fs::copy_file(b.lib, b.dir / sub / "libsymfixture.so");
  }
  std::string dl = (b.dir / "debuglink").string();
  return step(b, {"strip", "--strip-debug", (b.dir / "strip-debug" / "symfixture").string()}) &&
         step(b, {"strip", "--strip-all", (b.dir / "strip-all" / "symfixture").string()}) &&
         step(b, {"strip", "--strip-all", (b.dir / "strip-all" / "libsymfixture.so").string()}) &&
         step(b, {"objcopy", "--only-keep-debug", b.exe, dl + "/.debug/symfixture.debug"}) &&
         step(b, {"strip", "--strip-all", dl + "/symfixture"}) &&
         step(b, {"objcopy", "--add-gnu-debuglink=" + dl + "/.debug/symfixture.debug",
                  dl + "/symfixture"}) &&
         step(b, {"objcopy", "--only-keep-debug", b.exe, by_id.string()}) &&
         step(b, {"strip", "--strip-all", (b.dir / "buildid" / "symfixture").string()});
}

void build_program(Built& b) {
  const fs::path sources = fs::path(TRAINDOC_FIXTURES) / "symbolizer";
  char pattern[] = "/tmp/traindoc-symbolizer-XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    b.why = "mkdtemp failed";
    return;
  }
  b.scratch = pattern;
  // Built once beside the test binary, in a folder whose name has a space, and reused while the
  // sources stay the same: under a lock, since ctest runs the tests in parallel processes.
  std::error_code error;
  b.dir = fs::read_symlink("/proc/self/exe", error).parent_path() / "symbolizer fixture";
  std::string key = "v1";
  for (const char* name : {"fixture_main.cpp", "fixture_lib.cpp"}) {
    key += " " + std::to_string(fs::file_size(sources / name, error)) + ":" +
           std::to_string(fs::last_write_time(sources / name, error).time_since_epoch().count());
  }
  int lock = open((b.dir.string() + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (error || lock < 0 || flock(lock, LOCK_EX) != 0) {
    b.dir = b.scratch / "dir with space";  // not writable there: build privately
    if (lock >= 0) close(lock);
    lock = -1;
  }
  b.exe = (b.dir / "symfixture").string();
  b.lib = (b.dir / "libsymfixture.so").string();
  bool fresh = read_file(b.dir / "stamp") == key;
  if (!fresh) {
    fs::remove_all(b.dir, error);
    fs::create_directories(b.dir, error);
    fresh = compile(b, sources);
    if (fresh) write_file(b.dir / "stamp", key);
  }
  if (lock >= 0) close(lock);
  if (!fresh) return;

  RunResult r = run({b.exe});
  if (r.status != 0) {
    b.why = "the fixture program failed";
    return;
  }
  size_t begin = r.out.find("maps begin\n");
  size_t end = r.out.find("maps end\n");
  if (begin == std::string::npos || end == std::string::npos) {
    b.why = "no maps in the fixture's output";
    return;
  }
  b.maps = r.out.substr(begin + 11, end - begin - 11);
  std::istringstream in(r.out.substr(0, begin));
  std::string kind, name, hex;
  while (in >> kind >> name >> hex) {
    uint64_t value = std::stoull(hex, nullptr, 16);
    if (kind == "addr") b.addr[name] = value;
    if (kind == "libc") b.libc.emplace_back(name, value);
    if (kind == "bias" && name == "exe") b.exe_bias = value;
    if (kind == "bias" && name == "lib") b.lib_bias = value;
  }
  b.main_lines = marker_lines(sources / "fixture_main.cpp");
  b.lib_lines = marker_lines(sources / "fixture_lib.cpp");
  b.ok = !b.addr.empty() && b.exe_bias != 0 && b.lib_bias != 0;
  if (!b.ok) b.why = "the fixture printed no addresses";
}

class SymbolizerProgramTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_built = new Built;
    build_program(*g_built);
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    if (!g_built->scratch.empty()) fs::remove_all(g_built->scratch, ignored);
    delete g_built;
    g_built = nullptr;
  }
  void SetUp() override {
    if (!g_built->ok) GTEST_SKIP() << g_built->why;
  }
  const Built& b() const { return *g_built; }
  uint64_t a(const std::string& name) const { return b().addr.at(name); }
  int main_line(const std::string& name) const { return b().main_lines.at(name); }
  // The maps with the program (and library) replaced by the copies in `sub`, same layout.
  std::string maps_of(const std::string& sub, bool lib_too) const {
    std::string maps =
        replace_all(b().maps, b().exe + "\n", (b().dir / sub / "symfixture").string() + "\n");
    if (lib_too) {
      maps =
          replace_all(maps, b().lib + "\n", (b().dir / sub / "libsymfixture.so").string() + "\n");
    }
    return maps;
  }
};

// ---- the program with its DWARF --------------------------------------------------------------

TEST_F(SymbolizerProgramTest, ExactPcInNamedFunction) {
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(b().maps, {a("named") + 4}, true);
  ASSERT_EQ(frames.size(), 1u);
  const NativeFrame& f = frames[0];
  EXPECT_EQ(f.address, a("named") + 4);
  EXPECT_EQ(f.module, b().exe);
  EXPECT_EQ(f.module_offset, a("named") + 4 - b().exe_bias);
  EXPECT_EQ(f.function, "fixture::named_function(int)");
  EXPECT_EQ(f.function_offset, 4u);
  EXPECT_EQ(base_name(f.file), "fixture_main.cpp");
  EXPECT_GE(f.line, main_line("named_begin"));
  EXPECT_LE(f.line, main_line("named_end"));
  EXPECT_TRUE(f.inlined.empty());
}

TEST_F(SymbolizerProgramTest, ReturnAddressesInlinedAndDirect) {
  Symbolizer symbolizer;
  auto frames =
      symbolizer.symbolize(b().maps, {a("named") + 4, a("inlined_ret"), a("direct_ret")}, true);
  ASSERT_EQ(frames.size(), 3u);
  // The call inside inlined_helper, inlined into outer.
  const NativeFrame& in = frames[1];
  EXPECT_EQ(in.module, b().exe);
  EXPECT_EQ(in.module_offset, a("inlined_ret") - b().exe_bias);
  EXPECT_EQ(in.function, "fixture::outer(int)");
  EXPECT_EQ(in.function_offset, a("inlined_ret") - a("outer"));
  EXPECT_EQ(base_name(in.file), "fixture_main.cpp");
  EXPECT_NEAR(in.line, main_line("inlined_call"), 1);
  ASSERT_EQ(in.inlined.size(), 1u);
  EXPECT_NE(in.inlined[0].find("fixture::inlined_helper"), std::string::npos) << in.inlined[0];
  // The direct call in outer: no inlined chain.
  const NativeFrame& direct = frames[2];
  EXPECT_EQ(direct.function, "fixture::outer(int)");
  EXPECT_EQ(direct.function_offset, a("direct_ret") - a("outer"));
  EXPECT_NEAR(direct.line, main_line("direct_call"), 1);
  EXPECT_TRUE(direct.inlined.empty());
}

TEST_F(SymbolizerProgramTest, ReturnAddressIsLookedUpAtTheCall) {
  // As a pc, the return address is the instruction after the call (maybe another line); as a
  // return address, it must say the call's line.
  Symbolizer symbolizer;
  auto as_return = symbolizer.symbolize(b().maps, {0, a("direct_ret")}, true);
  EXPECT_NEAR(as_return[1].line, main_line("direct_call"), 1);
  auto all_returns = symbolizer.symbolize(b().maps, {a("direct_ret")}, false);
  EXPECT_EQ(all_returns[0], as_return[1]);
}

TEST_F(SymbolizerProgramTest, SharedLibrary) {
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(b().maps, {a("lib_function") + 4}, true);
  const NativeFrame& f = frames[0];
  EXPECT_EQ(f.module, b().lib);
  EXPECT_NE(f.module.find(' '), std::string::npos);  // the folder's name has a space
  EXPECT_EQ(f.module_offset, a("lib_function") + 4 - b().lib_bias);
  EXPECT_EQ(f.function, "fixture_lib_function");
  EXPECT_EQ(f.function_offset, 4u);
  EXPECT_EQ(base_name(f.file), "fixture_lib.cpp");
  EXPECT_GE(f.line, b().lib_lines.at("lib_begin"));
  EXPECT_LE(f.line, b().lib_lines.at("lib_end"));
}

TEST_F(SymbolizerProgramTest, LibcFunction) {
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(b().maps, {a("printf")}, true);
  EXPECT_TRUE(base_name(frames[0].module).starts_with("libc.so") ||
              base_name(frames[0].module).starts_with("libc-"))
      << frames[0].module;
  EXPECT_NE(frames[0].function.find("printf"), std::string::npos) << frames[0].function;
  EXPECT_EQ(frames[0].function_offset, 0u);
}

TEST_F(SymbolizerProgramTest, Vdso) {
  if (!b().addr.contains("vdso_clock_gettime")) GTEST_SKIP() << "no vdso symbol found";
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(b().maps, {a("vdso_clock_gettime")}, true);
  EXPECT_EQ(frames[0].module, "[vdso]");
  EXPECT_NE(frames[0].function.find("clock_gettime"), std::string::npos) << frames[0].function;
}

// ---- without DWARF, or with DWARF elsewhere --------------------------------------------------

TEST_F(SymbolizerProgramTest, StrippedOfDebugInfoKeepsSymtabNames) {
  Symbolizer symbolizer;
  std::string maps = maps_of("strip-debug", false);
  auto frames = symbolizer.symbolize(maps, {a("named") + 4, a("inlined_ret")}, true);
  EXPECT_EQ(frames[0].module, (b().dir / "strip-debug" / "symfixture").string());
  EXPECT_EQ(frames[0].module_offset, a("named") + 4 - b().exe_bias);
  EXPECT_EQ(frames[0].function, "fixture::named_function(int)");
  EXPECT_EQ(frames[0].function_offset, 4u);
  EXPECT_EQ(frames[0].file, "");
  EXPECT_EQ(frames[0].line, 0);
  EXPECT_EQ(frames[1].function, "fixture::outer(int)");
  EXPECT_TRUE(frames[1].inlined.empty());
}

TEST_F(SymbolizerProgramTest, StrippedOfEverythingKeepsExportedNames) {
  Symbolizer symbolizer;
  std::string maps = maps_of("strip-all", true);
  auto frames = symbolizer.symbolize(maps, {a("named") + 4, a("lib_function") + 4}, true);
  // Not exported from the executable: no name, but the module and offset still tell where.
  EXPECT_EQ(frames[0].function, "");
  EXPECT_EQ(frames[0].module_offset, a("named") + 4 - b().exe_bias);
  // Exported from the library: .dynsym names it.
  EXPECT_EQ(frames[1].module, (b().dir / "strip-all" / "libsymfixture.so").string());
  EXPECT_EQ(frames[1].function, "fixture_lib_function");
  EXPECT_EQ(frames[1].function_offset, 4u);
  EXPECT_EQ(frames[1].file, "");
  EXPECT_EQ(frames[1].line, 0);
}

TEST_F(SymbolizerProgramTest, DebuglinkFindsSeparateDebugFile) {
  Symbolizer symbolizer;
  auto frames =
      symbolizer.symbolize(maps_of("debuglink", false), {a("named") + 4, a("inlined_ret")}, true);
  EXPECT_EQ(frames[0].function, "fixture::named_function(int)");
  EXPECT_EQ(base_name(frames[0].file), "fixture_main.cpp");
  EXPECT_EQ(frames[1].function, "fixture::outer(int)");
  EXPECT_NEAR(frames[1].line, main_line("inlined_call"), 1);
  ASSERT_EQ(frames[1].inlined.size(), 1u);
}

TEST_F(SymbolizerProgramTest, BuildIdFindsSeparateDebugFileUnderDebugRoot) {
  std::string maps = maps_of("buildid", false);
  {
    Symbolizer default_roots;  // /usr/lib/debug knows nothing of this program
    EXPECT_EQ(default_roots.symbolize(maps, {a("named") + 4})[0].function, "");
  }
  Symbolizer symbolizer(SymbolizerOptions{{(b().dir / "debugroot").string()}});
  auto frames = symbolizer.symbolize(maps, {a("named") + 4, a("inlined_ret")}, true);
  EXPECT_EQ(frames[0].function, "fixture::named_function(int)");
  EXPECT_EQ(base_name(frames[0].file), "fixture_main.cpp");
  ASSERT_EQ(frames[1].inlined.size(), 1u);
}

// ---- files that cannot be used ---------------------------------------------------------------

TEST_F(SymbolizerProgramTest, DeletedFileKeepsPathWithoutSymbols) {
  std::string maps = replace_all(b().maps, b().exe + "\n", b().exe + " (deleted)\n");
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(maps, {a("named") + 4, a("lib_function") + 4}, true);
  EXPECT_EQ(frames[0].module, b().exe + " (deleted)");
  EXPECT_EQ(frames[0].function, "");
  EXPECT_EQ(frames[0].module_offset, a("named") + 4 - b().exe_bias);
  EXPECT_EQ(frames[1].function, "fixture_lib_function");  // the rest is unaffected
}

TEST_F(SymbolizerProgramTest, MissingAndReplacedFiles) {
  std::string missing = (b().scratch / "gone" / "symfixture").string();
  std::string maps = replace_all(b().maps, b().exe + "\n", missing + "\n");
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(maps, {a("named") + 4}, true);
  EXPECT_EQ(frames[0].module, missing);
  EXPECT_EQ(frames[0].function, "");
  EXPECT_EQ(frames[0].module_offset, a("named") + 4 - b().exe_bias);

  // The file appears later: the cache notices.
  fs::create_directories(b().scratch / "gone");
  fs::copy_file(b().exe, missing);
  EXPECT_EQ(symbolizer.symbolize(maps, {a("named") + 4})[0].function,
            "fixture::named_function(int)");
  // Replaced by something else: opened again, no stale names.
  write_file(missing, "not an ELF file any more\n");
  EXPECT_EQ(symbolizer.symbolize(maps, {a("named") + 4})[0].function, "");
  // Replaced by another ELF whose segments do not fit the mapping: no wrong names either.
  fs::remove(missing);
  fs::copy_file(b().lib, missing);
  auto other = symbolizer.symbolize(maps, {a("named") + 4})[0];
  EXPECT_EQ(other.function, "") << other.function;
}

TEST_F(SymbolizerProgramTest, CorruptElfNeverCrashes) {
  // Truncated and bit-flipped copies of the library and of the program (whose DWARF has
  // inlined scopes), mostly in the headers and tables at both ends of the file, where a bad
  // value reaches furthest. libelf and libdw must refuse them, never crash.
  constexpr int kRounds = 40;
  std::mt19937 rng(20240611);
  Symbolizer symbolizer;
  int files = 0;
  for (bool program : {false, true}) {
    const std::string& target = program ? b().exe : b().lib;
    const std::vector<uint64_t> addresses =
        program ? std::vector<uint64_t>{a("named") + 4, a("inlined_ret"), a("direct_ret")}
                : std::vector<uint64_t>{a("lib_function") + 4, a("lib_function") + 9};
    const std::string original = read_file(target);
    ASSERT_GT(original.size(), 4096u);
    std::vector<std::string> variants = {original.substr(0, 64), original.substr(0, 2000),
                                         original.substr(0, original.size() / 2)};
    for (int round = 0; round < kRounds; ++round) {
      std::string bytes = original;
      for (int i = 0, flips = 1 + static_cast<int>(rng() % 32); i < flips; ++i) {
        size_t at = rng() % 3 == 0
                        ? rng() % 512
                        : (rng() % 2 ? rng() % bytes.size() : bytes.size() - 1 - rng() % 4096);
        bytes[at] = static_cast<char>(rng());
      }
      variants.push_back(std::move(bytes));
    }
    for (const std::string& bytes : variants) {
      std::string path = (b().scratch / ("corrupt-" + std::to_string(files++))).string();
      write_file(path, bytes);
      std::string maps = replace_all(b().maps, target + "\n", path + "\n");
      auto frames = symbolizer.symbolize(maps, addresses, true);
      ASSERT_EQ(frames.size(), addresses.size());
      EXPECT_EQ(frames[0].module, path);
    }
  }
}

// ---- the cache and its cost ------------------------------------------------------------------

TEST_F(SymbolizerProgramTest, CostOf64FramesFirstAndCached) {
  std::vector<uint64_t> addresses;
  const uint64_t program[] = {a("named") + 4, a("inlined_ret"), a("direct_ret"),
                              a("lib_function") + 4};
  for (size_t i = 0; addresses.size() < 64; ++i) {
    if (i % 2 == 0 && !b().libc.empty()) {
      // Return addresses: at least one byte past the function's start.
      addresses.push_back(b().libc[(i / 2) % b().libc.size()].second + 1 + 16 * (i % 3));
    } else {
      addresses.push_back(program[i % 4]);
    }
  }
  using Clock = std::chrono::steady_clock;
  auto micros = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  };
  Symbolizer symbolizer;
  auto t0 = Clock::now();
  auto first = symbolizer.symbolize(b().maps, addresses, true);
  auto t1 = Clock::now();
  auto cached = symbolizer.symbolize(b().maps, addresses, true);
  auto t2 = Clock::now();
  EXPECT_EQ(first, cached);
  EXPECT_EQ(symbolizer.cached_files(), 3u);  // libc, the program, the library
  int named = 0;
  for (const NativeFrame& f : first) named += f.function.empty() ? 0 : 1;
  // libc's IFUNC implementations (__strlen_avx2, ...) are named only in its separate debug file,
  // from libc6-dbg, which scripts/setup installs.
  EXPECT_EQ(named, 64);
  // Again without separate debug files (libc from .dynsym only, as where libc6-dbg is absent).
  Symbolizer no_debug_files(SymbolizerOptions{{}});
  auto t3 = Clock::now();
  no_debug_files.symbolize(b().maps, addresses, true);
  auto t4 = Clock::now();
  std::printf(
      "[ cost     ] 64 frames (libc + program + library): first %lld us, cached %lld us; "
      "first without separate debug files %lld us\n",
      static_cast<long long>(micros(t1 - t0)), static_cast<long long>(micros(t2 - t1)),
      static_cast<long long>(micros(t4 - t3)));
  RecordProperty("first_us", static_cast<int>(micros(t1 - t0)));
  RecordProperty("cached_us", static_cast<int>(micros(t2 - t1)));
  EXPECT_LT(t2 - t1, std::chrono::seconds(1));
  symbolizer.clear();
  EXPECT_EQ(symbolizer.cached_files(), 0u);
}

TEST_F(SymbolizerProgramTest, SymbolizeCrash) {
  store::Crash crash;
  crash.pc = a("named") + 4;
  crash.maps = b().maps;
  for (uint64_t address : {a("named") + 4, a("inlined_ret"), a("printf") + 20}) {
    crash.frames.emplace_back().address = address;
  }
  Symbolizer symbolizer;
  symbolizer.symbolize_crash(crash);
  ASSERT_EQ(crash.frames.size(), 3u);
  EXPECT_EQ(crash.frames[0].function_offset, 4u);  // the pc: exact
  EXPECT_EQ(crash.frames[1].inlined.size(), 1u);
}

// ---- input without files ---------------------------------------------------------------------

TEST(Symbolizer, AddressesOutsideFiles) {
  const std::string maps =
      "7ffd0000-7ffd2000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f000000-7f001000 rw-p 00000000 00:00 0 \n"
      "7f100000-7f101000 r-xp 00000000 00:00 0                          [anon:jit]\n"
      "7f200000-7f201000 r-xp 00000000 08:01 42                         /nonexistent/lib x.so\n";
  Symbolizer symbolizer;
  auto frames =
      symbolizer.symbolize(maps, {0, 0x7ffd0010, 0x7f000020, 0x7f100030, 0x7f200040, 1}, true);
  ASSERT_EQ(frames.size(), 6u);
  EXPECT_EQ(frames[0].module, "");
  EXPECT_EQ(frames[1].module, "[stack]");
  EXPECT_EQ(frames[1].module_offset, 0x10u);
  EXPECT_EQ(frames[2].module, "");
  EXPECT_EQ(frames[3].module, "[anon:jit]");
  EXPECT_EQ(frames[4].module, "/nonexistent/lib x.so");
  EXPECT_EQ(frames[4].module_offset, 0x40u);
  for (const NativeFrame& f : frames) EXPECT_EQ(f.function, "");
  EXPECT_TRUE(symbolizer.symbolize("", {1, 2, 3}).size() == 3);
  EXPECT_TRUE(symbolizer.symbolize("garbage\n\n\x01", {}).empty());
}

TEST(Symbolizer, DevicesAreNeverOpened) {
  // A process that mapped /dev/zero or a GPU device: opening it could have effects.
  const std::string maps = "7f000000-7f001000 r-xp 00000000 00:05 4  /dev/zero\n";
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(maps, {0x7f000010});
  EXPECT_EQ(frames[0].module, "/dev/zero");
  EXPECT_EQ(frames[0].function, "");
}

// ---- parse_maps ------------------------------------------------------------------------------

TEST(ParseMaps, RecordedLines) {
  auto maps = store::parse_maps(
      read_file(fs::path(TRAINDOC_FIXTURES) / "symbolizer" / "maps_recorded.txt"));
  ASSERT_EQ(maps.size(), 11u);
  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[0].end, 0x401000u);
  EXPECT_EQ(maps[0].perms, "r--p");
  EXPECT_EQ(maps[0].path, "/usr/bin/python3.11");
  EXPECT_EQ(maps[0].inode, 1839u);

  auto find = [&](std::string_view path) -> const MappedModule* {
    for (const MappedModule& m : maps) {
      if (m.path == path) return &m;
    }
    return nullptr;
  };
  const MappedModule* spaced = find("/home/user/my project/build/libmy ext.so");
  ASSERT_NE(spaced, nullptr);
  EXPECT_EQ(spaced->offset, 0u);
  EXPECT_EQ(spaced->perms, "r--p");
  ++spaced;  // the next mapping of the same file
  EXPECT_EQ(spaced->path, "/home/user/my project/build/libmy ext.so");
  EXPECT_EQ(spaced->offset, 0x1000u);
  EXPECT_EQ(spaced->perms, "r-xp");
  EXPECT_FALSE(spaced->deleted);

  const MappedModule* deleted = find("/tmp/torch_extensions/fused (v2).so");
  ASSERT_NE(deleted, nullptr);
  EXPECT_TRUE(deleted->deleted);
  const MappedModule* memfd = find("/memfd:cuda-jit");
  ASSERT_NE(memfd, nullptr);
  EXPECT_TRUE(memfd->deleted);

  EXPECT_NE(find("[stack]"), nullptr);
  EXPECT_NE(find("[vdso]"), nullptr);
  EXPECT_NE(find("[anon:glibc.malloc]"), nullptr);
  EXPECT_NE(find(""), nullptr);  // anonymous
  EXPECT_NE(find("[vsyscall]"), nullptr);
  for (size_t i = 1; i < maps.size(); ++i) EXPECT_LE(maps[i - 1].start, maps[i].start);
}

TEST(ParseMaps, MutatedInputNeverCrashes) {
  const std::string text =
      read_file(fs::path(TRAINDOC_FIXTURES) / "symbolizer" / "maps_recorded.txt");
  std::mt19937 rng(7);
  const char interesting[] = {'\0', '\n', ' ', '-', ':', '(', ')', 'f', '0', '/', '\xff'};
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = text;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 6); i < n; ++i) {
      size_t at = rng() % (bytes.size() + 1);
      if (rng() % 2) {
        bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                     interesting[rng() % sizeof interesting]);
      } else if (at < bytes.size()) {
        bytes.erase(at, 1 + rng() % 40);
      }
    }
    for (const MappedModule& m : store::parse_maps(bytes)) {
      ASSERT_LT(m.start, m.end);
      ASSERT_EQ(m.perms.size(), 4u);
    }
  }
}

TEST(ParseMaps, UnsortedModulesAreAccepted) {
  std::vector<MappedModule> maps = {
      {.start = 0x2000, .end = 0x3000, .perms = "r-xp", .path = "[anon:b]"},
      {.start = 0x1000, .end = 0x2000, .perms = "r-xp", .path = "[anon:a]"},
  };
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(maps, {0x1800, 0x2800});
  EXPECT_EQ(frames[0].module, "[anon:a]");
  EXPECT_EQ(frames[1].module, "[anon:b]");
}

}  // namespace
}  // namespace traindoc::supervisor
