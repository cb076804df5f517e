"""A training for `traindoc fit` whose memory grows with --batch-size, in the ways the fit tests
need: under torchrun with rank 0 holding more per sample than the others (it keeps every
sample's activations for a log, as a rank-0 metric or a logging hook does), one that fails for
another reason from a batch size on, one whose GPU runs out of memory from a batch size on (the
exception PyTorch raises, on this CPU machine), and a program without torch that holds a fixed
amount plus so much per sample (no steps counted): for a second and ends, or working on for a
minute, as a JAX or TensorFlow training does whose steps no hook counts."""
import argparse
import os
import sys
import time

MIB = 2**20


def parse():
    parser = argparse.ArgumentParser()
    # Or, as some jobs do, from a variable (traindoc fit --env FIT_BATCH).
    parser.add_argument("--batch-size", type=int, default=os.environ.get("FIT_BATCH"))
    parser.add_argument("--mode",
                        choices=("ddp", "fails-from", "gpu-oom-from", "plain", "working"),
                        default="ddp")
    parser.add_argument("--limit", type=int, default=0, help="the batch it fails from")
    parser.add_argument("--fixed-mib", type=int, default=0, help="plain: what it holds")
    parser.add_argument("--per-sample-mib", type=float, default=0, help="plain: and per sample")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--prepare-s", type=float, default=0,
                        help="seconds of work with flat memory after importing torch")
    return parser.parse_args()


def plain(args):
    held = bytearray(int((args.fixed_mib + args.per_sample_mib * args.batch_size) * MIB))
    held[::4096] = b"x" * len(held[::4096])  # touched: resident, not only reserved
    if args.mode == "plain":
        time.sleep(1)  # long enough to be sampled
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # steps of work on what it holds
        sum(held[::65536])


def train(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    deadline = time.monotonic() + args.prepare_s
    while time.monotonic() < deadline:  # a preparation: busy, its memory flat
        sum(range(10000))
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    torch.set_num_threads(1)
    width = 2048  # each sample's activations: 32 x 2048 floats = 256 KiB
    model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 10))
    if distributed:
        model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.utils.data.TensorDataset(torch.randn(256, 32, 256), torch.randint(0, 10, (256,)))
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size)
    kept = []
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        if args.mode == "fails-from" and args.batch_size >= args.limit:
            raise ValueError("the augmentation cannot crop %d samples at once" % args.batch_size)
        if args.mode == "gpu-oom-from" and args.batch_size >= args.limit:
            raise torch.cuda.OutOfMemoryError(
                "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 22.20 GiB total "
                "capacity; 20.92 GiB already allocated; 4.12 MiB free; 20.93 GiB reserved in "
                "total by PyTorch) If reserved memory is >> allocated memory try setting "
                "max_split_size_mb to avoid fragmentation.")
        hidden = model(x)  # (batch, 32, 10) through (batch, 32, 2048)
        loss = torch.nn.functional.cross_entropy(hidden.mean(1), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and step == 0:
            kept.append(torch.ones(args.batch_size, 6 * MIB // 4))  # 6 MiB per sample, on rank 0
    if distributed:
        dist.destroy_process_group()


def main():
    args = parse()
    if args.mode in ("plain", "working"):
        plain(args)
    else:
        train(args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
