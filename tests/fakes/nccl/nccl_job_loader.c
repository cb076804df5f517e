/* Runs nccl_job from its module opened RTLD_LOCAL, as Python opens a framework's extension
 * module: NCCL, the module's dependency, is then outside the process's global scope. Usage:
 * nccl_job_loader MODULE RANK NRANKS ID_FILE FAULT. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: nccl_job_loader MODULE RANK NRANKS ID_FILE FAULT\n");
    return 2;
  }
  void* module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  int (*job)(int, char**) = NULL;
  if (module != NULL) *(void**)&job = dlsym(module, "nccl_job"); /* POSIX's way to a function */
  if (job == NULL) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  return job(argc - 1, argv + 1);
}
