// Tests of AgentReader against a fake agent that maps <run>/agent/slots itself and claims slots
// and appends records exactly as src/agent/agent.cpp does: identities, records in order, ring
// overruns, torn records, slot exhaustion, and a multi-threaded stress test.
#include "supervisor/agent_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

namespace traindoc::supervisor {
namespace {

using common::AgentHeader;
using common::kRingRecords;
using common::kSlotCount;
using common::Record;
using common::RecordType;
using common::Slot;

// Takes every slot's word for it: these tests are of the reading, not of who is vouched for.
bool kAnyone(int, int, uint64_t) {
  return true;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "agent-reader-XXXXXX").string();
    m_path = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(m_path); }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

// What the agent in a job process does with the slots file (src/agent/agent.cpp).
class FakeAgent {
 public:
  explicit FakeAgent(const std::string& run_dir) {
    std::string path = run_dir + "/" + common::kAgentFileName;
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + path);
    m_base = mmap(nullptr, common::agent_file_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m_base == MAP_FAILED) throw std::runtime_error("cannot map " + path);
  }
  ~FakeAgent() { munmap(m_base, common::agent_file_size()); }
  FakeAgent(const FakeAgent&) = delete;
  FakeAgent& operator=(const FakeAgent&) = delete;

  AgentHeader* header() const { return static_cast<AgentHeader*>(m_base); }

  // claim_slot()
  Slot* claim() {
    uint32_t index = header()->slots_claimed.fetch_add(1, std::memory_order_relaxed);
    if (index >= header()->slot_count) return nullptr;
    Slot* slot = common::slot_at(m_base, index);
    slot->state.store(static_cast<uint32_t>(common::SlotState::kClaimed),
                      std::memory_order_relaxed);
    return slot;
  }

  // fill_common() and the rank fields of start_agent()
  static void fill(Slot* slot, int pid, int ppid, uint64_t start_ticks, common::SlotOrigin origin,
                   const char* cmdline, int rank = -1,
                   common::RankSource source = common::RankSource::kNone) {
    slot->origin = static_cast<uint32_t>(origin);
    slot->pid = pid;
    slot->ppid = ppid;
    slot->start_ticks = start_ticks;
    slot->start_ns = 1'000'000'000 + pid;
    slot->rank = rank;
    slot->local_rank = rank >= 0 ? rank % 8 : -1;
    slot->world_size = rank >= 0 ? 16 : -1;
    slot->node_rank = rank >= 0 ? rank / 8 : -1;
    slot->rank_source = static_cast<uint32_t>(source);
    size_t length = std::min(strlen(cmdline), sizeof(slot->cmdline) - 1);
    memcpy(slot->cmdline, cmdline, length);
    slot->cmdline[length] = '\0';
  }

  static void publish(Slot* slot) {
    slot->state.store(static_cast<uint32_t>(common::SlotState::kReady), std::memory_order_release);
  }

  Slot* register_process(int pid, int ppid, uint64_t start_ticks, const char* cmdline,
                         int rank = -1, common::RankSource source = common::RankSource::kNone) {
    Slot* slot = claim();
    if (slot == nullptr) return nullptr;
    fill(slot, pid, ppid, start_ticks, common::SlotOrigin::kExec, cmdline, rank, source);
    publish(slot);
    return slot;
  }

