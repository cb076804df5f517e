// Tests of the /proc text parsers (stat, status, smaps_rollup, limits, meminfo) on texts recorded
// from a Debian 12 machine (kernel 6.x) and hand-written variants for older kernels and damage.
#include "supervisor/proc/proc_text.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>

namespace traindoc::supervisor {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(TRAINDOC_FIXTURES) + "/proc/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ProcStatTest, RecordedSleep) {
  std::optional<ProcStat> stat = parse_proc_stat(fixture("sleep_stat.txt"));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->pid, 9948);
  EXPECT_EQ(stat->comm, "sleep");
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->ppid, 9907);
  EXPECT_EQ(stat->pgrp, 9904);
  EXPECT_EQ(stat->session, 5809);
  EXPECT_EQ(stat->utime, 0u);
  EXPECT_EQ(stat->stime, 0u);
  EXPECT_EQ(stat->num_threads, 1);
  EXPECT_EQ(stat->starttime, 150937u);
  EXPECT_EQ(stat->rss_pages, 353u);
  EXPECT_EQ(stat->start_stack, 140729983963344u);
  ASSERT_TRUE(stat->exit_code);
  EXPECT_EQ(*stat->exit_code, 0);
}

TEST(ProcStatTest, RecordedPython) {
  std::optional<ProcStat> stat = parse_proc_stat(fixture("python_stat.txt"));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "python3");
  EXPECT_EQ(stat->utime, 1u);
  EXPECT_EQ(stat->stime, 1u);
  EXPECT_EQ(stat->starttime, 150958u);
  EXPECT_EQ(stat->rss_pages, 2059u);
  EXPECT_EQ(stat->start_stack, 140735927790672u);
}

TEST(ProcStatTest, CommWithSpacesAndParentheses) {
  std::optional<ProcStat> stat = parse_proc_stat(fixture("comm_parens_stat.txt"));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->pid, 9960);
  EXPECT_EQ(stat->comm, "(python) (x)");
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->ppid, 9907);
  EXPECT_EQ(stat->utime, 0u);
  EXPECT_EQ(stat->stime, 3u);
  EXPECT_EQ(stat->starttime, 150989u);
}

TEST(ProcStatTest, CommThatLooksLikeFields) {
  std::optional<ProcStat> stat = parse_proc_stat(
      "77 (a) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18) S 5 6 7 0 -1 0 0 0 "
      "0 0 9 8 0 0 20 0 2 0 555 1000 44\n");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "a) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18");
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->ppid, 5);
  EXPECT_EQ(stat->utime, 9u);
  EXPECT_EQ(stat->stime, 8u);
  EXPECT_EQ(stat->num_threads, 2);
  EXPECT_EQ(stat->starttime, 555u);
  EXPECT_EQ(stat->rss_pages, 44u);
  EXPECT_FALSE(stat->exit_code);
}

TEST(ProcStatTest, ZombieExitCodeIsAWaitStatus) {
  std::optional<ProcStat> stat = parse_proc_stat(fixture("zombie_exit7_stat.txt"));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->state, 'Z');
  EXPECT_EQ(stat->rss_pages, 0u);
  EXPECT_EQ(stat->start_stack, 0u);  // a zombie's memory is gone
  ASSERT_TRUE(stat->exit_code);
  EXPECT_TRUE(WIFEXITED(*stat->exit_code));
  EXPECT_EQ(WEXITSTATUS(*stat->exit_code), 7);

  stat = parse_proc_stat(fixture("zombie_sigkill_stat.txt"));
  ASSERT_TRUE(stat);
  ASSERT_TRUE(stat->exit_code);
  EXPECT_TRUE(WIFSIGNALED(*stat->exit_code));
  EXPECT_EQ(WTERMSIG(*stat->exit_code), SIGKILL);
}

TEST(ProcStatTest, KernelBefore35HasNoExitCode) {
  std::optional<ProcStat> stat = parse_proc_stat(fixture("stat_pre_3_5.txt"));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "python");
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->utime, 15230u);
  EXPECT_EQ(stat->stime, 2210u);
  EXPECT_EQ(stat->num_threads, 12);
  EXPECT_EQ(stat->starttime, 987654u);
  EXPECT_EQ(stat->rss_pages, 182731u);
  EXPECT_FALSE(stat->exit_code);
}

TEST(ProcStatTest, DamagedTextIsRejected) {
  EXPECT_FALSE(parse_proc_stat(fixture("stat_truncated.txt")));
  EXPECT_FALSE(parse_proc_stat(fixture("stat_malformed.txt")));
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("12"));
  EXPECT_FALSE(parse_proc_stat("12 (abc"));
  EXPECT_FALSE(parse_proc_stat("12 (abc)"));
  EXPECT_FALSE(parse_proc_stat("12 (abc) S"));
  EXPECT_FALSE(parse_proc_stat("(abc) S 1 2 3"));
  EXPECT_FALSE(
      parse_proc_stat("99999999999999999999 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
                      "1 1 1"));
  // Whole except the number of threads, which no kernel prints negative.
  EXPECT_FALSE(parse_proc_stat("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 -1 0 1 1 1"));
  EXPECT_TRUE(parse_proc_stat("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1"));
}

