// The writer of run.db's collective tables: each call of a rank, the calls' ends, and the issues
// the collective checker found with their ranks. Supervisor, the StoreWriter's thread.
#include "store/collective_tables.h"

#include "store/collective_words.h"

namespace traindoc::store::detail {

CollectiveTables::CollectiveTables(sqlite3* db)
    : m_insert_call(
          db,
          "INSERT INTO collectives (t_ns, end_ns, pid, start_ticks, group_id, number, group_rank, "
          "group_size, source, op, dtype, count, tensors, redop, peer, site, step, async, raised) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
          "?18, ?19)"),
      m_end_call(db,
                 "UPDATE collectives SET end_ns = ?1, raised = ?2 WHERE group_id = ?3 "
                 "AND number = ?4 AND pid = ?5 AND start_ticks = ?6"),
      m_insert_issue(
          db,
          "INSERT INTO collective_issues (t_ns, first_ns, kind, group_id, number, op, field, "
          "message, aborted, group_size, default_group, pair, wait_end, wait_end_rank, alone, "
          "waited_ns, quiet_ns, sites_differed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
          "?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"),
      m_insert_issue_rank(
          db,
          "INSERT INTO collective_issue_ranks (issue_id, position, group_rank, pid, start_ticks, "
          "value, site, state, last_call, calls, stack, status, job_rank, odd, op, peer, late_ns, "
          "ended, exit_code, exit_signal, finished) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
          "?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)"),
      m_calls(query_int(db, "SELECT count(*) FROM collectives")),
      m_db(db) {}

bool CollectiveTables::add_call(const CollectiveCall& c, int64_t max_rows) {
  if (m_calls >= max_rows) return false;
  m_insert_call.bind(1, c.t_ns)
      .bind(2, c.end_ns)
      .bind(3, c.pid)
      .bind(4, c.start_ticks)
      .bind(5, c.group)
      .bind(6, c.number)
      .bind(7, c.group_rank)
      .bind(8, c.group_size)
      .bind(9, c.source)
      .bind(10, c.op)
      .bind(11, c.dtype)
      .bind(12, c.count)
      .bind(13, c.tensors)
      .bind(14, c.redop)
      .bind(15, c.peer)
      .bind(16, c.site)
      .bind(17, c.step)
      .bind(18, c.async ? 1 : 0)
      .bind(19, c.raised ? 1 : 0)
      .run();
  ++m_calls;
  return true;
}

void CollectiveTables::end_call(const CollectiveCall& c) {
  m_end_call.bind(1, c.end_ns)
      .bind(2, c.raised ? 1 : 0)
      .bind(3, c.group)
      .bind(4, c.number)
      .bind(5, c.pid)
      .bind(6, c.start_ticks)
      .run();
}

void CollectiveTables::add_issue(const CollectiveIssue& issue) {
  m_insert_issue.bind(1, issue.t_ns)
      .bind(2, issue.first_ns)
      .bind(3, to_string(issue.kind))
      .bind(4, issue.group)
      .bind(5, issue.number)
      .bind(6, issue.op)
      .bind(7, to_string(issue.field))
      .bind(8, issue_line(issue))
      .bind(9, issue.aborted)
      .bind(10, issue.group_size)
      .bind(11, issue.default_group)
      .bind(12, issue.pair)
      .bind(13, to_string(issue.wait_end))
      .bind(14, issue.wait_end_rank)
      .bind(15, issue.alone)
      .bind(16, issue.waited_ns)
      .bind(17, issue.quiet_ns)
      .bind(18, issue.sites_differed_at)
      .run();
  const int64_t id = sqlite3_last_insert_rowid(m_db);
  for (size_t i = 0; i < issue.ranks.size(); ++i) {
    const CollectiveIssueRank& r = issue.ranks[i];
    m_insert_issue_rank.bind(1, id)
        .bind(2, static_cast<int64_t>(i))
        .bind(3, r.group_rank)
        .bind(4, r.pid)
        .bind(5, r.start_ticks)
        .bind(6, r.value)
        .bind(7, r.site)
        .bind(8, rank_state_text(issue, r))
        .bind(9, r.last_call)
        .bind(10, r.calls)
        .bind(11, r.stack)
        .bind(12, to_string(r.state))
        .bind(13, r.job_rank)
        .bind(14, r.odd)
        .bind(15, r.op)
        .bind(16, r.peer)
        .bind(17, r.late_ns)
        .bind(18, r.end.has_value())
        .bind(19, r.end ? r.end->exit_code : std::nullopt)
        .bind(20, r.end ? r.end->exit_signal : std::nullopt)
        .bind(21, r.end && r.end->finished)
        .run();
  }
}

}  // namespace traindoc::store::detail
