// Binds traindoc and its agent to the oldest versions of glibc's functions (GLIBC_2.2.5) rather
// than the ones glibc 2.32 to 2.34 gave them when it moved them from libpthread and libdl into
// libc: the same functions, found in libpthread.so.0 and libdl.so.2 on older glibc (both are
// needed libraries of the binaries). Linked with --wrap for each (glibc_compat.cmake), so the
// static libraries' calls (libstdc++, SQLite, elfutils) come here too. Any process, any thread.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include "glibc_compat.h"

OLD_VERSION(void*, dlopen, (const char* file, int mode), (file, mode))
OLD_VERSION(int, dlclose, (void* handle), (handle))
OLD_VERSION(void*, dlsym, (void* handle, const char* name), (handle, name))
OLD_VERSION(void*, dlvsym, (void* handle, const char* name, const char* version),
            (handle, name, version))
OLD_VERSION(char*, dlerror, (void), ())
OLD_VERSION(int, dladdr, (const void* address, Dl_info* info), (address, info))
OLD_VERSION(int, pthread_create,
            (pthread_t * thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg),
            (thread, attr, start, arg))
OLD_VERSION(int, pthread_join, (pthread_t thread, void** result), (thread, result))
OLD_VERSION(int, pthread_detach, (pthread_t thread), (thread))
OLD_VERSION(int, pthread_once, (pthread_once_t * once, void (*init)(void)), (once, init))
OLD_VERSION(int, pthread_key_create, (pthread_key_t * key, void (*destroy)(void*)), (key, destroy))
OLD_VERSION(int, __pthread_key_create, (pthread_key_t * key, void (*destroy)(void*)),
            (key, destroy))
OLD_VERSION(int, pthread_key_delete, (pthread_key_t key), (key))
OLD_VERSION(void*, pthread_getspecific, (pthread_key_t key), (key))
OLD_VERSION(int, pthread_setspecific, (pthread_key_t key, const void* value), (key, value))
OLD_VERSION(int, pthread_mutex_trylock, (pthread_mutex_t * mutex), (mutex))
OLD_VERSION(int, pthread_mutexattr_init, (pthread_mutexattr_t * attr), (attr))
OLD_VERSION(int, pthread_mutexattr_destroy, (pthread_mutexattr_t * attr), (attr))
OLD_VERSION(int, pthread_mutexattr_settype, (pthread_mutexattr_t * attr, int type), (attr, type))
OLD_VERSION(int, pthread_rwlock_init, (pthread_rwlock_t * lock, const pthread_rwlockattr_t* attr),
            (lock, attr))
OLD_VERSION(int, pthread_rwlock_destroy, (pthread_rwlock_t * lock), (lock))
OLD_VERSION(int, pthread_rwlock_rdlock, (pthread_rwlock_t * lock), (lock))
OLD_VERSION(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t * lock), (lock))
OLD_VERSION(int, pthread_rwlock_wrlock, (pthread_rwlock_t * lock), (lock))
OLD_VERSION(int, pthread_rwlock_unlock, (pthread_rwlock_t * lock), (lock))
OLD_VERSION(int, pthread_sigmask, (int how, const sigset_t* set, sigset_t* old), (how, set, old))
OLD_VERSION(int, pthread_getattr_np, (pthread_t thread, pthread_attr_t* attr), (thread, attr))
OLD_VERSION(int, pthread_attr_getstack, (const pthread_attr_t* attr, void** stack, size_t* size),
            (attr, stack, size))

// stat, fstat and lstat are functions of libc only since glibc 2.33; before, <sys/stat.h> made
// them calls of __xstat, __fxstat and __lxstat, which glibc still exports. x86-64's struct stat
// and struct stat64 are one layout, _STAT_VER 1.
enum { kStatVersion = 1 };
int __xstat(int version, const char* path, struct stat* out);
int __fxstat(int version, int fd, struct stat* out);
int __lxstat(int version, const char* path, struct stat* out);
int __wrap_stat(const char* path, struct stat* out) {
  return __xstat(kStatVersion, path, out);
}
int __wrap_stat64(const char* path, struct stat* out) {
  return __xstat(kStatVersion, path, out);
}
int __wrap_lstat(const char* path, struct stat* out) {
  return __lxstat(kStatVersion, path, out);
}
int __wrap_lstat64(const char* path, struct stat* out) {
  return __lxstat(kStatVersion, path, out);
}
int __wrap_fstat(int fd, struct stat* out) {
  return __fxstat(kStatVersion, fd, out);
}
int __wrap_fstat64(int fd, struct stat* out) {
  return __fxstat(kStatVersion, fd, out);
}
