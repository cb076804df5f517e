#!/usr/bin/env python3
"""traindoc demo: DeepLabV3 (MobileNetV3-Large) semantic segmentation on
synthetic Cityscapes-shaped data, as a single process or under torchrun (DDP).

``--fault NAME`` makes this same training fail the way real jobs fail (the
cases of the project's failure catalog); ``--fault list`` shows them.
Works with PyTorch 1.13 (CPU, gloo) and 2.x (CUDA, NCCL) and never downloads
anything.

    python3 train.py --steps 5
    torchrun --nproc_per_node 2 --redirects 2 --tee 2 train.py --steps 5
"""

import argparse
import ctypes
import datetime
import os
import signal
import sys
import textwrap
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large

NUM_CLASSES = 19
VOID = 255  # Cityscapes' label for unlabeled, out-of-ROI and ego-vehicle pixels

# The dataset's own label colours (trainId order: road, sidewalk, building,
# wall, fence, pole, traffic light, traffic sign, vegetation, terrain, sky,
# person, rider, car, truck, bus, train, motorcycle, bicycle), then void.
PALETTE = (
    (128, 64, 128), (244, 35, 232), (70, 70, 70), (102, 102, 156),
    (190, 153, 153), (153, 153, 153), (250, 170, 30), (220, 220, 0),
    (107, 142, 35), (152, 251, 152), (70, 130, 180), (220, 20, 60),
    (255, 0, 0), (0, 0, 142), (0, 0, 70), (0, 60, 100), (0, 80, 100),
    (0, 0, 230), (119, 11, 32), (0, 0, 0),
)
MEAN = (0.485, 0.456, 0.406)  # ImageNet statistics, as Cityscapes recipes use
STD = (0.229, 0.224, 0.225)
ROAD, SIDEWALK, BUILDING, POLE, SKY = 0, 1, 2, 5, 10


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

