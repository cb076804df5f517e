"""One rank of a job that calls NCCL from Python through ctypes, as a framework that opens
libnccl by name does: CDLL opens it RTLD_LOCAL and each function is taken with dlsym. The same
calls as nccl_job.c's first two, with its faults. Usage: nccl_ctypes_job.py LIBRARY RANK NRANKS
ID_FILE FAULT (FAULT one of none, count, dtype, redop, root). Ends with code 0 unless NCCL
fails."""
import ctypes
import os
import sys
import time

FLOAT32, INT32 = 7, 2
SUM, MAX = 0, 2


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def share_id(nccl, rank, path):
    uid = UniqueId()
    if rank == 0:
        check(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        with open(path + ".tmp", "wb") as f:
            f.write(bytes(uid))
        os.rename(path + ".tmp", path)
        return uid
    while not os.path.exists(path):
        time.sleep(0.01)
    with open(path, "rb") as f:
        ctypes.memmove(ctypes.byref(uid), f.read(), ctypes.sizeof(uid))
    return uid


def check(result, call):
    if result != 0:
        sys.exit(f"{call} failed: {result}")


def main():
    library, rank, nranks, id_file, fault = sys.argv[1:6]
    rank, nranks = int(rank), int(nranks)
    odd = rank == nranks - 1
    nccl = ctypes.CDLL(library)
    uid = share_id(nccl, rank, id_file)
    comm = ctypes.c_void_p()
    check(nccl.ncclCommInitRank(ctypes.byref(comm), nranks, uid, rank), "ncclCommInitRank")
    buffer = (ctypes.c_float * 4096)()
    check(nccl.ncclBcast(buffer, ctypes.c_size_t(1024), FLOAT32, 0, comm, None), "ncclBcast")
    count = 2048 if fault == "count" and odd else 1024
    dtype = INT32 if fault == "dtype" and odd else FLOAT32
    op = MAX if fault == "redop" and odd else SUM
    if fault == "root":
        check(nccl.ncclReduce(buffer, buffer, ctypes.c_size_t(count), dtype, op, int(odd), comm,
                              None), "ncclReduce")
    else:
        check(nccl.ncclAllReduce(buffer, buffer, ctypes.c_size_t(count), dtype, op, comm, None),
              "ncclAllReduce")
    check(nccl.ncclCommDestroy(comm), "ncclCommDestroy")
    if nccl.fakeNcclCallsServed() == 0:
        sys.exit(f"rank {rank}: another NCCL library served the calls")


if __name__ == "__main__":
    main()
