/* NCCL's functions taken by name, as JAX and TensorFlow take them: nccl_job.c built with
 * NCCL_JOB_DLSYM opens the library with dlopen (RTLD_LOCAL) and calls each function through the
 * pointer dlsym gave, under its own name. */
#pragma once

#include <dlfcn.h>
#include <stdio.h>

#include "fake_nccl.h"

/* clang-format off */
#define NCCL_BY_NAME(X)                                                                      \
  X(GetUniqueId) X(CommInitRank) X(CommInitRankScalable) X(CommGetAsyncError) X(CommSplit)   \
  X(CommShrink) X(CommDestroy) X(AllReduce) X(Bcast) X(Reduce) X(AllGather) X(ReduceScatter) \
  X(AlltoAll) X(Send) X(Recv) X(GroupStart) X(GroupEnd)
/* clang-format on */
#define NCCL_POINTER(name) __typeof__(nccl##name)* name;
static struct {
  NCCL_BY_NAME(NCCL_POINTER)
  int (*CallsServed)(void); /* the stand-in's own; absent from a real NCCL */
} by_name;

/* Opens NCCL at `path` and takes its functions; 0 on success. */
static int load_nccl(const char* path) {
  void* nccl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (nccl == NULL) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
#define NCCL_LOAD(name)                                \
  *(void**)&by_name.name = dlsym(nccl, "nccl" #name);  \
  if (by_name.name == NULL) {                          \
    fprintf(stderr, "no nccl" #name " in %s\n", path); \
    return 1;                                          \
  }
  NCCL_BY_NAME(NCCL_LOAD)
  *(void**)&by_name.CallsServed = dlsym(nccl, "fakeNcclCallsServed");
  return 0;
}

#define ncclGetUniqueId (*by_name.GetUniqueId)
#define ncclCommInitRank (*by_name.CommInitRank)
#define ncclCommInitRankScalable (*by_name.CommInitRankScalable)
#define ncclCommGetAsyncError (*by_name.CommGetAsyncError)
#define ncclCommSplit (*by_name.CommSplit)
#define ncclCommShrink (*by_name.CommShrink)
#define ncclCommDestroy (*by_name.CommDestroy)
#define ncclAllReduce (*by_name.AllReduce)
#define ncclBcast (*by_name.Bcast)
#define ncclReduce (*by_name.Reduce)
#define ncclAllGather (*by_name.AllGather)
#define ncclReduceScatter (*by_name.ReduceScatter)
#define ncclAlltoAll (*by_name.AlltoAll)
#define ncclSend (*by_name.Send)
#define ncclRecv (*by_name.Recv)
#define ncclGroupStart (*by_name.GroupStart)
#define ncclGroupEnd (*by_name.GroupEnd)
#define fakeNcclCallsServed (by_name.CallsServed)
