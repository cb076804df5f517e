// Tests of the stack dump reader: a dump as the agent writes it, one another thread took, and the
// texts a job could leave in its place (cut short, too long, too many frames, no dump at all).
#include "supervisor/stack_dump_text.h"

#include <gtest/gtest.h>

#include <string>

namespace traindoc::supervisor {
namespace {

constexpr const char* kPython =
    "python:\n"
    "Thread 0x00007f00000000aa (most recent call first):\n"
    "  File \"/job/loader.py\", line 9 in run\n"
    "\n"
    "Current thread 0x00007f00000000bb (most recent call first):\n"
    "  File \"/job/train.py\", line 40 in <module>\n";

std::string dump(int tid, const std::string& main_thread, const std::string& native) {
  return "thread: " + std::to_string(tid) + "\nmain thread: " + main_thread + "\n" + kPython +
         "native:\n" + native + "end\n";
}

TEST(StackDumpText, TheMainThreadsDumpHasItsPythonStacksAndNativeFrames) {
  auto parsed = parse_stack_dump(dump(42, "0x7f00000000bb", "0x401000\n0x7f0000001234\n"), 42);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->python, kPython);
  EXPECT_FALSE(parsed->other_thread);
  EXPECT_EQ(parsed->native, (std::vector<uint64_t>{0x401000, 0x7f0000001234}));
}

TEST(StackDumpText, AnotherThreadsDumpMarksTheMainThreadCurrent) {
  auto parsed = parse_stack_dump(dump(43, "0x7f00000000aa", "0x401000\n"), 42);
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->other_thread);
  EXPECT_TRUE(parsed->native.empty());
  EXPECT_EQ(parsed->python,
            "python:\n"
            "Current thread 0x00007f00000000aa (most recent call first):\n"
            "  File \"/job/loader.py\", line 9 in run\n"
            "\n"
            "Thread 0x00007f00000000bb (most recent call first):\n"
            "  File \"/job/train.py\", line 40 in <module>\n");
}

TEST(StackDumpText, ADumpStillBeingWrittenIsNotRead) {
  std::string whole = dump(42, "0x1", "0x401000\n");
  EXPECT_FALSE(parse_stack_dump(whole.substr(0, whole.size() - 4), 42));
  EXPECT_FALSE(parse_stack_dump("", 42));
  EXPECT_FALSE(parse_stack_dump("\nend\n", 42));
  EXPECT_FALSE(parse_stack_dump("native:\npython:\n\nend\n", 42));  // no Python part before
}

TEST(StackDumpText, ALargerFileThanAnyDumpIsNotRead) {
  std::string padding(kStackDumpMaxBytes, 'x');
  EXPECT_FALSE(parse_stack_dump(dump(42, "0x1", padding + "\n"), 42));
}

TEST(StackDumpText, NativeFramesAreTakenUpToTheirLimit) {
  std::string native;
  for (size_t i = 0; i < kStackDumpMaxFrames + 10; ++i) native += "0x10\nnot a number\n";
  auto parsed = parse_stack_dump(dump(42, "0x1", native), 42);
  ASSERT_TRUE(parsed);
  ASSERT_EQ(parsed->native.size(), kStackDumpMaxFrames);
  EXPECT_EQ(parsed->native[0], 0x10u);
  EXPECT_EQ(parsed->native[1], 0u);  // a line that is no address stands for an unknown frame
}

}  // namespace
}  // namespace traindoc::supervisor
