"""Shared pieces of the one-GPU measurements (kernels.py, unfused.py, attn_len.py, launch.py,
alloc_limit.py, mcore_alloc_limit.py): the command line, CUDA-event timing, the JSON-lines output,
and the allocator-limit bisection with its one process per allocator setting."""
import argparse
import json
import os
import subprocess

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


def bisect_block(trial, total, context, peak0, reserved0, step, below):
    """The largest persistent block (bytes, a multiple of `step`) beside which `trial` still runs,
    by bisection between `below` bytes under the room the block-less step leaves (total - context
    - peak0) and 1 GiB over it. `trial(block_bytes)` returns (ran, peak allocated, peak reserved,
    allocator retries); `peak0`, `reserved0` are the block-less step's peaks. Returns (block, peak
    allocated, peak reserved, retries) of that largest block (alloc_limit.py, mcore_alloc_limit.py)."""
    room = total - context - peak0
    lo, hi = max(0, room - below) // step * step, room + (1 << 30)
    at_lo = trial(lo)
    if not at_lo[0]:
        lo, at_lo = 0, (True, peak0, reserved0, 0)
    best = (lo,) + tuple(at_lo[1:])
    while hi - lo > step:
        # lo stays a multiple of step and mid lies strictly between lo and hi: each trial narrows.
        mid = max(lo + step, (lo + hi) // 2 // step * step)
        r = trial(mid)
        if r[0]:
            lo, best = mid, (mid,) + tuple(r[1:])
        else:
            hi = mid
    return best


def run_per_allocator(path, env, allocators, cases):
    """Each (allocator setting, case) in its own process, since PYTORCH_CUDA_ALLOC_CONF is read at
    CUDA initialisation: `cases` is a list of (label, argv); the child prints one JSON line, and a
    child that prints none is written as {"case": label, "alloc_conf": ..., "error": its stderr's
    tail}. Writes `path`: {"environment": env}, then one line per run, flushed as it comes."""
    with open(path, "w") as out:
        out.write(json.dumps({"environment": env}) + "\n")
        for conf in allocators:
            for label, argv in cases:
                e = dict(os.environ)
                e.pop("PYTORCH_CUDA_ALLOC_CONF", None)
                if conf:
                    e["PYTORCH_CUDA_ALLOC_CONF"] = conf
                p = subprocess.run(argv, env=e, capture_output=True, text=True)
                line = (p.stdout.strip().splitlines() or
                        [json.dumps({"case": label, "alloc_conf": conf, "error": p.stderr[-1500:]})])[-1]
                out.write(line + "\n")
                out.flush()
                print(line, flush=True)
