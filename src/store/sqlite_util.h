// Thin RAII wrappers over the SQLite C API, shared by the run.db writer and reader.
// Used in the supervisor (the thread that owns the StoreWriter) and in analyze/report.
// Internal to src/store: every SQLite failure becomes a StoreError naming the database file.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "store/store_error.h"

namespace traindoc::store::detail {

struct DbCloser {
  // close_v2 defers the close until every statement is finalized, so destruction order of a
  // connection and its statements never leaks or fails.
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

// SQLite's last message on `db`, with the OS reason when there is one: "<message> (<errno text>)".
std::string reason(sqlite3* db);
// "run database '<path>': <what>: <reason>".
std::string describe(sqlite3* db, const std::string& path, std::string_view what);
[[noreturn]] void fail(sqlite3* db, const std::string& path, std::string_view what);

// The path SQLite was opened with, for messages ("" for in-memory databases).
std::string db_path(sqlite3* db);

void exec(sqlite3* db, const char* sql);
int64_t query_int(sqlite3* db, const char* sql);

// A prepared statement, reset after each use so that it can stay cached for the life of the
// connection (the writer runs the same few statements every second).
class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  // SQLite integers are signed 64-bit: the bits are kept, so values round-trip exactly.
  Statement& bind(int index, uint64_t value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, bool value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind_null(int index);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Steps once: true when a row is available. Throws on error (and resets the statement).
  bool step();
  // Steps to completion, then resets: for statements that return no rows.
  void run();
  void reset();

  bool is_null(int column) const;
  int64_t int64(int column) const;
  uint64_t uint64(int column) const { return static_cast<uint64_t>(int64(column)); }
  int int32(int column) const { return static_cast<int>(int64(column)); }
  double real(int column) const;
  std::string text(int column) const;
  std::optional<int> opt_int32(int column) const;
  std::optional<int64_t> opt_int64(int column) const;
  std::optional<uint64_t> opt_uint64(int column) const;

 private:
  sqlite3* m_db = nullptr;
  sqlite3_stmt* m_stmt = nullptr;
};

}  // namespace traindoc::store::detail
