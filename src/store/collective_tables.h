// The collective tables of run.db (collectives, collective_issues, collective_issue_ranks): the
// writer's prepared statements and its cap on stored calls. Internal to src/store: StoreWriter
// calls it; schema.cpp holds the DDL, docs/run-db.md documents the tables.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <vector>

#include "store/evidence.h"
#include "store/sqlite_util.h"

namespace traindoc::store::detail {

// The writer's side: statements prepared once, used by the supervisor's thread as the agents'
// collective records come in.
class CollectiveTables {
 public:
  CollectiveTables() = default;
  // Counts the calls the file holds already: reopening appends under the same cap.
  explicit CollectiveTables(sqlite3* db);

  // False when the table holds `max_rows` calls already (the caller counts the drop).
  bool add_call(const CollectiveCall& call, int64_t max_rows);
  // Sets end_ns and raised of a call appended before it returned; nothing when it was not stored.
  void end_call(const CollectiveCall& call);
  // The facts in their columns; message and state hold the same in words, for people who read
  // the file with sqlite3 (traindoc reads the facts).
  void add_issue(const CollectiveIssue& issue);

 private:
  Statement m_insert_call;
  Statement m_end_call;
  Statement m_insert_issue;
  Statement m_insert_issue_rank;
  int64_t m_calls = 0;  // rows in collectives
  sqlite3* m_db = nullptr;
};

}  // namespace traindoc::store::detail
