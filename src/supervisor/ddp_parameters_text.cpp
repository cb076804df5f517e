// Reads the parameters that a DDP error names by index, as the Python hook wrote them.
// Supervisor process, main loop thread.
#include "supervisor/ddp_parameters_text.h"

namespace traindoc::supervisor {

std::vector<std::pair<int64_t, std::string>> ddp_parameters_text(std::string_view text) {
  std::vector<std::pair<int64_t, std::string>> out;
  while (!text.empty() && out.size() < kDdpParametersMaxLines) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    size_t tab = line.find('\t');
    if (tab == 0 || tab > 9 || tab == std::string_view::npos || tab + 1 == line.size()) continue;
    int64_t index = 0;
    bool digits = true;
    for (size_t i = 0; digits && i < tab; ++i) {
      digits = line[i] >= '0' && line[i] <= '9';
      index = index * 10 + (line[i] - '0');
    }
    if (digits) out.emplace_back(index, std::string(line.substr(tab + 1)));
  }
  return out;
}

}  // namespace traindoc::supervisor
