/* Runs nccl_job from modules opened RTLD_LOCAL, one after another, as Python opens a framework's
 * extension module: NCCL, a module's dependency or bundled in it, is then outside the process's
 * global scope. The n-th module's ranks share their unique id through ID_FILE.n. Usage:
 * nccl_job_loader MODULE[,MODULE...] RANK NRANKS ID_FILE FAULT. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: nccl_job_loader MODULE[,MODULE...] RANK NRANKS ID_FILE FAULT\n");
    return 2;
  }
  char id_file[4096];
  char* job_argv[5] = {argv[1], argv[2], argv[3], id_file, argv[5]};
  int n = 0;
  for (char* module_path = strtok(argv[1], ","); module_path != NULL;
       module_path = strtok(NULL, ","), ++n) {
    void* module = dlopen(module_path, RTLD_NOW | RTLD_LOCAL);
    int (*job)(int, char**) = NULL;
    if (module != NULL) *(void**)&job = dlsym(module, "nccl_job"); /* POSIX's way to a function */
    if (job == NULL) {
      fprintf(stderr, "%s\n", dlerror());
      return 2;
    }
    snprintf(id_file, sizeof(id_file), "%s.%d", argv[4], n);
    int status = job(5, job_argv);
    if (status != 0) return status;
  }
  return 0;
}