  // append_record(), in two halves so that a test can stop between them: the claim (a
  // compare-and-swap that sets the writing bit) with the fields, then the publication.
  static uint64_t claim_record(Slot* slot, uint64_t pos) {
    common::claim_entry(slot->ring[pos % kRingRecords].seq, pos + 1);
    return pos;
  }
  static uint64_t begin_record(Slot* slot, RecordType type, int64_t a, int64_t b,
                               int64_t time_ns = 0) {
    uint64_t pos = claim_record(slot, slot->next_record.fetch_add(1, std::memory_order_relaxed));
    Record& record = slot->ring[pos % kRingRecords];
    if (record.seq.load() != ((pos + 1) | common::kSeqWriting)) return pos;
    record.pos = pos;
    record.type = static_cast<uint32_t>(type);
    record.time_ns = time_ns != 0 ? time_ns : a;
    record.a = a;
    record.b = b;
    return pos;
  }
  // append_record() with a = b = time_ns = the position it claimed.
  static void append_position(Slot* slot) {
    uint64_t pos = claim_record(slot, slot->next_record.fetch_add(1, std::memory_order_relaxed));
    Record& record = slot->ring[pos % kRingRecords];
    if (record.seq.load() != ((pos + 1) | common::kSeqWriting)) return;
    record.pos = pos;
    record.type = static_cast<uint32_t>(RecordType::kChildReaped);
    record.time_ns = record.a = record.b = static_cast<int64_t>(pos);
    end_record(slot, pos);
  }
  static void end_record(Slot* slot, uint64_t pos) {
    std::atomic<uint64_t>& seq = slot->ring[pos % kRingRecords].seq;
    if (seq.load() == ((pos + 1) | common::kSeqWriting)) common::publish_entry(seq, pos + 1);
  }
  static void append(Slot* slot, int64_t a, int64_t b, RecordType type = RecordType::kChildReaped) {
    end_record(slot, begin_record(slot, type, a, b));
  }

 private:
  void* m_base = nullptr;
};

std::vector<int64_t> values_a(const std::vector<AgentRecord>& records) {
  std::vector<int64_t> out;
  for (const AgentRecord& r : records) out.push_back(r.a);
  return out;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

TEST(AgentReader, CreatesACompleteHeader) {
  TempDir dir;
  AgentReader reader(dir.path());
  std::string path = dir.path() + "/agent/slots";
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), common::agent_file_size());
  // Sparse: nothing near the full size is allocated.
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, uint64_t{16} << 20);

  FakeAgent agent(dir.path());
  EXPECT_EQ(agent.header()->magic, common::kAgentMagic);
  EXPECT_EQ(agent.header()->version, common::kAgentVersion);
  EXPECT_EQ(agent.header()->slot_count, kSlotCount);
  EXPECT_EQ(agent.header()->slot_size, sizeof(Slot));
  EXPECT_EQ(agent.header()->slots_claimed.load(), 0u);

  AgentPoll poll = reader.poll(kAnyone);
  EXPECT_TRUE(poll.identities.empty());
  EXPECT_TRUE(poll.records.empty());
  EXPECT_EQ(reader.processes_without_slot(), 0u);
  EXPECT_EQ(reader.records_dropped(), 0u);
}

