"""Shared pieces of the one-GPU kernel measurements (kernels.py, unfused.py, attn_len.py,
launch.py): the command line, CUDA-event timing and the JSON-lines output."""
import argparse
import json
import os

import torch


def parse_args(doc, extra=None):
    """--out DIR, --warmup, --iters (and what `extra(parser)` adds); selects GPU 0 and creates
    DIR. Returns (args, device)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    if extra is not None:
        extra(ap)
    args = ap.parse_args()
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    os.makedirs(args.out, exist_ok=True)
    return args, dev


def timed(fn, warmup, iters):
    """Mean seconds of one call of `fn` over `iters` calls after `warmup`, by CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def write_jsonl(path, rows, dev, **settings):
    """A first line {"environment": versions, GPU and `settings`}, then one line per row."""
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(dev)}
    env.update(settings)
    with open(path, "w") as out:
        out.write(json.dumps({"environment": env}) + "\n")
        for r in rows:
            out.write(json.dumps(r) + "\n")
