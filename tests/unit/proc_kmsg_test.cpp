// Tests of the kernel log parsers: /dev/kmsg records as this machine's kernel (6.18) wrote them
// for a cgroup's and for the machine's OOM kill, an older kernel's bare "Killed process" with a
// dictionary, records that are not kills, and damage.
#include "supervisor/proc/kmsg_text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace traindoc::supervisor {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(TRAINDOC_FIXTURES) + "/kmsg/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(KmsgTest, RecordHeader) {
  std::string text = fixture("memcg_killed.txt");
  std::optional<KmsgRecord> record = parse_kmsg_record(text);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->priority, 3);
  EXPECT_EQ(record->sequence, 513u);
  EXPECT_EQ(record->usec, 478816499u);
  EXPECT_TRUE(record->message.starts_with("Memory cgroup out of memory: Killed process 8736"));
  EXPECT_FALSE(record->message.ends_with("\n"));
  // Later kernels may add header fields before the ';'.
  record = parse_kmsg_record("6,1,2,-,caller=T1;hello\n");
  ASSERT_TRUE(record);
  EXPECT_EQ(record->message, "hello");
  for (const char* bad : {"", ";x", "6,1,2", "6,1,2,-", "a,1,2,-;x", "6;1,2,-;x", "6,1,,-;x"}) {
    EXPECT_FALSE(parse_kmsg_record(bad)) << bad;
  }
}

TEST(KmsgTest, MemcgKill) {
  std::string context_text = fixture("memcg_oom_kill.txt");
  std::optional<KmsgRecord> record = parse_kmsg_record(context_text);
  ASSERT_TRUE(record);
  std::optional<OomKillContext> context = parse_oom_kill_context(record->message);
  ASSERT_TRUE(context);
  EXPECT_TRUE(context->memcg);
  EXPECT_EQ(context->oom_memcg, "/process_api/3b0c/probe");
  EXPECT_EQ(context->task_memcg, "/process_api/3b0c/probe");
  EXPECT_EQ(context->task, "python3");
  EXPECT_EQ(context->pid, 8736);
  EXPECT_FALSE(parse_oom_killed_process(record->message));

  std::string killed_text = fixture("memcg_killed.txt");
  record = parse_kmsg_record(killed_text);
  ASSERT_TRUE(record);
  std::optional<OomKilledProcess> killed = parse_oom_killed_process(record->message);
  ASSERT_TRUE(killed);
  EXPECT_TRUE(killed->memcg);
  EXPECT_EQ(killed->pid, 8736);
  EXPECT_EQ(killed->comm, "python3");
  EXPECT_EQ(killed->total_vm, 45264u * 1024);
  EXPECT_EQ(killed->anon_rss, 32384u * 1024);
  EXPECT_EQ(killed->file_rss, 6396u * 1024);
  EXPECT_EQ(killed->shmem_rss, 0u);
  EXPECT_FALSE(parse_oom_kill_context(record->message));
}

TEST(KmsgTest, MachineKill) {
  std::string context_text = fixture("global_oom_kill.txt");
  std::optional<OomKillContext> context =
      parse_oom_kill_context(parse_kmsg_record(context_text)->message);
  ASSERT_TRUE(context);
  EXPECT_FALSE(context->memcg);
  EXPECT_EQ(context->oom_memcg, "");  // "global_oom" instead
  EXPECT_EQ(context->task_memcg, "/process_api/3b0c");
  EXPECT_EQ(context->pid, 7823);
  std::string killed_text = fixture("global_killed.txt");
  std::optional<OomKilledProcess> killed =
      parse_oom_killed_process(parse_kmsg_record(killed_text)->message);
  ASSERT_TRUE(killed);
  EXPECT_FALSE(killed->memcg);
  EXPECT_EQ(killed->pid, 7823);
  EXPECT_EQ(killed->anon_rss, 24065024ull * 1024);
}

TEST(KmsgTest, OlderKernelsAndOddNames) {
  std::string text = fixture("old_killed_with_dictionary.txt");
  std::optional<KmsgRecord> record = parse_kmsg_record(text);
  ASSERT_TRUE(record);
  std::optional<OomKilledProcess> killed = parse_oom_killed_process(record->message);
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->pid, 4242);
  EXPECT_EQ(killed->comm, "pt_data_worker");
  EXPECT_EQ(killed->anon_rss, 524288u * 1024);

  text = fixture("comm_with_parens.txt");
  killed = parse_oom_killed_process(parse_kmsg_record(text)->message);
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->comm, "a) (b)");
  EXPECT_EQ(killed->anon_rss, 4096u);

  // Without the sizes, the name ends at the last ')'.
  killed = parse_oom_killed_process("Killed process 5 (x)");
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->comm, "x");
  EXPECT_FALSE(killed->anon_rss);
}

TEST(KmsgTest, RecordsThatAreNotKills) {
  std::string text = fixture("oom_reaper.txt");
  EXPECT_FALSE(parse_oom_killed_process(parse_kmsg_record(text)->message));
  for (const char* message : {"", "Killed process", "Killed process x (y)", "Killed process 0 (y)",
                              "Killed process 99999999999 (y)", "Killed process 5 y",
                              "Killed process 5 (y", "someone said Killed process 5 (y)",
                              "oom-kill:", "oom-kill:pid=", "oom-kill:pid=-1", "oom-kill:task=x"}) {
    EXPECT_FALSE(parse_oom_killed_process(message)) << message;
    EXPECT_FALSE(parse_oom_kill_context(message)) << message;
  }
  // A size too large for bytes is left out, not wrapped.
  std::optional<OomKilledProcess> killed = parse_oom_killed_process(
      "Killed process 5 (y) total-vm:99999999999999999999kB, "
      "anon-rss:18014398509481984kB");
  ASSERT_TRUE(killed);
  EXPECT_FALSE(killed->total_vm);
  EXPECT_FALSE(killed->anon_rss);
}

}  // namespace
}  // namespace traindoc::supervisor
