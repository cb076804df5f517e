// C++ symbol names as people read them, for the native frames the supervisor symbolizes and the
// symbols a loader's error names. Pure.
#pragma once

#include <string>
#include <string_view>

namespace traindoc::store {

// Demangles a C++ name ("_ZN3c104cuda9GetDeviceEv" -> "c10::cuda::GetDevice()") and drops the
// symbol version that .symtab names carry ("fclose@@GLIBC_2.2.5" -> "fclose"); other names as
// they are.
std::string demangle(std::string_view raw);

}  // namespace traindoc::store
