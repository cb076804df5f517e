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

// A host as torch reads it: "[::1]" is "::1".
std::string unbracketed(const std::string& host) {
  bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  return bracketed ? host.substr(1, host.size() - 2) : host;
}

// The port `text` of `option`'s `value`, or, where it is none, the option and its value in
// `port_invalid`: torch refuses it.
void set_port(std::string_view option, const std::string& value, std::string_view text,
              store::CommandFacts& facts) {
  facts.master_port = parse_port(text);
  facts.port_invalid = facts.master_port ? "" : std::string(option) + "=" + value;
}

// "host:port", "[::1]:29500", "[::1]" or "host", split as torch's parse_rendezvous_endpoint
// does: at the last ':' unless the whole is bracketed.
void set_endpoint(const std::string& value, store::CommandFacts& facts) {
  size_t colon = value.rfind(':');
  if (colon == std::string::npos || (value.starts_with("[") && value.ends_with("]"))) {
    facts.master_addr = unbracketed(value);
    facts.endpoint_without_port = true;
    return;
  }
  facts.endpoint_without_port = false;
  facts.master_addr = unbracketed(value.substr(0, colon));
  set_port("--rdzv_endpoint", value, std::string_view(value).substr(colon + 1), facts);
}

void apply_torchrun_option(const std::string& name, const std::string& value,
                           store::CommandFacts& facts) {
  if (name == "--nproc_per_node") {
    facts.nproc_per_node = parse_count(value);
    facts.nproc_from_gpus = value == "gpu" || value == "auto";
  } else if (name == "--nnodes") {
    size_t colon = value.find(':');
    facts.nnodes = parse_count(colon == std::string::npos ? value : value.substr(colon + 1));
  } else if (name == "--node_rank") {
    facts.node_rank = parse_count(value);
  } else if (name == "--redirects" || name == "-r") {
    facts.redirects_given = true;
    facts.redirects = parse_count(value);  // a per-rank map ("0:3,1:0") gives no number
  } else if (name == "--master_addr") {
    facts.master_addr = unbracketed(value);  // torchrun writes "[::1]:29500" of it
  } else if (name == "--master_port") {
    set_port(name, value, value, facts);
  } else if (name == "--rdzv_endpoint") {
    set_endpoint(value, facts);
  } else if (name == "--rdzv_backend") {
    facts.rdzv_backend = value;
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
// and argv.size() for -c. Short options cluster as in CPython's getopt (-uB); -c, -m, -W and -X
// take the rest of their cluster as their value (-mtorch.distributed.run, -um MODULE), else the
// next word.
size_t read_python_options(const std::vector<std::string>& argv, size_t i, std::string& module) {
  while (i < argv.size()) {
    const std::string& arg = argv[i];
    if (arg == "--") return i + 1;
    if (!arg.starts_with("-") || arg == "-") return i;
    if (arg.starts_with("--")) {
      i += arg == "--check-hash-based-pycs" ? 2 : 1;
      continue;
    }
    size_t at = arg.find_first_of("cmWX", 1);
    if (at == std::string::npos) {
      ++i;
      continue;
    }
    bool attached = at + 1 < arg.size();
    size_t next = i + (attached ? 1 : 2);
    if (arg[at] == 'c') return argv.size();
    if (arg[at] == 'm') {
      if (attached) module = arg.substr(at + 1);
      if (!attached && next <= argv.size()) module = argv[i + 1];
      return next;
    }
    i = next;
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
    if (named(kWorkers, name)) facts.workers = parse_count(*value);
    if (named(kBatch, name)) facts.batch_size = parse_count(*value);
  }
}

// GNU env's options (coreutils 9): its long name, its letter (0 for none), and whether it takes a
// value (the signal options' is optional, given with '=' alone).
struct EnvOption {
  std::string_view name;
  char letter;
  bool value;
};
constexpr EnvOption kEnvOptions[] = {{"ignore-environment", 'i', false},
                                     {"null", '0', false},
                                     {"unset", 'u', true},
                                     {"chdir", 'C', true},
                                     {"split-string", 'S', true},
                                     {"debug", 'v', false},
                                     {"block-signal", 0, false},
                                     {"default-signal", 0, false},
                                     {"ignore-signal", 0, false},
                                     {"list-signal-handling", 0, false},
                                     {"help", 0, false},
                                     {"version", 0, false}};

// The option of `--name` as getopt_long finds it: the exact name, else the one it begins.
const EnvOption* env_long_option(std::string_view name) {
  const EnvOption* found = nullptr;
  for (const EnvOption& option : kEnvOptions) {
    if (option.name == name) return &option;
    if (!name.empty() && option.name.starts_with(name)) {
      if (found != nullptr) return nullptr;  // ambiguous
      found = &option;
    }
  }
  return found;
}

const EnvOption* env_letter(char letter) {
  for (const EnvOption& option : kEnvOptions) {
    if (option.letter == letter && letter != 0) return &option;
  }
  return nullptr;
}

// env's options and NAME=VALUE operands in `argv` (argv[0] is env); returns where the command
// begins, argv.size() where env runs none (--help, an option it refuses). -S splits its value
// into words that take its place, options among them, as env does.
size_t read_env(std::vector<std::string>& argv, ParsedCommand& out) {
  size_t i = 1;
  while (i < argv.size()) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;
    // Each option of the word: its value, and the word after the last it takes.
    std::vector<std::pair<const EnvOption*, std::string>> options;
    size_t next = i + 1;
    if (arg.starts_with("--")) {
      size_t eq = arg.find('=');
      const EnvOption* option = env_long_option(std::string_view(arg).substr(2, eq - 2));
      if (option == nullptr) return argv.size();
      std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
      if (option->value && eq == std::string::npos) {
        if (next >= argv.size()) return argv.size();
        value = argv[next++];
      }
      options.emplace_back(option, value);
    } else {
      for (size_t at = 1; at < arg.size(); ++at) {
        const EnvOption* option = env_letter(arg[at]);
        if (option == nullptr) return argv.size();  // "-i python3" of a #! line, too
        if (!option->value) {
          options.emplace_back(option, "");
          continue;
        }
        if (at + 1 == arg.size() && next >= argv.size()) return argv.size();
        options.emplace_back(option, at + 1 < arg.size() ? arg.substr(at + 1) : argv[next++]);
        break;
      }
    }
    i = next;
    for (const auto& [option, value] : options) {
      if (option->name == "help" || option->name == "version") return argv.size();
      if (option->letter == 'i') out.ignore_environment = true;
      if (option->letter == 'u') out.unset.insert(value);
      if (option->letter == 'C') out.chdir = value;
      if (option->letter == 'S') {
        std::vector<std::string> words = split_string(value);
        argv.erase(argv.begin() + 1, argv.begin() + static_cast<std::ptrdiff_t>(i));
        argv.insert(argv.begin() + 1, words.begin(), words.end());
        i = 1;
      }
    }
  }
  // A lone "-" is -i's older spelling.
  if (i < argv.size() && argv[i] == "-") {
    out.ignore_environment = true;
    ++i;
  }
  for (; i < argv.size() && argv[i].find('=') != std::string::npos; ++i) {
    size_t eq = argv[i].find('=');
    out.env[argv[i].substr(0, eq)] = argv[i].substr(eq + 1);
  }
  return i;
}

}  // namespace

