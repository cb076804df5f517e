// The parameters a DDP error names by index, read from the file the Python hook wrote: outside
// input, whatever a job process left there.
#include "supervisor/ddp_parameters_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace traindoc::supervisor {
namespace {

using testing::ElementsAre;
using testing::Pair;

TEST(DdpParametersText, IndexAndNameByLine) {
  EXPECT_THAT(ddp_parameters_text("0\ta.weight\n3\tencoder.0.bias\n"),
              ElementsAre(Pair(0, "a.weight"), Pair(3, "encoder.0.bias")));
  EXPECT_THAT(ddp_parameters_text("7\thead.weight"), ElementsAre(Pair(7, "head.weight")));
}

TEST(DdpParametersText, LinesOfAnotherFormAreSkipped) {
  EXPECT_THAT(ddp_parameters_text("\ta\nx\tb\n1\t\n2 c\n-1\td\n1234567890\te\n\n\n4\tf\n"),
              ElementsAre(Pair(4, "f")));
  EXPECT_TRUE(ddp_parameters_text("").empty());
  EXPECT_TRUE(ddp_parameters_text(std::string(1000, '\0')).empty());
}

TEST(DdpParametersText, AtMostSoManyLines) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += std::to_string(i) + "\tp\n";
  EXPECT_EQ(ddp_parameters_text(text).size(), kDdpParametersMaxLines);
}

}  // namespace
}  // namespace traindoc::supervisor
