// The writer of run.db's crash tables: a process's first fatal signal with its native frames and
// the functions inlined at each. Supervisor, the StoreWriter's thread.
#include "store/crash_tables.h"

#include <optional>

namespace traindoc::store::detail {
namespace {

// One statement for both cases: ?1 is the id of the crash being replaced, or NULL for a new one.
// REPLACE deletes the old row of that id (and key) and writes the new one under the same id.
constexpr const char* kReplaceCrash = R"sql(
INSERT OR REPLACE INTO crashes (id, pid, start_ticks, tid, thread_name, signo, code, fault_addr,
                                sender_pid, time_ns, pc, sp, fp, stack_lo, stack_hi,
                                other_crashes, maps, code_bytes, python_traceback, python_note)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
        ?20)
)sql";

}  // namespace

CrashTables::CrashTables(sqlite3* db)
    : m_find(db, "SELECT id FROM crashes WHERE pid = ?1 AND start_ticks = ?2"),
      m_replace(db, kReplaceCrash),
      m_delete_frames(db, "DELETE FROM crash_frames WHERE crash_id = ?1"),
      m_delete_inlined(db, "DELETE FROM crash_inlined WHERE crash_id = ?1"),
      m_insert_frame(db,
                     "INSERT INTO crash_frames (crash_id, position, address, module, "
                     "module_offset, function, function_offset, file, line) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
      m_insert_inlined(db,
                       "INSERT INTO crash_inlined (crash_id, frame, position, function) "
                       "VALUES (?1, ?2, ?3, ?4)"),
      m_crashes(query_int(db, "SELECT count(*) FROM crashes")),
      m_db(db) {}

bool CrashTables::write(const Crash& c, int64_t max_rows) {
  std::optional<int64_t> id;
  m_find.bind(1, c.pid).bind(2, c.start_ticks);
  if (m_find.step()) id = m_find.int64(0);
  m_find.reset();
  if (!id && m_crashes >= max_rows) return false;
  m_replace.bind(1, id)
      .bind(2, c.pid)
      .bind(3, c.start_ticks)
      .bind(4, c.tid)
      .bind(5, c.thread_name)
      .bind(6, c.signo)
      .bind(7, c.code)
      .bind(8, c.fault_addr)
      .bind(9, c.sender_pid)
      .bind(10, c.time_ns)
      .bind(11, c.pc)
      .bind(12, c.sp)
      .bind(13, c.fp)
      .bind(14, c.stack_lo)
      .bind(15, c.stack_hi)
      .bind(16, c.other_crashes)
      .bind(17, c.maps)
      .bind(18, c.code_bytes)
      .bind(19, c.python_traceback)
      .bind(20, c.python_note)
      .run();
  int64_t crash_id = 0;
  if (id) {
    crash_id = *id;
    m_delete_frames.bind(1, crash_id).run();
    m_delete_inlined.bind(1, crash_id).run();
  } else {
    crash_id = sqlite3_last_insert_rowid(m_db);
    ++m_crashes;
  }
  insert_frames(crash_id, c.frames);
  return true;
}

void CrashTables::insert_frames(int64_t crash_id, const std::vector<NativeFrame>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const NativeFrame& f = frames[i];
    const auto position = static_cast<int64_t>(i);
    m_insert_frame.bind(1, crash_id)
        .bind(2, position)
        .bind(3, f.address)
        .bind(4, f.module)
        .bind(5, f.module_offset)
        .bind(6, f.function)
        .bind(7, f.function_offset)
        .bind(8, f.file)
        .bind(9, f.line)
        .run();
    for (size_t j = 0; j < f.inlined.size(); ++j) {
      m_insert_inlined.bind(1, crash_id)
          .bind(2, position)
          .bind(3, static_cast<int64_t>(j))
          .bind(4, f.inlined[j])
          .run();
    }
  }
}

}  // namespace traindoc::store::detail
