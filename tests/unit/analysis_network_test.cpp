// Tests of downloads on a node without the network: urllib's (torch.hub, torchvision's weights),
// requests' (the Hugging Face Hub, wandb) and the Hub's own words when its cache lacks the file.
// The urllib and requests texts are real, from this machine offline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "analysis_job_fixture.h"
#include "signature_test_util.h"

namespace traindoc::analysis {
namespace {

using namespace job;             // NOLINT(google-build-using-namespace): the shared job fixture
using namespace signature_test;  // NOLINT(google-build-using-namespace): ids, match, fields

using testing::HasSubstr;
using testing::Not;

const std::string kRequestsOffline =
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): "
    "Max retries exceeded with url: /bert-base-uncased/resolve/main/config.json (Caused by "
    "NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f96d9cf4f10>: Failed "
    "to establish a new connection: [Errno -2] Name or service not known'))";

TEST(NetworkSignatures, EachLibrarysWordsForAServerOutOfReach) {
  SignatureMatch m =
      match("urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>",
            "python.urlopen-error");
  EXPECT_EQ(m.kind, FindingKind::kNetworkUnreachable);
  expect_fields(m, {{"errno", "-2"}, {"error", "Name or service not known"}});
  m = match("urllib.error.URLError: <urlopen error timed out>", "python.urlopen-error");
  expect_fields(m, {{"error", "timed out"}});
  expect_no_field(m, "errno");
  m = match(kRequestsOffline, "requests.connection-failed");
  expect_fields(m, {{"host", "huggingface.co"},
                    {"port", "443"},
                    {"errno", "-2"},
                    {"error", "Name or service not known"}});
  m = match(
      "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find "
      "it in the cached files and it looks like bert-base-uncased is not the path to a directory "
      "containing a file named config.json.",
      "huggingface.unreachable");
  expect_fields(m, {{"url", "https://huggingface.co"}, {"model", "bert-base-uncased"}});
  EXPECT_THAT(ids("huggingface_hub.errors.LocalEntryNotFoundError: An error happened while "
                  "trying to locate the file on the Hub and we cannot find the requested files in "
                  "the local cache. Please check your connection and try again or make sure your "
                  "Internet connection is on."),
              testing::ElementsAre("huggingface.unreachable"));
}

TEST(NetworkRules, ADownloadThatFailedSaysWhyAndHowToWorkOffline) {
  Finding f = exception_finding(
      "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>");
  EXPECT_EQ(f.kind, FindingKind::kNetworkUnreachable);
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): a download failed: the host name could not be resolved (Name or "
            "service not known)");
  EXPECT_THAT(f.fix, HasSubstr("$TORCH_HOME/hub/checkpoints"));
  EXPECT_THAT(f.fix, HasSubstr("HF_HUB_OFFLINE=1"));
  f = exception_finding(kRequestsOffline);
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): could not reach huggingface.co: the host name could not be "
            "resolved (Name or service not known)");
  f = exception_finding(
      "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.wandb.ai', port=443): "
      "Max retries exceeded with url: /graphql (Caused by NewConnectionError('<urllib3.connection."
      "HTTPSConnection object at 0x7f0>: Failed to establish a new connection: [Errno 101] "
      "Network is unreachable'))");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): could not reach api.wandb.ai: the network is unreachable");
  f = exception_finding(
      "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find "
      "it in the cached files and it looks like bert-base-uncased is not the path to a directory "
      "containing a file named config.json.");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): could not reach the Hugging Face Hub for bert-base-uncased, and "
            "the file is not in the local cache");
  // A certificate the site's proxy presents: trust its CA, not the download's cache.
  f = exception_finding(
      "requests.exceptions.SSLError: HTTPSConnectionPool(host='huggingface.co', port=443): Max "
      "retries exceeded with url: /api/models (Caused by SSLError(SSLCertVerificationError(1, "
      "'[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self signed certificate in "
      "certificate chain (_ssl.c:1006)')))");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): could not reach huggingface.co: its TLS certificate is not "
            "trusted here");
  EXPECT_THAT(f.fix, HasSubstr("REQUESTS_CA_BUNDLE"));
  EXPECT_THAT(f.fix, Not(HasSubstr("HF_HUB_OFFLINE")));
}

// urllib3's cause, under requests' text, says how far the connection got.
TEST(NetworkRules, TheCauseUnderRequestsTextSaysHowFarItGot) {
  const std::string pool =
      "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): "
      "Max retries exceeded with url: /api/models (Caused by ";
  Finding f = exception_finding(
      pool +
      "ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f0>, 'Connection to "
      "huggingface.co timed out. (connect timeout=10)'))");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): could not reach huggingface.co: the connection timed out");
  f = exception_finding(pool +
                        "ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): "
                        "Read timed out. (read timeout=10)\"))");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): could not download from huggingface.co: it did not answer in time");
  f = exception_finding(pool +
                        "ProxyError('Cannot connect to proxy.', NewConnectionError('<urllib3."
                        "connection.HTTPSConnection object at 0x7f0>: Failed to establish a new "
                        "connection: [Errno 111] Connection refused')))");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): could not get through the proxy to huggingface.co");
  EXPECT_THAT(f.fix, HasSubstr("NO_PROXY"));
  f = exception_finding(pool + "ResponseError('too many 429 error responses'))");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): could not download from huggingface.co: too many 429 error "
            "responses");
  EXPECT_THAT(f.fix, HasSubstr("rank 0 first, then a barrier"));
  f = exception_finding(
      "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.wandb.ai', port=443): "
      "Max retries exceeded with url: /graphql (Caused by NewConnectionError('<urllib3.connection."
      "HTTPSConnection object at 0x7f0>: Failed to establish a new connection: [Errno -3] "
      "Temporary failure in name resolution'))");
  EXPECT_THAT(f.fix, HasSubstr("WANDB_MODE=offline"));
  f = exception_finding(
      "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=5000): Max "
      "retries exceeded with url: /api/2.0/mlflow/runs/create (Caused by NewConnectionError('<"
      "urllib3.connection.HTTPConnection object at 0x7f0>: Failed to establish a new connection: "
      "[Errno 111] Connection refused'))");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): could not reach localhost: nothing listens there (Connection "
            "refused)");
  EXPECT_THAT(f.fix, HasSubstr("MLflow"));
  f = exception_finding("urllib.error.URLError: <urlopen error unknown url type: https>");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): a download failed: this Python has no SSL support (unknown url "
            "type: https)");
  EXPECT_THAT(f.fix, HasSubstr("import ssl"));
}

}  // namespace
}  // namespace traindoc::analysis
