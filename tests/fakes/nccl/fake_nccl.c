/* A stand-in libnccl.so.2: NCCL's C API with its real symbol names and ABI, for machines without
 * a GPU. Communicators are plain structs; collectives check their arguments as NCCL does locally
 * and move no data. Internal calls go through the exported symbols, as in NCCL (ncclBcast calls
 * ncclBroadcast, ncclCommInitAll calls ncclGetUniqueId), so that interposers see the nesting.
 * A nonblocking split (config.blocking = 0) returns ncclInProgress and is ready once its state
 * has been asked once; before that NCCL's queries warn and fail, as NCCL's do. */
#include "fake_nccl.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ncclComm {
  int rank;
  int nranks;
  int pending; /* a nonblocking split not yet ready */
};

/* NCCL's ncclCommEnsureReady: a communicator used before it is ready. */
static ncclResult_t ensure_ready(ncclComm_t comm) {
  if (!comm->pending) return ncclSuccess;
  fprintf(stderr,
          "NCCL WARN Attempt to use communicator before the previous operation returned "
          "ncclSuccess\n");
  return ncclInvalidArgument;
}

static ncclResult_t make_comm(ncclComm_t* comm, int nranks, int rank) {
  if (comm == NULL || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  *comm = calloc(1, sizeof(struct ncclComm));
  (*comm)->rank = rank;
  (*comm)->nranks = nranks;
  return ncclSuccess;
}

static int served;

/* The stand-in's own, beside NCCL's API: how many collective and point-to-point calls this copy
 * of the library served (a framework may bundle a copy of its own; each caller must reach the
 * one it links). */
int fakeNcclCallsServed(void) {
  return served;
}

/* Every collective and point-to-point call's check. */
static ncclResult_t check(ncclComm_t comm, int root) {
  ++served;
  if (comm == NULL) return ncclInvalidArgument;
  if (root >= comm->nranks) return ncclInvalidArgument;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd < 0 || read(fd, id->internal, sizeof(id->internal)) != sizeof(id->internal)) {
    if (fd >= 0) close(fd);
    return ncclInvalidUsage;
  }
  close(fd);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  (void)id;
  return make_comm(comm, nranks, rank);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  (void)config;
  return ncclCommInitRank(comm, nranks, id, rank);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  (void)config;
  if (nId < 1 || commIds == NULL) return ncclInvalidArgument;
  return make_comm(newcomm, nranks, myrank);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  *asyncError = comm->pending ? ncclInProgress : ncclSuccess;
  comm->pending = 0; /* ready from the next look on */
  return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  (void)devlist;
  ncclUniqueId id;
  ncclResult_t result = ncclGetUniqueId(&id);
  for (int i = 0; i < ndev && result == ncclSuccess; ++i) result = make_comm(&comms[i], ndev, i);
  return result;
}

/* Every rank passes the same color here, so the child has the parent's ranks. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  (void)key;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = NULL;
    return ncclSuccess;
  }
  ncclResult_t result = make_comm(newcomm, comm->nranks, comm->rank);
  if (result != ncclSuccess || config == NULL || config->blocking) return result;
  (*newcomm)->pending = 1;
  return ncclInProgress;
}

/* The ranks left close up in order. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  (void)config, (void)shrinkFlags;
  int rank = comm->rank;
  for (int i = 0; i < excludeRanksCount; ++i) {
    if (excludeRanksList[i] == comm->rank) return ncclInvalidArgument;
    if (excludeRanksList[i] < comm->rank) --rank;
  }
  return make_comm(newcomm, comm->nranks - excludeRanksCount, rank);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  free(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return ncclCommDestroy(comm);
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (ensure_ready(comm) != ncclSuccess) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (ensure_ready(comm) != ncclSuccess) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  (void)s, (void)r, (void)n, (void)t, (void)op, (void)stream;
  return check(comm, 0);
}

ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  (void)s, (void)r, (void)n, (void)t, (void)stream;
  return check(comm, root);
}

ncclResult_t ncclBcast(void* buff, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return ncclBroadcast(buff, buff, n, t, root, comm, stream);
}

ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  (void)s, (void)r, (void)n, (void)t, (void)op, (void)stream;
  return check(comm, root);
}

ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream) {
  (void)s, (void)r, (void)n, (void)t, (void)stream;
  return check(comm, 0);
}

ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  (void)s, (void)r, (void)n, (void)t, (void)op, (void)stream;
  return check(comm, 0);
}

ncclResult_t ncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t comm,
                          cudaStream_t stream) {
  (void)s, (void)r, (void)n, (void)t, (void)stream;
  return check(comm, 0);
}

ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  (void)s, (void)n, (void)t, (void)stream;
  return check(comm, peer);
}

ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  (void)r, (void)n, (void)t, (void)stream;
  return check(comm, peer);
}

ncclResult_t ncclGroupStart(void) {
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  return ncclSuccess;
}
