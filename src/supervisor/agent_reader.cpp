// Reads the agents' slots file. Supervisor process, main loop thread.
// Slots are claimed in order, so the ready ones form a prefix apart from a few still being filled.
#include "supervisor/agent_reader.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace traindoc::supervisor {

using common::AgentHeader;
using common::Slot;

AgentReader::AgentReader(const std::string& run_dir, const std::string& outputs_socket)
    : m_seen(common::kSlotCount, false),
      m_owners(common::kSlotCount),
      m_asked(common::kSlotCount, 0),
      m_backed(common::kSlotCount, false),
      m_crash_seen(common::kSlotCount, false),
      m_exit_seen(common::kSlotCount, false),
      m_records(common::kSlotCount),
      m_collectives(common::kSlotCount) {
  std::string dir = run_dir + "/agent";
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create " + dir + ": " + strerror(errno));
  }
  m_path = run_dir + "/" + common::kAgentFileName;
  m_fd = open(m_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (m_fd < 0) throw std::runtime_error("cannot create " + m_path + ": " + strerror(errno));
  // Sparse: only the pages of claimed slots ever take memory or disk, each given its blocks before
  // it is touched (layout.h); the header's now.
  auto fail = [&](const char* step) {
    int error = errno;
    close(m_fd);
    throw std::runtime_error(std::string("cannot ") + step + " " + m_path + ": " + strerror(error));
  };
  if (ftruncate(m_fd, static_cast<off_t>(common::agent_file_size())) != 0) fail("size");
  if (!common::allocate_range(m_fd, 0, sizeof(AgentHeader))) fail("allocate");
  m_base = mmap(nullptr, common::agent_file_size(), PROT_READ | PROT_WRITE, MAP_SHARED, m_fd, 0);
  if (m_base == MAP_FAILED) {
    m_base = nullptr;
    fail("map");
  }
  auto* header = static_cast<AgentHeader*>(m_base);
  header->slot_count = common::kSlotCount;
  header->slot_size = sizeof(Slot);
  header->version = common::kAgentVersion;
  if (outputs_socket.size() < sizeof(header->outputs_socket)) {
    memcpy(header->outputs_socket, outputs_socket.data(), outputs_socket.size());
  }
  // The magic goes last: an agent that sees it sees a complete header.
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = common::kAgentMagic;
}

AgentReader::~AgentReader() {
  if (m_base != nullptr) munmap(m_base, common::agent_file_size());
  if (m_fd >= 0) close(m_fd);
}

void AgentReader::remove_file() {
  unlink(m_path.c_str());
}

uint64_t AgentReader::processes_without_slot() const {
  auto* header = static_cast<const AgentHeader*>(m_base);
  uint32_t claimed = header->slots_claimed.load(std::memory_order_relaxed);
  return claimed > common::kSlotCount ? claimed - common::kSlotCount : 0;
}

namespace {

AgentCrash copy_crash(const Slot& slot, uint32_t index, int pid, uint64_t start_ticks) {
  const common::CrashRecord& r = slot.crash;
  AgentCrash out;
  out.slot = index;
  out.python_dumped = r.python_dumped != 0;
  store::Crash& c = out.crash;
  c.pid = pid;
  c.start_ticks = start_ticks;
  c.tid = r.tid;
  c.thread_name.assign(r.thread_name, strnlen(r.thread_name, sizeof(r.thread_name)));
  c.signo = r.signo;
  c.code = r.code;
  c.fault_addr = r.fault_addr;
  c.sender_pid = r.sender_pid;
  c.time_ns = r.time_ns;
  c.pc = r.pc;
  c.sp = r.sp;
  c.fp = r.fp;
  c.stack_lo = r.stack_lo;
  c.stack_hi = r.stack_hi;
  c.other_crashes = static_cast<int>(r.other_crashes);
  uint32_t count = std::min(r.frame_count, common::kCrashFrames);
  c.frames.resize(count);
  for (uint32_t i = 0; i < count; ++i) c.frames[i].address = r.frames[i];
  return out;
}

// A kStep record as a step sample; nullopt for a kind this build does not know.
std::optional<store::StepSample> step_sample(const AgentRecord& record) {
  store::StepKind kind;
  switch (static_cast<common::StepKind>(record.a)) {
    case common::StepKind::kOptimizer:
      kind = store::StepKind::kOptimizer;
      break;
    case common::StepKind::kBackward:
      kind = store::StepKind::kBackward;
      break;
    case common::StepKind::kDdpForward:
      kind = store::StepKind::kDdpForward;
      break;
    default:
      return std::nullopt;
  }
  return store::StepSample{.t_ns = record.time_ns,
                           .pid = record.pid,
                           .start_ticks = record.start_ticks,
                           .kind = kind,
                           .count = record.b};
}

}  // namespace

// Copies the entries published since `cursor.pos` out of one ring. An entry the writers lapped
// before we read it is counted lost; one a writer claimed but has not published stops the copy
// until the next poll, unless it stays so for a second while later ones are out (its writer was
// killed mid-record).
template <typename Entry, typename Out, typename Copy>
void AgentReader::drain(const Entry* entries, uint32_t capacity, uint64_t next, RingCursor& cursor,
                        std::vector<Out>& out, Copy&& copy) {
  uint64_t& pos = cursor.pos;
  if (next - pos > capacity) {
    m_records_dropped += next - pos - capacity;
    pos = next - capacity;
  }
  for (; pos < next; ++pos) {
    const Entry& entry = entries[pos % capacity];
    uint64_t seq = entry.seq.load(std::memory_order_acquire);
    if (seq != pos + 1) {
      if ((seq & ~common::kSeqWriting) > pos + 1) {  // a newer entry took the place
        ++m_records_dropped;
        continue;
      }
      if (next > pos + 1 && ++cursor.stalled_polls > kStallPolls) {
        cursor.stalled_polls = 0;
        ++m_records_dropped;
        continue;
      }
      break;
    }
    cursor.stalled_polls = 0;
    Out value = copy(entry);
    uint64_t written_pos = entry.pos;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (entry.seq.load(std::memory_order_relaxed) != pos + 1 || written_pos != pos) {
      ++m_records_dropped;  // overwritten while we copied
      continue;
    }
    out.push_back(std::move(value));
  }
}

