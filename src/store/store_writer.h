// StoreWriter: appends what the supervisor sees to <run>/run.db (SQLite, WAL).
// Lives in the supervisor, owned and called by one thread (no locking inside). Writes go into
// one open transaction that flush() commits, so a kill -9 loses at most what came after it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/evidence.h"
#include "store/store_error.h"

namespace traindoc::store {

// Bounds that keep run.db small on runs of days (docs/run-db.md, "Bounds").
struct WriterOptions {
  // Samples younger than this stay at full rate; older ones are thinned by downsample().
  int64_t full_rate_window_ns = 10LL * 60 * 1'000'000'000;
  // Thinned samples keep one row per bucket (per process for proc samples).
  int64_t bucket_ns = 60LL * 1'000'000'000;
  // Per event kind: the first half is kept forever, the rest rolls (the newest are kept).
  int64_t max_events_per_kind = 10'000;
  // Per log stream: rows of log_lines. The first log_lines_kept_first lines are kept forever
  // (clamped to the maximum), the rest rolls (the newest are kept).
  int64_t max_log_lines_per_stream = 20'000;
  int64_t log_lines_kept_first = 2'000;
  // Crashes kept: the first ones (a fork bomb that segfaults repeats itself). A crash already
  // kept is always replaced, whatever the count.
  int64_t max_crashes = 10'000;
  // Collective calls kept; the supervisor already chooses which (docs/collectives.md), this is
  // the hard cap. Beyond it calls are counted in meta, not stored.
  int64_t max_collectives = 200'000;
};

class StoreWriter {
 public:
  // Opens `db_path`, creating it (not its folder) when absent; reopening a run.db of this
  // schema appends to it. Throws StoreError (unwritable folder, not a run.db, newer schema).
  static StoreWriter open(const std::string& db_path, const WriterOptions& options = {});

  StoreWriter(StoreWriter&&) noexcept;
  StoreWriter& operator=(StoreWriter&&) noexcept;
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;
  // Commits what is pending (errors are swallowed: a destructor must not throw) and closes.
  ~StoreWriter();

  // The single run row, replaced whole (command included) at each call.
  void write_run(const RunInfo& run);
  // Inserts, or merges into the row of the same (pid, start_ticks): empty strings, zero
  // ppid/start_ns/end_ns, nullopt and EndSource::kNone in `record` keep the known values;
  // agent, forked and core_dumped only ever go from false to true.
  void upsert_process(const ProcessRecord& record);
  // Writes the whole record, replacing the row of the same (pid, start_ticks): for the supervisor,
  // whose process table holds all that is known of each process.
  void write_process(const ProcessRecord& record);
  void add_proc_samples(const std::vector<ProcSample>& samples);
  void add_host_sample(const HostSample& sample);
  void add_step_samples(const std::vector<StepSample>& samples);
  // Subject to max_events_per_kind; events beyond it are counted in meta, not stored.
  void add_event(const Event& event);
  // Replaces the stream of the same name (its file list included).
  void write_log_stream(const LogStream& stream);
  // Inserts, or replaces whole (frames included) the crash of the same (pid, start_ticks): the
  // supervisor writes the raw record first, then again once the frames are symbolized. A new
  // crash beyond max_crashes is counted in meta, not stored.
  void write_crash(const Crash& crash);
  // Appends, subject to max_log_lines_per_stream; lines beyond it are counted in meta per stream.
  // Within a stream, the order of the calls and of `lines` is the order the bound goes by.
  void add_log_lines(const std::vector<LogLine>& lines);
  // Appends, subject to max_collectives.
  void add_collectives(const std::vector<CollectiveCall>& calls);
  // Sets end_ns and raised of calls appended before they returned, found by group, number and
  // process; a call not stored (beyond max_collectives) stays so.
  void end_collectives(const std::vector<CollectiveCall>& calls);
  // Appends an issue with its ranks.
  void add_collective_issue(const CollectiveIssue& issue);

  // GPU evidence (schema 3), from the supervisor's GPU sampler. The status is written once:
  // whether NVML was loaded, and a sentence on it (meta keys).
  void write_gpu_status(bool nvml_loaded, const std::string& status, bool driver_devices);
  // Replaces the device of the same NVML index.
  void write_gpu_device(const GpuDevice& device);
  void add_gpu_samples(const std::vector<GpuSample>& samples);
  void add_gpu_process_samples(const std::vector<GpuProcessSample>& samples);
  // Once per process: a later write of the same (nvml_pid, start_ticks) is ignored.
  void write_gpu_process(const GpuProcess& process);
  // At most max_events_per_kind rows, the first ones; the rest are counted in meta.
  void add_gpu_event(const GpuEvent& event);
  // Replaces the row of the same (pid, start_ticks).
  void write_cuda_env(const CudaEnv& env);
  // Schema 12: a process's memory cgroup (first seen, moved), samples of the job's cgroups, and
  // a kill the kernel log told (bounded like a kind of event; the drop is counted).
  void add_process_cgroup(const ProcessCgroup& row);
  void add_cgroup_samples(const std::vector<CgroupSample>& samples);
  void add_kernel_oom_kill(const KernelOomKill& kill);
  // Schema 14: the traps the preflight checks found as the run started, once.
  void write_preflight(int64_t t_ns, const std::vector<PreflightResult>& results);
  // Schema 15: the caching allocator's state at one out-of-memory error, with its sites.
  void write_allocator_state(const AllocatorState& state);

  // Commits everything written since the last flush. Cheap when nothing is pending.
  void flush();

  // Thins samples older than now_ns - full_rate_window_ns to one row per bucket, keeping the
  // peak (highest rss; for the host, lowest mem_available); step samples keep the first and the
  // last row of each bucket per process and kind. Only buckets not yet thinned are
  // visited, so calling it every second costs nothing between bucket boundaries. Part of the
  // pending transaction: flush() commits it.
  void downsample(int64_t now_ns);

  const std::string& path() const;

  // Writes never throw once the file is open: the first error (a full disk, an I/O error) stops
  // the writer, rolls back what was pending (what was committed stays readable) and drops every
  // later write until resume(). failure() says why; nullopt while writing works.
  const std::optional<std::string>& failure() const;
  // Writes again, after the caller freed space.
  void resume();

 private:
  struct Impl;
  explicit StoreWriter(std::unique_ptr<Impl> impl);
  void begin_if_needed();
  template <class Write>
  void guarded(Write&& write);

  std::unique_ptr<Impl> m_impl;
};

}  // namespace traindoc::store