class SyntheticCityscapes(Dataset):
    """Street-scene-like samples: sky, buildings, road and sidewalk bands,
    poles (stripes) and objects (blobs) of all 19 classes, with void regions
    (border, ego vehicle, unlabeled patches) set to 255 as in Cityscapes.

    Sample ``i`` depends only on (seed, i), so every run, worker and rank
    sees the same data.
    """

    def __init__(self, size, height, width, seed, fault):
        self.size = size
        self.height = height
        self.width = width
        self.seed = seed
        self.fault = fault
        # Set by the training loop before each epoch forks its workers;
        # only a fault ever sets it.
        self.poisoned = None
        self.palette = torch.tensor(PALETTE, dtype=torch.float32) / 255.0
        self.mean = torch.tensor(MEAN).view(3, 1, 1)
        self.std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index == self.poisoned:
            self.fault.corrupt_sample(index)
        gen = torch.Generator().manual_seed(self.seed * 1000003 + index)
        label = self._layout(gen)
        return self._render(label, gen), label

    def _layout(self, gen):
        h, w = self.height, self.width

        def uniform(lo, hi):
            return lo + (hi - lo) * torch.rand((), generator=gen).item()

        def box(x0, x1, y0, y1):
            # Fractions of the image to a slice of at least one pixel; regions
            # are painted through slices so that a 1024x2048 sample stays
            # cheap to make.
            c0, r0 = int(x0 * w), int(y0 * h)
            return (slice(r0, max(r0 + 1, int(y1 * h))), slice(c0, max(c0 + 1, int(x1 * w))))

        label = torch.full((h, w), BUILDING, dtype=torch.int64)
        label[:int(uniform(0.15, 0.35) * h)] = SKY
        road_top = int(uniform(0.55, 0.65) * h)
        label[road_top:] = ROAD
        # Sidewalks widen towards the camera, like a perspective view.
        depth = torch.linspace(0.0, 1.0, h - road_top).view(-1, 1)
        xs = torch.linspace(0.0, 1.0, w).view(1, w)
        kerb = uniform(0.1, 0.25) * depth
        label[road_top:][(xs < kerb) | (xs > 1.0 - kerb)] = SIDEWALK

        for _ in range(int(uniform(2, 5))):  # poles: thin vertical stripes
            x0 = uniform(0.0, 0.97)
            label[box(x0, x0 + 0.015, uniform(0.1, 0.4), road_top / h + 0.05)] = POLE

        for _ in range(int(uniform(6, 12))):  # objects: ellipses of any class
            cls = int(torch.randint(0, NUM_CLASSES, (), generator=gen))
            cx, cy = uniform(0.0, 1.0), uniform(0.2, 0.95)
            rx, ry = uniform(0.03, 0.15), uniform(0.03, 0.12)
            rows, cols = box(max(cx - rx, 0.0), min(cx + rx, 1.0),
                             max(cy - ry, 0.0), min(cy + ry, 1.0))
            ys = (torch.arange(rows.start, rows.stop).view(-1, 1) + 0.5) / h
            xs = (torch.arange(cols.start, cols.stop).view(1, -1) + 0.5) / w
            label[rows, cols][((xs - cx) / rx) ** 2 + ((ys - cy) / ry) ** 2 < 1.0] = cls

        # Void: the ego vehicle's bonnet, the out-of-ROI border and a few
        # unlabeled patches.
        label[int((1.0 - uniform(0.05, 0.12)) * h):] = VOID
        border = max(1, min(h, w) // 64)
        label[:border] = VOID
        label[-border:] = VOID
        label[:, :border] = VOID
        label[:, -border:] = VOID
        for _ in range(int(uniform(1, 4))):
            x0, y0 = uniform(0.0, 0.9), uniform(0.1, 0.8)
            label[box(x0, x0 + uniform(0.02, 0.1), y0, y0 + uniform(0.02, 0.1))] = VOID
        return label

    def _render(self, label, gen):
        colour_index = torch.where(label == VOID, torch.full_like(label, NUM_CLASSES), label)
        image = self.palette[colour_index].permute(2, 0, 1)
        # Light falling off with height and sensor noise, so that classes are
        # learnable from colour but not trivially.
        h = self.height
        shade = torch.linspace(1.1, 0.8, h).view(1, h, 1)
        noise = torch.randn(image.shape, generator=gen) * 0.08
        image = (image * shade + noise).clamp_(0.0, 1.0)
        return (image - self.mean) / self.std


def confusion_matrix(pred, target, num_classes):
    """Per-step confusion counts (rows: truth, columns: prediction), void excluded."""
    valid = target != VOID
    cells = target[valid] * num_classes + pred[valid]
    counts = torch.bincount(cells, minlength=num_classes * num_classes)
    return counts.view(num_classes, num_classes)


# --------------------------------------------------------------------------
# Faults: each one overrides a single hook of the healthy training.
# --------------------------------------------------------------------------

def null_dereference():
    """Read address 0 from native code: what a buggy C extension does."""
    ctypes.string_at(0)


class Fault:
    """Healthy run: nothing is injected."""

    name = "none"
    cases = ""
    min_world = 1

    def __init__(self, step, rank):
        self.step = step
        self.rank = rank

    @staticmethod
    def default_rank(world):
        # Off rank 0 when there are several ranks, so that the culprit is not
        # the rank that prints the log.
        return 1 if world > 1 else 0

    def describe(self):
        return "fault %s at step %d on rank %d" % (self.name, self.step, self.rank)

    def hits(self, rank, step):
        return rank == self.rank and step == self.step

    def make_criterion(self):
        return nn.CrossEntropyLoss(ignore_index=VOID)

    def poisoned_sample(self, rank, epoch, epoch_order, batch_size, steps_per_epoch, lookahead):
        return None

    def corrupt_sample(self, index):
        pass

    def add_loss(self, total, loss):
        return total + loss.item()

    def confusion(self, pred, target, rank, step):
        return confusion_matrix(pred, target, NUM_CLASSES)

    def all_reduce_stats(self, stats, rank, step):
        dist.all_reduce(stats)

    def after_step(self, rank, step):
        pass


class Label255(Fault):
    """The loss is built without ignore_index=255, so the void label reaches
    it: `IndexError: Target 255 is out of bounds.` on CPU, a device-side
    assert `t >= 0 && t < n_classes` on GPU, at the first step on every rank."""

    name = "label-255"
    cases = "S03, H03"

    def describe(self):
        return "fault %s on every rank" % self.name

    def make_criterion(self):
        return nn.CrossEntropyLoss()


class _SampleFault(Fault):
    """Base of the faults triggered by one sample of the fault rank's data.

    Workers load batches ahead of the training loop (``lookahead`` batches:
    workers x prefetch factor), so the poisoned sample is the first one of
    the batch that they start loading while the loop runs the fault step;
    the failure then surfaces during that step.
    """

    def poisoned_sample(self, rank, epoch, epoch_order, batch_size, steps_per_epoch, lookahead):
        first = (self.step - 1) // steps_per_epoch
        if rank != self.rank or epoch != first:
            return None
        # A loader prefetches within its epoch only.
        batch = min((self.step - 1) % steps_per_epoch + lookahead, steps_per_epoch - 1)
        return epoch_order[batch * batch_size]


class WorkerSegfault(_SampleFault):
    """A DataLoader worker dereferences NULL in native code while decoding one
    sample (ctypes.string_at(0)); the main process raises `DataLoader worker
    (pid N) is killed by signal: Segmentation fault.` during --fault-step on
    the fault rank. With --workers 0 the main process itself gets SIGSEGV."""

    name = "worker-segfault"
    cases = "T01, S08"

    def corrupt_sample(self, index):
        null_dereference()


class WorkerKilled(_SampleFault):
    """A DataLoader worker receives SIGKILL while loading one sample, standing
    in for the kernel OOM killer: `DataLoader worker (pid N) is killed by
    signal: Killed.` during --fault-step on the fault rank."""

    name = "worker-killed"
    cases = "T03"

    def corrupt_sample(self, index):
        # To its own thread, as no process of the job would send it: traindoc sees the kill()
        # calls of the job's processes.
        signal.pthread_kill(threading.get_ident(), signal.SIGKILL)


class Leak(Fault):
    """The running loss is summed as a tensor (`total_loss += loss`), so every
    step's autograd graph stays alive: memory grows each step (the `mem`
    column) on every rank; the run itself still ends with code 0."""

    name = "leak"
    cases = "H02, S04"

    def describe(self):
        return "fault %s on every rank, from the first step" % self.name

    def add_loss(self, total, loss):
        return total + loss


class RankExit(Fault):
    """The fault rank gives up on a "bad batch" and exits with code 1 after
    --fault-step; the others go on and fail in the next collective (gloo:
    `Connection closed by peer`; NCCL: a hang until torchrun stops them)."""

    name = "rank-exit"
    cases = "H08c, H11, T16"
    min_world = 2

    def after_step(self, rank, step):
        if self.hits(rank, step):
            print("[rank %d] step %d: bad batch, giving up" % (rank, step),
                  file=sys.stderr, flush=True)
            sys.exit(1)


class ShapeMismatch(Fault):
    """At --fault-step the fault rank (default 0) counts void as a 20th class,
    so the metrics tensor it all_reduces has 1+20*20 elements against 1+19*19
    on the others. Gloo: the others abort (`gloo::EnforceNotMet ...
    op.preamble.length <= op.nbytes`, SIGABRT) and the fault rank gets
    `Connection reset by peer`; NCCL: a hang or wrong values."""

    name = "shape-mismatch"
    cases = "T13, H05, S05"
    min_world = 2

    @staticmethod
    def default_rank(world):
        return 0

    def confusion(self, pred, target, rank, step):
        if not self.hits(rank, step):
            return super().confusion(pred, target, rank, step)
        target = torch.where(target == VOID, torch.full_like(target, NUM_CLASSES), target)
        return confusion_matrix(pred, target, NUM_CLASSES + 1)


class SkipCollective(Fault):
    """At --fault-step the fault rank skips the all_reduce of the step's
    metrics and goes on with training; its next collective (DDP's buffer
    broadcast in the next forward) never matches the others' all_reduce, so
    every rank waits until --pg-timeout (gloo: `Timed out waiting 60000ms for
    recv operation to complete`; NCCL: a watchdog timeout)."""

    name = "skip-collective"
    cases = "H08b, S06, T14"
    min_world = 2

    def all_reduce_stats(self, stats, rank, step):
        if not self.hits(rank, step):
            super().all_reduce_stats(stats, rank, step)


class Segfault(Fault):
    """The training process itself (the fault rank) dereferences NULL in
    native code after --fault-step: SIGSEGV, no Python error at all."""

    name = "segfault"
    cases = "S08"

    def after_step(self, rank, step):
        if self.hits(rank, step):
            null_dereference()


FAULTS = {f.name: f for f in (Fault, Label255, WorkerSegfault, WorkerKilled, Leak,
                              RankExit, ShapeMismatch, SkipCollective, Segfault)}


def fault_table(width=79):
    lines = []
    for cls in FAULTS.values():
        text = " ".join(cls.__doc__.split())
        if cls.cases:
            text += " Cases: %s." % cls.cases
        if cls.min_world > 1:
            text += " Needs >= %d ranks." % cls.min_world
        lines.append(textwrap.fill(text, width, initial_indent="  %-16s " % cls.name,
                                   subsequent_indent=" " * 19))
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Set-up
# --------------------------------------------------------------------------

def fail(message):
    """A usage error found after parsing: exit like argparse does (code 2)."""
    print("%s: error: %s" % (os.path.basename(sys.argv[0]), message), file=sys.stderr)
    sys.exit(2)


def image_size(text):
    try:
        height, width = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected HxW, e.g. 128x256, got %r" % text)
    if height < 32 or width < 32:
        # The backbone downsamples by 16.
        raise argparse.ArgumentTypeError("images must be at least 32x32")
    return height, width


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="faults (--fault NAME; cases of the project's failure catalog):\n"
               + fault_table())
    add = parser.add_argument
    add("--steps", type=int, default=20, help="optimizer steps in all (default 20)")
    add("--batch-size", type=int, default=4, help="images per rank and step (default 4)")
    add("--image-size", type=image_size, default=(128, 256), metavar="HxW",
        help="default 128x256; Cityscapes itself is 1024x2048")
    add("--dataset-size", type=int, default=256, help="samples per epoch (default 256)")
    add("--workers", type=int, default=2, help="DataLoader workers per rank (default 2)")
    add("--lr", type=float, default=0.01, help="initial learning rate (default 0.01)")
    add("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    add("--weight-decay", type=float, default=1e-4, help="default 1e-4")
    add("--log-every", type=int, default=1, help="log a line every N steps (default 1)")
    add("--seed", type=int, default=0, help="seeds the weights and the data (default 0)")
    add("--device", choices=("auto", "cpu", "cuda"), default="auto",
        help="auto (default): cuda when available; NCCL on cuda, gloo on cpu")
    add("--threads", type=int, default=0,
        help="torch threads per process (default: torch's own; cores/ranks under DDP on CPU)")
    add("--pg-timeout", type=float, default=60.0,
        help="process-group timeout in seconds (default 60; PyTorch's own is 1800)")
    add("--fault", choices=tuple(FAULTS) + ("list",), default="none", metavar="NAME",
        help="inject a failure: %s; 'list' describes them" % ", ".join(FAULTS))
    add("--fault-step", type=int, default=3, help="step at which the fault fires (default 3)")
    add("--fault-rank", type=int, default=None,
        help="rank on which it fires (default 1 under DDP; 0 for shape-mismatch)")
    args = parser.parse_args(argv)
    if args.fault == "list":
        print(fault_table())
        sys.exit(0)
    if args.batch_size < 2:
        # DeepLabV3's image-pooling branch has BatchNorm on a 1x1 map, which
        # cannot train on a single image.
        parser.error("--batch-size must be at least 2")
    for name in ("steps", "dataset_size", "log_every", "fault_step"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name.replace("_", "-"))
    if args.workers < 0 or args.threads < 0:
        parser.error("--workers and --threads cannot be negative")
    if args.fault != "none" and args.fault_step > args.steps:
        parser.error("--fault-step %d is after the last step (%d)" % (args.fault_step, args.steps))
    return args


class Context:
    """Where this process runs: rank, world, device."""

    def __init__(self, args):
        # torchrun (and most launchers) describe the job in the environment.
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(self.world)))
        if args.device == "cuda" and not torch.cuda.is_available():
            fail("--device cuda, but CUDA is not available")
        use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
        if use_cuda:
            # Before anything touches CUDA, so that no rank opens a context
            # on GPU 0 that is not its own.
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        self.backend = "nccl" if use_cuda else "gloo"
        self.prefix = "[rank %d] " % self.rank if self.world > 1 else ""

    @property
    def distributed(self):
        return self.world > 1

    def log(self, text):
        if self.rank == 0:
            print(self.prefix + text, flush=True)


