"""The PyTorch DistributedDataParallel peer of est-train --model transformer_lm: the same byte-level
Transformer language model (PyTorch's own TransformerEncoderLayer, as LibTorch's), the same text
windows of Debian's fortunes package and validation share, the same recipe (AdamW with weight
decay 0.1 on the weight matrices only, linear warmup into cosine decay, clipping at global norm 1,
dropout 0.1), trained with DDP over gloo on `--workers` local processes, each reading its shard of
the windows. Prints one JSON line: examples (windows) per second over the timed steps, summed over
workers, and the validation loss (the next byte's cross-entropy in nats) after the last step.

usage: lm_ddp_peer.py --steps N --batch-size B [--workers 2] [--text-dir /usr/share/games/fortunes]
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from ddp_peer import start_workers  # beside this file

CONTEXT, WIDTH, HEADS, LAYERS, FEED_FORWARD, DROPOUT = 64, 128, 4, 2, 512, 0.1
PEAK, WEIGHT_DECAY, CLIP, HELD_OUT_EVERY = 2e-3, 0.1, 1.0, 20
TIMING_WARMUP = 10  # steps before the timed ones


class TransformerLm(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(256, WIDTH)
        self.positions = nn.Embedding(CONTEXT, WIDTH)
        self.dropout = nn.Dropout(DROPOUT)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(WIDTH, HEADS, FEED_FORWARD, DROPOUT)
                                    for _ in range(LAYERS))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 256)

    def forward(self, tokens):
        length = tokens.size(1)
        x = self.dropout(self.tokens(tokens) + self.positions(torch.arange(length))).transpose(0, 1)
        causal = torch.full((length, length), float("-inf")).triu(1)
        for layer in self.layers:
            x = layer(x, causal)
        return self.head(self.norm(x.transpose(0, 1)))


def windows(text_dir):
    """est-train's windows: the fortune files (no '.' in the name) in name order, cut into
    CONTEXT + 1 bytes every CONTEXT; every HELD_OUT_EVERY-th is validation text."""
    names = sorted(n for n in os.listdir(text_dir)
                   if "." not in n and os.path.isfile(os.path.join(text_dir, n))
                   and not os.path.islink(os.path.join(text_dir, n)))
    text = b"".join(open(os.path.join(text_dir, n), "rb").read() for n in names)
    corpus = torch.frombuffer(bytearray(text), dtype=torch.uint8).long()
    count = (corpus.numel() - 1) // CONTEXT
    cut = corpus[:count * CONTEXT + 1].unfold(0, CONTEXT + 1, CONTEXT)
    held_out = torch.arange(count) % HELD_OUT_EVERY == HELD_OUT_EVERY - 1
    return cut[~held_out], cut[held_out]


def learning_rate(step, steps):
    """Keras's LinearWarmup into CosineDecay(alpha 0.1), as est-train's transformer_lm sets it."""
    warmup = max(1, min(100, steps // 10))
    if step < warmup:
        return PEAK * step / warmup
    decay_steps = max(1, steps - warmup)
    progress = min(step - warmup, decay_steps) / decay_steps
    return PEAK * (0.9 * 0.5 * (1 + math.cos(math.pi * progress)) + 0.1)


def worker(rank, args, master, results):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = master.rsplit(":", 1)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    torch.manual_seed(1 + rank)
    train, validation = windows(args.text_dir)
    shard = train[rank::args.workers]
    model = TransformerLm()
    torch.manual_seed(1)
    for p in model.parameters():  # every rank starts from rank 0's values, as DDP broadcasts them
        dist.broadcast(p.data, 0)
    ddp = nn.parallel.DistributedDataParallel(model)
    decayed = [p for n, p in model.named_parameters()
               if p.dim() == 2 and not n.startswith(("tokens.", "positions."))]
    rest = [p for n, p in model.named_parameters()
            if not (p.dim() == 2 and not n.startswith(("tokens.", "positions.")))]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": WEIGHT_DECAY},
                                   {"params": rest, "weight_decay": 0.0}], lr=PEAK)
    per_worker = args.batch_size // args.workers
    order = torch.randperm(len(shard))
    position = 0
    start = None
    for step in range(args.steps):
        if step == TIMING_WARMUP:
            dist.barrier()
            start = time.perf_counter()
        if position + per_worker > len(order):
            order, position = torch.randperm(len(shard)), 0
        batch = shard[order[position:position + per_worker]]
        position += per_worker
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, args.steps)
        optimizer.zero_grad()
        logits = ddp(batch[:, :CONTEXT])
        F.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
    dist.barrier()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        losses = [F.cross_entropy(model(chunk[:, :CONTEXT]).reshape(-1, 256), chunk[:, 1:].reshape(-1),
                                  reduction="sum").item() for chunk in validation.split(256)]
    loss = sum(losses) / (validation.size(0) * CONTEXT)
    results.put((rank, seconds, loss))
    dist.barrier()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch, split over the workers")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--text-dir", default="/usr/share/games/fortunes")
    args = parser.parse_args()
    if args.steps <= TIMING_WARMUP:
        sys.exit(f"lm_ddp_peer: --steps must be above {TIMING_WARMUP}, got {args.steps}")
    processes, results = start_workers(worker, args, args.workers)
    per_worker = sorted(results.get(timeout=3600) for _ in processes)
    for process in processes:
        process.join(timeout=600)
        if process.exitcode != 0:
            sys.exit(f"lm_ddp_peer: worker exited with {process.exitcode}")
    seconds = max(s for _, s, _ in per_worker)
    print(json.dumps({"loop": "ddp", "model": "transformer_lm", "batch_size": args.batch_size, "steps": args.steps,
                      "workers": args.workers,
                      "examples_per_sec": (args.steps - TIMING_WARMUP) * args.batch_size / seconds,
                      "validation_loss": per_worker[0][2]}))


if __name__ == "__main__":
    main()
