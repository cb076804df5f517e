// The log tap's line filter: one pass over the line finds exactly what a search per anchor finds.
#include "supervisor/log_anchors.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace traindoc::supervisor {
namespace {

TEST(LogAnchors, EachAnchorAnywhereInALine) {
  for (std::string_view anchor : log_anchors()) {
    std::string a(anchor);
    EXPECT_TRUE(worth_keeping(a)) << a;
    EXPECT_TRUE(worth_keeping("epoch 3 " + a)) << a;
    EXPECT_TRUE(worth_keeping(a + " at step 7")) << a;
    EXPECT_TRUE(worth_keeping(std::string("\0\xff", 2) + a + "\r")) << a;
    EXPECT_FALSE(worth_keeping("epoch 3 " + a.substr(0, a.size() - 1))) << a;
  }
}

TEST(LogAnchors, TrainingLogLines) {
  EXPECT_FALSE(worth_keeping("epoch 1 step 200 loss 0.4312 lr 3.0e-04 12.1 it/s"));
  EXPECT_FALSE(worth_keeping(""));
  EXPECT_FALSE(worth_keeping("r"));
  EXPECT_TRUE(worth_keeping("RuntimeError: CUDA error: device-side assert triggered"));
  EXPECT_TRUE(worth_keeping("  File \"train.py\", line 88, in <module>"));
  EXPECT_TRUE(worth_keeping("node1:311:311 [0] NCCL INFO comm 0x5 rank 0 nranks 2"));
  EXPECT_TRUE(worth_keeping("NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus."));
}

// Random lines drawn from the anchors' own bytes (and a few others), so that partial anchors,
// overlaps and repeats are frequent: the one pass and the searches must agree on every line.
TEST(LogAnchors, AgreesWithASearchPerAnchor) {
  std::string alphabet(" \"():\0\xc3", 7);
  for (std::string_view anchor : log_anchors()) alphabet += anchor;
  std::mt19937 random(7);
  std::uniform_int_distribution<size_t> length(0, 40);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<size_t> which(0, log_anchors().size() - 1);
  int kept = 0;
  for (int n = 0; n < 200000; ++n) {
    std::string line;
    for (size_t i = length(random); i > 0; --i) line += alphabet[pick(random)];
    if (n % 3 == 0) {  // a piece of an anchor, whole or cut
      std::string_view anchor = log_anchors()[which(random)];
      line += anchor.substr(0, std::uniform_int_distribution<size_t>(1, anchor.size())(random));
    }
    ASSERT_EQ(worth_keeping(line), worth_keeping_by_search(line)) << line;
    kept += worth_keeping_by_search(line);
  }
  EXPECT_GT(kept, 5000);  // both answers were well exercised
  EXPECT_LT(kept, 190000);
}

}  // namespace
}  // namespace traindoc::supervisor
