// Passes the job's stdout and stderr to ours byte for byte and keeps a bounded copy in
// <run>/logs; also reads, and keeps alike, the files that job processes wrote their output to
// instead. Supervisor process, its own thread, so that sampling never delays the job's output.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/evidence.h"
#include "supervisor/launcher.h"
#include "supervisor/line_splitter.h"
#include "supervisor/output_files.h"

namespace traindoc::supervisor {

struct LogBounds {
  uint64_t head_bytes = 64ull << 20;  // the start of the output, kept whole
  uint64_t tail_bytes = 32ull << 20;  // per tail file; the last two are kept
  // Of a file written faster than it is read, what is further behind is passed over: the latest
  // output is what explains a failure, and the end of the run must not wait for gigabytes.
  uint64_t file_lag_bytes = 64ull << 20;
};

class LogTap {
 public:
  // Takes ownership of the channels' read ends; `logs_dir` must exist.
  LogTap(const std::string& run_dir, const LaunchedJob& job, LogBounds bounds = {});
  ~LogTap();
  LogTap(const LogTap&) = delete;
  LogTap& operator=(const LogTap&) = delete;

  // Returns once both streams reached their end, or after `grace_ms` if some process outside
  // the job's main line still holds them open.
  void finish(int grace_ms);

  std::vector<store::LogStream> streams() const;

  // Reads the file a job process writes its output to from where that process started, as a
  // stream of its own named by the path (one stream per path, with each writer once; a new file
  // told at a known path goes on that stream), until finish().
  void add_file(OutputFile file);

  // Lines worth citing since the last call: each stream's first lines and those that look like
  // errors, with the time they were read. Every byte is in logs/ regardless.
  std::vector<store::LogLine> take_lines();

  // The last `count` lines of each stream, read back from the kept files (after finish()).
  std::vector<store::LogLine> last_lines(size_t count, int64_t t_ns) const;

  // Whether the job left its last line on traindoc's stderr unfinished (no newline), so that
  // words printed there now would run into it: its stderr's, or where stdout and stderr are one
  // file (a terminal), the line of the stream written last. After finish().
  bool stderr_mid_line() const;

 private:
  struct Stream {
    store::LogStream info;
    int source = -1;
    int sink = -1;  // our stdout or stderr; -1 once it broke
    int file = -1;
    uint64_t file_bytes = 0;
    int files_opened = 0;  // the first is the head file
    LineSplitter lines;
    bool unfinished = false;  // it ended without a newline
    std::string log_name;     // of its copies in logs/: "stdout", "stderr", "file-1"
    int tailed = -1;          // a file read from `offset` on, instead of a pipe
    uint64_t offset = 0;
  };

  void run();
  void adopt_files();
  void follow_replaced(Stream& stream, OutputFile& file);
  void tail(Stream& stream, size_t max_chunks);
  void pump(Stream& stream);
  void keep(Stream& stream, const char* data, size_t size, uint64_t lines);
  void open_next_file(Stream& stream);
  uint64_t scan_lines(Stream& stream, const char* data, size_t size, int64_t t_ns);
  void cite(std::vector<store::LogLine>& lines);  // takes them to m_lines

  std::string m_run_dir;
  LogBounds m_bounds;
  std::deque<Stream> m_streams;  // stdout, stderr, then the files; grown by the thread alone
  size_t m_last_written = 1;     // the index of the pipe the job wrote last
  mutable std::mutex m_mutex;    // guards m_streams' growth, the streams' info, m_lines, m_added
  std::vector<store::LogLine> m_lines;
  std::vector<OutputFile> m_added;  // files told, not yet adopted by the thread
  int m_wake[2] = {-1, -1};         // tells the thread to drain and stop
  std::atomic<int> m_grace_ms{0};
  std::thread m_thread;
};

}  // namespace traindoc::supervisor
