// Tests of the log tap: the job's output passes to our stdout/stderr unchanged (captured here by
// pointing fds 1 and 2 at files), the copy in <run>/logs, counters, the head and tail bounds,
// binary data, finish() with writers that never close, and the files job processes write to.
#include "supervisor/log_tap.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/layout.h"

namespace traindoc::supervisor {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TempRun {
 public:
  TempRun() {
    std::string pattern = (fs::temp_directory_path() / "log-tap-XXXXXX").string();
    m_path = mkdtemp(pattern.data());
    fs::create_directories(m_path + "/logs");
  }
  ~TempRun() { fs::remove_all(m_path); }
  const std::string& path() const { return m_path; }
  std::string file(const std::string& name) const { return read_file(m_path + "/" + name); }

 private:
  std::string m_path;
};

// Points fds 1 and 2 at files (or at /dev/null) until restore(). Nothing may assert while they
// are redirected: GoogleTest would print its messages into the files.
class StdioCapture {
 public:
  StdioCapture(const std::string& dir, bool discard = false)
      : m_out_path(discard ? "/dev/null" : dir + "/captured-stdout"),
        m_err_path(discard ? "/dev/null" : dir + "/captured-stderr") {
    fflush(stdout);
    fflush(stderr);
    m_saved_out = dup(STDOUT_FILENO);
    m_saved_err = dup(STDERR_FILENO);
    int out = open(m_out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = open(m_err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    close(out);
    close(err);
  }
  ~StdioCapture() { restore(); }

  void restore() {
    if (m_saved_out < 0) return;
    fflush(stdout);
    fflush(stderr);
    dup2(m_saved_out, STDOUT_FILENO);
    dup2(m_saved_err, STDERR_FILENO);
    close(m_saved_out);
    close(m_saved_err);
    m_saved_out = m_saved_err = -1;
  }
  std::string out() const { return read_file(m_out_path); }
  std::string err() const { return read_file(m_err_path); }

 private:
  std::string m_out_path;
  std::string m_err_path;
  int m_saved_out = -1;
  int m_saved_err = -1;
};

// The job's two pipes: the tap gets the read ends, the test writes into the write ends.
struct JobPipes {
  LaunchedJob job;
  int out_write = -1;
  int err_write = -1;

  JobPipes() {
    int out[2];
    int err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) abort();
    job.pid = 1;
    job.out.read_fd = out[0];
    job.err.read_fd = err[0];
    out_write = out[1];
    err_write = err[1];
  }
  ~JobPipes() {
    close_out();
    close_err();
  }
  void close_out() {
    if (out_write >= 0) close(out_write);
    out_write = -1;
  }
  void close_err() {
    if (err_write >= 0) close(err_write);
    err_write = -1;
  }
};

// Writes all of `data` in chunks of varied sizes (so that the tap sees varied reads).
bool write_chunked(int fd, const std::string& data, unsigned seed) {
  std::mt19937 random(seed);
  size_t done = 0;
  while (done < data.size()) {
    size_t chunk = std::min<size_t>(data.size() - done, 1 + random() % 700);
    ssize_t n = write(fd, data.data() + done, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

struct TapResult {
  std::string out;
  std::string err;
  std::vector<store::LogStream> streams;
  std::vector<store::LogLine> lines;  // the lines kept to cite
  bool wrote = false;
};

// Runs a tap over `out` and `err`, both written concurrently and then closed.
TapResult run_tap(const TempRun& run, const std::string& out, const std::string& err,
                  LogBounds bounds = {}) {
  TapResult result;
  JobPipes pipes;
  StdioCapture capture(run.path());
  {
    LogTap tap(run.path(), pipes.job, bounds);
    bool wrote_out = false;
    bool wrote_err = false;
    std::thread out_writer([&] {
      wrote_out = write_chunked(pipes.out_write, out, 1);
      pipes.close_out();
    });
    std::thread err_writer([&] {
      wrote_err = write_chunked(pipes.err_write, err, 2);
      pipes.close_err();
    });
    out_writer.join();
    err_writer.join();
    tap.finish(5000);
    result.streams = tap.streams();
    result.lines = tap.take_lines();
    result.wrote = wrote_out && wrote_err;
  }
  capture.restore();
  result.out = capture.out();
  result.err = capture.err();
  return result;
}

std::string pattern_text(size_t size) {
  std::string text;
  for (size_t line = 0; text.size() < size; ++line) {
    text += "step " + std::to_string(line) + " loss " + std::to_string(line * 7 % 1000) + "\n";
  }
  text.resize(size);
  return text;
}

uint64_t newlines(const std::string& text) {
  return static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
}

// What the bounds keep, as LogTap documents it: the head file whole, then tail files of
// tail_bytes each, numbered from 1, of which only the last two remain.
struct Kept {
  std::vector<std::string> files;
  std::string concatenation;
  uint64_t not_kept = 0;
  std::vector<std::string> removed;
};

Kept expected_kept(const std::string& name, const std::string& input, const LogBounds& bounds) {
  Kept kept;
  kept.files.push_back("logs/" + name + ".log");
  size_t head = std::min<size_t>(input.size(), bounds.head_bytes);
  kept.concatenation = input.substr(0, head);
  size_t rest = input.size() - head;
  size_t tails = (rest + bounds.tail_bytes - 1) / bounds.tail_bytes;
  size_t first_kept = tails > 2 ? tails - 2 : 0;  // 0-based index of the first tail kept
  for (size_t i = 0; i < tails; ++i) {
    std::string file = "logs/" + name + ".tail-" + std::to_string(i + 1) + ".log";
    (i < first_kept ? kept.removed : kept.files).push_back(file);
  }
  kept.not_kept = first_kept * bounds.tail_bytes;
  kept.concatenation += input.substr(head + first_kept * bounds.tail_bytes);
  return kept;
}

std::string concatenate(const TempRun& run, const std::vector<std::string>& files) {
  std::string all;
  for (const std::string& file : files) all += run.file(file);
  return all;
}

TEST(LogTap, PassesThroughAndKeepsACopy) {
  TempRun run;
  std::string out = "epoch 1\nloss 0.5\n";
  std::string err = "Traceback (most recent call last):\n  File \"train.py\"\nno newline at end";
  TapResult r = run_tap(run, out, err);
  ASSERT_TRUE(r.wrote);
  EXPECT_EQ(r.out, out);
  EXPECT_EQ(r.err, err);
  EXPECT_EQ(run.file("logs/stdout.log"), out);
  EXPECT_EQ(run.file("logs/stderr.log"), err);

  ASSERT_EQ(r.streams.size(), 2u);
  const store::LogStream& o = r.streams[0];
  EXPECT_EQ(o.name, "stdout");
  EXPECT_EQ(o.bytes, out.size());
  EXPECT_EQ(o.lines, 2u);
  EXPECT_EQ(o.bytes_not_kept, 0u);
  EXPECT_EQ(o.files, std::vector<std::string>{"logs/stdout.log"});
  const store::LogStream& e = r.streams[1];
  EXPECT_EQ(e.name, "stderr");
  EXPECT_EQ(e.bytes, err.size());
  EXPECT_EQ(e.lines, 2u);  // newline characters: the unterminated last line is not counted
  EXPECT_EQ(e.bytes_not_kept, 0u);
  EXPECT_EQ(e.files, std::vector<std::string>{"logs/stderr.log"});
}

TEST(LogTap, EmptyOutput) {
  TempRun run;
  TapResult r = run_tap(run, "", "");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(fs::exists(run.path() + "/logs/stdout.log"));
  EXPECT_EQ(run.file("logs/stdout.log"), "");
  ASSERT_EQ(r.streams.size(), 2u);
  EXPECT_EQ(r.streams[0].bytes, 0u);
  EXPECT_EQ(r.streams[0].lines, 0u);
  EXPECT_EQ(r.streams[1].files, std::vector<std::string>{"logs/stderr.log"});
}

TEST(LogTap, LargeOutputPassesWhole) {
  TempRun run;
  std::string out = pattern_text(3'000'000);
  std::string err = pattern_text(700'000);
  TapResult r = run_tap(run, out, err);
  ASSERT_TRUE(r.wrote);
  EXPECT_TRUE(r.out == out) << "stdout differs (" << r.out.size() << " of " << out.size() << ")";
  EXPECT_TRUE(r.err == err);
  EXPECT_TRUE(run.file("logs/stdout.log") == out);
  EXPECT_EQ(r.streams[0].bytes, out.size());
  EXPECT_EQ(r.streams[0].lines, newlines(out));
  EXPECT_EQ(r.streams[1].lines, newlines(err));
}

// Lines are cited whole wherever the reads cut them (writes of 1 to 700 bytes), the first 100
// and then those that look like errors, cut at 4096 bytes, without a carriage return; a last
// line without a newline is cited too but not counted as a line.
TEST(LogTap, KeepsTheFirstLinesAndErrorLinesAcrossReads) {
  TempRun run;
  std::string out;
  for (int i = 1; i <= 150; ++i) out += "step " + std::to_string(i) + " loss 0.5\n";
  std::string long_error = "RuntimeError: " + std::string(10000, 'x');
  out += "Traceback (most recent call last):\r\n" + long_error + "\nValueError: last";
  TapResult r = run_tap(run, out, "");
  ASSERT_TRUE(r.wrote);
  EXPECT_EQ(r.streams[0].lines, 152u);
  ASSERT_EQ(r.lines.size(), 103u);
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(r.lines[i].stream, "stdout");
    EXPECT_EQ(r.lines[i].number, i + 1);
    EXPECT_EQ(r.lines[i].text, "step " + std::to_string(i + 1) + " loss 0.5");
  }
  EXPECT_EQ(r.lines[100].number, 151u);
  EXPECT_EQ(r.lines[100].text, "Traceback (most recent call last):");
  EXPECT_EQ(r.lines[101].number, 152u);
  EXPECT_EQ(r.lines[101].text, long_error.substr(0, 4096));
  EXPECT_EQ(r.lines[102].number, 153u);
  EXPECT_EQ(r.lines[102].text, "ValueError: last");
}

// A progress bar redrawn with carriage returns for longer than a kept line, then a traceback
// glued to its last state: the line kept is what a terminal shows last, header included,
// wherever the reads cut the redraws.
TEST(LogTap, AProgressBarKeepsItsLastRedraw) {
  TempRun run;
  std::string bar;
  for (int i = 0; i < 300; ++i) {
    bar += "\rEpoch 1: " + std::to_string(i) + "/300 [00:01<00:02, 12.3it/s, loss=0.4321]";
  }
  std::string err = bar + "Traceback (most recent call last):\n  File \"train.py\", line 7\r\n" +
                    "KeyError: 'label'\r\n\rlast\r";
  TapResult r = run_tap(run, "", err);
  ASSERT_TRUE(r.wrote);
  EXPECT_EQ(r.err, err);
  EXPECT_EQ(run.file("logs/stderr.log"), err);
  std::vector<std::string> texts;
  for (const store::LogLine& line : r.lines) texts.push_back(line.text);
  EXPECT_THAT(texts, testing::ElementsAre(
                         "Epoch 1: 299/300 [00:01<00:02, 12.3it/s, loss=0.4321]Traceback (most "
                         "recent call last):",
                         "  File \"train.py\", line 7", "KeyError: 'label'", "last"));
}

TEST(LogTap, BinaryDataWithNuls) {
  TempRun run;
  std::mt19937 random(7);
  std::string out(200'000, '\0');
  for (char& c : out) c = static_cast<char>(random() % 4 == 0 ? 0 : random() % 256);
  std::string err("\0\0\n\0\xff\xfe\n\0", 8);
  TapResult r = run_tap(run, out, err);
  ASSERT_TRUE(r.wrote);
  EXPECT_TRUE(r.out == out);
  EXPECT_EQ(r.err, err);
  EXPECT_TRUE(run.file("logs/stdout.log") == out);
  EXPECT_EQ(run.file("logs/stderr.log"), err);
  EXPECT_EQ(r.streams[0].bytes, out.size());
  EXPECT_EQ(r.streams[0].lines, newlines(out));
  EXPECT_EQ(r.streams[1].bytes, 8u);
  EXPECT_EQ(r.streams[1].lines, 2u);
}

TEST(LogTap, BoundsKeepTheHeadAndTheLastTwoTails) {
  TempRun run;
  LogBounds bounds{1000, 300};
  std::string out = pattern_text(2000);
  std::string err = pattern_text(1100);
  TapResult r = run_tap(run, out, err, bounds);
  ASSERT_TRUE(r.wrote);
  // The terminal gets everything.
  EXPECT_EQ(r.out, out);
  EXPECT_EQ(r.err, err);

  // stdout: head 0-1000; tails 1000-1300, 1300-1600 (both removed), 1600-1900, 1900-2000.
  const store::LogStream& o = r.streams[0];
  EXPECT_EQ(o.bytes, 2000u);
  EXPECT_EQ(o.lines, newlines(out));
  EXPECT_EQ(o.files, (std::vector<std::string>{"logs/stdout.log", "logs/stdout.tail-3.log",
                                               "logs/stdout.tail-4.log"}));
  EXPECT_EQ(o.bytes_not_kept, 600u);
  EXPECT_EQ(run.file("logs/stdout.log"), out.substr(0, 1000));
  EXPECT_EQ(run.file("logs/stdout.tail-3.log"), out.substr(1600, 300));
  EXPECT_EQ(run.file("logs/stdout.tail-4.log"), out.substr(1900));
  EXPECT_FALSE(fs::exists(run.path() + "/logs/stdout.tail-1.log"));
  EXPECT_FALSE(fs::exists(run.path() + "/logs/stdout.tail-2.log"));
  EXPECT_EQ(concatenate(run, o.files), out.substr(0, 1000) + out.substr(1600));
  EXPECT_EQ(o.bytes_not_kept + concatenate(run, o.files).size(), o.bytes);

  // stderr: head and one tail of 100 bytes.
  const store::LogStream& e = r.streams[1];
  EXPECT_EQ(e.files, (std::vector<std::string>{"logs/stderr.log", "logs/stderr.tail-1.log"}));
  EXPECT_EQ(e.bytes_not_kept, 0u);
  EXPECT_EQ(concatenate(run, e.files), err);

  // Only the kept files are in the folder (besides nothing else the tap wrote).
  std::vector<std::string> present;
  for (const auto& entry : fs::directory_iterator(run.path() + "/logs")) {
    present.push_back("logs/" + entry.path().filename().string());
  }
  std::sort(present.begin(), present.end());
  std::vector<std::string> expected = o.files;
  expected.insert(expected.end(), e.files.begin(), e.files.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(present, expected);
}

class LogTapBoundsAt : public testing::TestWithParam<size_t> {};

TEST_P(LogTapBoundsAt, KeepsWhatTheBoundsSay) {
  TempRun run;
  LogBounds bounds{1000, 300};
  std::string out = pattern_text(GetParam());
  TapResult r = run_tap(run, out, "x\n", bounds);
  ASSERT_TRUE(r.wrote);
  EXPECT_EQ(r.out, out);
  Kept kept = expected_kept("stdout", out, bounds);
  const store::LogStream& o = r.streams[0];
  EXPECT_EQ(o.bytes, out.size());
  EXPECT_EQ(o.files, kept.files);
  EXPECT_EQ(o.bytes_not_kept, kept.not_kept);
  EXPECT_EQ(concatenate(run, o.files), kept.concatenation);
  EXPECT_EQ(run.file("logs/stdout.log"), out.substr(0, 1000));
  for (const std::string& file : kept.removed) EXPECT_FALSE(fs::exists(run.path() + "/" + file));
  // At most the head and two tails.
  EXPECT_LE(o.files.size(), 3u);
  EXPECT_EQ(o.bytes_not_kept + kept.concatenation.size(), o.bytes);
}

INSTANTIATE_TEST_SUITE_P(Sizes, LogTapBoundsAt,
                         testing::Values(0, 999, 1000, 1001, 1300, 1301, 1600, 1601, 1900, 2000,
                                         2001, 10'000, 100'003));

TEST(LogTap, FinishReturnsAfterTheGraceWhenAWriterNeverCloses) {
  // A process outside the job's main line (an orphan) still holds stdout open and says nothing.
  TempRun run;
  JobPipes pipes;
  StdioCapture capture(run.path());
  std::chrono::milliseconds took{};
  std::vector<store::LogStream> streams;
  {
    LogTap tap(run.path(), pipes.job);
    write_chunked(pipes.out_write, "before the end\n", 1);
    pipes.close_err();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto start = std::chrono::steady_clock::now();
    tap.finish(300);
    took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
    streams = tap.streams();
  }
  capture.restore();
  EXPECT_GE(took.count(), 250);
  EXPECT_LT(took.count(), 3000);
  EXPECT_EQ(capture.out(), "before the end\n");
  EXPECT_EQ(run.file("logs/stdout.log"), "before the end\n");
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_EQ(streams[0].bytes, 15u);
  EXPECT_EQ(streams[0].lines, 1u);
}

TEST(LogTap, OutputWrittenDuringTheGraceIsKept) {
  TempRun run;
  JobPipes pipes;
  StdioCapture capture(run.path());
  {
    LogTap tap(run.path(), pipes.job);
    std::thread late([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      write_chunked(pipes.out_write, "late line\n", 1);
      pipes.close_out();
      pipes.close_err();
    });
    tap.finish(2000);
    late.join();
  }
  capture.restore();
  EXPECT_EQ(capture.out(), "late line\n");
  EXPECT_EQ(run.file("logs/stdout.log"), "late line\n");
}

TEST(LogTap, FinishReturnsAfterTheGraceWhenAWriterNeverStops) {
  // An orphan that keeps printing (a `yes`, a chatty daemon) faster than our terminal takes it
  // must not keep traindoc from ending.
  TempRun run;
  JobPipes pipes;
  struct sigaction ignore {};
  struct sigaction saved {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &saved);

  // A slow terminal: our stdout is a pipe read in small bites.
  int terminal[2];
  ASSERT_EQ(pipe2(terminal, O_CLOEXEC), 0);
  std::thread reader([fd = terminal[0]] {
    char buffer[4096];
    while (read(fd, buffer, sizeof(buffer)) > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    close(fd);
  });
  fflush(stdout);
  int saved_out = dup(STDOUT_FILENO);
  dup2(terminal[1], STDOUT_FILENO);
  close(terminal[1]);

  std::atomic<bool> stop{false};
  std::chrono::milliseconds took{};
  {
    auto tap = std::make_unique<LogTap>(run.path(), pipes.job, LogBounds{1 << 20, 1 << 20});
    std::thread chatty([&] {
      std::string block(4096, 'y');
      auto start = std::chrono::steady_clock::now();
      while (!stop.load() && std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {
        if (write(pipes.out_write, block.data(), block.size()) < 0 && errno != EINTR) break;
      }
    });
    pipes.close_err();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto start = std::chrono::steady_clock::now();
    tap->finish(200);
    took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start);
    stop.store(true);
    tap.reset();  // closes the read end: a write blocked on a full pipe fails with EPIPE
    chatty.join();
  }
  dup2(saved_out, STDOUT_FILENO);  // the terminal pipe's last write end: its reader ends
  close(saved_out);
  reader.join();
  sigaction(SIGPIPE, &saved, nullptr);
  EXPECT_LT(took.count(), 1500);
}

TEST(LogTap, FullDiskDoesNotStopTheOutput) {
  TempRun run;
  ASSERT_EQ(symlink("/dev/full", (run.path() + "/logs/stdout.log").c_str()), 0);
  std::string out = pattern_text(300'000);
  TapResult r = run_tap(run, out, "");
  ASSERT_TRUE(r.wrote);
  EXPECT_TRUE(r.out == out);
  EXPECT_EQ(r.streams[0].bytes, out.size());
  EXPECT_EQ(r.streams[0].lines, newlines(out));
}

TEST(LogTap, BrokenTerminalClosesTheJobsPipe) {
  // `traindoc run ... | head`: once our reader is gone, the job meets a broken pipe as it would
  // have without traindoc, and what was read is still kept.
  TempRun run;
  JobPipes pipes;
  struct sigaction ignore {};
  struct sigaction saved {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &saved);
  int terminal[2];
  ASSERT_EQ(pipe2(terminal, O_CLOEXEC), 0);
  close(terminal[0]);  // nobody reads our stdout
  fflush(stdout);
  int saved_out = dup(STDOUT_FILENO);
  dup2(terminal[1], STDOUT_FILENO);
  close(terminal[1]);

  int job_errno = 0;
  {
    LogTap tap(run.path(), pipes.job);
    write_chunked(pipes.out_write, "first\n", 1);
    // The tap reads, fails to pass it on, and closes its end: the job's next writes fail.
    for (int i = 0; i < 200 && job_errno == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (write(pipes.out_write, "x", 1) < 0) job_errno = errno;
    }
    pipes.close_out();
    pipes.close_err();
    tap.finish(1000);
  }
  dup2(saved_out, STDOUT_FILENO);
  close(saved_out);
  sigaction(SIGPIPE, &saved, nullptr);
  EXPECT_EQ(job_errno, EPIPE);
  EXPECT_EQ(run.file("logs/stdout.log").substr(0, 6), "first\n");
}

TEST(LogTap, StreamsCanBeReadWhileRunning) {
  TempRun run;
  JobPipes pipes;
  StdioCapture capture(run.path());
  uint64_t seen = 0;
  {
    LogTap tap(run.path(), pipes.job);
    write_chunked(pipes.err_write, "abc\n", 1);
    for (int i = 0; i < 200 && seen < 4; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      seen = tap.streams()[1].bytes;
    }
    pipes.close_out();
    pipes.close_err();
    tap.finish(1000);
  }
  capture.restore();
  EXPECT_EQ(seen, 4u);
  EXPECT_EQ(capture.err(), "abc\n");
}

void append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::app) << text;
}

// Waits until the tap's stream `index` has `bytes`; false when it never does.
bool wait_for_bytes(const LogTap& tap, size_t index, uint64_t bytes) {
  for (int i = 0; i < 400; ++i) {
    std::vector<store::LogStream> streams = tap.streams();
    if (streams.size() > index && streams[index].bytes >= bytes) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A file as OutputFilesReader hands it over: open for reading.
OutputFile told(store::LogWriter writer, uint64_t offset, const std::string& path) {
  OutputFile file;
  file.writer = writer;
  file.offset = offset;
  file.path = path;
  file.file.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return file;
}

TEST(LogTap, ReadsTheFilesJobProcessesWriteFromWhereEachStarted) {
  TempRun run;
  const std::string path = run.path() + "/job.log";
  append(path, "an earlier run's line\n");
  JobPipes pipes;
  StdioCapture capture(run.path());
  bool seen_while_running = false;
  std::vector<store::LogStream> streams;
  std::vector<store::LogLine> lines;
  {
    LogTap tap(run.path(), pipes.job);
    tap.add_file(told({42, 2, 1000}, 22, path));
    append(path, "Traceback (most recent call last):\n  File \"t.py\", line 1");
    append(path, ", in <module>\nValueError: bad\n");
    seen_while_running = wait_for_bytes(tap, 2, 86);
    tap.add_file(told({43, 1, 2000}, 86, path));  // a second writer of the same file
    append(path, "no newline at the end");
    pipes.close_out();
    pipes.close_err();
    tap.finish(1000);
    streams = tap.streams();
    lines = tap.take_lines();
  }
  capture.restore();
  EXPECT_TRUE(seen_while_running);
  ASSERT_EQ(streams.size(), 3u);
  EXPECT_EQ(streams[2].name, path);
  EXPECT_EQ(streams[2].bytes, 86u + 21u);
  EXPECT_EQ(streams[2].lines, 3u);  // ended by a newline
  EXPECT_EQ(streams[2].files, std::vector<std::string>{"logs/file-1.log"});
  EXPECT_EQ(streams[2].writers, (std::vector<store::LogWriter>{{42, 2, 1000}, {43, 1, 2000}}));
  EXPECT_EQ(run.file("logs/file-1.log"), read_file(path).substr(22));
  std::vector<std::string> kept;
  for (const store::LogLine& line : lines) {
    if (line.stream == path) kept.push_back(std::to_string(line.number) + " " + line.text);
  }
  EXPECT_EQ(kept, (std::vector<std::string>{"1 Traceback (most recent call last):",
                                            "2   File \"t.py\", line 1, in <module>",
                                            "3 ValueError: bad", "4 no newline at the end"}));
}

// The texts of the lines a tap kept of the file at `path`, which pid 42 writes as `fd` from its
// start: `then` runs once the tap read what the file held, before the job ends.
std::vector<std::string> tapped_texts(const TempRun& run, const std::string& path, int fd,
                                      const std::function<void(LogTap&)>& then) {
  JobPipes pipes;
  StdioCapture capture(run.path(), true);
  std::vector<store::LogLine> lines;
  {
    LogTap tap(run.path(), pipes.job);
    tap.add_file(told({42, fd, 1000}, 0, path));
    EXPECT_TRUE(wait_for_bytes(tap, 2, fs::file_size(path)));
    then(tap);
    pipes.close_out();
    pipes.close_err();
    tap.finish(1000);
    std::vector<store::LogStream> streams = tap.streams();
    EXPECT_EQ(streams.size(), 3u);
    EXPECT_EQ(streams.back().writers.size(), 1u);  // told once or more
    lines = tap.take_lines();
  }
  capture.restore();
  std::vector<std::string> texts;
  for (const store::LogLine& line : lines) texts.push_back(line.text);
  return texts;
}

TEST(LogTap, AFileCutShortIsReadOnFromItsNewEnd) {
  TempRun run;
  const std::string path = run.path() + "/job.log";
  append(path, "first run\n");
  std::vector<std::string> texts = tapped_texts(run, path, 2, [&](LogTap&) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "x\n";  // `> job.log` again
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    append(path, "second run\n");
  });
  EXPECT_EQ(texts, (std::vector<std::string>{"first run", "second run"}));
}

TEST(LogTap, ARotatedLogGoesOnInTheFileOpenedInItsPlace) {
  TempRun run;
  const std::string path = run.path() + "/train.log";
  append(path, "step 1\n");
  std::vector<std::string> texts = tapped_texts(run, path, 3, [&](LogTap& tap) {
    append(path, "step 2\n");  // written before the rotation, read after it
    fs::rename(path, path + ".1");
    append(path, "");
    tap.add_file(told({42, 3, 2000}, 0, path));  // RotatingFileHandler opened it again
    tap.add_file(told({42, 3, 3000}, 0, path));  // and again: the same writer
    append(path, "RuntimeError: after the rotation\n");
  });
  EXPECT_EQ(texts,
            (std::vector<std::string>{"step 1", "step 2", "RuntimeError: after the rotation"}));
  EXPECT_EQ(run.file("logs/file-1.log"), "step 1\nstep 2\nRuntimeError: after the rotation\n");
}

TEST(LogTap, AFileWrittenFasterThanItIsReadKeepsItsLatestOutput) {
  TempRun run;
  const std::string path = run.path() + "/job.log";
  std::string early;
  for (int i = 0; i < 20000; ++i) early += "step " + std::to_string(i) + " loss 0.5\n";
  append(path, early);
  JobPipes pipes;
  StdioCapture capture(run.path(), true);
  std::vector<store::LogStream> streams;
  std::vector<store::LogLine> lines;
  LogBounds bounds;
  bounds.file_lag_bytes = 4096;
  {
    LogTap tap(run.path(), pipes.job, bounds);
    append(path, "RuntimeError: the end\n");
    tap.add_file(told({42, 2, 1000}, 0, path));
    pipes.close_out();
    pipes.close_err();
    tap.finish(1000);
    streams = tap.streams();
    lines = tap.take_lines();
  }
  capture.restore();
  const uint64_t size = fs::file_size(path);
  ASSERT_EQ(streams.size(), 3u);
  EXPECT_EQ(streams[2].bytes, size);
  EXPECT_EQ(streams[2].bytes_not_kept, size - 4096);
  EXPECT_EQ(run.file("logs/file-1.log"), read_file(path).substr(size - 4096));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().text, "RuntimeError: the end");
}

}  // namespace
}  // namespace traindoc::supervisor
