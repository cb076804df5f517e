// The GPU tables of run.db (schema 3, 4): their DDL, the writer's prepared statements and the
// reader. Internal to src/store: StoreWriter and read_evidence call it; docs/run-db.md documents
// the tables.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "store/gpu_evidence.h"
#include "store/sqlite_util.h"

namespace traindoc::store::detail {

// What schema 3 adds; tests/fixtures/store/schema_v3.sql holds schema 2 plus these.
extern const char* const kGpuDdl;
// What schema 4 adds: the allocator settings of each job process.
extern const char* const kGpuDdlV4;

// Meta keys of the GPU evidence.
inline constexpr const char* kMetaNvmlLoaded = "gpu_nvml_loaded";
inline constexpr const char* kMetaNvmlStatus = "gpu_nvml_status";
inline constexpr const char* kMetaDriverDevices = "gpu_driver_devices";

// The writer's side: statements prepared once, used by the supervisor's thread every second.
class GpuTables {
 public:
  GpuTables() = default;
  explicit GpuTables(sqlite3* db);

  void write_device(const GpuDevice& device);
  void add_samples(const std::vector<GpuSample>& samples);
  void add_process_samples(const std::vector<GpuProcessSample>& samples);
  // Once per process: a second write of the same (nvml_pid, start_ticks) is ignored.
  void write_process(const GpuProcess& process);
  // False when the table holds `max_rows` events already (the caller counts the drop).
  bool add_event(const GpuEvent& event, int64_t max_rows);
  void write_cuda_env(const CudaEnv& env);
  // Thins samples in [from_ns, until_ns) to one row per bucket: the device's highest memory use
  // (with the bucket's highest temperature and ECC counts), each process's highest use.
  void thin(int64_t from_ns, int64_t until_ns, int64_t bucket_ns);

 private:
  Statement m_replace_device;
  Statement m_insert_sample;
  Statement m_insert_process_sample;
  Statement m_insert_process;
  Statement m_insert_event;
  Statement m_upsert_env;
  Statement m_thin_samples_update;
  Statement m_thin_samples_delete;
  Statement m_thin_process_delete;
  int64_t m_events = -1;  // rows in gpu_events; counted on first use
  sqlite3* m_db = nullptr;
};

// Reads the GPU tables and meta keys of a file of schema 3 or newer.
void read_gpu(sqlite3* db, int schema_version, GpuEvidence& out);

}  // namespace traindoc::store::detail
