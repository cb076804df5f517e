// The caching allocator's state at an out-of-memory error, read from the file the Python hook
// wrote: outside input, whatever a job process left there.
#include "supervisor/allocator_text.h"

#include <gtest/gtest.h>

#include <string>

namespace traindoc::supervisor {
namespace {

TEST(AllocatorText, NumbersAndSitesByLine) {
  store::AllocatorState s;
  allocator_text(
      "device\t1\nrequested\t2048\nallocated\t100\nreserved\t300\nlargest_free\t50\nhistory\t1\n"
      "site\t10\t1\t10\t10\t7\tsmall\t/a.py\nsite\t90\t3\t40\t20\t41\tforward\t/b.py\n",
      s);
  EXPECT_EQ(s.device, 1);
  EXPECT_EQ(s.requested, 2048u);
  EXPECT_EQ(s.allocated, 100u);
  EXPECT_EQ(s.reserved, 300u);
  EXPECT_EQ(s.largest_free, 50u);
  EXPECT_EQ(s.inactive, std::nullopt);
  EXPECT_TRUE(s.history);
  ASSERT_EQ(s.sites.size(), 2u);  // largest first
  EXPECT_EQ(s.sites[0], (store::AllocationSite{"/b.py", 41, "forward", 90, 3, 40, 20}));
  EXPECT_EQ(s.sites[1].file, "/a.py");
}

TEST(AllocatorText, LinesOfAnotherFormAreSkipped) {
  store::AllocatorState s;
  allocator_text(
      "requested\t-1\nallocated\t12x\nreserved\t99999999999999999999\nooms\t\ninactive 5\n"
      "device\t99999\nsomething\t1\nsite\t1\t1\t1\t1\t1\tf\t\nsite\tx\t1\t1\t1\t1\tf\t/a.py\n"
      "site\t1\t1\nsegments\t4\n",
      s);
  EXPECT_EQ(s, (store::AllocatorState{.segments = 4}));
  allocator_text("", s);
  allocator_text(std::string(1000, '\0'), s);
  EXPECT_EQ(s, (store::AllocatorState{.segments = 4}));
}

TEST(AllocatorText, AtMostSoManySitesAndNamesSoLong) {
  std::string text;
  for (int i = 0; i < 100; ++i) {
    text += "site\t" + std::to_string(i) + "\t1\t1\t1\t1\t" + std::string(2000, 'f') + "\t/a.py\n";
  }
  store::AllocatorState s;
  allocator_text(text, s);
  ASSERT_EQ(s.sites.size(), kAllocatorSitesMax);
  EXPECT_EQ(s.sites[0].bytes, 9u);  // the first ten lines, largest first
  EXPECT_EQ(s.sites[0].function.size(), kAllocatorNameMax);
}

}  // namespace
}  // namespace traindoc::supervisor
