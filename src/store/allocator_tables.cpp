// The allocator tables of run.db: the DDL of schema 15, its writer and reader.
// Supervisor (the StoreWriter's thread) and analyze (read_evidence).
#include "store/allocator_tables.h"

#include <map>
#include <utility>

#include "store/sqlite_util.h"

namespace traindoc::store::detail {

const char* const kAllocatorDdl = R"sql(
CREATE TABLE allocator_states (
  t_ns INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  number INTEGER NOT NULL,
  device INTEGER NOT NULL,
  requested INTEGER,
  device_free INTEGER,
  allocated INTEGER,
  reserved INTEGER,
  inactive_split INTEGER,
  alloc_retries INTEGER,
  ooms INTEGER,
  segments INTEGER,
  active_allocated INTEGER,
  pending_free INTEGER,
  inactive INTEGER,
  largest_free INTEGER,
  history INTEGER NOT NULL,
  snapshot TEXT NOT NULL,
  PRIMARY KEY (pid, number)
);
CREATE TABLE allocation_sites (
  pid INTEGER NOT NULL,
  number INTEGER NOT NULL,
  position INTEGER NOT NULL,
  file TEXT NOT NULL,
  line INTEGER NOT NULL,
  function TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  blocks INTEGER NOT NULL,
  largest INTEGER NOT NULL,
  smallest INTEGER NOT NULL,
  PRIMARY KEY (pid, number, position)
);
)sql";

void write_allocator_state(sqlite3* db, const AllocatorState& s) {
  Statement state(db,
                  "INSERT OR REPLACE INTO allocator_states (t_ns, pid, number, device, requested, "
                  "device_free, allocated, reserved, inactive_split, alloc_retries, ooms, "
                  "segments, active_allocated, pending_free, inactive, largest_free, history, "
                  "snapshot) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                  "?14, ?15, ?16, ?17, ?18)");
  state.bind(1, s.t_ns)
      .bind(2, s.pid)
      .bind(3, s.number)
      .bind(4, s.device)
      .bind(5, s.requested)
      .bind(6, s.device_free)
      .bind(7, s.allocated)
      .bind(8, s.reserved)
      .bind(9, s.inactive_split)
      .bind(10, s.alloc_retries)
      .bind(11, s.ooms)
      .bind(12, s.segments)
      .bind(13, s.active_allocated)
      .bind(14, s.pending_free)
      .bind(15, s.inactive)
      .bind(16, s.largest_free)
      .bind(17, s.history)
      .bind(18, s.snapshot)
      .run();
  Statement site(db,
                 "INSERT OR REPLACE INTO allocation_sites (pid, number, position, file, line, "
                 "function, bytes, blocks, largest, smallest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                 "?7, ?8, ?9, ?10)");
  for (size_t i = 0; i < s.sites.size(); ++i) {
    const AllocationSite& a = s.sites[i];
    site.bind(1, s.pid)
        .bind(2, s.number)
        .bind(3, static_cast<int64_t>(i))
        .bind(4, a.file)
        .bind(5, a.line)
        .bind(6, a.function)
        .bind(7, a.bytes)
        .bind(8, a.blocks)
        .bind(9, a.largest)
        .bind(10, a.smallest)
        .run();
  }
}

void read_allocator_states(sqlite3* db, std::vector<AllocatorState>& out) {
  Statement rows(db,
                 "SELECT t_ns, pid, number, device, requested, device_free, allocated, reserved, "
                 "inactive_split, alloc_retries, ooms, segments, active_allocated, pending_free, "
                 "inactive, largest_free, history, snapshot FROM allocator_states "
                 "ORDER BY t_ns, pid, number");
  std::map<std::pair<int, int>, size_t> index;
  while (rows.step()) {
    AllocatorState s{rows.int64(0),
                     rows.int32(1),
                     rows.int32(2),
                     rows.int32(3),
                     rows.opt_uint64(4),
                     rows.opt_uint64(5),
                     rows.opt_uint64(6),
                     rows.opt_uint64(7),
                     rows.opt_uint64(8),
                     rows.opt_uint64(9),
                     rows.opt_uint64(10),
                     rows.opt_uint64(11),
                     rows.opt_uint64(12),
                     rows.opt_uint64(13),
                     rows.opt_uint64(14),
                     rows.opt_uint64(15),
                     rows.int64(16) != 0,
                     rows.text(17),
                     {}};
    index[{s.pid, s.number}] = out.size();
    out.push_back(std::move(s));
  }
  Statement sites(db,
                  "SELECT pid, number, file, line, function, bytes, blocks, largest, smallest "
                  "FROM allocation_sites ORDER BY pid, number, position");
  while (sites.step()) {
    auto found = index.find({sites.int32(0), sites.int32(1)});
    if (found == index.end()) continue;
    out[found->second].sites.push_back({sites.text(2), sites.int64(3), sites.text(4),
                                        sites.uint64(5), sites.uint64(6), sites.uint64(7),
                                        sites.uint64(8)});
  }
}

}  // namespace traindoc::store::detail
