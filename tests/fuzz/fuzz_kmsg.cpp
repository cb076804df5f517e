// libFuzzer target: the kernel log's parsers (/dev/kmsg records and the OOM killer's messages),
// on what any process that may write to the log (printk, /dev/kmsg writers) puts there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "supervisor/proc/kmsg_text.h"

using namespace traindoc::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view message = text;
  if (std::optional<KmsgRecord> record = parse_kmsg_record(text)) {
    if (record->message.size() > text.size() ||
        record->message.find('\n') != std::string_view::npos) {
      abort();
    }
    message = record->message;
  }
  if (std::optional<OomKillContext> context = parse_oom_kill_context(message)) {
    if (context->pid <= 0) abort();
  }
  if (std::optional<OomKilledProcess> killed = parse_oom_killed_process(message)) {
    if (killed->pid <= 0 || killed->comm.size() > message.size()) abort();
  }
  return 0;
}
