// Tests of the NVML loader and the GPU sampler against the stand-in libnvidia-ml of
// tests/fakes/nvml: every process-entry layout, the count-then-read retry, entry points a driver
// refuses, a missing library, Xid events and a lost GPU, and NSpid parsing.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/gpu/gpu_pid_resolver.h"
#include "supervisor/gpu/gpu_sampler.h"
#include "supervisor/gpu/nvml_library.h"

namespace traindoc::supervisor {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// A scenario file for the fake, named by TRAINDOC_FAKE_NVML_SCRIPT while the test runs, and a
// child process that sleeps, so that lists can hold two live pids.
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    m_script = (std::filesystem::temp_directory_path() /
                ("traindoc-nvml-" + std::to_string(getpid()) + ".txt"))
                   .string();
    m_child = fork();
    if (m_child == 0) {
      pause();
      _exit(0);
    }
  }
  void TearDown() override {
    kill(m_child, SIGKILL);
    waitpid(m_child, nullptr, 0);
    std::filesystem::remove(m_script);
    unsetenv("TRAINDOC_FAKE_NVML_SCRIPT");
  }
  void script(const std::string& text) {
    std::ofstream(m_script) << text;
    setenv("TRAINDOC_FAKE_NVML_SCRIPT", m_script.c_str(), 1);
  }
  // Two GPUs: this process on both, the child on GPU 0; `extra` is appended.
  void two_gpus(const std::string& extra = "") {
    script(
        "driver 535.98\n"
        "device GPU-aaaa 00000000:06:00.0 81559 500 NVIDIA H100 80GB HBM3\n"
        "device GPU-bbbb 00000000:07:00.0 40960 0 NVIDIA A100-SXM4-40GB\n"
        "process 0 pid=" +
        std::to_string(getpid()) + " 4000\n" + "process 0 pid=" + std::to_string(m_child) +
        " 700\n" + "process 1 pid=" + std::to_string(getpid()) + " 300\n" + extra);
  }
  std::unique_ptr<NvmlLibrary> open() {
    std::string error;
    std::unique_ptr<NvmlLibrary> nvml = NvmlLibrary::open(TRAINDOC_FAKE_NVML, error);
    EXPECT_TRUE(nvml) << error;
    return nvml;
  }
  nvmlDevice_t device(NvmlLibrary& nvml, unsigned index) {
    nvmlDevice_t handle = nullptr;
    EXPECT_EQ(nvml.device(index, handle), NVML_SUCCESS);
    return handle;
  }
  void expect_gpu0_list(NvmlLibrary& nvml) {
    NvmlProcessList list = nvml.processes(device(nvml, 0), NvmlProcessKind::kCompute);
    ASSERT_EQ(list.status, NVML_SUCCESS);
    ASSERT_EQ(list.processes.size(), 2u);
    EXPECT_EQ(list.processes[0].pid, static_cast<unsigned>(getpid()));
    EXPECT_EQ(list.processes[0].used_bytes, 4000 * kMiB);
    EXPECT_EQ(list.processes[1].pid, static_cast<unsigned>(m_child));
    EXPECT_EQ(list.processes[1].used_bytes, 700 * kMiB);
  }

  std::string m_script;
  pid_t m_child = 0;
};

