// complete_crash: what the supervisor adds to a crash record from the living process, only for the
// process the record was vouched for, and code bytes only from code.
#include "supervisor/crash_capture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {
namespace {

int g_data = 42;

// A crash record of this test process, as if it waited in its handler.
AgentCrash crash_at(uint64_t pc, uint64_t start_ticks) {
  AgentCrash raw;
  raw.crash.pid = getpid();
  raw.crash.start_ticks = start_ticks;
  raw.crash.pc = pc;
  return raw;
}

uint64_t own_start() {
  return read_proc_stat(getpid())->starttime;
}

TEST(CompleteCrash, CodeBytesComeFromCode) {
  AgentCrash raw = crash_at(reinterpret_cast<uint64_t>(&own_start), own_start());
  complete_crash(raw, "/nonexistent", getppid());
  EXPECT_NE(raw.crash.maps.find("r-xp"), std::string::npos);
  EXPECT_EQ(raw.crash.code_bytes.size(), 32u) << "16 bytes in hex";
}

TEST(CompleteCrash, AnAddressInDataGivesNoBytes) {
  AgentCrash raw = crash_at(reinterpret_cast<uint64_t>(&g_data), own_start());
  complete_crash(raw, "/nonexistent", getppid());
  EXPECT_FALSE(raw.crash.maps.empty());
  EXPECT_EQ(raw.crash.code_bytes, "");
  std::vector<char> heap(4096, 'x');
  raw = crash_at(reinterpret_cast<uint64_t>(heap.data()), own_start());
  complete_crash(raw, "/nonexistent", getppid());
  EXPECT_EQ(raw.crash.code_bytes, "");
}

TEST(CompleteCrash, AProcessNotBelowTheSupervisorGetsNothingRead) {
  AgentCrash raw = crash_at(reinterpret_cast<uint64_t>(&own_start), own_start() + 1);
  complete_crash(raw, "/nonexistent", getppid());
  EXPECT_EQ(raw.crash.maps, "") << "another process under the pid";
  raw = crash_at(reinterpret_cast<uint64_t>(&own_start), own_start());
  complete_crash(raw, "/nonexistent", getpid());
  EXPECT_EQ(raw.crash.maps, "") << "not below the one given";
  EXPECT_EQ(raw.crash.code_bytes, "");
}

}  // namespace
}  // namespace traindoc::supervisor
