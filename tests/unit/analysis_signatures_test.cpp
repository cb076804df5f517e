// Tests of the signature catalog as a whole: ids, kinds, examples, docs; size, prefix and
// exception-name parsing; long hostile lines and the cost of tens of thousands of lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pthread.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/signatures.h"
#include "sanitizers.h"
#include "signature_test_util.h"

namespace traindoc::analysis {
namespace {

using signature_test::expect_fields;
using signature_test::expect_no_field;
using signature_test::Fields;
using signature_test::ids;
using signature_test::match;
using ::testing::Contains;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

// ---- catalog ---------------------------------------------------------------------------------

TEST(SignatureCatalog, IdsAreUnique) {
  std::set<std::string_view> seen;
  for (const SignatureInfo& info : catalog()) {
    EXPECT_TRUE(seen.insert(info.id).second) << "duplicate id " << info.id;
    EXPECT_FALSE(info.framework.empty()) << info.id;
    EXPECT_FALSE(info.description.empty()) << info.id;
    EXPECT_FALSE(info.source.empty()) << info.id;
    EXPECT_EQ(find_signature(info.id), &info);
  }
  EXPECT_GE(catalog().size(), 80u);
  EXPECT_EQ(find_signature("no.such-id"), nullptr);
}

TEST(SignatureCatalog, EveryExampleMatchesItsEntry) {
  for (const SignatureInfo& info : catalog()) {
    ASSERT_FALSE(info.example.empty()) << info.id;
    std::vector<SignatureMatch> matches;
    if (info.frame_file.empty()) {
      matches = match_line(info.example);
    } else {
      std::string file =
          "/usr/lib/python3/dist-packages/torch/distributed/" + std::string(info.frame_file);
      std::vector<FrameHint> frames = {{"/usr/bin/torchrun", "<module>"},
                                       {file, info.frame_function}};
      matches = match_line(info.example, frames);
      EXPECT_THAT(ids(info.example), Not(Contains(std::string(info.id))))
          << info.id << " needs frames";
    }
    auto it = std::find_if(matches.begin(), matches.end(),
                           [&](const SignatureMatch& m) { return m.id == info.id; });
    ASSERT_NE(it, matches.end()) << info.id << " does not match its example: " << info.example;
    for (const auto& [key, value] : it->fields) {
      if (key == "prefix" || key == "prefix_rank" || key == "exception_type") continue;
      EXPECT_THAT(info.fields, Contains(key)) << info.id << " extracts undeclared " << key;
    }
  }
}

std::string docs_text() {
  std::ifstream in(std::string(TRAINDOC_FIXTURES) + "/../../docs/signatures.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SignatureCatalog, DocsListEveryId) {
  std::string docs = docs_text();
  ASSERT_FALSE(docs.empty()) << "docs/signatures.md not found";
  for (const SignatureInfo& info : catalog()) {
    EXPECT_NE(docs.find("`" + std::string(info.id) + "`"), std::string::npos)
        << info.id << " is not in docs/signatures.md";
  }
}

// Prints the catalog table of docs/signatures.md:
//   unit_analysis --gtest_also_run_disabled_tests --gtest_filter='*PrintDocsTable'
TEST(SignatureCatalog, DISABLED_PrintDocsTable) {
  auto cell = [](std::string_view s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::cout << "| id | framework | kind | failure | matches | fields | example | source |\n"
            << "|---|---|---|---|---|---|---|---|\n";
  for (const SignatureInfo& info : catalog()) {
    std::string fields;
    for (const std::string& f : info.fields) fields += (fields.empty() ? "" : ", ") + f;
    std::string matches(info.description);
    if (!info.frame_file.empty()) {
      matches +=
          " [frame: " + std::string(info.frame_file) + " " + std::string(info.frame_function) + "]";
    }
    std::cout << "| `" << info.id << "` | " << info.framework << " | "
              << (info.kind ? std::string(to_string(*info.kind)) : "—") << " | "
              << (info.failure ? "yes" : "no") << " | " << cell(matches) << " | " << fields
              << " | `` " << cell(info.example) << " `` | " << cell(info.source) << " |\n";
  }
}

// ---- helpers -----------------------------------------------------------------------------------

TEST(SignatureSize, PyTorchTensorFlowAndXlaSizes) {
  EXPECT_EQ(parse_size("2.00 GiB"), 2147483648u);
  EXPECT_EQ(parse_size("512.00 MiB"), 536870912u);
  EXPECT_EQ(parse_size("20.00 KiB"), 20480u);
  EXPECT_EQ(parse_size("1023 bytes"), 1023u);
  EXPECT_EQ(parse_size("1024.00 KiB"), 1048576u);  // format_size's <= boundary
  EXPECT_EQ(parse_size("15.78 GiB"), 16943645983u);
  EXPECT_EQ(parse_size("1.2 GiB"), 1288490189u);  // rounded to the nearest byte
  EXPECT_EQ(parse_size("1.25GiB"), 1342177280u);
  EXPECT_EQ(parse_size("880.28MiB"), 923040481u);
  EXPECT_EQ(parse_size("10.09G"), 10834055004u);
  EXPECT_EQ(parse_size("172.19M"), 180554301u);
  EXPECT_EQ(parse_size("256B"), 256u);
  EXPECT_EQ(parse_size("800000000.00 GiB"), 858993459200000000u);
  EXPECT_EQ(parse_size("99999999999999999999 EiB"), UINT64_MAX);
  EXPECT_EQ(parse_size(""), std::nullopt);
  EXPECT_EQ(parse_size("GiB"), std::nullopt);
  EXPECT_EQ(parse_size("2.00 GB/s"), std::nullopt);
  EXPECT_EQ(parse_size("2.00 parsecs"), std::nullopt);
  EXPECT_EQ(parse_size("1."), std::nullopt);
}

TEST(SignaturePrefix, TorchrunAndMpirunPrefixes) {
  LinePrefix p = strip_launcher_prefix("[default0]:Traceback (most recent call last):");
  EXPECT_EQ(p.text, "Traceback (most recent call last):");
  EXPECT_EQ(p.prefix, "[default0]:");
  EXPECT_EQ(p.rank, 0);

  p = strip_launcher_prefix("[rank1]: Traceback (most recent call last):");
  EXPECT_EQ(p.text, "Traceback (most recent call last):");
  EXPECT_EQ(p.prefix, "[rank1]: ");
  EXPECT_EQ(p.rank, 1);

  p = strip_launcher_prefix("[rank1]:   File \"/w/train.py\", line 3, in <module>");
  EXPECT_EQ(p.text, "  File \"/w/train.py\", line 3, in <module>");

  p = strip_launcher_prefix("[12]:RuntimeError: x");
  EXPECT_EQ(p.text, "RuntimeError: x");
  EXPECT_EQ(p.rank, 12);

  p = strip_launcher_prefix("[1,3]<stderr>:RuntimeError: x");
  EXPECT_EQ(p.text, "RuntimeError: x");
  EXPECT_EQ(p.rank, 3);

  // torchrun --tee around PyTorch's own "[rankN]:" C++ log prefix: the global rank wins.
  p = strip_launcher_prefix("[default1]:[rank3]:[W709 17:05:38 ProcessGroupNCCL.cpp:1] x");
  EXPECT_EQ(p.text, "[W709 17:05:38 ProcessGroupNCCL.cpp:1] x");
  EXPECT_EQ(p.prefix, "[default1]:[rank3]:");
  EXPECT_EQ(p.rank, 3);

  for (std::string_view line :
       {"[W ProcessGroupNCCL.cpp:1569] Rank 1 using GPU 0", "[E709 17:05:38.1 x.cpp:1] y",
        "[12345.678901] Out of memory: Killed process 1", "[1,2] not tagged", "[]:x", "plain"}) {
    p = strip_launcher_prefix(line);
    EXPECT_EQ(p.text, line);
    EXPECT_EQ(p.prefix, "");
    EXPECT_EQ(p.rank, std::nullopt);
  }
}

TEST(SignatureExceptionLine, PythonExceptionNames) {
  auto e = parse_exception_line("torch.cuda.OutOfMemoryError: CUDA out of memory.");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "torch.cuda.OutOfMemoryError");
  EXPECT_EQ(e->message, "CUDA out of memory.");
  e = parse_exception_line("KeyboardInterrupt");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "");
  EXPECT_FALSE(parse_exception_line("ERROR:torch.distributed.elastic:failed"));
  EXPECT_FALSE(parse_exception_line("epoch 1: loss 0.5"));
  EXPECT_FALSE(parse_exception_line("http://x"));
  EXPECT_FALSE(parse_exception_line("socket.timeout: timed out"));
  e = parse_exception_line(
      "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.45 GiB for an array with "
      "shape (100000, 10000) and data type float64");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "numpy.core._exceptions._ArrayMemoryError");
  EXPECT_FALSE(parse_exception_line("_lower_error: x"));
  e = parse_exception_line("socket.timeout: timed out", /*strict=*/false);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "socket.timeout");
}

