"""Collective faults across ranks (shared/CASES.md T12, T13, T14, H05, H06, H08, H11, H14, S05, S06),
one per scenario name, for 2 ranks (3 for a subgroup) under torchrun with gloo, and look-alikes
that are no fault.
Each marks its faulty call with a `# fault` comment, which the tests look up to check the call
site traindoc reports."""
import ctypes
import datetime
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.utils.checkpoint


def op_mismatch(rank):  # T12: the ranks take different branches
    t = torch.ones(20, 10)
    if rank == 0:
        dist.all_reduce(t)  # fault
    else:
        dist.reduce(t, 0)  # fault


def shape_mismatch(rank):  # T13, H05: a data-dependent size
    t = torch.ones(100 if rank == 0 else 200, 16)
    dist.all_reduce(t)  # fault


def dtype_mismatch(rank):  # S05: float on one rank, int64 on the other (same bytes: no error)
    t = torch.ones(8, dtype=torch.float64 if rank == 0 else torch.int64)
    dist.all_reduce(t)  # fault
    time.sleep(4)  # the job goes on, unaware


def uneven_all_gather(rank):  # H06 (a): per-rank sizes
    t = torch.ones(2 + rank)
    out = [torch.zeros(2 + q) for q in range(2)]
    dist.all_gather(out, t)  # fault


def monitored_barrier_skipped(rank):  # T14, H08 (a)
    if rank != 1:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=2))  # fault
    else:
        time.sleep(8)


def skip_and_work(rank):  # H08 (b): the rank skips the call and stays busy
    t = torch.ones(4)
    dist.all_reduce(t)
    if rank != 1:
        dist.all_reduce(t)  # fault
    else:
        time.sleep(8)  # busy elsewhere


def loop_on_one_rank(rank):  # the missing rank runs a loop of its own, using CPU
    t = torch.ones(4)
    dist.all_reduce(t)
    if rank == 1:
        deadline = time.time() + 60  # past the others' timeout: it never arrives
        while time.time() < deadline:  # busy
            pass
    dist.all_reduce(t)  # fault


def deadlock_on_one_rank(rank):  # the missing rank takes a lock it already holds
    t = torch.ones(4)
    dist.all_reduce(t)
    if rank == 1:
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()  # deadlock
    dist.all_reduce(t)  # fault


def skip_and_exit(rank):  # H08 (c)
    t = torch.ones(4)
    dist.all_reduce(t)
    if rank != 1:
        dist.all_reduce(t)  # fault


def skip_and_abort_at_exit(rank):  # H08 (c), and a teardown that aborts once the program is done
    skip_and_exit(rank)
    if rank == 1:  # as gloo can with a process group left to the interpreter's exit
        libc = ctypes.CDLL("libc.so.6")
        libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)


def prompt_on_one_rank(rank):  # a breakpoint() left in code that rank 0 runs: nobody answers
    if rank == 0:
        breakpoint()
    dist.barrier()  # fault


def straggler(rank):  # H14: rank 1 has more work, then makes the same call
    t = torch.ones(1)
    dist.all_reduce(t)
    if rank == 1:
        time.sleep(4)  # long generations
    dist.all_reduce(t)  # fault


def straggler_past_the_timeout(rank):  # H14, later than the others wait (3 s)
    group = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=3))
    t = torch.ones(1)
    dist.all_reduce(t, group=group)
    if rank == 1:
        time.sleep(4)
    dist.all_reduce(t, group=group)  # fault


def object_list_lengths(rank):  # the receivers' list is not as long as the sender's
    objects = ["config", {"lr": 0.1}] if rank == 0 else [None] * 3
    dist.broadcast_object_list(objects, src=0)  # fault


def exit_silently(rank):  # rank 1 ends with an exit code and no word
    t = torch.ones(4)
    dist.all_reduce(t)
    if rank == 1:
        os._exit(3)
    dist.all_reduce(t)


def order_swapped(rank):  # S06: unsynchronized updates reorder two collectives
    a = torch.ones(16)
    b = torch.ones(16)
    for step in range(2):
        if rank == 1 and step == 1:
            dist.broadcast(b, 0)  # fault
            dist.all_reduce(a)
        else:
            dist.all_reduce(a)  # fault
            dist.broadcast(b, 0)