// Step records come out as step samples, in order, beside the other records; a kind this build
// does not know is left out.
TEST(AgentReader, StepRecordsBecomeStepSamples) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* rank = agent.register_process(101, 100, 5010, "python3 train.py", 0);
  const auto step = [&](common::StepKind kind, int64_t count, int64_t t) {
    FakeAgent::end_record(rank, FakeAgent::begin_record(rank, RecordType::kStep,
                                                        static_cast<int64_t>(kind), count, t));
  };
  step(common::StepKind::kBackward, 1, 1'000);
  step(common::StepKind::kOptimizer, 1, 1'001);
  FakeAgent::append(rank, 102, 0);  // a reaped worker
  step(common::StepKind::kDdpForward, 2, 1'002);
  FakeAgent::end_record(rank, FakeAgent::begin_record(rank, RecordType::kStep, 99, 5, 1'003));

  AgentPoll poll = reader.poll(kAnyone);
  EXPECT_EQ(values_a(poll.records), std::vector<int64_t>{102});
  using store::StepKind;
  EXPECT_EQ(poll.steps,
            (std::vector<store::StepSample>{{1'000, 101, 5010, StepKind::kBackward, 1},
                                            {1'001, 101, 5010, StepKind::kOptimizer, 1},
                                            {1'002, 101, 5010, StepKind::kDdpForward, 2}}));
  EXPECT_EQ(reader.records_dropped(), 0u);
}

TEST(AgentReader, RefusesAnExistingFileAndAMissingFolder) {
  TempDir dir;
  AgentReader reader(dir.path());
  // A second reader must not reset slots the first one's agents are using.
  EXPECT_THROW(AgentReader again(dir.path()), std::runtime_error);
  EXPECT_THROW(AgentReader missing(dir.path() + "/no/such/run"), std::runtime_error);
}

TEST(AgentReader, IdentitiesAppearOnce) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  agent.register_process(100, 99, 5000, "python3 -m torch.distributed.run train.py");
  Slot* rank =
      agent.register_process(101, 100, 5010, "python3 train.py", 9, common::RankSource::kTorch);
  // A fork child: the parent's identity, origin fork.
  Slot* child = agent.claim();
  ASSERT_NE(child, nullptr);
  FakeAgent::fill(child, 102, 101, 5020, common::SlotOrigin::kFork, rank->cmdline, 9,
                  common::RankSource::kTorch);
  FakeAgent::publish(child);

  AgentPoll poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.identities.size(), 3u);
  const AgentIdentity& launcher = poll.identities[0];
  EXPECT_EQ(launcher.pid, 100);
  EXPECT_EQ(launcher.ppid, 99);
  EXPECT_EQ(launcher.start_ticks, 5000u);
  EXPECT_EQ(launcher.start_ns, 1'000'000'100);
  EXPECT_FALSE(launcher.forked);
  EXPECT_EQ(launcher.rank, -1);
  EXPECT_EQ(launcher.local_rank, -1);
  EXPECT_EQ(launcher.world_size, -1);
  EXPECT_EQ(launcher.node_rank, -1);
  EXPECT_EQ(launcher.rank_source, common::RankSource::kNone);
  EXPECT_EQ(launcher.cmdline, "python3 -m torch.distributed.run train.py");

  const AgentIdentity& r = poll.identities[1];
  EXPECT_EQ(r.pid, 101);
  EXPECT_EQ(r.rank, 9);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 16);
  EXPECT_EQ(r.node_rank, 1);
  EXPECT_EQ(r.rank_source, common::RankSource::kTorch);
  EXPECT_FALSE(r.forked);

  EXPECT_EQ(poll.identities[2].pid, 102);
  EXPECT_TRUE(poll.identities[2].forked);
  EXPECT_EQ(poll.identities[2].cmdline, "python3 train.py");

  EXPECT_TRUE(reader.poll(kAnyone).identities.empty());
  agent.register_process(103, 100, 5030, "python3 train.py");
  poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.identities.size(), 1u);
  EXPECT_EQ(poll.identities[0].pid, 103);
  EXPECT_TRUE(reader.poll(kAnyone).identities.empty());
}

TEST(AgentReader, FullLengthCmdlineIsCutAtTheSlot) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.claim();
  FakeAgent::fill(slot, 100, 1, 1, common::SlotOrigin::kExec, "");
  // The whole buffer used, without a terminating NUL.
  memset(slot->cmdline, 'x', sizeof(slot->cmdline));
  FakeAgent::publish(slot);
  AgentPoll poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.identities.size(), 1u);
  EXPECT_EQ(poll.identities[0].cmdline, std::string(common::kCmdlineSize, 'x'));
}

TEST(AgentReader, ClaimedSlotDoesNotBlockLaterReadySlots) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slow = agent.claim();  // a process still filling its identity (or dead while doing so)
  ASSERT_NE(slow, nullptr);
  Slot* fast = agent.register_process(201, 200, 2010, "python3 train.py");
  FakeAgent::append(fast, 1, 1);

  AgentPoll poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.identities.size(), 1u);
  EXPECT_EQ(poll.identities[0].pid, 201);
  ASSERT_EQ(poll.records.size(), 1u);
  EXPECT_EQ(poll.records[0].pid, 201);

  Slot* later = agent.register_process(202, 200, 2020, "python3 train.py");
  poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.identities.size(), 1u);
  EXPECT_EQ(poll.identities[0].pid, 202);

  // The slow one becomes ready: it is picked up, once.
  FakeAgent::fill(slow, 200, 1, 2000, common::SlotOrigin::kExec, "bash run.sh");
  FakeAgent::publish(slow);
  FakeAgent::append(slow, 7, 7);
  FakeAgent::append(later, 8, 8);
  poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.identities.size(), 1u);
  EXPECT_EQ(poll.identities[0].pid, 200);
  EXPECT_EQ(poll.identities[0].cmdline, "bash run.sh");
  ASSERT_EQ(poll.records.size(), 2u);
  EXPECT_EQ(poll.records[0].pid, 200);  // slot order
  EXPECT_EQ(poll.records[0].a, 7);
  EXPECT_EQ(poll.records[1].pid, 202);
  poll = reader.poll(kAnyone);
  EXPECT_TRUE(poll.identities.empty());
  EXPECT_TRUE(poll.records.empty());
}

TEST(AgentReader, RecordsAppearOnceInOrder) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(300, 1, 3000, "python3 train.py");
  Slot* other = agent.register_process(301, 1, 3010, "python3 train.py");
  for (int64_t i = 0; i < 5; ++i) FakeAgent::append(slot, 400 + i, 0x100 + i);
  FakeAgent::append(other, 999, 0);

  AgentPoll poll = reader.poll(kAnyone);
  EXPECT_EQ(poll.identities.size(), 2u);
  ASSERT_EQ(poll.records.size(), 6u);
  for (int i = 0; i < 5; ++i) {
    const AgentRecord& r = poll.records[static_cast<size_t>(i)];
    EXPECT_EQ(r.pid, 300);
    EXPECT_EQ(r.start_ticks, 3000u);
    EXPECT_EQ(r.type, RecordType::kChildReaped);
    EXPECT_EQ(r.time_ns, 400 + i);
    EXPECT_EQ(r.a, 400 + i);
    EXPECT_EQ(r.b, 0x100 + i);
  }
  EXPECT_EQ(poll.records[5].pid, 301);
  EXPECT_EQ(poll.records[5].start_ticks, 3010u);
  EXPECT_TRUE(reader.poll(kAnyone).records.empty());

  for (int64_t i = 5; i < 8; ++i) FakeAgent::append(slot, 400 + i, 0);
  EXPECT_EQ(values_a(reader.poll(kAnyone).records), (std::vector<int64_t>{405, 406, 407}));
  EXPECT_TRUE(reader.poll(kAnyone).records.empty());
  EXPECT_EQ(reader.records_dropped(), 0u);
}

