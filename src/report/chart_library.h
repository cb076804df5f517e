// The chart library report.html carries: uPlot's script and styles, embedded at build time from
// its npm package (src/report/CMakeLists.txt). Any process.
#pragma once

#include <string_view>

namespace traindoc::report {

std::string_view chart_library_js();
std::string_view chart_library_css();

}  // namespace traindoc::report