def late_peer_async(rank):  # no fault: rank 1's call returns at once, then it waits
    t = torch.ones(4)
    if rank == 0:
        time.sleep(2)
    work = dist.all_reduce(t, async_op=rank == 1)
    if work is not None:
        work.wait()
    assert t[0].item() == 2


def skip_backward(rank):  # H11: DDP, a rank skips a bad batch's backward
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for it in range(4):
        loss = model(torch.randn(4, 8)).sum()
        if rank == 1 and it == 1:
            continue
        optimizer.zero_grad()
        loss.backward()  # the backward
        optimizer.step()


def raise_mid_step(rank):  # the commonest failure: one rank raises, its peer waits in backward
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for it in range(4):
        loss = model(torch.randn(4, 8)).sum()
        if rank == 1 and it == 2:
            raise ValueError(f"loss is nan at step {it}")  # fault
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def ddp_on_one_rank(rank):  # DDP built on rank 0 alone (to save its state): its init waits
    model = torch.nn.Linear(8, 8)
    if rank == 0:
        torch.save(torch.nn.parallel.DistributedDataParallel(model).state_dict(), os.devnull)  # fault
    dist.barrier()


def dataset_raises_in_a_worker(rank):  # DDP's own all-reduces are unseen; workers end well
    class Samples(torch.utils.data.Dataset):
        def __len__(self):
            return 32

        def __getitem__(self, i):
            if rank == 1 and i == 13:
                raise FileNotFoundError(2, "No such file or directory", f"/data/img_{i}.jpg")  # fault
            return torch.randn(8)

    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
    for batch in torch.utils.data.DataLoader(Samples(), batch_size=4, num_workers=2):
        model(batch).sum().backward()


def save_after_the_last_step(rank):  # rank 1 is done; rank 0 evaluates, then cannot save
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
    for _ in range(3):
        model(torch.randn(4, 8)).sum().backward()
    if rank == 0:
        time.sleep(1.5)  # a last evaluation, on rank 0 alone
        torch.save(model.module.state_dict(), "/nonexistent-dir/final.pt")  # fault


class StallingSamples(torch.utils.data.Dataset):  # rank 1's DataLoader worker stalls on one
    def __init__(self, rank):
        self.rank = rank

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if self.rank == 1 and i == 12:
            time.sleep(20)  # stall
        return torch.randn(8)


def worker_hangs(rank):  # rank 1's DataLoader worker stalls; rank 0 times out in DDP's all-reduce
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
    for batch in torch.utils.data.DataLoader(StallingSamples(rank), batch_size=4, num_workers=2):
        model(batch).sum().backward()


def worker_hangs_unseen(rank):  # the same, in an all-reduce through the group's own C++ method
    group = dist.distributed_c10d._get_default_group()
    for batch in torch.utils.data.DataLoader(StallingSamples(rank), batch_size=4, num_workers=2):
        group.allreduce([batch.sum().reshape(1)]).wait()


def worker_hangs_before_all_reduce(rank):  # the same stall, before a collective the watch sees
    model = torch.nn.Linear(8, 1)
    for batch in torch.utils.data.DataLoader(StallingSamples(rank), batch_size=4, num_workers=2):
        loss = model(batch).sum()
        loss.backward()
        dist.all_reduce(loss.detach())  # fault


def layer_checkpointed_twice(rank):  # one layer under two reentrant checkpoints, in DDP
    shared = torch.nn.Linear(8, 8)

    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = shared

        def forward(self, x):
            x = torch.utils.checkpoint.checkpoint(self.shared, x)
            return torch.utils.checkpoint.checkpoint(self.shared, x)

    model = torch.nn.parallel.DistributedDataParallel(Twice(), find_unused_parameters=True)
    model(torch.randn(4, 8, requires_grad=True)).sum().backward()  # fault


def receive_first(rank):  # both ranks receive before they send: neither send is ever made
    other = torch.zeros(4)
    dist.recv(other, src=1 - rank)  # fault
    dist.send(torch.ones(4), dst=1 - rank)


def subgroup_shape_mismatch(rank):  # 3 ranks: ranks 1 and 2 sync sizes of their own data
    pair = dist.new_group([1, 2])  # every rank creates it, as new_group requires
    if rank in (1, 2):
        dist.all_reduce(torch.ones(4 * rank), group=pair)  # fault


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=6))
    globals()[sys.argv[1]](dist.get_rank())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