// A job process may write any pid into a slot: nothing of a slot is read before its process is
// vouched for, a slot never vouched for is refused and counted, and what a vouched slot yields
// stays its process's even when the slot names another pid later.
TEST(AgentReader, OnlyVouchedSlotsAreRead) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* ours = agent.register_process(400, 1, 4000, "python3 train.py");
  Slot* forged = agent.register_process(1, 0, 1, "/sbin/init");
  for (Slot* slot : {ours, forged}) {
    FakeAgent::append(slot, 42, 0);
    slot->crash.state.store(static_cast<uint32_t>(common::CrashState::kWritten),
                            std::memory_order_release);
  }
  bool ours_known = false;
  const auto vouch = [&](int pid, int, uint64_t start_ticks) {
    return ours_known && pid == 400 && start_ticks == 4000;
  };
  AgentPoll poll = reader.poll(vouch);
  EXPECT_TRUE(poll.identities.empty()) << "not vouched for yet: asked again later";
  EXPECT_TRUE(poll.records.empty());
  EXPECT_TRUE(poll.crashes.empty());

  ours_known = true;
  poll = reader.poll(vouch);
  ASSERT_EQ(poll.identities.size(), 1u);
  EXPECT_EQ(poll.identities[0].pid, 400);
  ASSERT_EQ(poll.records.size(), 1u);
  EXPECT_EQ(poll.records[0].pid, 400);
  ASSERT_EQ(poll.crashes.size(), 1u);
  EXPECT_EQ(poll.crashes[0].crash.pid, 400);

  ours->pid = 1;  // rewritten once vouched for
  ours->start_ticks = 1;
  FakeAgent::append(ours, 43, 0);
  for (int i = 0; i < 100 && reader.slots_refused() == 0; ++i) {
    poll = reader.poll(vouch);
    EXPECT_TRUE(poll.identities.empty());
    for (const AgentRecord& record : poll.records) {
      EXPECT_EQ(record.pid, 400);
      EXPECT_EQ(record.start_ticks, 4000u);
    }
  }
  EXPECT_EQ(reader.slots_refused(), 1u) << "the forged slot, refused after a while";
  EXPECT_TRUE(reader.poll(vouch).identities.empty());
  EXPECT_TRUE(reader.poll(vouch).crashes.empty());
}

