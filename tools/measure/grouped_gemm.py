#!/usr/bin/env python3
"""Routed experts' GEMMs as Transformer Engine's grouped GEMM runs them, against tokens per expert.

    python3 tools/measure/grouped_gemm.py --out DIR [--dtypes bf16,fp8]    # one GPU, about 1 min

For E local experts with T tokens each, runs one MoE layer's expert GEMMs of a training step:
per expert fc1 (K = h, N = 2·f) and fc2 (K = f, N = h), each forward, dgrad and wgrad (the
shapes of gemm_size.py's linear_train), 6 GEMMs per expert. Transformer Engine's grouped GEMM
(general_grouped_gemm) issues the experts' GEMMs round-robin on its compute streams
(transformer_engine/common/util/multi_stream.h: num_compute_streams = 4), forked from and
joined to the main stream; --streams 1 gives the same GEMMs on one stream for comparison.
BF16 uses torch.matmul, FP8 torch._scaled_mm (as gemm_size.py). Each layer is captured in one
CUDA graph and replayed (CUDA events, mean over --iters), so host launch time does not enter.

Writes DIR/grouped_gemm.jsonl: a first line {"environment": ...}, then one line per point
{"kind": "grouped_train", "dtype", "experts", "tokens", "hidden", "ffn", "streams", "seconds",
"tflops"}; FLOP = experts · 6 · T · (h·2f + f·h).
"""
import os
import sys

import torch

from bench_util import parse_args, timed, write_jsonl
from gemm_size import linear_train

TOKENS = [128, 256, 512, 1024, 2048, 4096, 8192]
EXPERTS = [4, 16]
SHAPES = [(2048, 768), (4096, 1536), (7168, 2048), (2880, 2880)]  # (hidden, expert FFN width)


def layer(dt, experts, t, h, f, dev):
    """Callables, one per GEMM triple in TE's issue order: expert i's fc1 then fc2."""
    calls = []
    for _ in range(experts):
        calls.append(linear_train(dt, t, h, 2 * f, dev))
        calls.append(linear_train(dt, t, f, h, dev))
    return calls


def graphed(calls, streams):
    """One CUDA graph of the calls, call i on side stream i % streams (forked from and joined to
    the capturing stream), or all on the capturing stream when streams == 1."""
    side = [torch.cuda.Stream() for _ in range(streams)]
    for c in calls:  # warm-up outside the capture
        c()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        main = torch.cuda.current_stream()
        if streams == 1:
            for c in calls:
                c()
        else:
            fork = torch.cuda.Event()
            fork.record(main)
            for s in side:
                s.wait_event(fork)
            for i, c in enumerate(calls):
                with torch.cuda.stream(side[i % streams]):
                    c()
            for s in side:
                main.wait_stream(s)
    return g.replay


def options(ap):
    ap.add_argument("--dtypes", default="bf16,fp8")


def main():
    args, dev = parse_args(__doc__, options)
    fp8_ok = torch.cuda.get_device_capability(dev) >= (8, 9) and hasattr(torch, "float8_e4m3fn")
    dtypes = [d for d in args.dtypes.split(",") if d == "bf16" or fp8_ok]
    rows = []
    for dt in dtypes:
        for h, f in SHAPES:
            for e in EXPERTS:
                for t in TOKENS:
                    calls = layer(dt, e, t, h, f, dev)
                    for streams in (4, 1):
                        sec = timed(graphed(calls, streams), args.warmup, args.iters)
                        flop = e * 6.0 * t * (h * 2 * f + f * h)
                        rows.append({"kind": "grouped_train", "dtype": dt, "experts": e, "tokens": t, "hidden": h,
                                     "ffn": f, "streams": streams, "seconds": sec, "tflops": flop / sec / 1e12})
                    del calls
                    torch.cuda.empty_cache()
            print(f"grouped_gemm.py: {dt} h {h} f {f} done", file=sys.stderr, flush=True)
    write_jsonl(os.path.join(args.out, "grouped_gemm.jsonl"), rows, dev, warmup=args.warmup, iters=args.iters,
                timing="cuda_graph")


if __name__ == "__main__":
    main()
