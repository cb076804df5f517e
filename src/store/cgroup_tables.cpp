// The cgroup tables of run.db: the DDL of schema 12, the writer's statements and the reader.
// Supervisor (the StoreWriter's thread) and analyze (read_evidence).
#include "store/cgroup_tables.h"

namespace traindoc::store::detail {

const char* const kCgroupDdl = R"sql(
CREATE TABLE process_cgroups (
  t_ns INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  version INTEGER NOT NULL,
  path TEXT NOT NULL,
  dir TEXT NOT NULL
);
CREATE INDEX process_cgroups_by_process ON process_cgroups (pid, start_ticks, t_ns);
CREATE TABLE cgroup_samples (
  t_ns INTEGER NOT NULL,
  dir TEXT NOT NULL,
  version INTEGER NOT NULL,
  current INTEGER,
  max INTEGER,
  limit_dir TEXT NOT NULL,
  oom_kills INTEGER
);
CREATE INDEX cgroup_samples_by_time ON cgroup_samples (t_ns);
CREATE TABLE kernel_oom_kills (
  t_ns INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  comm TEXT NOT NULL,
  memcg INTEGER NOT NULL,
  oom_cgroup TEXT NOT NULL,
  task_cgroup TEXT NOT NULL,
  total_vm INTEGER,
  anon_rss INTEGER,
  file_rss INTEGER,
  shmem_rss INTEGER
);
)sql";

namespace {

constexpr const char* kThinUpdate = R"sql(
UPDATE cgroup_samples
SET oom_kills = peak.max_oom_kills
FROM (SELECT rowid AS id,
             row_number() OVER (bucket ORDER BY current DESC, t_ns) AS n,
             max(oom_kills) OVER bucket AS max_oom_kills
      FROM cgroup_samples
      WHERE t_ns >= ?1 AND t_ns < ?2
      WINDOW bucket AS (PARTITION BY dir, t_ns / ?3)) AS peak
WHERE cgroup_samples.rowid = peak.id AND peak.n = 1
)sql";

constexpr const char* kThinDelete = R"sql(
DELETE FROM cgroup_samples WHERE rowid IN (
  SELECT id FROM (SELECT rowid AS id,
                         row_number() OVER (PARTITION BY dir, t_ns / ?3
                                            ORDER BY current DESC, t_ns) AS n
                  FROM cgroup_samples
                  WHERE t_ns >= ?1 AND t_ns < ?2)
  WHERE n > 1)
)sql";

}  // namespace

CgroupTables::CgroupTables(sqlite3* db)
    : m_insert_member(db,
                      "INSERT INTO process_cgroups (t_ns, pid, start_ticks, version, path, dir) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
      m_insert_sample(db,
                      "INSERT INTO cgroup_samples (t_ns, dir, version, current, max, limit_dir, "
                      "oom_kills) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
      m_insert_kill(db,
                    "INSERT INTO kernel_oom_kills (t_ns, pid, comm, memcg, oom_cgroup, "
                    "task_cgroup, total_vm, anon_rss, file_rss, shmem_rss) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
      m_thin_update(db, kThinUpdate),
      m_thin_delete(db, kThinDelete),
      m_db(db) {}

void CgroupTables::add_process_cgroup(const ProcessCgroup& row) {
  m_insert_member.bind(1, row.t_ns)
      .bind(2, row.pid)
      .bind(3, row.start_ticks)
      .bind(4, row.version)
      .bind(5, row.path)
      .bind(6, row.dir)
      .run();
}

void CgroupTables::add_samples(const std::vector<CgroupSample>& samples) {
  for (const CgroupSample& s : samples) {
    m_insert_sample.bind(1, s.t_ns)
        .bind(2, s.dir)
        .bind(3, s.version)
        .bind(4, s.current)
        .bind(5, s.max)
        .bind(6, s.limit_dir)
        .bind(7, s.oom_kills)
        .run();
  }
}

bool CgroupTables::add_oom_kill(const KernelOomKill& k, int64_t max_rows) {
  if (m_kills < 0) m_kills = query_int(m_db, "SELECT count(*) FROM kernel_oom_kills");
  if (m_kills >= max_rows) return false;
  m_insert_kill.bind(1, k.t_ns)
      .bind(2, k.pid)
      .bind(3, k.comm)
      .bind(4, k.memcg)
      .bind(5, k.oom_cgroup)
      .bind(6, k.task_cgroup)
      .bind(7, k.total_vm)
      .bind(8, k.anon_rss)
      .bind(9, k.file_rss)
      .bind(10, k.shmem_rss)
      .run();
  ++m_kills;
  return true;
}

void CgroupTables::thin(int64_t from_ns, int64_t until_ns, int64_t bucket_ns) {
  m_thin_update.bind(1, from_ns).bind(2, until_ns).bind(3, bucket_ns).run();
  m_thin_delete.bind(1, from_ns).bind(2, until_ns).bind(3, bucket_ns).run();
}

void read_cgroups(sqlite3* db, std::vector<ProcessCgroup>& members,
                  std::vector<CgroupSample>& samples, std::vector<KernelOomKill>& kills) {
  Statement member_rows(db,
                        "SELECT t_ns, pid, start_ticks, version, path, dir FROM process_cgroups "
                        "ORDER BY t_ns, rowid");
  while (member_rows.step()) {
    ProcessCgroup& m = members.emplace_back();
    m.t_ns = member_rows.int64(0);
    m.pid = member_rows.int32(1);
    m.start_ticks = member_rows.uint64(2);
    m.version = member_rows.int32(3);
    m.path = member_rows.text(4);
    m.dir = member_rows.text(5);
  }
  Statement sample_rows(db,
                        "SELECT t_ns, dir, version, current, max, limit_dir, oom_kills "
                        "FROM cgroup_samples ORDER BY t_ns, rowid");
  while (sample_rows.step()) {
    CgroupSample& s = samples.emplace_back();
    s.t_ns = sample_rows.int64(0);
    s.dir = sample_rows.text(1);
    s.version = sample_rows.int32(2);
    s.current = sample_rows.opt_uint64(3);
    s.max = sample_rows.opt_uint64(4);
    s.limit_dir = sample_rows.text(5);
    s.oom_kills = sample_rows.opt_uint64(6);
  }
  Statement kill_rows(db,
                      "SELECT t_ns, pid, comm, memcg, oom_cgroup, task_cgroup, total_vm, "
                      "anon_rss, file_rss, shmem_rss FROM kernel_oom_kills ORDER BY t_ns, rowid");
  while (kill_rows.step()) {
    KernelOomKill& k = kills.emplace_back();
    k.t_ns = kill_rows.int64(0);
    k.pid = kill_rows.int32(1);
    k.comm = kill_rows.text(2);
    k.memcg = kill_rows.int64(3) != 0;
    k.oom_cgroup = kill_rows.text(4);
    k.task_cgroup = kill_rows.text(5);
    k.total_vm = kill_rows.opt_uint64(6);
    k.anon_rss = kill_rows.opt_uint64(7);
    k.file_rss = kill_rows.opt_uint64(8);
    k.shmem_rss = kill_rows.opt_uint64(9);
  }
}

}  // namespace traindoc::store::detail
