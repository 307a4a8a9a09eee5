"""The peer of make bench's elastic recovery figures: train_bench's CNN trained with PyTorch DDP
(gloo) under torchrun's elastic agent, which restarts every local rank after one fails; each
rank then resumes from the checkpoint rank 0 saves every --save-steps steps (torch.save), as
torchrun's documentation asks of a training script.

usage: torchrun --standalone --nproc_per_node K --max_restarts R [--monitor_interval SECS] \\
           elastic_ddp_peer.py --checkpoint-dir DIR --batch-size B --save-steps S --max-steps N

Prints, flushed: "elastic_ddp_peer: rank R pid P restart C" from every rank as it starts,
"elastic_ddp_peer: resumed from step N" from rank 0 after loading a checkpoint, and
"elastic_ddp_peer: step N restart C at T" from rank 0 after each completed step N, T being
time.time() then (torchrun's --tee copies the lines from files, a little later).
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_peer import make_batches, make_model  # noqa: E402  (beside this file)


def say(text):
    print(f"elastic_ddp_peer: {text}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--batch-size", type=int, default=64, help="each rank's batch")
    parser.add_argument("--save-steps", type=int, default=20)
    parser.add_argument("--max-steps", type=int, default=1000000)
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    say(f"rank {rank} pid {os.getpid()} restart {restart}")
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    model = make_model("cnn")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    path = os.path.join(args.checkpoint_dir, "checkpoint.pt")
    step = 0
    if os.path.exists(path):
        state = torch.load(path)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        if rank == 0:
            say(f"resumed from step {step}")
    model = nn.parallel.DistributedDataParallel(model)
    inputs, labels = make_batches("cnn", args.batch_size, 256)
    while step < args.max_steps:
        batch = (step * world + rank) % len(inputs)
        optimizer.zero_grad()
        F.cross_entropy(model(inputs[batch]), labels[batch]).backward()
        optimizer.step()
        step += 1
        if rank == 0:
            say(f"step {step} restart {restart} at {time.time():.6f}")
            if step % args.save_steps == 0:
                temporary = path + f".tmp-{os.getpid()}"
                torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "step": step},
                           temporary)
                os.replace(temporary, path)
    dist.barrier()


if __name__ == "__main__":
    main()