TEST(AgentReader, OwnExitAppearsOnceWithItsStatus) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(300, 1, 3000, "python3 worker.py");
  agent.register_process(301, 1, 3010, "python3 worker.py");
  EXPECT_TRUE(reader.poll(kAnyone).exits.empty());

  slot->exit_ns = 5000;
  slot->exited.store(1 + 7, std::memory_order_release);
  AgentPoll poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.exits.size(), 1u);
  EXPECT_EQ(poll.exits[0].pid, 300);
  EXPECT_EQ(poll.exits[0].start_ticks, 3000u);
  EXPECT_EQ(poll.exits[0].code, 7);
  EXPECT_EQ(poll.exits[0].time_ns, 5000);
  EXPECT_TRUE(reader.poll(kAnyone).exits.empty());
}

TEST(AgentReader, ExactlyAFullRingIsNotAnOverrun) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(300, 1, 3000, "python3 train.py");
  for (int64_t i = 0; i < kRingRecords; ++i) FakeAgent::append(slot, i, i);
  EXPECT_EQ(values_a(reader.poll(kAnyone).records), range(0, kRingRecords));
  EXPECT_EQ(reader.records_dropped(), 0u);
  // Again across the ring's wrap.
  for (int64_t i = kRingRecords; i < 2 * kRingRecords; ++i) FakeAgent::append(slot, i, i);
  EXPECT_EQ(values_a(reader.poll(kAnyone).records), range(kRingRecords, 2 * kRingRecords));
  EXPECT_EQ(reader.records_dropped(), 0u);
}

TEST(AgentReader, RingOverrunCountsDroppedAndReturnsTheLatest) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(300, 1, 3000, "python3 train.py");
  reader.poll(kAnyone);
  const int64_t n = kRingRecords + 30;
  for (int64_t i = 0; i < n; ++i) FakeAgent::append(slot, i, i);
  AgentPoll poll = reader.poll(kAnyone);
  EXPECT_EQ(reader.records_dropped(), 30u);
  EXPECT_EQ(values_a(poll.records), range(30, n));

  // A second overrun adds to the count; a partly read ring drops only what was overwritten.
  for (int64_t i = n; i < n + 2 * kRingRecords + 5; ++i) FakeAgent::append(slot, i, i);
  poll = reader.poll(kAnyone);
  EXPECT_EQ(reader.records_dropped(), 30u + kRingRecords + 5);
  EXPECT_EQ(values_a(poll.records), range(n + kRingRecords + 5, n + 2 * kRingRecords + 5));
  EXPECT_TRUE(reader.poll(kAnyone).records.empty());
}

