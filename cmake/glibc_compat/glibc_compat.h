// One wrapper per glibc function that the binaries call at its oldest version (old_versions.c).
#pragma once

// __wrap_NAME, which --wrap=NAME puts in the place of every call of NAME, calls NAME@GLIBC_2.2.5.
#define OLD_VERSION(type, name, params, args)                       \
  type traindoc_old_##name params;                                  \
  __asm__(".symver traindoc_old_" #name ", " #name "@GLIBC_2.2.5"); \
  type __wrap_##name params {                                       \
    return traindoc_old_##name args;                                \
  }
