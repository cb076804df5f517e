// The GPU tables of run.db (schema 3): DDL, the writer's statements and the reader.
// Writer side in the supervisor's main thread; reader side in analyze and report.
#include "store/gpu_tables.h"

#include <string>

namespace traindoc::store::detail {

// Units as everywhere in run.db: bytes, ns since the epoch; NULL is "not measured".
const char* const kGpuDdl = R"sql(
CREATE TABLE gpu_devices (
  nvml_index INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL,
  pci_bus_id TEXT NOT NULL,
  name TEXT NOT NULL,
  memory_total INTEGER NOT NULL
);
CREATE TABLE gpu_samples (
  t_ns INTEGER NOT NULL,
  device INTEGER NOT NULL,
  memory_used INTEGER,
  utilization_gpu INTEGER,
  utilization_memory INTEGER,
  temperature_c INTEGER,
  power_mw INTEGER,
  throttle_reasons INTEGER,
  ecc_corrected INTEGER,
  ecc_uncorrected INTEGER,
  error TEXT NOT NULL
);
CREATE INDEX gpu_samples_by_time ON gpu_samples (t_ns);
CREATE TABLE gpu_process_samples (
  t_ns INTEGER NOT NULL,
  device INTEGER NOT NULL,
  nvml_pid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  used_bytes INTEGER,
  type TEXT NOT NULL
);
CREATE INDEX gpu_process_samples_by_time ON gpu_process_samples (t_ns);
CREATE TABLE gpu_processes (
  nvml_pid INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  first_seen_ns INTEGER NOT NULL,
  cmdline TEXT NOT NULL,
  PRIMARY KEY (nvml_pid, start_ticks)
);
CREATE TABLE gpu_events (
  id INTEGER PRIMARY KEY,
  t_ns INTEGER NOT NULL,
  device INTEGER NOT NULL,
  type TEXT NOT NULL,
  code INTEGER NOT NULL,
  text TEXT NOT NULL
);
CREATE TABLE cuda_env (
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  visible_devices TEXT,
  device_order TEXT NOT NULL,
  PRIMARY KEY (pid, start_ticks)
);
)sql";

const char* const kGpuDdlV4 = R"sql(
ALTER TABLE cuda_env ADD COLUMN alloc_conf TEXT;
)sql";

namespace {

// The bucket's peak row (row 1 by `order`) stays, the others of the bucket go. ?1..?2: time
// range, ?3: bucket width.
std::string thin_delete(const char* table, const char* partition, const char* order) {
  return std::string("DELETE FROM ") + table +
         " WHERE rowid IN (SELECT id FROM (SELECT rowid AS id, row_number() OVER (PARTITION BY " +
         partition + ", t_ns / ?3 ORDER BY " + order + ", t_ns) AS n FROM " + table +
         " WHERE t_ns >= ?1 AND t_ns < ?2) WHERE n > 1)";
}

// ECC counts only grow and temperature peaks on its own: the peak row takes the bucket's maxima.
constexpr const char* kThinSamplesUpdate = R"sql(
UPDATE gpu_samples
SET temperature_c = peak.max_temperature, ecc_corrected = peak.max_corrected,
    ecc_uncorrected = peak.max_uncorrected
FROM (SELECT rowid AS id,
             row_number() OVER (bucket ORDER BY memory_used DESC, t_ns) AS n,
             max(temperature_c) OVER bucket AS max_temperature,
             max(ecc_corrected) OVER bucket AS max_corrected,
             max(ecc_uncorrected) OVER bucket AS max_uncorrected
      FROM gpu_samples
      WHERE t_ns >= ?1 AND t_ns < ?2
      WINDOW bucket AS (PARTITION BY device, t_ns / ?3)) AS peak
WHERE gpu_samples.rowid = peak.id AND peak.n = 1
)sql";

}  // namespace