TEST(AgentReader, OverrunInOneSlotLeavesOthersAlone) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* busy = agent.register_process(300, 1, 3000, "a");
  Slot* quiet = agent.register_process(301, 1, 3010, "b");
  for (int64_t i = 0; i < 3 * kRingRecords; ++i) FakeAgent::append(busy, i, i);
  FakeAgent::append(quiet, -1, -1);
  AgentPoll poll = reader.poll(kAnyone);
  EXPECT_EQ(reader.records_dropped(), 2u * kRingRecords);
  ASSERT_EQ(poll.records.size(), kRingRecords + 1);
  EXPECT_EQ(poll.records.back().pid, 301);
  EXPECT_EQ(poll.records.back().a, -1);
}

TEST(AgentReader, TornRecordIsNotReturnedUntilPublished) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(300, 1, 3000, "python3 train.py");
  FakeAgent::append(slot, 0, 0);
  // Thread A is between its fields and its seq; thread B finished the next record.
  uint64_t torn = FakeAgent::begin_record(slot, RecordType::kChildReaped, 1, 1);
  FakeAgent::append(slot, 2, 2);

  EXPECT_EQ(values_a(reader.poll(kAnyone).records), (std::vector<int64_t>{0}));
  EXPECT_TRUE(reader.poll(kAnyone).records.empty());
  FakeAgent::end_record(slot, torn);
  EXPECT_EQ(values_a(reader.poll(kAnyone).records), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(reader.poll(kAnyone).records.empty());
  EXPECT_EQ(reader.records_dropped(), 0u);
}

TEST(AgentReader, ClaimedRecordStillHoldingTheLastLapIsNotReturned) {
  // A writer that claimed its position but has not yet reset seq: the ring entry still holds a
  // complete record from the lap before, which must not be taken for the new one.
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(300, 1, 3000, "python3 train.py");
  for (int64_t i = 0; i < kRingRecords; ++i) FakeAgent::append(slot, i, i);
  EXPECT_EQ(reader.poll(kAnyone).records.size(), kRingRecords);

  // Claimed, nothing written yet.
  uint64_t pos = FakeAgent::claim_record(slot, slot->next_record.fetch_add(1));
  EXPECT_TRUE(reader.poll(kAnyone).records.empty());
  Record& record = slot->ring[pos % kRingRecords];
  record.pos = pos;
  record.type = static_cast<uint32_t>(RecordType::kChildReaped);
  record.a = record.b = record.time_ns = 555;
  EXPECT_TRUE(reader.poll(kAnyone).records.empty());
  FakeAgent::end_record(slot, pos);
  EXPECT_EQ(values_a(reader.poll(kAnyone).records), (std::vector<int64_t>{555}));
}

TEST(AgentReader, RecordsOfASlotAreReadOnlyOnceItIsReady) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.claim();
  FakeAgent::fill(slot, 400, 1, 4000, common::SlotOrigin::kExec, "x");
  FakeAgent::append(slot, 1, 1);
  AgentPoll poll = reader.poll(kAnyone);
  EXPECT_TRUE(poll.identities.empty());
  EXPECT_TRUE(poll.records.empty());
  FakeAgent::publish(slot);
  poll = reader.poll(kAnyone);
  EXPECT_EQ(poll.identities.size(), 1u);
  EXPECT_EQ(values_a(poll.records), (std::vector<int64_t>{1}));
}