def set_threads(args, ctx):
    if args.threads:
        torch.set_num_threads(args.threads)
    elif ctx.distributed and ctx.device.type == "cpu":
        # Ranks on one host share its cores; oversubscribing them makes
        # every rank slower than one thread each.
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:
            cores = os.cpu_count() or 1
        torch.set_num_threads(max(1, cores // ctx.local_world))


def memory_mib(device):
    """Memory the log shows: tensors on the GPU, resident set on the CPU."""
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device) / 2**20
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def pixel_accuracy(conf):
    return (conf.diag().sum() / conf.sum().clamp(min=1)).item()


def mean_iou(conf):
    inter = conf.diag()
    union = conf.sum(0) + conf.sum(1) - inter
    present = union > 0
    if not present.any():
        return 0.0
    return (inter[present] / union[present]).mean().item()


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------

def make_loader(args, ctx, fault):
    height, width = args.image_size
    dataset = SyntheticCityscapes(args.dataset_size, height, width, args.seed, fault)
    # The same sampler with and without DDP: the sample order is a pure
    # function of (seed, epoch), so runs repeat and a fault can aim at the
    # batch of a given step.
    sampler = DistributedSampler(dataset, num_replicas=ctx.world, rank=ctx.rank,
                                 shuffle=True, seed=args.seed, drop_last=True)
    if len(sampler) < args.batch_size:
        fail("--dataset-size %d is too small for %d rank(s) x batch %d"
             % (args.dataset_size, ctx.world, args.batch_size))
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, pin_memory=ctx.device.type == "cuda",
                        drop_last=True)  # a last batch of 1 would break BatchNorm
    return dataset, sampler, loader


