// The preflight table of run.db: the DDL of schema 14, its writer and reader.
// Supervisor (the StoreWriter's thread) and analyze (read_evidence).
#include "store/preflight_tables.h"

#include "store/sqlite_util.h"

namespace traindoc::store::detail {

const char* const kPreflightDdl = R"sql(
CREATE TABLE preflight_checks (
  t_ns INTEGER NOT NULL,
  check_name TEXT NOT NULL,
  verdict TEXT NOT NULL,
  measured INTEGER,
  threshold INTEGER,
  total INTEGER,
  device INTEGER,
  pid INTEGER,
  subject TEXT NOT NULL
);
)sql";

void write_preflight(sqlite3* db, int64_t t_ns, const std::vector<PreflightResult>& results) {
  Statement insert(db,
                   "INSERT INTO preflight_checks (t_ns, check_name, verdict, measured, threshold, "
                   "total, device, pid, subject) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  for (const PreflightResult& r : results) {
    insert.bind(1, t_ns)
        .bind(2, to_string(r.check))
        .bind(3, to_string(r.verdict))
        .bind(4, r.measured)
        .bind(5, r.threshold)
        .bind(6, r.total)
        .bind(7, r.device)
        .bind(8, r.pid)
        .bind(9, r.subject)
        .run();
  }
}

void read_preflight(sqlite3* db, std::vector<PreflightResult>& out, int64_t& t_ns) {
  Statement rows(db,
                 "SELECT check_name, verdict, measured, threshold, total, device, pid, subject, "
                 "t_ns FROM preflight_checks ORDER BY rowid");
  while (rows.step()) {
    t_ns = rows.int64(8);
    std::optional<PreflightCheck> check = preflight_check_named(rows.text(0));
    std::optional<Verdict> verdict = verdict_named(rows.text(1));
    if (!check || !verdict) continue;
    out.push_back({*check, *verdict, rows.opt_int64(2), rows.opt_int64(3), rows.opt_int64(4),
                   rows.opt_int32(5), rows.opt_int32(6), rows.text(7)});
  }
}

}  // namespace traindoc::store::detail