// Everyday shape errors, as PyTorch 1.13 prints them: fields for a fix that names the sizes.
TEST(SignatureShapes, CollateAndLinear) {
  SignatureMatch m = match(
      "RuntimeError: stack expects each tensor to be equal size, but got [3, 32, 32] at entry 0 "
      "and [3, 33, 32] at entry 1",
      "torch.collate-unequal-sizes");
  expect_fields(
      m, {{"shape", "3,32,32"}, {"entry", "0"}, {"other_shape", "3,33,32"}, {"other_entry", "1"}});
  m = match("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x30752 and 7200x10)",
            "torch.linear-shape-mismatch");
  expect_fields(m, {{"rows", "4"},
                    {"input_features", "30752"},
                    {"layer_features", "7200"},
                    {"out_features", "10"}});
}

TEST(SignatureMatchLine, OrdinaryLinesMatchNothing) {
  for (std::string_view line :
       {"", "epoch 1 step 200 loss 0.4312 lr 0.001", "INFO: validation error 0.12",
        "Traceback (most recent call last):", "  File \"train.py\", line 3, in <module>",
        "[default0]:epoch 3", "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "Using the memory of 4 GPUs", "RuntimeError: something else went wrong"}) {
    EXPECT_THAT(ids(line), UnorderedElementsAre()) << line;
  }
}

// ---- robustness and cost
// -------------------------------------------------------------------------

// Lines of up to 4 KiB (the log tap's cut) full of what the patterns look for, on a small stack:
// the regex engine must neither recurse too deep nor take long.
TEST(SignatureRobustness, LongHostileLinesOnASmallStack) {
  std::vector<std::string> lines;
  const std::string pad(4000, 'a');
  for (const SignatureInfo& info : catalog()) {
    lines.push_back(std::string(info.example) + pad);
    lines.push_back(pad + std::string(info.example));
    lines.push_back(std::string(info.example).substr(0, info.example.size() / 2) + pad);
  }
  lines.push_back("Timeout waiting for key: " + pad);
  lines.push_back("CUDA out of memory. Tried to allocate " + std::string(4000, '1'));
  lines.push_back("Mismatched " + std::string(4000, ' ') + ": One rank");
  lines.push_back("Assertion `" + std::string(4000, '(') + "` failed");
  lines.push_back(std::string(1000, '[') + "rank1]:" + pad);
  lines.push_back("Parameters which did not receive grad for rank 0: " + std::string(4000, ','));

  size_t total = 0;
  auto run = [&] {
    for (const std::string& l : lines) total += match_line(l).size();
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // 1 MiB; in a sanitizer build the same recursion has frames several times larger.
  pthread_attr_setstacksize(&attr, (test::kSanitized ? 4 : 1) << 20);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    (*static_cast<decltype(run)*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, body, &run), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_GT(total, 0u);
}

TEST(SignatureRobustness, TensOfThousandsOfLines) {
  std::vector<std::string> lines;
  for (int i = 0; i < 50000; ++i) {
    switch (i % 5) {
      case 0:
        lines.push_back("epoch " + std::to_string(i) + " step 12 loss 0.4312 lr 0.0001 error 0.1");
        break;
      case 1:
        lines.push_back("[default1]:  File \"/home/user/train.py\", line 77, in <module>");
        break;
      case 2:
        lines.push_back("RuntimeError: DataLoader worker (pid(s) 16088) exited unexpectedly");
        break;
      case 3:
        lines.push_back("NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7");
        break;
      default:
        lines.push_back(
            "[rank0]:[E709 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 milliseconds "
            "before timing out.");
    }
  }
  auto start = std::chrono::steady_clock::now();
  size_t total = 0;
  for (const std::string& l : lines) total += match_line(l).size();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "50000 lines in " << seconds << " s (" << total << " matches)\n";
  EXPECT_EQ(total, 20000u);
  if (!test::kSanitized) {  // a sanitizer build would time the sanitizer
    EXPECT_LT(seconds, 10.0);
  }
}

}  // namespace
}  // namespace traindoc::analysis