def make_model(args, ctx):
    model = deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                         num_classes=NUM_CLASSES, aux_loss=False)
    model.to(ctx.device)
    if ctx.distributed:
        device_ids = [ctx.local_rank] if ctx.device.type == "cuda" else None
        model = DistributedDataParallel(model, device_ids=device_ids)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    # DeepLab's "poly" schedule.
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (1.0 - s / args.steps) ** 0.9)
    return model, optimizer, scheduler


def train(args, ctx, fault):
    torch.manual_seed(args.seed)  # same initial weights on every rank
    dataset, sampler, loader = make_loader(args, ctx, fault)
    steps_per_epoch = len(sampler) // args.batch_size
    # Batches the workers load ahead of the loop (PyTorch 2.x leaves the
    # prefetch factor None without workers).
    lookahead = args.workers * (getattr(loader, "prefetch_factor", None) or 0)
    model, optimizer, scheduler = make_model(args, ctx)
    criterion = fault.make_criterion()

    params = sum(p.numel() for p in model.parameters()) / 1e6
    ctx.log("deeplabv3_mobilenet_v3_large %.1fM params, %d classes, %dx%d images, "
            "batch %d per rank, %d rank(s), %s%s, %d workers, %d threads, %d steps"
            % (params, NUM_CLASSES, args.image_size[0], args.image_size[1], args.batch_size,
               ctx.world, ctx.device, " (%s)" % ctx.backend if ctx.distributed else "",
               args.workers, torch.get_num_threads(), args.steps))
    if fault.name != "none":
        ctx.log(fault.describe())

    model.train()
    total_loss = 0.0  # this rank's, for the final line
    global_loss = 0.0  # averaged over ranks
    window_conf = torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.float64)
    run_conf = torch.zeros_like(window_conf)
    peak_mem = 0.0
    step = epoch = window_steps = 0
    start = window_start = time.perf_counter()
    while step < args.steps:
        sampler.set_epoch(epoch)
        # Workers are forked when the epoch's iterator starts, so they see
        # this attribute.
        dataset.poisoned = fault.poisoned_sample(ctx.rank, epoch, list(sampler),
                                                 args.batch_size, steps_per_epoch, lookahead)
        for images, labels in loader:
            step += 1
            images = images.to(ctx.device, non_blocking=True)
            labels = labels.to(ctx.device, non_blocking=True)
            logits = model(images)["out"]
            loss = criterion(logits, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            scheduler.step()
            total_loss = fault.add_loss(total_loss, loss)

            # The step's loss and confusion counts, summed over ranks in one
            # collective.
            with torch.no_grad():
                conf = fault.confusion(logits.argmax(1), labels, ctx.rank, step)
                stats = torch.cat([loss.detach().double().view(1), conf.flatten().double()])
                if ctx.distributed:
                    fault.all_reduce_stats(stats, ctx.rank, step)
            stats = stats.cpu()
            step_loss = stats[0].item() / ctx.world
            global_loss += step_loss
            step_conf = stats[1:1 + NUM_CLASSES * NUM_CLASSES].view(NUM_CLASSES, NUM_CLASSES)
            window_conf += step_conf
            run_conf += step_conf
            fault.after_step(ctx.rank, step)

            window_steps += 1
            mem = memory_mib(ctx.device)
            peak_mem = max(peak_mem, mem)
            if step % args.log_every == 0 or step == args.steps:
                rate = (window_steps * args.batch_size * ctx.world
                        / (time.perf_counter() - window_start))
                ctx.log("step %d/%d loss %.4f acc %.3f lr %.5f %.1f img/s mem %.0f MiB"
                        % (step, args.steps, step_loss, pixel_accuracy(window_conf), lr, rate,
                           mem))
                window_conf.zero_()
                window_steps = 0
                window_start = time.perf_counter()
            if step >= args.steps:
                break
        epoch += 1

    elapsed = time.perf_counter() - start
    ctx.log("done %d steps in %.1f s: mean loss %.4f (this rank %.4f), acc %.3f, mIoU %.3f, "
            "%.1f img/s, peak mem %.0f MiB"
            % (step, elapsed, global_loss / step, float(total_loss) / step,
               pixel_accuracy(run_conf), mean_iou(run_conf),
               step * args.batch_size * ctx.world / elapsed, peak_mem))


def main(argv=None):
    args = parse_args(argv)
    ctx = Context(args)
    fault_cls = FAULTS[args.fault]
    if ctx.world < fault_cls.min_world:
        fail("--fault %s needs at least %d ranks, e.g. torchrun "
             "--nproc_per_node 2 --redirects 2 --tee 2 %s"
             % (args.fault, fault_cls.min_world, sys.argv[0]))
    fault_rank = args.fault_rank
    if fault_rank is None:
        fault_rank = fault_cls.default_rank(ctx.world)
    if not 0 <= fault_rank < ctx.world:
        fail("--fault-rank %d is not a rank of this job (world size %d)"
             % (fault_rank, ctx.world))
    fault = fault_cls(args.fault_step, fault_rank)
    set_threads(args, ctx)
    if ctx.distributed:
        dist.init_process_group(ctx.backend,
                                timeout=datetime.timedelta(seconds=args.pg_timeout))
    train(args, ctx, fault)
    if ctx.distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
