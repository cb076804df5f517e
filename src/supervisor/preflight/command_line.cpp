// What a job's command line says, read without running it. Supervisor process, main thread.
#include "supervisor/preflight/command_line.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

namespace traindoc::supervisor {
namespace {

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<int> to_int(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// torchrun takes "--nproc-per-node" and "--nproc_per_node" alike.
std::string normalized(std::string name) {
  if (!name.starts_with("--")) return name;
  std::replace(name.begin() + 2, name.end(), '-', '_');
  return name;
}

// torchrun's options that take no value; every other option does.
bool torchrun_flag(const std::string& name) {
  static constexpr std::string_view kFlags[] = {"--standalone", "-m",         "--module",
                                                "--no_python",  "--run_path", "--use_env"};
  return std::find(std::begin(kFlags), std::end(kFlags), name) != std::end(kFlags);
}

// "host:port", "[::1]:29500" or "host".
void set_endpoint(const std::string& value, store::CommandFacts& facts) {
  size_t colon = value.rfind(':');
  bool bracketed = value.starts_with("[");
  if (colon == std::string::npos || (bracketed && value.rfind(']') > colon)) {
    facts.master_addr = value;
    return;
  }
  std::string host = value.substr(0, colon);
  if (bracketed && host.size() >= 2) host = host.substr(1, host.size() - 2);
  facts.master_addr = host;
  facts.master_port = to_int(std::string_view(value).substr(colon + 1));
}

void apply_torchrun_option(const std::string& name, const std::string& value,
                           store::CommandFacts& facts) {
  if (name == "--nproc_per_node") {
    facts.nproc_per_node = to_int(value);
    facts.nproc_from_gpus = value == "gpu" || value == "auto";
  } else if (name == "--nnodes") {
    size_t colon = value.find(':');
    facts.nnodes = to_int(colon == std::string::npos ? value : value.substr(colon + 1));
  } else if (name == "--node_rank") {
    facts.node_rank = to_int(value);
  } else if (name == "--redirects" || name == "-r") {
    facts.redirects_given = true;
    facts.redirects = to_int(value);  // a per-rank map ("0:3,1:0") gives no number
  } else if (name == "--master_addr") {
    facts.master_addr = value;
  } else if (name == "--master_port") {
    facts.master_port = to_int(value);
  } else if (name == "--rdzv_endpoint") {
    set_endpoint(value, facts);
  }
}

// torchrun's options from argv[i]; returns where its script (or, with `module` set, its module)
// begins.
size_t read_torchrun_options(const std::vector<std::string>& argv, size_t i,
                             store::CommandFacts& facts, bool& module) {
  while (i < argv.size()) {
    const std::string& arg = argv[i];
    if (arg == "--") return i + 1;
    if (!arg.starts_with("-") || arg == "-") return i;
    size_t eq = arg.starts_with("--") ? arg.find('=') : std::string::npos;
    std::string name = normalized(arg.substr(0, eq));
    if (torchrun_flag(name)) {
      facts.standalone |= name == "--standalone";
      module |= name == "-m" || name == "--module";
      ++i;
      continue;
    }
    if (eq != std::string::npos) {
      apply_torchrun_option(name, arg.substr(eq + 1), facts);
      ++i;
    } else if (i + 1 < argv.size()) {
      apply_torchrun_option(name, argv[i + 1], facts);
      i += 2;
    } else {
      return argv.size();
    }
  }
  return i;
}

// Python's own options from argv[i]; returns where its script begins, with `module` set for -m
// and argv.size() for -c.
size_t read_python_options(const std::vector<std::string>& argv, size_t i, std::string& module) {
  while (i < argv.size()) {
    const std::string& arg = argv[i];
    if (!arg.starts_with("-") || arg == "-") return i;
    if (arg == "--") return i + 1;
    if (arg == "-c") return argv.size();
    if (arg == "-m") {
      if (i + 1 < argv.size()) module = argv[i + 1];
      return i + 2;
    }
    i += arg == "-W" || arg == "-X" ? 2 : 1;
  }
  return i;
}

// The DataLoader flags a training script's arguments commonly name.
void read_script_arguments(const std::vector<std::string>& argv, size_t from,
                           store::CommandFacts& facts) {
  static constexpr std::string_view kWorkers[] = {"--workers", "--num-workers", "--num_workers",
                                                  "-j", "--dataloader_num_workers"};
  static constexpr std::string_view kBatch[] = {"--batch-size", "--batch_size", "-b",
                                                "--per_device_train_batch_size"};
  auto named = [](const auto& names, std::string_view name) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
  };
  for (size_t i = from; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    size_t eq = arg.starts_with("--") ? arg.find('=') : std::string::npos;
    std::string name = arg.substr(0, eq);
    std::optional<std::string> value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argv.size()) {
      value = argv[i + 1];
    }
    if (!value) continue;
    if (named(kWorkers, name)) facts.workers = to_int(*value);
    if (named(kBatch, name)) facts.batch_size = to_int(*value);
  }
}

}  // namespace

bool is_python_name(const std::string& name) {
  std::string base = base_name(name);
  if (!base.starts_with("python")) return false;
  return std::all_of(base.begin() + 6, base.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == 'd'; });
}

ParsedCommand parse_command(const std::vector<std::string>& argv) {
  ParsedCommand out;
  store::CommandFacts& facts = out.facts;
  size_t i = 0;
  // `env NAME=VALUE ... COMMAND`: the variables are the command's.
  if (!argv.empty() && base_name(argv[0]) == "env") {
    for (i = 1; i < argv.size() && argv[i].starts_with("-"); ++i) {
    }
    for (; i < argv.size() && argv[i].find('=') != std::string::npos; ++i) {
      size_t eq = argv[i].find('=');
      out.env[argv[i].substr(0, eq)] = argv[i].substr(eq + 1);
    }
  }
  if (i >= argv.size()) return out;
  facts.program = argv[i];
  size_t script_at = i + 1;
  bool module_run = false;
  if (base_name(argv[i]) == "torchrun") {
    facts.launcher = store::Launcher::kTorchrun;
    script_at = read_torchrun_options(argv, i + 1, facts, module_run);
  } else if (is_python_name(argv[i])) {
    out.python = argv[i];
    facts.launcher = store::Launcher::kPython;
    std::string module;
    script_at = read_python_options(argv, i + 1, module);
    if (module == "torch.distributed.run" || module == "torch.distributed.launch") {
      facts.launcher = store::Launcher::kTorchrun;
      script_at = read_torchrun_options(argv, script_at, facts, module_run);
    } else if (!module.empty()) {
      read_script_arguments(argv, script_at, facts);
      return out;
    }
  } else {
    facts.launcher = store::Launcher::kOther;
    read_script_arguments(argv, i + 1, facts);
    return out;
  }
  if (script_at < argv.size() && !module_run) facts.script = argv[script_at];
  read_script_arguments(argv, script_at + 1, facts);
  return out;
}

}  // namespace traindoc::supervisor
