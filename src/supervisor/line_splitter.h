// Cuts one stream of a job's output, read in chunks of any size, into lines, and picks the ones
// worth citing. Supervisor process, the log tap's thread. Pure: bytes in, lines out, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/evidence.h"

namespace traindoc::supervisor {

// What a terminal shows of a line that a progress bar redrew with carriage returns (the text
// after the last one), cut at the length kept of a line.
std::string_view shown_line(std::string_view line);

// Whether the line numbered `number` (from 1) of a stream, as shown, is cited: the first lines of
// each stream are, and the others that look like errors (log_anchors.h).
bool worth_citing(uint64_t number, std::string_view shown);

// The lines of a whole output that are cited, by definition: each line (ended by a newline, or
// by the end), as shown, numbered from 1, cited where worth_citing says; `lines` gets how many.
// The splitter must agree with it however reads cut the output: the tests and the fuzz target
// hold it against this plain way.
inline std::vector<store::LogLine> cited_by_definition(std::string_view output,
                                                       const std::string& stream, int64_t t_ns,
                                                       uint64_t& lines) {
  std::vector<store::LogLine> cited;
  lines = 0;
  while (!output.empty()) {
    size_t end = output.find('\n');
    std::string_view shown = shown_line(output.substr(0, end));
    if (worth_citing(++lines, shown)) cited.push_back({t_ns, stream, lines, std::string(shown)});
    output.remove_prefix(end == std::string_view::npos ? output.size() : end + 1);
  }
  return cited;
}

class LineSplitter {
 public:
  // Takes the next chunk of the stream named `stream`, read at `t_ns`; the lines it ends that are
  // worth citing go to `cited`. Returns how many lines it ended.
  uint64_t scan(std::string_view chunk, const std::string& stream, int64_t t_ns,
                std::vector<store::LogLine>& cited);
  // Ends the line the output stopped in without a newline, if there is one: at the stream's end,
  // or where it goes on in another file. Returns whether there was one.
  bool end_partial(const std::string& stream, int64_t t_ns, std::vector<store::LogLine>& cited);
  // Forgets the line begun: the output that follows is not its continuation.
  void drop_partial() { m_partial.clear(); }
  // Lines ended so far.
  uint64_t lines() const { return m_line_number; }

 private:
  void end_line(std::string_view line, const std::string& stream, int64_t t_ns,
                std::vector<store::LogLine>& cited);
  // Ends the whole lines in [data, end), which ends with a newline, past the first ones.
  uint64_t pass_whole_lines(const char* data, const char* end, const std::string& stream,
                            int64_t t_ns, std::vector<store::LogLine>& cited);

  // The current line so far, cut at the kept length (but for a carriage return ending a read).
  std::string m_partial;
  uint64_t m_line_number = 0;
};

}  // namespace traindoc::supervisor
