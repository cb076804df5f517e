// The cgroup tables of run.db (schema 12: process_cgroups, cgroup_samples, kernel_oom_kills):
// their DDL, the writer's prepared statements and the reader. Internal to src/store: StoreWriter
// and read_evidence call it; docs/run-db.md documents the tables.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <vector>

#include "store/cgroup_evidence.h"
#include "store/sqlite_util.h"

namespace traindoc::store::detail {

// What schema 12 adds; tests/fixtures/store/schema_v12.sql holds schema 11 plus these.
extern const char* const kCgroupDdl;

// The writer's side: statements prepared once, used by the supervisor's thread each sample.
class CgroupTables {
 public:
  CgroupTables() = default;
  explicit CgroupTables(sqlite3* db);

  void add_process_cgroup(const ProcessCgroup& row);
  void add_samples(const std::vector<CgroupSample>& samples);
  // False when the table holds `max_rows` kills already (the caller counts the drop).
  bool add_oom_kill(const KernelOomKill& kill, int64_t max_rows);
  // Thins samples in [from_ns, until_ns) to one row per cgroup and bucket: its highest usage,
  // with the bucket's highest OOM kill count.
  void thin(int64_t from_ns, int64_t until_ns, int64_t bucket_ns);

 private:
  Statement m_insert_member;
  Statement m_insert_sample;
  Statement m_insert_kill;
  Statement m_thin_update;
  Statement m_thin_delete;
  int64_t m_kills = -1;  // rows in kernel_oom_kills; counted on first use
  sqlite3* m_db = nullptr;
};

// Reads the cgroup tables of a file of schema 12 or newer.
void read_cgroups(sqlite3* db, std::vector<ProcessCgroup>& members,
                  std::vector<CgroupSample>& samples, std::vector<KernelOomKill>& kills);

}  // namespace traindoc::store::detail
