// Thin RAII wrappers over the SQLite C API, shared by the run.db writer and reader.
// Used in the supervisor (the thread that owns the StoreWriter) and in analyze/report.
// Internal to src/store: every SQLite failure becomes a StoreError naming the database file.
#include "store/sqlite_util.h"

#include <cstring>
#include <utility>

namespace traindoc::store::detail {

namespace {

// The start of a statement is enough to tell which one failed; the full text would bury the
// reason in long messages.
std::string short_sql(sqlite3_stmt* statement) {
  const char* sql = sqlite3_sql(statement);
  std::string text = sql ? sql : "";
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  constexpr size_t kMaxChars = 60;
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

}  // namespace

std::string db_path(sqlite3* db) {
  const char* name = db ? sqlite3_db_filename(db, "main") : nullptr;
  return name ? std::string(name) : std::string();
}

std::string reason(sqlite3* db) {
  if (!db) return "out of memory";
  std::string text = sqlite3_errmsg(db);
  // The OS reason says what SQLite's "unable to open database file" does not.
  const int os_error = sqlite3_system_errno(db);
  if (os_error != 0) {
    text += " (";
    text += std::strerror(os_error);
    text += ")";
  }
  return text;
}

std::string describe(sqlite3* db, const std::string& path, std::string_view what) {
  std::string message = "run database '" + path + "': ";
  message += what;
  message += ": ";
  message += reason(db);
  return message;
}

void fail(sqlite3* db, const std::string& path, std::string_view what) {
  throw StoreError(describe(db, path, what));
}

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    fail(db, db_path(db), std::string("cannot run '") + sql + "'");
  }
}

int64_t query_int(sqlite3* db, const char* sql) {
  Statement statement(db, sql);
  if (!statement.step()) fail(db, db_path(db), std::string("no result from '") + sql + "'");
  return statement.int64(0);
}

Statement::Statement(sqlite3* db, std::string_view sql) : m_db(db) {
  if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &m_stmt, nullptr) != SQLITE_OK) {
    sqlite3_finalize(m_stmt);
    m_stmt = nullptr;
    fail(db, db_path(db), "cannot prepare '" + std::string(sql) + "'");
  }
}

Statement::~Statement() {
  sqlite3_finalize(m_stmt);
}

Statement::Statement(Statement&& other) noexcept
    : m_db(std::exchange(other.m_db, nullptr)), m_stmt(std::exchange(other.m_stmt, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(m_stmt);
    m_db = std::exchange(other.m_db, nullptr);
    m_stmt = std::exchange(other.m_stmt, nullptr);
  }
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(m_stmt, index, value) != SQLITE_OK) fail(m_db, db_path(m_db), "bind");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(m_stmt, index, value) != SQLITE_OK) fail(m_db, db_path(m_db), "bind");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies, so callers may pass temporaries.
  if (sqlite3_bind_text64(m_stmt, index, value.data(), value.size(), SQLITE_TRANSIENT,
                          SQLITE_UTF8) != SQLITE_OK) {
    fail(m_db, db_path(m_db), "bind");
  }
  return *this;
}

Statement& Statement::bind_null(int index) {
  if (sqlite3_bind_null(m_stmt, index) != SQLITE_OK) fail(m_db, db_path(m_db), "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Take the message before reset, which may replace it.
  const std::string message =
      describe(m_db, db_path(m_db), "cannot run '" + short_sql(m_stmt) + "'");
  reset();
  throw StoreError(message);
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(m_stmt);
  sqlite3_clear_bindings(m_stmt);
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(m_stmt, column);
}

double Statement::real(int column) const {
  return sqlite3_column_double(m_stmt, column);
}

std::string Statement::text(int column) const {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
  // Length from column_bytes, not strlen: text with an embedded NUL survives.
  const int size = sqlite3_column_bytes(m_stmt, column);
  return data && size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string();
}

std::optional<int> Statement::opt_int32(int column) const {
  if (is_null(column)) return std::nullopt;
  return int32(column);
}

std::optional<int64_t> Statement::opt_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::optional<uint64_t> Statement::opt_uint64(int column) const {
  if (is_null(column)) return std::nullopt;
  return uint64(column);
}

}  // namespace traindoc::store::detail