TEST(AgentReader, ProcessesWithoutSlot) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* first = agent.register_process(500, 1, 5000, "first");
  ASSERT_NE(first, nullptr);
  // Stand in for kSlotCount - 2 more processes that claimed a slot and never made it ready.
  agent.header()->slots_claimed.fetch_add(kSlotCount - 2);
  Slot* last = agent.register_process(501, 1, 5010, "last");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(reader.processes_without_slot(), 0u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(agent.claim(), nullptr);
  EXPECT_EQ(reader.processes_without_slot(), 3u);

  FakeAgent::append(last, 42, 42);
  AgentPoll poll = reader.poll(kAnyone);
  ASSERT_EQ(poll.identities.size(), 2u);
  EXPECT_EQ(poll.identities[0].pid, 500);
  EXPECT_EQ(poll.identities[1].pid, 501);
  EXPECT_EQ(values_a(poll.records), (std::vector<int64_t>{42}));
  EXPECT_EQ(reader.processes_without_slot(), 3u);
  EXPECT_EQ(agent.claim(), nullptr);
  EXPECT_EQ(reader.processes_without_slot(), 4u);
  EXPECT_TRUE(reader.poll(kAnyone).identities.empty());
}

// A writer stalled inside append_record (preempted, or interrupted by a signal whose handler
// appends) while the other threads of its process wrap the ring: when it resumes it writes the
// entry that a newer record already holds. Each record holds its claimed position.
struct LappedWriter {
  Slot* slot;
  uint64_t pos = 0;

  explicit LappedWriter(Slot* s) : slot(s) {
    pos = FakeAgent::claim_record(slot, slot->next_record.fetch_add(1, std::memory_order_relaxed));
  }
  void write_fields() {
    Record& record = slot->ring[pos % kRingRecords];
    if (record.seq.load() != ((pos + 1) | common::kSeqWriting)) return;  // the agent stops here
    record.pos = pos;
    record.type = static_cast<uint32_t>(RecordType::kChildReaped);
    record.time_ns = record.a = record.b = static_cast<int64_t>(pos);
  }
  void publish() { FakeAgent::end_record(slot, pos); }
};

// The writer of position 120 needs the entry that the stalled writer of position 0 still fills:
// it gives up rather than write beside it (which could mix their fields under its own seq).
TEST(AgentReader, AWriterNeverFillsAnEntryBesideALappedOne) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(700, 1, 7000, "python3 train.py");
  reader.poll(kAnyone);
  LappedWriter stalled(slot);                                                    // position 0
  for (uint32_t i = 0; i < kRingRecords; ++i) FakeAgent::append_position(slot);  // 1..120
  EXPECT_EQ(slot->ring[0].seq.load(), 1 | common::kSeqWriting) << "position 120 was given up";
  stalled.write_fields();
  stalled.publish();
  EXPECT_EQ(slot->ring[0].seq.load(), 1u);

  std::vector<int64_t> got = values_a(reader.poll(kAnyone).records);
  bool increasing = std::is_sorted(got.begin(), got.end()) &&
                    std::adjacent_find(got.begin(), got.end()) == got.end();
  EXPECT_TRUE(increasing);
  EXPECT_EQ(std::count(got.begin(), got.end(), 120), 0);
}

// The record given up is counted as lost once a later one is out, and none is counted twice.
TEST(AgentReader, LappedWriterPublishingLateLosesNoRecordSilently) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(700, 1, 7000, "python3 train.py");
  reader.poll(kAnyone);
  LappedWriter stalled(slot);                                                    // position 0
  for (uint32_t i = 0; i < kRingRecords; ++i) FakeAgent::append_position(slot);  // 1..120
  stalled.write_fields();
  stalled.publish();
  FakeAgent::append_position(slot);  // 121

  std::vector<int64_t> got;
  for (int i = 0; i < 12; ++i) {  // past the reader's patience with an entry left behind (10 polls)
    std::vector<int64_t> more = values_a(reader.poll(kAnyone).records);
    got.insert(got.end(), more.begin(), more.end());
  }
  uint64_t written = slot->next_record.load();
  EXPECT_EQ(got.size() + reader.records_dropped(), written);
  EXPECT_EQ(got.back(), 121);
}

