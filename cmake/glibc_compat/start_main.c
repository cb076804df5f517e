// The program's start for glibc before 2.34, in traindoc's executable (before main, one thread).
// glibc 2.34's start files call __libc_start_main@GLIBC_2.34 with no init function: that glibc
// runs the program's constructors itself. The older __libc_start_main, which every glibc still
// has, runs only the init function it is given (once libc_nonshared.a's __libc_csu_init): this
// one runs the constructors as that did, and glibc 2.34 and later take it as such a program's.
#include <stddef.h>

typedef int (*MainFn)(int, char**, char**);
typedef void (*InitFn)(int, char**, char**);

int traindoc_old___libc_start_main(MainFn main, int argc, char** argv, InitFn init,
                                   void (*fini)(void), void (*rtld_fini)(void), void* stack_end);
__asm__(".symver traindoc_old___libc_start_main, __libc_start_main@GLIBC_2.2.5");

// Where the linker put the program's constructors, and crti.o's _init.
extern InitFn __preinit_array_start[] __attribute__((visibility("hidden")));
extern InitFn __preinit_array_end[] __attribute__((visibility("hidden")));
extern InitFn __init_array_start[] __attribute__((visibility("hidden")));
extern InitFn __init_array_end[] __attribute__((visibility("hidden")));
void _init(void);

static void run_constructors(int argc, char** argv, char** envp) {
  for (InitFn* f = __preinit_array_start; f != __preinit_array_end; ++f) (*f)(argc, argv, envp);
  _init();
  for (InitFn* f = __init_array_start; f != __init_array_end; ++f) (*f)(argc, argv, envp);
}

int __wrap___libc_start_main(MainFn main, int argc, char** argv, InitFn init, void (*fini)(void),
                             void (*rtld_fini)(void), void* stack_end) {
  (void)init;  // NULL: glibc 2.34's start files pass none
  return traindoc_old___libc_start_main(main, argc, argv, run_constructors, fini, rtld_fini,
                                        stack_end);
}
