// Text of the job made safe for each place the report puts it: valid UTF-8 for report.json and
// report.html, and nothing a terminal would act on for the summary. Whatever a job prints (any
// bytes, any encoding) reaches the report through these. Any process; pure.
#pragma once

#include <string>
#include <string_view>

namespace traindoc::report {

// `text` with what is not UTF-8 replaced by U+FFFD: one for each lone byte, and one for each
// sequence cut short (the longest start that could still have been valid), as Unicode
// recommends and as nlohmann::json's replacing dump does, so that report.json and report.html
// show the same text.
std::string valid_utf8(std::string_view text);

// `text` as a terminal may print it: what a terminal would act on is written out instead of
// obeyed. C0 controls (a newline or carriage return too, which would break or overwrite the
// summary's lines; the tab alone is kept) and DEL as \xNN (\n, \r), C1 controls (U+0080 to
// U+009F) as \u00NN, and bytes that are not UTF-8 as \xNN, since some terminals read a lone
// 0x9B as the start of a control sequence.
std::string terminal_safe(std::string_view text);

}  // namespace traindoc::report