TEST_F(FakeNvml, ReadsDevices) {
  two_gpus();
  std::unique_ptr<NvmlLibrary> nvml = open();
  ASSERT_TRUE(nvml);
  EXPECT_EQ(nvml->driver_version(), "535.98");
  unsigned count = 0;
  ASSERT_EQ(nvml->device_count(count), NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  nvmlDevice_t gpu1 = device(*nvml, 1);
  EXPECT_EQ(nvml->uuid(gpu1), "GPU-bbbb");
  EXPECT_EQ(nvml->pci_bus_id(gpu1), "00000000:07:00.0");
  EXPECT_EQ(nvml->name(gpu1), "NVIDIA A100-SXM4-40GB");
  nvmlMemory_t memory{};
  ASSERT_EQ(nvml->memory(device(*nvml, 0), memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 81559 * kMiB);
  EXPECT_EQ(memory.used, (500 + 4000 + 700) * kMiB);
  NvmlProcessList graphics = nvml->processes(gpu1, NvmlProcessKind::kGraphics);
  EXPECT_EQ(graphics.status, NVML_SUCCESS);
  EXPECT_TRUE(graphics.processes.empty());
}

// The _v3 entry point has written 24-byte (510 to 530), 32-byte (535.43) and 16-byte (550.127)
// entries: each is read right.
TEST_F(FakeNvml, ReadsEveryEntryLayoutOfTheV3EntryPoint) {
  for (size_t stride : {16u, 24u, 32u}) {
    SCOPED_TRACE(stride);
    two_gpus("struct " + std::to_string(stride) + "\n");
    std::unique_ptr<NvmlLibrary> nvml = open();
    ASSERT_TRUE(nvml);
    expect_gpu0_list(*nvml);
    EXPECT_EQ(nvml->process_stride(), stride);
    EXPECT_EQ(nvml->process_function(), "nvmlDeviceGetComputeRunningProcesses_v3");
  }
}

TEST_F(FakeNvml, FallsBackToOlderEntryPointsADriverRefuses) {
  two_gpus(
      "refuse nvmlDeviceGetComputeRunningProcesses_v3\n"
      "refuse nvmlDeviceGetComputeRunningProcesses_v2\n");
  std::unique_ptr<NvmlLibrary> nvml = open();
  ASSERT_TRUE(nvml);
  expect_gpu0_list(*nvml);
  EXPECT_EQ(nvml->process_stride(), 16u);
  EXPECT_EQ(nvml->process_function(), "nvmlDeviceGetComputeRunningProcesses");
}

// Processes that start between the count and the read: NVML says INSUFFICIENT_SIZE again.
TEST_F(FakeNvml, RetriesWhileTheListGrows) {
  two_gpus("grow 2\n");
  std::unique_ptr<NvmlLibrary> nvml = open();
  ASSERT_TRUE(nvml);
  expect_gpu0_list(*nvml);
}

TEST_F(FakeNvml, GivesUpOnAListThatKeepsGrowing) {
  two_gpus("grow 10\n");
  std::unique_ptr<NvmlLibrary> nvml = open();
  ASSERT_TRUE(nvml);
  NvmlProcessList list = nvml->processes(device(*nvml, 0), NvmlProcessKind::kCompute);
  EXPECT_EQ(list.status, NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_TRUE(list.processes.empty());
}

TEST(Nvml, AMissingLibraryIsAnErrorNotACrash) {
  std::string error;
  EXPECT_EQ(NvmlLibrary::open("/nonexistent/libnvidia-ml.so.1", error), nullptr);
  EXPECT_NE(error.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << error;
  GpuSampler sampler("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(sampler.loaded());
  EXPECT_NE(sampler.status().find("NVML not loaded"), std::string::npos) << sampler.status();
  EXPECT_TRUE(sampler.sample(1, true, {}).samples.empty());
}

TEST(Nvml, ALibraryWithoutNvmlIsRefused) {
  std::string error;
  EXPECT_EQ(NvmlLibrary::open("libc.so.6", error), nullptr);
  EXPECT_NE(error.find("not an NVML library"), std::string::npos) << error;
}

TEST(Nvml, DeviceFilesAreKeptFromTheJob) {
  int fd = open("/dev/null", O_RDONLY);  // as a driver library might: without O_CLOEXEC
  ASSERT_GE(fd, 0);
  EXPECT_GE(keep_device_files_from_children("/dev/null"), 1);
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(keep_device_files_from_children("/dev/null"), 0);  // marked already
  close(fd);
}

TEST(Nvml, DetectsTheStrideFromTheWrittenBytes) {
  for (size_t stride : {16u, 24u, 32u}) {
    std::vector<unsigned char> buffer(8 * 32, kNvmlSentinel);
    for (size_t i = 0; i < 3; ++i) {
      nvmlProcessInfo_v3_t entry{};
      entry.pid = 100 + static_cast<unsigned>(i);
      entry.usedGpuMemory = 1ULL << 30;
      entry.gpuInstanceId = entry.computeInstanceId = 0xFFFFFFFFu;
      memcpy(buffer.data() + i * stride, &entry, stride);
    }
    EXPECT_EQ(detect_process_stride(buffer.data(), buffer.size(), 3, 99), stride);
  }
  // One entry: every layout reads the same; the entry point's own size is kept.
  std::vector<unsigned char> one(64, kNvmlSentinel);
  memset(one.data(), 0, 24);
  EXPECT_EQ(detect_process_stride(one.data(), one.size(), 1, 24), 24u);
}

TEST_F(FakeNvml, SamplerMapsPidsAndReportsXidAndALostGpu) {
  two_gpus("ecc 1 3 1\nxid 1 79 0\n");
  GpuSampler sampler(TRAINDOC_FAKE_NVML);
  ASSERT_TRUE(sampler.loaded()) << sampler.status();
  ASSERT_EQ(sampler.devices().size(), 2u);
  EXPECT_EQ(sampler.devices()[0].memory_total, 81559 * kMiB);
  GpuRound round = sampler.sample(1000, true, {getpid()});
  // The Xid came first: GPU 1 is lost from then on, and says so once.
  ASSERT_EQ(round.events.size(), 2u);
  EXPECT_EQ(round.events[0].type, "xid");
  EXPECT_EQ(round.events[0].code, 79u);
  EXPECT_EQ(round.events[0].device, 1);
  EXPECT_EQ(round.events[1].type, "gpu-lost");
  ASSERT_EQ(round.samples.size(), 2u);
  EXPECT_EQ(round.samples[0].memory_used, 5200 * kMiB);
  EXPECT_EQ(round.samples[0].temperature_c, 64);
  EXPECT_EQ(round.samples[1].error, "GPU is lost");
  ASSERT_EQ(round.processes.size(), 2u);
  EXPECT_EQ(round.processes[1].pid, m_child);
  EXPECT_NE(round.processes[1].start_ticks, 0u);
  ASSERT_EQ(round.new_processes.size(), 2u);
  EXPECT_FALSE(round.new_processes[0].cmdline.empty());
  GpuRound next = sampler.sample(2000, false, {getpid()});
  EXPECT_TRUE(next.events.empty());
  EXPECT_TRUE(next.new_processes.empty());
  EXPECT_EQ(next.samples[0].temperature_c, std::nullopt);  // the slow fields wait their turn
}

// A driver older than nvmlEventSetWait_v2 still delivers its Xid events through nvmlEventSetWait.
TEST_F(FakeNvml, EventsComeThroughTheOldWaitWhereV2IsMissing) {
  void* old = dlopen(TRAINDOC_FAKE_NVML_OLD_EVENTS, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(old, nullptr) << dlerror();
  EXPECT_EQ(dlsym(old, "nvmlEventSetWait_v2"), nullptr);
  EXPECT_NE(dlsym(old, "nvmlEventSetWait"), nullptr);
  dlclose(old);
  two_gpus("xid 0 48 0\n");
  GpuSampler sampler(TRAINDOC_FAKE_NVML_OLD_EVENTS);
  ASSERT_TRUE(sampler.loaded()) << sampler.status();
  EXPECT_EQ(sampler.status().find("no driver events"), std::string::npos) << sampler.status();
  GpuRound round = sampler.sample(1000, false, {getpid()});
  ASSERT_EQ(round.events.size(), 1u);
  EXPECT_EQ(round.events[0].type, "xid");
  EXPECT_EQ(round.events[0].code, 48u);
  EXPECT_EQ(round.events[0].device, 0);
}

// A refused list is evidence (the sample says why), never an exception.
TEST_F(FakeNvml, ARefusedProcessListIsRecorded) {
  two_gpus(
      "refuse nvmlDeviceGetComputeRunningProcesses_v3\n"
      "refuse nvmlDeviceGetComputeRunningProcesses_v2\n"
      "refuse nvmlDeviceGetComputeRunningProcesses\n");
  GpuSampler sampler(TRAINDOC_FAKE_NVML);
  GpuRound round = sampler.sample(1, false, {});
  ASSERT_EQ(round.samples.size(), 2u);
  EXPECT_EQ(round.samples[0].error, "process list: Function Not Found");
  EXPECT_EQ(round.samples[0].memory_used, (500 + 4000 + 700) * kMiB);
  EXPECT_TRUE(round.processes.empty());
}

TEST_F(FakeNvml, APidNotVisibleHereIsKeptWithPidZero) {
  script("device GPU-aaaa 00000000:06:00.0 81559 0 H100\nprocess 0 pid=4000000 100\n");
  GpuSampler sampler(TRAINDOC_FAKE_NVML);
  // The fake lists only live pids: pid 4000000 is none, so the list is empty.
  EXPECT_TRUE(sampler.sample(1, false, {}).processes.empty());
  GpuPidResolver resolver;
  bool first = false;
  store::GpuProcess p = resolver.resolve(4'000'000, {getpid()}, 5, first);
  EXPECT_TRUE(first);
  EXPECT_EQ(p.nvml_pid, 4'000'000);
  EXPECT_EQ(p.pid, 0);
  EXPECT_EQ(p.cmdline, "");
}

// In a container, NVML gives host pids. Above pid_max (4194304 at most) they cannot be ours.
constexpr int kHostOffset = 5'000'000;

TEST_F(FakeNvml, HostPidsAreMappedThroughTheHostsProc) {
  const std::string host = m_script + ".host-proc";
  two_gpus("hostpids " + std::to_string(kHostOffset) + " " + host + "\n");
  setenv("TRAINDOC_HOST_PROC", host.c_str(), 1);
  GpuSampler sampler(TRAINDOC_FAKE_NVML);
  unsetenv("TRAINDOC_HOST_PROC");
  EXPECT_NE(sampler.status().find("NVML's pids mapped to traindoc's pid namespace through " + host),
            std::string::npos)
      << sampler.status();
  GpuRound round = sampler.sample(1, false, {getpid(), m_child});
  std::filesystem::remove_all(host);
  ASSERT_EQ(round.processes.size(), 3u);
  EXPECT_EQ(round.processes[0].nvml_pid, getpid() + kHostOffset);
  EXPECT_EQ(round.processes[0].pid, getpid());
  EXPECT_EQ(round.processes[1].nvml_pid, m_child + kHostOffset);
  EXPECT_EQ(round.processes[1].pid, m_child);
  EXPECT_NE(round.processes[1].start_ticks, 0u);
}

TEST_F(FakeNvml, HostPidsWithoutTheHostsProcAreNotVisible) {
  two_gpus("hostpids " + std::to_string(kHostOffset) + "\n");
  setenv("TRAINDOC_HOST_PROC", (m_script + ".none").c_str(), 1);
  GpuSampler sampler(TRAINDOC_FAKE_NVML);
  unsetenv("TRAINDOC_HOST_PROC");
  EXPECT_EQ(sampler.status().find("mapped"), std::string::npos);
  GpuRound round = sampler.sample(1, false, {getpid(), m_child});
  ASSERT_EQ(round.processes.size(), 3u);
  for (const store::GpuProcessSample& p : round.processes) {
    EXPECT_GT(p.nvml_pid, kHostOffset);
    EXPECT_EQ(p.pid, 0);
  }
}

// A host /proc is trusted only where traindoc finds itself, and a pid only with the same start.
TEST(GpuPids, TheHostsProcMustShowTraindocAndTheSameStart) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("traindoc-host-proc-" + std::to_string(getpid()));
  auto write = [&](const std::string& dir, const std::string& name, const std::string& text) {
    std::filesystem::create_directories(root / dir);
    std::ofstream(root / dir / name) << text;
  };
  std::string stat;
  std::getline(std::ifstream("/proc/self/stat"), stat);
  const int host = kHostOffset + 7;
  write(std::to_string(host), "status",
        "NSpid:\t" + std::to_string(host) + "\t" + std::to_string(getpid()) + "\n");
  write(std::to_string(host), "stat", std::to_string(host) + stat.substr(stat.find(' ')) + "\n");
  bool first = false;
  // No "self" entry: not a /proc where traindoc appears.
  EXPECT_EQ(GpuPidResolver(root.string()).resolve(host, {}, 1, first).pid, 0);
  write("self", "status",
        "NSpid:\t" + std::to_string(kHostOffset) + "\t" + std::to_string(getpid()) + "\n");
  GpuPidResolver resolver(root.string());
  EXPECT_TRUE(resolver.maps_host_pids());
  EXPECT_EQ(resolver.resolve(host, {}, 1, first).pid, getpid());
  // Another start time: the pid was reused since, not the same process.
  std::string other = stat;
  size_t close = other.rfind(')');
  std::vector<std::string> fields;
  std::istringstream words(other.substr(close + 2));
  for (std::string w; words >> w;) fields.push_back(w);
  fields[19] = std::to_string(std::stoull(fields[19]) + 1);  // field 22, starttime
  std::string changed =
      std::to_string(host) + " " + other.substr(other.find('('), close + 2 - other.find('('));
  for (const std::string& w : fields) changed += w + " ";
  write(std::to_string(host), "stat", changed + "\n");
  EXPECT_EQ(GpuPidResolver(root.string()).resolve(host, {}, 1, first).pid, 0);
  std::filesystem::remove_all(root);
}

TEST(GpuPids, ParsesNspid) {
  EXPECT_EQ(parse_nspid("Name:\tpython3\nNSpid:\t4242\t17\t1\nPPid:\t1\n"),
            (std::vector<int>{4242, 17, 1}));
  EXPECT_EQ(parse_nspid("Name:\tpython3\nNSpid:\t4242\n"), (std::vector<int>{4242}));
  EXPECT_TRUE(parse_nspid("Name:\tpython3\n").empty());
  EXPECT_TRUE(parse_nspid("NSpid:\t42\tx\n").empty());
}

// Fuzz-style: any bytes after "NSpid:" give positive pids or nothing, never a crash.
TEST(GpuPids, NspidOfAnyBytes) {
  std::mt19937 rng(20261122);
  constexpr char kBytes[] = {'0', '9', '1', ' ', '\t', '\n', ':', '-', 'x', '\0', '\xff'};
  for (int round = 0; round < 20000; ++round) {
    std::string text = "Name:\tpython3\nNSpid:";
    for (size_t n = rng() % 40; n > 0; --n) text += kBytes[rng() % sizeof(kBytes)];
    for (int pid : parse_nspid(text)) EXPECT_GT(pid, 0) << text;
  }
}

}  // namespace
}  // namespace traindoc::supervisor
