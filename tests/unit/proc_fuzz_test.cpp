// Fuzz-style test of every /proc and cgroup parser: each recorded fixture, mutated at random
// (fixed seed, bounded rounds), fed to every parser. Passing means no crash, hang or sanitizer
// report, plus a few invariants that must hold on any input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "supervisor/proc/cgroup_text.h"
#include "supervisor/proc/environ_text.h"
#include "supervisor/proc/proc_text.h"

namespace traindoc::supervisor {
namespace {

constexpr uint32_t kSeed = 20240611;
constexpr int kRoundsPerFixture = 400;

std::vector<std::string> load_fixtures() {
  std::vector<std::string> texts;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(TRAINDOC_FIXTURES) / "proc")) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());  // a fixed order keeps the seed meaningful
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    texts.push_back(out.str());
  }
  return texts;
}

// Characters that matter to the parsers, more likely than random bytes to reach edge cases.
constexpr char kInteresting[] = {'\0', '\n', ' ',  '\t', ')', '(', ':', '-', '0',
                                 '9',  '/',  '\\', '=',  ',', 'k', 'B', 'x', '\xff'};

std::string mutate(std::string text, std::mt19937& rng) {
  auto pick = [&](size_t bound) {
    return bound == 0 ? size_t{0} : std::uniform_int_distribution<size_t>(0, bound - 1)(rng);
  };
  int steps = 1 + static_cast<int>(pick(4));
  for (int i = 0; i < steps; ++i) {
    switch (pick(7)) {
      case 0:  // overwrite a byte
        if (!text.empty()) text[pick(text.size())] = static_cast<char>(pick(256));
        break;
      case 1:  // insert a character the parsers care about
        text.insert(text.begin() + static_cast<std::ptrdiff_t>(pick(text.size() + 1)),
                    kInteresting[pick(sizeof kInteresting)]);
        break;
      case 2: {  // delete a range
        size_t at = pick(text.size() + 1);
        text.erase(at, pick(32));
        break;
      }
      case 3:  // truncate
        text.resize(pick(text.size() + 1));
        break;
      case 4: {  // duplicate a chunk elsewhere
        size_t from = pick(text.size() + 1);
        std::string chunk = text.substr(from, pick(64));
        text.insert(pick(text.size() + 1), chunk);
        break;
      }
      case 5: {  // a run of digits, to overflow numbers
        std::string digits(1 + pick(30), '9');
        text.insert(pick(text.size() + 1), digits);
        break;
      }
      default:  // swap a byte for an interesting one
        if (!text.empty()) text[pick(text.size())] = kInteresting[pick(sizeof kInteresting)];
        break;
    }
  }
  return text;
}

void feed_all(const std::string& text) {
  if (std::optional<ProcStat> stat = parse_proc_stat(text)) {
    EXPECT_LE(stat->comm.size(), text.size());
    EXPECT_GE(stat->num_threads, 0);
  }
  ProcStatus status = parse_proc_status(text);
  if (status.threads) {
    EXPECT_GE(*status.threads, 0);
  }
  SmapsRollup rollup = parse_smaps_rollup(text);
  (void)rollup.uss();
  (void)parse_proc_limits(text);
  (void)parse_meminfo(text);
  (void)parse_thread_syscall(text);

  EnvironText env(text);
  for (const char* name : {"RANK", "PATH", "A", ""}) {
    if (const char* value = env.find(name)) {
      EXPECT_LE(std::string_view(value).size(), text.size());
    }
  }
  common::RankEnv rank = env.rank_env();
  EXPECT_GE(rank.rank, -1);
  std::vector<std::string> argv = parse_cmdline(text);
  if (!argv.empty()) {
    EXPECT_FALSE(argv.back().empty());
  }
  (void)join_cmdline(argv);

  (void)parse_proc_cgroup(text);
  (void)parse_mountinfo(text);
  for (const CgroupLocation& location : memory_cgroup_candidates(text, text)) {
    EXPECT_TRUE(location.version == 1 || location.version == 2);
  }
  (void)join_cgroup_path("/sys/fs/cgroup", text, text);
  (void)parse_cgroup_counter(text);
  (void)parse_v2_memory_max(text);
  (void)parse_v1_memory_limit(text);
  (void)parse_v2_memory_events(text);
  (void)parse_v1_oom_control(text);
}

TEST(ProcFuzzTest, MutatedFixturesNeverCrashAnyParser) {
  std::vector<std::string> fixtures = load_fixtures();
  ASSERT_GE(fixtures.size(), 30u);
  std::mt19937 rng(kSeed);
  for (const std::string& fixture : fixtures) {
    feed_all(fixture);
    for (int round = 0; round < kRoundsPerFixture; ++round) feed_all(mutate(fixture, rng));
  }
}

TEST(ProcFuzzTest, CgroupPairsAcrossFixtures) {
  // Location finding takes two texts: mix every cgroup file with every mountinfo, mutated.
  std::vector<std::string> fixtures = load_fixtures();
  std::mt19937 rng(kSeed + 1);
  for (int round = 0; round < 3000; ++round) {
    const std::string& a = fixtures[rng() % fixtures.size()];
    const std::string& b = fixtures[rng() % fixtures.size()];
    std::vector<CgroupLocation> found = memory_cgroup_candidates(mutate(a, rng), mutate(b, rng));
    EXPECT_LE(found.size(), 2u);
  }
}

}  // namespace
}  // namespace traindoc::supervisor
