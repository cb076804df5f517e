// Collective records in words: op, element type and reduce op names, tensor shapes, and the
// store's row for a call; a process's end. Supervisor process, main loop thread (the checker and
// the store).
#pragma once

#include <cstdint>
#include <string>

#include "common/layout.h"
#include "store/evidence.h"

namespace traindoc::supervisor {

// "all_reduce", "send", ...; "op 77" for numbers this build does not know.
std::string op_name(uint16_t op);
// "float32", "int64", ...; "" for none.
std::string dtype_name(uint8_t dtype);
// "sum", "max", "premul_sum", ...; "" for none.
std::string redop_name(uint8_t redop);
// The shapes of the recorded tensors: "[20, 10]; [3]" ("" when none); with their types when
// `with_types`, and the device of those not on the CPU: "[20, 10] float32; [3] int64 cuda".
std::string shapes_text(const common::CollectiveCall& call, bool with_types);
// "cpu", "cuda", "other device"; "" when not recorded.
std::string device_name(uint8_t device);
// The types of the recorded tensors, "float32; int64", else the call's own; "" when none.
std::string types_text(const common::CollectiveCall& call);
// The devices of the recorded tensors, "cpu; cuda"; "" when none was recorded.
std::string devices_text(const common::CollectiveCall& call);
// "all_reduce #12 at train.py:40" (no place when unknown).
std::string call_text(const common::CollectiveCall& call);
// "killed by SIGSEGV", "exited 1", "gone" (no status known).
std::string end_text(const store::ProcessRecord& process);
// "12.3 s"
std::string seconds_text(int64_t ns);
// "train.py:42" (the file as recorded), "" when unknown.
std::string site_text(const common::CollectiveCall& call);

// `raised`: its return was an exception (it gave up waiting).
store::CollectiveCall to_store(const common::CollectiveCall& call, int pid, uint64_t start_ticks,
                               int64_t end_ns, bool raised);

}  // namespace traindoc::supervisor
