// Tests of the GPU tables of run.db (schema 3): every field round-trips, processes are written
// once, events are capped, and thinning keeps each bucket's peak.
#include <gtest/gtest.h>

#include "store/store_reader.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace traindoc::store {
namespace {

using test::kSecond;
using test::kT0;
using test::TempDir;

GpuSample full_gpu_sample(int64_t t_ns, int device) {
  GpuSample s;
  s.t_ns = t_ns;
  s.device = device;
  s.memory_used = 70ULL << 30;
  s.utilization_gpu = 99;
  s.utilization_memory = 41;
  s.temperature_c = 83;
  s.power_mw = 699'000;
  s.throttle_reasons = 0x8000'0000'0000'0020ULL;  // all 64 bits survive
  s.ecc_corrected = 12;
  s.ecc_uncorrected = 1;
  s.error = "";
  return s;
}

TEST(StoreGpu, RoundTripsEveryField) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  GpuEvidence want;
  want.nvml_loaded = true;
  want.nvml_status = "NVML of driver 580.65.06: 2 GPU(s)";
  want.driver_devices = true;
  want.devices = {{0, "GPU-a", "00000000:06:00.0", "NVIDIA H100", 80ULL << 30},
                  {1, "GPU-b", "00000000:07:00.0", "NVIDIA H100", 80ULL << 30}};
  GpuSample lost;
  lost.t_ns = kT0 + kSecond;
  lost.device = 1;
  lost.error = "GPU is lost";
  want.samples = {full_gpu_sample(kT0 + kSecond, 0), lost};
  want.process_samples = {
      {kT0 + kSecond, 0, 90001, 501, 0xF000'0000'0000'0001ULL, 1ULL << 30, "compute"},
      {kT0 + kSecond, 0, 90002, 0, 0, std::nullopt, "graphics"}};
  want.processes = {{90001, 501, 0xF000'0000'0000'0001ULL, kT0, "python3 train.py"},
                    {90002, 0, 0, kT0 + kSecond, ""}};
  want.events = {{kT0 + 2 * kSecond, 1, "xid", 79, "GPU has fallen off the bus"}};
  want.cuda_env = {{501, 7, "GPU-b,0", "PCI_BUS_ID", "expandable_segments:True"},
                   {502, 8, std::nullopt, "", std::nullopt}};
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.write_gpu_status(want.nvml_loaded, want.nvml_status, want.driver_devices);
    for (const GpuDevice& d : want.devices) writer.write_gpu_device(d);
    writer.add_gpu_samples(want.samples);
    writer.add_gpu_process_samples(want.process_samples);
    for (const GpuProcess& p : want.processes) writer.write_gpu_process(p);
    // Seen again later: the first sighting stays.
    writer.write_gpu_process({90001, 501, 0xF000'0000'0000'0001ULL, kT0 + 9 * kSecond, "x"});
    for (const GpuEvent& e : want.events) writer.add_gpu_event(e);
    for (const CudaEnv& e : want.cuda_env) writer.write_cuda_env(e);
  }
  EXPECT_EQ(read_evidence(path).gpu, want);
}

TEST(StoreGpu, CapsEventsKeepingTheFirst) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  {
    WriterOptions options;
    options.max_events_per_kind = 3;
    StoreWriter writer = StoreWriter::open(path, options);
    for (int i = 0; i < 5; ++i) {
      writer.add_gpu_event({kT0 + i * kSecond, 0, "xid", static_cast<uint64_t>(94 + i), ""});
    }
  }
  const Evidence seen = read_evidence(path);
  ASSERT_EQ(seen.gpu.events.size(), 3u);
  EXPECT_EQ(seen.gpu.events.front().code, 94u);
  EXPECT_EQ(seen.gpu.events.back().code, 96u);
  EXPECT_EQ(seen.gpu_events_dropped, 2u);
}

// 15 minutes of one sample a second: minutes 0..4 thin to their peak row, with the bucket's
// highest temperature and ECC count; the last 10 minutes stay whole.
TEST(StoreGpu, ThinningKeepsEachBucketsPeak) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  constexpr int kSeconds = 15 * 60;
  {
    StoreWriter writer = StoreWriter::open(path);
    for (int i = 0; i < kSeconds; ++i) {
      const int64_t t = kT0 + i * kSecond;
      GpuSample s = full_gpu_sample(t, 0);
      s.memory_used = i % 60 == 30 ? (60ULL << 30) : (1ULL << 30) + static_cast<uint64_t>(i);
      s.temperature_c = i % 60 == 50 ? 90 : 60;
      s.ecc_corrected = static_cast<uint64_t>(i);
      writer.add_gpu_samples({s});
      const uint64_t used = i % 60 == 10 ? (5ULL << 30) : (1ULL << 30);
      writer.add_gpu_process_samples({{t, 0, 42, 42, 1, used, "compute"}});
    }
    writer.downsample(kT0 + kSeconds * kSecond + kSecond / 2);
  }
  const Evidence seen = read_evidence(path);
  const int64_t until = kT0 + 300 * kSecond;
  int old_samples = 0;
  for (const GpuSample& s : seen.gpu.samples) {
    if (s.t_ns >= until) continue;
    ++old_samples;
    const int64_t minute = (s.t_ns - kT0) / kSecond / 60;
    EXPECT_EQ(s.t_ns, kT0 + (minute * 60 + 30) * kSecond);
    EXPECT_EQ(s.memory_used, 60ULL << 30);
    EXPECT_EQ(s.temperature_c, 90);
    EXPECT_EQ(s.ecc_corrected, static_cast<uint64_t>(minute * 60 + 59));
  }
  EXPECT_EQ(old_samples, 5);
  EXPECT_EQ(seen.gpu.samples.size(), 5u + 600u);
  int old_process = 0;
  for (const GpuProcessSample& s : seen.gpu.process_samples) {
    if (s.t_ns >= until) continue;
    ++old_process;
    EXPECT_EQ(s.used_bytes, 5ULL << 30);
  }
  EXPECT_EQ(old_process, 5);
}

}  // namespace
}  // namespace traindoc::store