// Four threads of one process append to its slot while the reader polls. Each record holds the
// position its writer claimed, so every record that comes back must be whole (a == b ==
// time_ns), in strictly increasing positions (none twice, none from an older lap), and
// returned + dropped == written.
TEST(AgentReader, ConcurrentWritersAndReader) {
  TempDir dir;
  AgentReader reader(dir.path());
  FakeAgent agent(dir.path());
  Slot* slot = agent.register_process(600, 1, 6000, "python3 train.py");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200'000;

  std::atomic<int> running{kThreads};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        FakeAgent::append_position(slot);
        if (i % 4096 == 0) std::this_thread::yield();
      }
      running.fetch_sub(1);
    });
  }

  uint64_t returned = 0;
  uint64_t torn = 0;
  uint64_t out_of_order = 0;
  int64_t newest = -1;
  auto check = [&](const AgentPoll& poll) {
    for (const AgentRecord& r : poll.records) {
      ++returned;
      if (r.a != r.b || r.time_ns != r.a || r.pid != 600 || r.type != RecordType::kChildReaped) {
        ++torn;
        continue;
      }
      if (r.a <= newest) ++out_of_order;
      newest = std::max(newest, r.a);
    }
  };
  uint64_t polls = 0;
  while (running.load() > 0) {
    check(reader.poll(kAnyone));
    ++polls;
  }
  for (std::thread& w : writers) w.join();
  // A record given up among the last ones is counted lost once a later one is out.
  FakeAgent::append_position(slot);
  for (int i = 0; i < 12; ++i) check(reader.poll(kAnyone));

  uint64_t written = slot->next_record.load();
  EXPECT_EQ(written, uint64_t{kThreads} * kPerThread + 1);
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(returned + reader.records_dropped(), written)
      << "returned " << returned << ", dropped " << reader.records_dropped() << " after " << polls
      << " polls";
  // The last record written is the last one read.
  EXPECT_EQ(newest, static_cast<int64_t>(written) - 1);
  EXPECT_GT(returned, uint64_t{kRingRecords});
}

// Processes register while the reader polls: every identity arrives exactly once.
TEST(AgentReader, ConcurrentRegistrations) {
  TempDir dir;
  AgentReader reader(dir.path());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      FakeAgent agent(dir.path());  // each process maps the file itself
      for (int i = 0; i < kPerThread; ++i) {
        int pid = 10'000 + t * kPerThread + i;
        Slot* slot = agent.claim();
        FakeAgent::fill(slot, pid, 1, static_cast<uint64_t>(pid), common::SlotOrigin::kExec,
                        "python3 worker.py");
        if (i % 7 == 0) std::this_thread::yield();  // sometimes seen claimed but not ready
        FakeAgent::publish(slot);
        FakeAgent::append(slot, pid, pid);
      }
      running.fetch_sub(1);
    });
  }
  std::map<int, int> identities;
  std::map<int, int> records;
  auto take = [&](const AgentPoll& poll) {
    for (const AgentIdentity& id : poll.identities) {
      ++identities[id.pid];
      EXPECT_EQ(id.start_ticks, static_cast<uint64_t>(id.pid));
      EXPECT_EQ(id.cmdline, "python3 worker.py");
    }
    for (const AgentRecord& r : poll.records) {
      ++records[r.pid];
      EXPECT_EQ(r.a, r.pid);
    }
  };
  while (running.load() > 0) take(reader.poll(kAnyone));
  for (std::thread& w : writers) w.join();
  take(reader.poll(kAnyone));
  EXPECT_EQ(identities.size(), size_t{kThreads} * kPerThread);
  EXPECT_EQ(records.size(), size_t{kThreads} * kPerThread);
  for (const auto& [pid, n] : identities) EXPECT_EQ(n, 1) << pid;
  for (const auto& [pid, n] : records) EXPECT_EQ(n, 1) << pid;
  EXPECT_EQ(reader.records_dropped(), 0u);
}

}  // namespace
}  // namespace traindoc::supervisor