GpuTables::GpuTables(sqlite3* db)
    : m_replace_device(db,
                       "INSERT OR REPLACE INTO gpu_devices (nvml_index, uuid, pci_bus_id, name, "
                       "memory_total) VALUES (?1, ?2, ?3, ?4, ?5)"),
      m_insert_sample(db,
                      "INSERT INTO gpu_samples (t_ns, device, memory_used, utilization_gpu, "
                      "utilization_memory, temperature_c, power_mw, throttle_reasons, "
                      "ecc_corrected, ecc_uncorrected, error) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
      m_insert_process_sample(db,
                              "INSERT INTO gpu_process_samples (t_ns, device, nvml_pid, pid, "
                              "start_ticks, used_bytes, type) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
      m_insert_process(db,
                       "INSERT OR IGNORE INTO gpu_processes (nvml_pid, pid, start_ticks, "
                       "first_seen_ns, cmdline) VALUES (?1, ?2, ?3, ?4, ?5)"),
      m_insert_event(db,
                     "INSERT INTO gpu_events (t_ns, device, type, code, text) "
                     "VALUES (?1, ?2, ?3, ?4, ?5)"),
      m_upsert_env(db,
                   "INSERT OR REPLACE INTO cuda_env (pid, start_ticks, visible_devices, "
                   "device_order, alloc_conf) VALUES (?1, ?2, ?3, ?4, ?5)"),
      m_thin_samples_update(db, kThinSamplesUpdate),
      m_thin_samples_delete(db, thin_delete("gpu_samples", "device", "memory_used DESC")),
      m_thin_process_delete(db, thin_delete("gpu_process_samples", "device, nvml_pid, start_ticks",
                                            "used_bytes DESC")),
      m_db(db) {}

void GpuTables::write_device(const GpuDevice& d) {
  m_replace_device.bind(1, d.index)
      .bind(2, d.uuid)
      .bind(3, d.pci_bus_id)
      .bind(4, d.name)
      .bind(5, d.memory_total)
      .run();
}

void GpuTables::add_samples(const std::vector<GpuSample>& samples) {
  for (const GpuSample& s : samples) {
    m_insert_sample.bind(1, s.t_ns)
        .bind(2, s.device)
        .bind(3, s.memory_used)
        .bind(4, s.utilization_gpu)
        .bind(5, s.utilization_memory)
        .bind(6, s.temperature_c)
        .bind(7, s.power_mw)
        .bind(8, s.throttle_reasons)
        .bind(9, s.ecc_corrected)
        .bind(10, s.ecc_uncorrected)
        .bind(11, s.error)
        .run();
  }
}

void GpuTables::add_process_samples(const std::vector<GpuProcessSample>& samples) {
  for (const GpuProcessSample& s : samples) {
    m_insert_process_sample.bind(1, s.t_ns)
        .bind(2, s.device)
        .bind(3, s.nvml_pid)
        .bind(4, s.pid)
        .bind(5, s.start_ticks)
        .bind(6, s.used_bytes)
        .bind(7, s.type)
        .run();
  }
}

void GpuTables::write_process(const GpuProcess& p) {
  m_insert_process.bind(1, p.nvml_pid)
      .bind(2, p.pid)
      .bind(3, p.start_ticks)
      .bind(4, p.first_seen_ns)
      .bind(5, p.cmdline)
      .run();
}

bool GpuTables::add_event(const GpuEvent& e, int64_t max_rows) {
  if (m_events < 0) m_events = query_int(m_db, "SELECT count(*) FROM gpu_events");
  // An Xid storm repeats itself: the first events name the fault.
  if (m_events >= max_rows) return false;
  m_insert_event.bind(1, e.t_ns).bind(2, e.device).bind(3, e.type).bind(4, e.code).bind(5, e.text);
  m_insert_event.run();
  ++m_events;
  return true;
}

void GpuTables::write_cuda_env(const CudaEnv& env) {
  m_upsert_env.bind(1, env.pid)
      .bind(2, env.start_ticks)
      .bind(3, env.visible_devices)
      .bind(4, env.device_order)
      .bind(5, env.alloc_conf)
      .run();
}

void GpuTables::thin(int64_t from_ns, int64_t until_ns, int64_t bucket_ns) {
  for (Statement* s : {&m_thin_samples_update, &m_thin_samples_delete, &m_thin_process_delete}) {
    s->bind(1, from_ns).bind(2, until_ns).bind(3, bucket_ns).run();
  }
}

void read_gpu(sqlite3* db, int schema_version, GpuEvidence& out) {
  Statement meta(db, "SELECT key, value FROM meta WHERE key IN (?1, ?2, ?3)");
  meta.bind(1, kMetaNvmlLoaded).bind(2, kMetaNvmlStatus).bind(3, kMetaDriverDevices);
  while (meta.step()) {
    if (meta.text(0) == kMetaNvmlLoaded) {
      out.nvml_loaded = meta.text(1) == "1";
    } else if (meta.text(0) == kMetaDriverDevices) {
      out.driver_devices = meta.text(1) == "1";
    } else {
      out.nvml_status = meta.text(1);
    }
  }
  Statement devices(db,
                    "SELECT nvml_index, uuid, pci_bus_id, name, memory_total FROM gpu_devices "
                    "ORDER BY nvml_index");
  while (devices.step()) {
    out.devices.push_back(
        {devices.int32(0), devices.text(1), devices.text(2), devices.text(3), devices.uint64(4)});
  }
  Statement samples(db,
                    "SELECT t_ns, device, memory_used, utilization_gpu, utilization_memory, "
                    "temperature_c, power_mw, throttle_reasons, ecc_corrected, ecc_uncorrected, "
                    "error FROM gpu_samples ORDER BY t_ns, device, rowid");
  while (samples.step()) {
    GpuSample& s = out.samples.emplace_back();
    s.t_ns = samples.int64(0);
    s.device = samples.int32(1);
    s.memory_used = samples.opt_uint64(2);
    s.utilization_gpu = samples.opt_int32(3);
    s.utilization_memory = samples.opt_int32(4);
    s.temperature_c = samples.opt_int32(5);
    s.power_mw = samples.opt_int32(6);
    s.throttle_reasons = samples.opt_uint64(7);
    s.ecc_corrected = samples.opt_uint64(8);
    s.ecc_uncorrected = samples.opt_uint64(9);
    s.error = samples.text(10);
  }
  Statement processes(db,
                      "SELECT t_ns, device, nvml_pid, pid, start_ticks, used_bytes, type "
                      "FROM gpu_process_samples ORDER BY t_ns, device, rowid");
  while (processes.step()) {
    out.process_samples.push_back({processes.int64(0), processes.int32(1), processes.int32(2),
                                   processes.int32(3), processes.uint64(4), processes.opt_uint64(5),
                                   processes.text(6)});
  }
  Statement seen(db,
                 "SELECT nvml_pid, pid, start_ticks, first_seen_ns, cmdline FROM gpu_processes "
                 "ORDER BY first_seen_ns, nvml_pid");
  while (seen.step()) {
    out.processes.push_back(
        {seen.int32(0), seen.int32(1), seen.uint64(2), seen.int64(3), seen.text(4)});
  }
  Statement events(db, "SELECT t_ns, device, type, code, text FROM gpu_events ORDER BY t_ns, id");
  while (events.step()) {
    out.events.push_back(
        {events.int64(0), events.int32(1), events.text(2), events.uint64(3), events.text(4)});
  }
  // Schema 3 has no alloc_conf column: it reads as unset.
  Statement env(db, schema_version >= 4
                        ? "SELECT pid, start_ticks, visible_devices, device_order, alloc_conf "
                          "FROM cuda_env ORDER BY pid, start_ticks"
                        : "SELECT pid, start_ticks, visible_devices, device_order, NULL "
                          "FROM cuda_env ORDER BY pid, start_ticks");
  while (env.step()) {
    CudaEnv& e = out.cuda_env.emplace_back();
    e.pid = env.int32(0);
    e.start_ticks = env.uint64(1);
    if (!env.is_null(2)) e.visible_devices = env.text(2);
    e.device_order = env.text(3);
    if (!env.is_null(4)) e.alloc_conf = env.text(4);
  }
}

}  // namespace traindoc::store::detail
