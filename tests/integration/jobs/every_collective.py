"""Every torch.distributed call the Python hook wraps, once each and in this order, on 2 ranks with
gloo; test_collectives.py reads what the hook recorded from run.db. Calls that gloo of PyTorch 1.13
refuses (all_to_all, reduce_scatter, the flat all-gathers and reduce-scatters) raise at once on
every rank, after the hook has recorded them."""
import datetime

import torch
import torch.distributed as dist


def refused(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except RuntimeError as error:  # "ProcessGroupGloo does not support ..."
        assert "support" in str(error), error


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
two = [torch.zeros(2) for _ in range(2)]
dist.all_reduce(torch.ones(3, 2))
dist.all_reduce(torch.ones(2, dtype=torch.int64), op=dist.ReduceOp.MAX)
dist.all_reduce_coalesced([torch.ones(2), torch.ones(3)])
dist.broadcast(torch.zeros(4), src=1)
dist.reduce(torch.ones(4), dst=1, op=dist.ReduceOp.PRODUCT)
dist.all_gather(two, torch.ones(2))
dist.gather(torch.ones(2), [torch.zeros(2) for _ in range(2)] if rank == 0 else None, dst=0)
dist.scatter(torch.zeros(2), [torch.ones(2) for _ in range(2)] if rank == 1 else None, src=1)
dist.all_to_all_single(torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64))
refused(dist.all_to_all, two, [torch.ones(2) for _ in range(2)])
refused(dist.reduce_scatter, torch.zeros(2), [torch.ones(2) for _ in range(2)])
refused(dist.all_gather_into_tensor, torch.zeros(4), torch.ones(2))
refused(dist._all_gather_base, torch.zeros(4), torch.ones(2))
refused(dist.reduce_scatter_tensor, torch.zeros(2), torch.ones(4))
if rank == 0:
    dist.send(torch.ones(5), dst=1)
    dist.irecv(torch.zeros(6), src=1).wait()
else:
    dist.recv(torch.zeros(5), src=0)
    dist.isend(torch.ones(6), dst=0).wait()
objects = [None, None]
dist.all_gather_object(objects, {"rank": rank})
dist.broadcast_object_list([rank], src=1)
dist.gather_object(rank, objects if rank == 0 else None, dst=0)
dist.scatter_object_list([None], ["a", "b"] if rank == 0 else None, src=0)
dist.monitored_barrier(timeout=datetime.timedelta(seconds=20))
dist.barrier()
dist.all_reduce(torch.ones(1), async_op=True).wait()
dist.destroy_process_group()