TEST(ProcStatusTest, Recorded) {
  ProcStatus status = parse_proc_status(fixture("python_status.txt"));
  EXPECT_EQ(status.vm_rss, 8416ull * 1024);
  EXPECT_EQ(status.vm_hwm, 8416ull * 1024);
  EXPECT_EQ(status.rss_anon, 2804ull * 1024);
  EXPECT_EQ(status.rss_file, 5612ull * 1024);
  EXPECT_EQ(status.rss_shmem, 0u);
  EXPECT_EQ(status.vm_swap, 0u);
  EXPECT_EQ(status.threads, 1);
  EXPECT_EQ(status.caught_signals, uint64_t{1} << (SIGINT - 1));  // Python's KeyboardInterrupt
}

TEST(ProcStatusTest, ZombieHasNoMemoryLines) {
  ProcStatus status = parse_proc_status(fixture("zombie_status.txt"));
  EXPECT_FALSE(status.vm_rss);
  EXPECT_FALSE(status.vm_swap);
  EXPECT_FALSE(status.rss_anon);
  EXPECT_EQ(status.threads, 1);
}

TEST(ProcStatusTest, DamagedLinesStayEmpty) {
  ProcStatus status = parse_proc_status(
      "VmRSS:\t   12 MB\nVmSwap:\tlots kB\nThreads:\t-3\nVmHWM:\t 99999999999999999999 kB\n"
      "RssAnon:\t 4 kB\nRssFile:\nSigCgt:\t00000000x0000002\n");
  EXPECT_FALSE(status.vm_rss);
  EXPECT_FALSE(status.vm_swap);
  EXPECT_FALSE(status.threads);
  EXPECT_FALSE(status.vm_hwm);
  EXPECT_EQ(status.rss_anon, 4096u);
  EXPECT_FALSE(status.rss_file);
  EXPECT_FALSE(status.caught_signals);
  ProcStatus empty = parse_proc_status("");
  EXPECT_FALSE(empty.vm_rss);
}

TEST(SmapsRollupTest, Recorded) {
  SmapsRollup rollup = parse_smaps_rollup(fixture("python_smaps_rollup.txt"));
  EXPECT_EQ(rollup.rss, 8416ull * 1024);
  EXPECT_EQ(rollup.pss, 6319ull * 1024);
  EXPECT_EQ(rollup.private_clean, 3260ull * 1024);
  EXPECT_EQ(rollup.private_dirty, 2804ull * 1024);
  EXPECT_EQ(rollup.uss(), (3260ull + 2804ull) * 1024);
  EXPECT_EQ(rollup.swap, 0u);
  EXPECT_EQ(rollup.swap_pss, 0u);
}

TEST(SmapsRollupTest, Kernel414Layout) {
  SmapsRollup rollup = parse_smaps_rollup(fixture("smaps_rollup_4_14.txt"));
  EXPECT_EQ(rollup.pss, 870100ull * 1024);
  EXPECT_EQ(rollup.uss(), (2048ull + 868264ull) * 1024);
  EXPECT_EQ(rollup.swap, 1024ull * 1024);
  EXPECT_EQ(rollup.swap_pss, 1024ull * 1024);
}

TEST(SmapsRollupTest, MissingLinesLeaveUssEmpty) {
  SmapsRollup rollup = parse_smaps_rollup(fixture("smaps_rollup_no_private_clean.txt"));
  EXPECT_EQ(rollup.pss, 900ull * 1024);
  EXPECT_FALSE(rollup.private_clean);
  EXPECT_FALSE(rollup.uss());
  EXPECT_FALSE(rollup.swap_pss);
  // A zombie's smaps_rollup is empty.
  EXPECT_FALSE(parse_smaps_rollup("").pss);
}

TEST(ProcLimitsTest, Recorded) {
  ProcLimits limits = parse_proc_limits(fixture("sleep_limits.txt"));
  EXPECT_EQ(limits.open_files_soft, 20000u);
  EXPECT_EQ(limits.open_files_hard, 20000u);
}

TEST(ProcLimitsTest, Unlimited) {
  ProcLimits limits = parse_proc_limits(fixture("limits_unlimited.txt"));
  EXPECT_EQ(limits.open_files_soft, kUnlimited);
  EXPECT_EQ(limits.open_files_hard, kUnlimited);
}

