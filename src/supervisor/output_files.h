// The files job processes write their output to instead of the job's pipes (a shell's
// `2> err.log`, a launcher's redirect, a Python log file), as their agents hand them over
// (common/layout.h, OutputNote). Supervisor process, main loop thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_descriptor.h"
#include "store/evidence.h"

namespace traindoc::supervisor {

using common::FileDescriptor;

struct OutputFile {
  store::LogWriter writer;  // the pid as the kernel told it; the descriptor number and time, told
  uint64_t offset = 0;      // where the process started writing
  std::string path;         // the file's name, as the process saw it: names the stream
  FileDescriptor file;      // the same file, open for reading
};

class OutputFilesReader {
 public:
  // Listens on a socket with a fresh random abstract name; without one (socket() refused),
  // socket_name() is empty and no file is ever told.
  OutputFilesReader();
  ~OutputFilesReader();
  OutputFilesReader(const OutputFilesReader&) = delete;
  OutputFilesReader& operator=(const OutputFilesReader&) = delete;

  // For AgentHeader::outputs_socket.
  const std::string& socket_name() const { return m_name; }

  // The files handed over since the last call, from processes of the user that runs traindoc or
  // below traindoc: anyone on the machine can see the name (/proc/net/unix) and connect.
  std::vector<OutputFile> take();

 private:
  FileDescriptor m_listener;
  std::string m_name;
  std::vector<FileDescriptor> m_waiting;  // connected, the note not sent yet
};

}  // namespace traindoc::supervisor
