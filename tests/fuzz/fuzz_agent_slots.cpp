// libFuzzer target: the supervisor's reader of agent/slots, which every job process can write
// anything into. The input is a program of writes into the shared file, between polls: raw
// bytes into a slot or its collective ring, a slot made ready, a ring entry published, a count
// of claimed slots, a crash released. Writes stay within the first kSlots slots: a count of
// claimed slots beyond them would only make each poll allocate blocks for slots left empty.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/layout.h"
#include "supervisor/agent_reader.h"

using namespace traindoc;

namespace {

constexpr uint32_t kSlots = 4;

// Never destroyed: the removal at exit needs it.
const std::string& run_dir() {
  static const std::string& dir = *[] {
    auto* path =
        new std::string((std::filesystem::temp_directory_path() / "fuzz-slots-XXXXXX").string());
    if (mkdtemp(path->data()) == nullptr) abort();
    std::atexit([] { std::filesystem::remove_all(run_dir()); });
    return path;
  }();
  return dir;
}

// Reads the program: each call takes the next bytes, zeros past the end.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : m_data(data), m_size(size) {}
  bool done() const { return m_pos >= m_size; }
  uint64_t take(size_t bytes) {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes; ++i) {
      value = value << 8 | (m_pos < m_size ? m_data[m_pos] : 0);
      ++m_pos;
    }
    return value;
  }
  // Copies up to `max` of the next bytes to `to`.
  void copy(char* to, size_t max) {
    size_t n = std::min(max, m_pos < m_size ? m_size - m_pos : 0);
    memcpy(to, m_data + m_pos, n);
    m_pos += n;
  }

 private:
  const uint8_t* m_data;
  size_t m_size;
  size_t m_pos = 0;
};

void check(const supervisor::AgentPoll& poll) {
  for (const supervisor::AgentIdentity& id : poll.identities) {
    if (id.cmdline.size() >= common::kCmdlineSize) abort();
  }
  for (const supervisor::AgentCrash& crash : poll.crashes) {
    if (crash.slot >= kSlots || crash.crash.frames.size() > common::kCrashFrames) abort();
    if (crash.crash.thread_name.size() > common::kThreadNameSize) abort();
  }
}

// Vouches for half the pids a slot may name: both the read and the refused paths are taken.
bool even_pids(int pid, int, uint64_t) {
  return pid % 2 == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  supervisor::AgentReader reader(run_dir());
  std::string path = run_dir() + "/" + common::kAgentFileName;
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) abort();
  void* base = mmap(nullptr, common::agent_file_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) abort();
  auto* header = static_cast<common::AgentHeader*>(base);

  Program program(data, size);
  while (!program.done()) {
    uint32_t op = static_cast<uint32_t>(program.take(1));
    auto index = static_cast<uint32_t>(program.take(1) % kSlots);
    common::Slot* slot = common::slot_at(base, index);
    common::CollectiveRing* ring = common::collective_ring_at(base, index);
    switch (op % 7) {
      case 0:
        check(reader.poll(even_pids));
        break;
      case 1: {  // raw bytes into a slot
        size_t offset = program.take(2) % sizeof(common::Slot);
        program.copy(reinterpret_cast<char*>(slot) + offset,
                     std::min<size_t>(program.take(1), sizeof(common::Slot) - offset));
        break;
      }
      case 2: {  // raw bytes into a collective ring
        size_t offset = program.take(3) % sizeof(common::CollectiveRing);
        program.copy(reinterpret_cast<char*>(ring) + offset,
                     std::min<size_t>(program.take(1), sizeof(common::CollectiveRing) - offset));
        break;
      }
      case 3:
        slot->state.store(static_cast<uint32_t>(common::SlotState::kReady));
        break;
      case 4: {  // a record published at a position, of either ring
        uint64_t pos = program.take(2);
        if (program.take(1) % 2 == 0) {
          common::Record& record = slot->ring[pos % common::kRingRecords];
          record.pos = pos;
          record.seq.store(pos + 1);
          slot->next_record.store(std::max(slot->next_record.load(), pos + 1));
        } else {
          common::CollectiveRecord& record = ring->records[pos % common::kCollectiveRecords];
          record.pos = pos;
          record.seq.store(pos + 1);
          ring->next.store(std::max(ring->next.load(), pos + 1));
        }
        break;
      }
      case 5:
        header->slots_claimed.store(static_cast<uint32_t>(program.take(1) % (kSlots + 1)));
        break;
      default:
        reader.release_crash(index);
        break;
    }
  }
  check(reader.poll(even_pids));
  (void)reader.processes_without_slot();
  (void)reader.records_dropped();

  munmap(base, common::agent_file_size());
  close(fd);
  reader.remove_file();
  return 0;
}
