"""The PyTorch DistributedDataParallel peer of train_bench: the same models, batch and
optimizer, trained with DDP over the gloo backend on `--workers` local processes.
Prints one JSON line like train_bench's (examples_per_sec summed over workers).

usage: ddp_peer.py --model cnn|mlp --batch-size B --steps N --warmup W --workers K [--pin] [--compression fp16]
       ddp_peer.py ... --workers K --rank R --master ADDRESS:PORT   (one rank of K, for a worker
                       on a host of its own: the simulated hosts of make bench's hosts group)
"""

import argparse
import gzip
import json
import os
import resource
import socket
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def make_model(name):
    """train_bench's models, initialised from the same seed."""
    torch.manual_seed(1)
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 13 * 13, 64), nn.ReLU(), nn.Linear(64, 10))
    return nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))


def read_idx(path):
    """An IDX file (gzip) as a uint8 tensor of its items, the header dropped."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8)


def make_batches(name, batch_size, count):
    """train_bench's data: up to `count` batches, which callers cycle through: the first
    Fashion-MNIST training images for the CNN (as many whole batches as the 60 000 images
    hold), noise for the MLP."""
    if name == "cnn":
        labels = read_idx(f"{FASHION_MNIST}/train-labels-idx1-ubyte.gz")
        if labels.numel() < batch_size:
            sys.exit(f"ddp_peer: --batch-size {batch_size} is more than the {labels.numel()} Fashion-MNIST images")
        count = min(count, labels.numel() // batch_size)
        examples = batch_size * count
        images = read_idx(f"{FASHION_MNIST}/train-images-idx3-ubyte.gz")[:examples * 784].float().div_(255.0)
        labels = labels[:examples].long()
        return images.reshape(count, batch_size, 1, 28, 28), labels.reshape(count, batch_size)
    torch.manual_seed(7)
    return torch.randn(count, batch_size, 1024), torch.randint(0, 10, (count, batch_size))


def worker(rank, args, master, results):
    if args.pin:  # as est-launch --cpu-bind auto binds our workers: one block of CPUs each
        cpus = sorted(os.sched_getaffinity(0))
        block = len(cpus) // args.workers
        if block > 0:
            os.sched_setaffinity(0, cpus[rank * block:(rank + 1) * block])
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = master.rsplit(":", 1)
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    model = nn.parallel.DistributedDataParallel(make_model(args.model))
    if args.compression == "fp16":  # DDP's own: gradients cast to float16 for the all-reduce, no error feedback
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs, labels = make_batches(args.model, args.batch_size, args.warmup + args.steps)

    def step(i):
        optimizer.zero_grad()
        F.cross_entropy(model(inputs[i % len(inputs)]), labels[i % len(labels)]).backward()
        optimizer.step()

    for i in range(args.warmup):
        step(i)
    dist.barrier()
    start = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
    seconds = time.perf_counter() - start
    dist.barrier()  # every rank has finished its steps before any of them tears down
    results.put((rank, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
    # The process ends without Gloo's teardown, once its result is out: across simulated hosts
    # that teardown has waited forever on one rank after the other had left, spinning in system
    # calls with the GIL held (seen: 8 minutes at 100 % CPU), so no Python watchdog could end it.
    if hasattr(results, "join_thread"):  # a multiprocessing queue: its feeder thread sends the result
        results.close()
        results.join_thread()
    sys.stdout.flush()
    os._exit(0)


class OneResult:
    """Prints the one result of a worker run in this process (the queue's put) as its JSON line."""

    def __init__(self, args):
        self.args = args

    def put(self, value):
        rank, seconds, rss = value
        args = self.args
        print(json.dumps({"loop": "ddp", "model": args.model, "batch_size": args.batch_size, "steps": args.steps,
                          "workers": args.workers, "rank": rank,
                          "examples_per_sec": args.steps * args.batch_size / seconds, "peak_rss_mb": rss}),
              flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_workers(target, args, workers):
    """Starts `workers` spawned processes running target(rank, args, master, results), rank 0
    listening on a free local port; returns them and the queue they put their results on."""
    context = mp.get_context("spawn")
    results = context.Queue()
    master = f"127.0.0.1:{free_port()}"
    processes = [context.Process(target=target, args=(rank, args, master, results)) for rank in range(workers)]
    for process in processes:
        process.start()
    return processes, results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pin", action="store_true", help="bind each worker to its own block of CPUs")
    parser.add_argument("--compression", choices=["none", "fp16"], default="none",
                        help="fp16: DDP's fp16_compress_hook")
    parser.add_argument("--rank", type=int, help="run only this rank (with --master), e.g. on a host of its own")
    parser.add_argument("--master", help="rank 0's ADDRESS:PORT when --rank is given")
    args = parser.parse_args()
    if args.rank is not None:
        if not args.master or not 0 <= args.rank < args.workers:
            raise SystemExit(f"ddp_peer: --rank {args.rank} needs --master ADDRESS:PORT and 0 <= rank < --workers")
        worker(args.rank, args, args.master, OneResult(args))
        return
    processes, results = start_workers(worker, args, args.workers)
    for process in processes:
        process.join(timeout=600)
        if process.exitcode != 0:
            raise SystemExit(f"ddp_peer: worker exited with {process.exitcode}")
    per_worker = sorted(results.get(timeout=10) for _ in processes)
    examples = sum(args.steps * args.batch_size / seconds for _, seconds, _ in per_worker)
    print(json.dumps({"loop": "ddp", "model": args.model, "batch_size": args.batch_size, "steps": args.steps,
                      "workers": args.workers, "examples_per_sec": examples,
                      "peak_rss_mb": max(rss for _, _, rss in per_worker)}))


if __name__ == "__main__":
    main()
