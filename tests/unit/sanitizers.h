// Whether this test binary is a sanitizer build (the asan and tsan presets, Debug): its frames
// are larger and its code slower than the build that ships, and ThreadSanitizer's runtime stands
// between a process and its waits and signal handlers.
#pragma once

namespace traindoc::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace traindoc::test