std::optional<int> parse_count(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

bool is_python_name(const std::string& name) {
  std::string base = base_name(name);
  if (!base.starts_with("python")) return false;
  return std::all_of(base.begin() + 6, base.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.' || c == 'd'; });
}

std::string from_here(const ParsedCommand& command, const std::string& path) {
  if (command.chdir.empty() || path.starts_with("/")) return path;
  return command.chdir + "/" + path;
}

std::optional<int> parse_port(std::string_view text) {
  constexpr int kLastPort = 65535;
  std::optional<int> port = parse_count(text);
  return port && *port <= kLastPort ? port : std::nullopt;
}

std::vector<std::string> split_string(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  auto end_word = [&] {
    if (in_word) out.push_back(word);
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool escaped = c == '\\' && i + 1 < text.size() && quote != '\'';
    if (quote == '\'' && c == '\\' && i + 1 < text.size() &&
        (text[i + 1] == '\\' || text[i + 1] == '\'')) {
      word += text[++i];
    } else if (c == quote) {
      quote = 0;
    } else if (quote == 0 && (c == '\'' || c == '"')) {
      quote = c;
      in_word = true;
    } else if (escaped) {
      char e = text[++i];
      if (e == 'c' && quote == 0) break;
      if (e == '_' && quote == 0) {
        end_word();
        continue;
      }
      static constexpr std::string_view kFrom = "_tnvfr", kTo = " \t\n\v\f\r";
      size_t letter = kFrom.find(e);
      word += letter == std::string_view::npos ? e : kTo[letter];
      in_word = true;
    } else if (quote == 0 && std::string_view(" \t\n\v\f\r").find(c) != std::string_view::npos) {
      end_word();
    } else if (quote == 0 && c == '#' && !in_word) {
      break;
    } else {
      word += c;
      in_word = true;
    }
  }
  end_word();
  return out;
}

ParsedCommand parse_command(const std::vector<std::string>& command) {
  ParsedCommand out;
  store::CommandFacts& facts = out.facts;
  std::vector<std::string> argv = command;  // env -S rewrites it
  size_t i = !argv.empty() && base_name(argv[0]) == "env" ? read_env(argv, out) : 0;
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