TEST(ProcLimitsTest, Damaged) {
  EXPECT_FALSE(parse_proc_limits("").open_files_soft);
  EXPECT_FALSE(parse_proc_limits("Max open files").open_files_soft);
  ProcLimits half = parse_proc_limits("Max open files            1024");
  EXPECT_EQ(half.open_files_soft, 1024u);
  EXPECT_FALSE(half.open_files_hard);
  EXPECT_FALSE(parse_proc_limits("Max open files   many   1024  files").open_files_soft);
}

TEST(MemInfoTest, Recorded) {
  MemInfo info = parse_meminfo(fixture("meminfo.txt"));
  EXPECT_EQ(info.mem_total, 24683620ull * 1024);
  EXPECT_EQ(info.mem_available, 23815352ull * 1024);
  EXPECT_EQ(info.swap_total, 0u);
  EXPECT_EQ(info.swap_free, 0u);
}

TEST(MemInfoTest, KernelWithoutMemAvailable) {
  MemInfo info = parse_meminfo(fixture("meminfo_old.txt"));
  EXPECT_EQ(info.mem_total, 8061340ull * 1024);
  EXPECT_FALSE(info.mem_available);
  EXPECT_EQ(info.swap_total, 2097148ull * 1024);
  EXPECT_EQ(info.swap_free, 2097148ull * 1024);
}

// Recorded from Python waiting in input() and at a pdb prompt, with a pipe and a terminal as its
// standard input, and from threads doing other things.
TEST(ThreadSyscallTest, WaitsOnStdin) {
  auto waits = [](std::string_view text) {
    std::optional<ThreadSyscall> call = parse_thread_syscall(text);
    return call && call->waits_on_stdin();
  };
  // read(0, buf, 8192): input() or pdb on a pipe.
  EXPECT_TRUE(waits("0 0x0 0x3da425d0 0x2000 0x1 0x0 0x0 0x7ffded18f348 0x7fd3641dd2ad\n"));
  // pselect6(1, ...): readline on a terminal, fd 0 alone.
  EXPECT_TRUE(waits("270 0x1 0x7ffd7d5e78e0 0x0 0x0 0x0 0x0 0x7ffd7d5e7850 0x7fe500b13954\n"));
  // read(7, ...), pselect6 on 8 descriptors, poll, futex, a running thread, none.
  EXPECT_FALSE(waits("0 0x7 0x3da425d0 0x2000 0x1 0x0 0x0 0x7ffded18f348 0x7fd3641dd2ad\n"));
  EXPECT_FALSE(waits("270 0x8 0x7ffd7d5e78e0 0x0 0x0 0x0 0x0 0x7ffd7d5e7850 0x7fe500b13954\n"));
  EXPECT_FALSE(waits("7 0x7fde14ffede0 0x3 0xffffffff 0x8 0x3 0x19 0x7ffd 0x7f50\n"));
  EXPECT_FALSE(waits("202 0x26eef6c8 0x189 0x0 0x0 0x0 0xffffffff 0x7ffd 0x7f50\n"));
  EXPECT_FALSE(waits("running\n"));
  EXPECT_FALSE(waits("-1 0x7ffd7d5e7850 0x7fe500b13954\n"));
  EXPECT_EQ(parse_thread_syscall("running")->number, -1);
  EXPECT_FALSE(parse_thread_syscall(""));
  EXPECT_FALSE(parse_thread_syscall("0 zz"));
  EXPECT_FALSE(parse_thread_syscall("0"));
}

TEST(ThreadSyscallTest, CallsASignalCutsShort) {
  auto cut = [](std::string_view text) -> std::string {
    std::optional<ThreadSyscall> call = parse_thread_syscall(text);
    const char* name = call ? call->cut_short_by_signal() : nullptr;
    return name != nullptr ? name : "";
  };
  // A sleep between connect attempts, poll with a timeout, a socket's recv.
  EXPECT_EQ(cut("230 0x1 0x0 0x7ffc 0x7ffc 0x0 0x0 0x7ffc 0x7f50\n"), "clock_nanosleep");
  EXPECT_EQ(cut("7 0x7fde14ffede0 0x3 0xffffffff 0x8 0x3 0x19 0x7ffd 0x7f50\n"), "poll");
  EXPECT_EQ(cut("45 0x9 0x7ffc 0x2000 0x0 0x0 0x0 0x7ffd 0x7f50\n"), "recvfrom");
  // futex (glibc's locks and condition variables wait again), read, a running thread, none.
  EXPECT_EQ(cut("202 0x26eef6c8 0x189 0x0 0x0 0x0 0xffffffff 0x7ffd 0x7f50\n"), "");
  EXPECT_EQ(cut("0 0x7 0x3da425d0 0x2000 0x1 0x0 0x0 0x7ffded18f348 0x7fd3641dd2ad\n"), "");
  EXPECT_EQ(cut("running\n"), "");
  EXPECT_EQ(cut("-1 0x7ffd7d5e7850 0x7fe500b13954\n"), "");
}

}  // namespace
}  // namespace traindoc::supervisor
