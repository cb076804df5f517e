// Secrets in command lines: the values of arguments that name them, URL passwords and query
// values, redacted; everything else untouched, byte for byte.
#include "supervisor/redact.h"

#include <gtest/gtest.h>

namespace traindoc::supervisor {
namespace {

using Args = std::vector<std::string>;

TEST(Redact, ValuesOfArgumentsThatNameSecrets) {
  EXPECT_EQ(redact_arguments({"python", "train.py", "--api-key", "sk-123", "--token=abc",
                              "--password", "hunter2", "--hf_token", "hf_x", "--lr", "0.1"}),
            (Args{"python", "train.py", "--api-key", "***", "--token=***", "--password", "***",
                  "--hf_token", "***", "--lr", "0.1"}));
  // As env(1) takes variables, and any case.
  EXPECT_EQ(redact_arguments({"env", "WANDB_API_KEY=abc", "AWS_SECRET_ACCESS_KEY=x", "python"}),
            (Args{"env", "WANDB_API_KEY=***", "AWS_SECRET_ACCESS_KEY=***", "python"}));
  EXPECT_EQ(redact_arguments({"--Client-Secret", "s", "--credentials=/home/u/c.json"}),
            (Args{"--Client-Secret", "***", "--credentials=***"}));
  // A flag with no value: the next option is not its value.
  EXPECT_EQ(redact_arguments({"--use-token", "--lr", "1"}), (Args{"--use-token", "--lr", "1"}));
}

TEST(Redact, WordsThatOnlyContainASecretsNameStay) {
  Args plain = {"--keyframes",          "8",           "--monkey", "x",
                "--num-keys",           "3",           "key",      "value",
                "/data/token/file.txt", "--tokenizer", "bert",     "--max-tokens=512"};
  EXPECT_EQ(redact_arguments(plain), plain);
}

TEST(Redact, Urls) {
  EXPECT_EQ(redact_arguments({"--url", "https://alice:pa55@example.com:8080/x?token=t1&n=2"}),
            (Args{"--url", "https://alice:***@example.com:8080/x?token=***&n=2"}));
  EXPECT_EQ(redact_arguments({"--init=tcp://10.0.0.1:23456"}),
            (Args{"--init=tcp://10.0.0.1:23456"}));
  EXPECT_EQ(redact_arguments({"s3://bucket/key?X-Amz-Credential=abc&x=1"}),
            (Args{"s3://bucket/key?X-Amz-Credential=***&x=1"}));
}

TEST(Redact, CommandLines) {
  EXPECT_EQ(redact_command_line("python train.py --api-key sk-1 --lr 0.1"),
            "python train.py --api-key *** --lr 0.1");
  EXPECT_EQ(redact_command_line(""), "");
  EXPECT_EQ(redact_command_line("a  b "), "a  b ");
}

}  // namespace
}  // namespace traindoc::supervisor
