// Collective records in words. Supervisor process, main loop thread.
// The names follow torch.distributed's function names; layout.h's numbering is the file format.
#include "supervisor/collective_text.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "store/collective_words.h"

namespace traindoc::supervisor {

std::string op_name(uint16_t op) {
  using common::CollectiveOp;
  switch (static_cast<CollectiveOp>(op)) {
    case CollectiveOp::kNone:
      return "none";
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kReduce:
      return "reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kGather:
      return "gather";
    case CollectiveOp::kScatter:
      return "scatter";
    case CollectiveOp::kBarrier:
      return "barrier";
    case CollectiveOp::kMonitoredBarrier:
      return "monitored_barrier";
    case CollectiveOp::kSend:
      return "send";
    case CollectiveOp::kRecv:
      return "recv";
    case CollectiveOp::kAllGatherObject:
      return "all_gather_object";
    case CollectiveOp::kBroadcastObject:
      return "broadcast_object_list";
    case CollectiveOp::kGatherObject:
      return "gather_object";
    case CollectiveOp::kScatterObject:
      return "scatter_object_list";
    case CollectiveOp::kAllReduceCoalesced:
      return "all_reduce_coalesced";
    case CollectiveOp::kBroadcastCoalesced:
      return std::string(store::kDdpBroadcastOp);
    case CollectiveOp::kDdpGradientAllReduce:
      return std::string(store::kDdpGradientOp);
    case CollectiveOp::kGroupStart:
      return "group_start";
    case CollectiveOp::kGroupEnd:
      return "group_end";
    case CollectiveOp::kCommInit:
      return "comm_init";
    case CollectiveOp::kCommSplit:
      return "comm_split";
    case CollectiveOp::kCommDestroy:
      return "comm_destroy";
    case CollectiveOp::kCommAbort:
      return "comm_abort";
    case CollectiveOp::kCommShrink:
      return "comm_shrink";
  }
  return "op " + std::to_string(op);
}

std::string dtype_name(uint8_t dtype) {
  static constexpr const char* kNames[] = {"int8",    "uint8",    "int32",       "uint32",
                                           "int64",   "uint64",   "float16",     "float32",
                                           "float64", "bfloat16", "float8_e4m3", "float8_e5m2"};
  if (dtype < std::size(kNames)) return kNames[dtype];
  switch (dtype) {
    case 20:
      return "bool";
    case 21:
      return "complex64";
    case 22:
      return "complex128";
    case 23:
      return "int16";
    case 24:
      return "complex32";
    case common::kDtypeUnknown:
      return "";
    default:
      return "dtype " + std::to_string(dtype);
  }
}

std::string redop_name(uint8_t redop) {
  static constexpr const char* kNames[] = {"sum",        "product", "max", "min", "avg",
                                           "premul_sum", "band",    "bor", "bxor"};
  if (redop < std::size(kNames)) return kNames[redop];
  return redop == common::kRedOpNone ? "" : "op " + std::to_string(redop);
}

std::string device_name(uint8_t device) {
  switch (static_cast<common::CollectiveDevice>(device)) {
    case common::CollectiveDevice::kUnknown:
      return "";
    case common::CollectiveDevice::kCpu:
      return "cpu";
    case common::CollectiveDevice::kCuda:
      return "cuda";
    case common::CollectiveDevice::kOther:
      break;
  }
  return "other device";
}

std::string shapes_text(const common::CollectiveCall& call, bool with_types) {
  std::string out;
  uint32_t count = std::min<uint32_t>(call.tensor_count, common::kCollectiveTensors);
  for (uint32_t t = 0; t < count; ++t) {
    if (t > 0) out += "; ";
    out += '[';
    uint32_t dims = std::min<uint32_t>(call.ndims[t], common::kCollectiveDims);
    for (uint32_t d = 0; d < dims; ++d) {
      if (d > 0) out += ", ";
      out += std::to_string(call.dims[t][d]);
    }
    if (call.ndims[t] > common::kCollectiveDims) out += ", ...";
    out += ']';
    if (!with_types) continue;
    out += ' ' + dtype_name(call.tensor_dtypes[t]);
    if (call.tensor_devices[t] > static_cast<uint8_t>(common::CollectiveDevice::kCpu)) {
      out += ' ' + device_name(call.tensor_devices[t]);
    }
  }
  if ((call.flags & common::kCollectiveTruncated) != 0 && count == common::kCollectiveTensors) {
    out += "; ...";
  }
  return out;
}

// One name per recorded tensor, "float32; int64"; "" when no tensor has one.
namespace {

std::string names_text(const common::CollectiveCall& call,
                       const uint8_t (&values)[common::kCollectiveTensors],
                       std::string (*name)(uint8_t)) {
  std::string out;
  bool named = false;
  for (uint32_t t = 0; t < std::min<uint32_t>(call.tensor_count, common::kCollectiveTensors); ++t) {
    if (t > 0) out += "; ";
    out += name(values[t]);
    named |= !name(values[t]).empty();
  }
  return named ? out : "";
}

}  // namespace

std::string types_text(const common::CollectiveCall& call) {
  std::string out = names_text(call, call.tensor_dtypes, dtype_name);
  return out.empty() ? dtype_name(call.dtype) : out;
}

std::string devices_text(const common::CollectiveCall& call) {
  return names_text(call, call.tensor_devices, device_name);
}

std::string call_text(const common::CollectiveCall& call) {
  std::string out = op_name(call.op) + " #" + std::to_string(call.number);
  std::string site = site_text(call);
  if (!site.empty()) out += " at " + site;
  return out;
}

std::string end_text(const store::ProcessRecord& process) {
  return store::end_words({process.exit_code, process.exit_signal});
}

std::string seconds_text(int64_t ns) {
  char text[32];
  snprintf(text, sizeof(text), "%.1f s", static_cast<double>(ns) / 1e9);
  return text;
}

std::string site_text(const common::CollectiveCall& call) {
  size_t length = strnlen(call.site, sizeof(call.site));
  if (length == 0) return "";
  std::string out(call.site, length);
  if (call.line > 0) out += ':' + std::to_string(call.line);
  return out;
}

store::CollectiveCall to_store(const common::CollectiveCall& call, int pid, uint64_t start_ticks,
                               int64_t end_ns, bool raised) {
  store::CollectiveCall out;
  out.t_ns = call.time_ns;
  out.end_ns = end_ns;
  out.pid = pid;
  out.start_ticks = start_ticks;
  out.group = call.group;
  out.number = call.number;
  out.group_rank = call.group_rank;
  out.group_size = call.group_size;
  out.source =
      call.source == static_cast<uint8_t>(common::CollectiveSource::kNccl) ? "nccl" : "python";
  out.op = op_name(call.op);
  out.dtype = dtype_name(call.dtype);
  out.count = call.count;
  out.tensors = shapes_text(call, true);
  out.redop = redop_name(call.redop);
  out.peer = call.peer;
  out.site = site_text(call);
  out.step = call.step;
  out.async = (call.flags & (common::kCollectiveAsync | common::kCollectiveQueued)) != 0;
  out.raised = raised;
  return out;
}

}  // namespace traindoc::supervisor
