// Redaction of secrets in command lines. Pure.
#include "supervisor/redact.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace traindoc::supervisor {
namespace {

// Whether a name (`--hf-token`, `WANDB_API_KEY`, `password`) names a secret: one of its words,
// split at '-', '_' and '.', is one of these.
bool names_secret(std::string_view name) {
  constexpr std::array<std::string_view, 10> kWords = {
      "key",    "apikey",   "token",      "secret",      "secrets",
      "passwd", "password", "credential", "credentials", "passphrase"};
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find_first_of("-_.", start);
    if (end == std::string_view::npos) end = name.size();
    std::string word(name.substr(start, end - start));
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (std::find(kWords.begin(), kWords.end(), word) != kWords.end()) return true;
    start = end + 1;
  }
  return false;
}

// A URL's password (`scheme://user:pass@host`) and the values of query parameters that name
// secrets, wherever they are in `text`.
std::string redact_urls(std::string text) {
  for (size_t scheme = text.find("://"); scheme != std::string::npos;
       scheme = text.find("://", scheme + 3)) {
    size_t authority = scheme + 3;
    size_t end = text.find_first_of("/?# ", authority);
    if (end == std::string::npos) end = text.size();
    size_t at = text.rfind('@', end);
    if (at != std::string::npos && at >= authority) {
      size_t colon = text.find(':', authority);
      if (colon != std::string::npos && colon < at) {
        text.replace(colon + 1, at - colon - 1, kRedacted);
        end = text.find_first_of("/?# ", authority);
        if (end == std::string::npos) end = text.size();
      }
    }
    size_t query = text.find('?', end);
    size_t stop = text.find(' ', end);
    if (stop == std::string::npos) stop = text.size();
    while (query != std::string::npos && query < stop) {
      size_t name = query + 1;
      size_t equals = text.find('=', name);
      size_t next = text.find_first_of("&# ", name);
      if (next == std::string::npos) next = text.size();
      if (equals != std::string::npos && equals < next &&
          names_secret(std::string_view(text).substr(name, equals - name))) {
        text.replace(equals + 1, next - equals - 1, kRedacted);
        next = equals + 1 + kRedacted.size();
        stop = text.find(' ', next);
        if (stop == std::string::npos) stop = text.size();
      }
      query = next < text.size() && text[next] == '&' ? next : std::string::npos;
    }
  }
  return text;
}

}  // namespace

std::vector<std::string> redact_arguments(std::vector<std::string> argv) {
  bool value_next = false;
  for (std::string& arg : argv) {
    if (value_next && !arg.starts_with('-')) {
      arg = kRedacted;
      value_next = false;
      continue;
    }
    value_next = false;
    std::string_view name = arg;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) name = name.substr(0, equals);
    bool option = name.starts_with('-');
    while (name.starts_with('-')) name.remove_prefix(1);
    // Only names: a path or a sentence with such a word in it is no option's name.
    bool plain_name = !name.empty() && name.find_first_of("/ :") == std::string_view::npos;
    if (plain_name && names_secret(name)) {
      if (equals != std::string::npos) {
        arg = arg.substr(0, equals + 1) + std::string(kRedacted);
        continue;
      }
      value_next = option;
    }
    arg = redact_urls(std::move(arg));
  }
  return argv;
}

std::string redact_command_line(std::string_view line) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start <= line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    words.emplace_back(line.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  for (const std::string& word : redact_arguments(std::move(words))) {
    out += word;
    out += ' ';
  }
  out.pop_back();  // one word at least, maybe empty
  return out;
}

}  // namespace traindoc::supervisor