void AgentReader::release_crash(uint32_t index) {
  Slot* slot = common::slot_at(m_base, index);
  slot->crash.state.store(static_cast<uint32_t>(common::CrashState::kReleased),
                          std::memory_order_release);
  // Shared futex: the word lives in a file mapping, so the crashed process's wait sees this wake.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&slot->crash.state), FUTEX_WAKE, INT_MAX, nullptr,
          nullptr, 0);
}

AgentPoll AgentReader::poll(const Vouch& vouch) {
  AgentPoll out;
  auto* header = static_cast<AgentHeader*>(m_base);
  uint32_t claimed = header->slots_claimed.load(std::memory_order_acquire);
  if (claimed > common::kSlotCount) claimed = common::kSlotCount;
  read_identities(claimed, vouch, out);
  for (uint32_t index = 0; index < claimed; ++index) {
    if (m_seen[index] && m_owners[index].pid != 0) read_slot(index, out);
  }
  // Step records become step samples; the others stay records.
  std::erase_if(out.records, [&](const AgentRecord& record) {
    if (record.type != common::RecordType::kStep) return false;
    if (std::optional<store::StepSample> step = step_sample(record)) out.steps.push_back(*step);
    return true;
  });
  return out;
}

void AgentReader::read_identities(uint32_t claimed, const Vouch& vouch, AgentPoll& out) {
  // A slot whose process died while filling it never becomes ready: skip it, but keep looking at
  // it, without re-walking the long ready prefix every time.
  for (uint32_t index = m_scan_from; index < claimed; ++index) {
    if (m_seen[index]) continue;
    // Its blocks before the first read (layout.h): on a full disk, looked at again next poll.
    if (!m_backed[index]) {
      if (!common::allocate_slot(m_fd, index)) continue;
      m_backed[index] = true;
    }
    const Slot* slot = common::slot_at(m_base, index);
    if (slot->state.load(std::memory_order_acquire) !=
        static_cast<uint32_t>(common::SlotState::kReady)) {
      continue;
    }
    if (!vouch(slot->pid, slot->ppid, slot->start_ticks)) {
      if (++m_asked[index] < kVouchPolls) continue;
      m_seen[index] = true;
      ++m_slots_refused;
      continue;
    }
    m_seen[index] = true;
    m_owners[index] = {slot->pid, slot->start_ticks};
    AgentIdentity id;
    id.pid = slot->pid;
    id.ppid = slot->ppid;
    id.start_ticks = slot->start_ticks;
    id.start_ns = slot->start_ns;
    id.forked = slot->origin == static_cast<uint32_t>(common::SlotOrigin::kFork);
    id.rank = slot->rank;
    id.local_rank = slot->local_rank;
    id.world_size = slot->world_size;
    id.node_rank = slot->node_rank;
    id.rank_source = static_cast<common::RankSource>(slot->rank_source);
    id.cmdline.assign(slot->cmdline, strnlen(slot->cmdline, sizeof(slot->cmdline)));
    out.identities.push_back(std::move(id));
  }
  while (m_scan_from < claimed && m_seen[m_scan_from]) ++m_scan_from;
}

void AgentReader::read_slot(uint32_t index, AgentPoll& out) {
  const Owner owner = m_owners[index];
  Slot* slot = common::slot_at(m_base, index);
  if (!m_crash_seen[index] && slot->crash.state.load(std::memory_order_acquire) >=
                                  static_cast<uint32_t>(common::CrashState::kWritten)) {
    m_crash_seen[index] = true;
    out.crashes.push_back(copy_crash(*slot, index, owner.pid, owner.start_ticks));
  }
  if (!m_exit_seen[index]) {
    if (uint32_t exited = slot->exited.load(std::memory_order_acquire); exited != 0) {
      m_exit_seen[index] = true;
      out.exits.push_back(AgentExit{.pid = owner.pid,
                                    .start_ticks = owner.start_ticks,
                                    .code = static_cast<int>(exited - 1),
                                    .time_ns = slot->exit_ns});
    }
  }
  drain(slot->ring, common::kRingRecords, slot->next_record.load(std::memory_order_acquire),
        m_records[index], out.records, [&](const common::Record& record) {
          return AgentRecord{.pid = owner.pid,
                             .start_ticks = owner.start_ticks,
                             .type = static_cast<common::RecordType>(record.type),
                             .time_ns = record.time_ns,
                             .a = record.a,
                             .b = record.b};
        });
  const common::CollectiveRing* ring = common::collective_ring_at(m_base, index);
  drain(ring->records, common::kCollectiveRecords, ring->next.load(std::memory_order_acquire),
        m_collectives[index], out.collectives, [&](const common::CollectiveRecord& record) {
          return AgentCollective{
              .pid = owner.pid, .start_ticks = owner.start_ticks, .call = record.call};
        });
}

}  // namespace traindoc::supervisor
