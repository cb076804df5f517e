// fmt's implementation, compiled once for the whole build (traindoc_fmt in CMakeLists.txt).
// Debian ships fmt as headers and a shared library only: linked in, the executables stay
// relocatable, and no other source file compiles fmt's implementation (its header-only mode did).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
// The instantiations format.h declares extern for builds that are not header-only.
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
