"""A stand-in for a job of N ranks on N GPUs, for the tests that run with the fake NVML: a
launcher starts N processes with RANK, LOCAL_RANK and WORLD_SIZE set (as torchrun does) that
sleep; one of them may print a framework's GPU error text and exit 1, as a real rank would.

Usage: gpu_ranks.py <ranks> <seconds> [<failing rank> <text file>]
       gpu_ranks.py --rank <seconds> [<text file>]   (one rank: what torchrun can launch)
"""
import os
import subprocess
import sys
import time


def rank_main(seconds, text_file):
    time.sleep(seconds)
    if text_file:
        with open(text_file, encoding="utf-8") as text:
            sys.stderr.write(text.read())
        sys.stderr.flush()
        sys.exit(1)


def main():
    if sys.argv[1] == "--rank":
        rank_main(float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
        return
    ranks, seconds = int(sys.argv[1]), float(sys.argv[2])
    failing = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    children = []
    for rank in range(ranks):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks))
        argv = [sys.executable, __file__, "--rank", str(seconds)]
        if rank == failing:
            argv.append(sys.argv[4])
        children.append(subprocess.Popen(argv, env=env))
    codes = [child.wait() for child in children]
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
