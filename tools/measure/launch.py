#!/usr/bin/env python3
"""Cost of a kernel launched from PyTorch eagerly against the same kernel replayed from a CUDA graph.

    python3 tools/measure/launch.py --out DIR

Behind two constants of the Megatron-Core step-time model (planner/cost/time.hpp):
MegatronTimeFit::kernel_overhead (fitted per system, 4.6-7.7 us per kernel) and
kGraphedKernelShare (what a graph-replayed kernel costs relative to a launched one).

A chain of N dependent tiny kernels (so that each kernel's own work is far below its launch
cost) is timed three ways, per kernel:
  * eager: the ops issued from Python one by one (PyTorch dispatch + CUDA launch, the host is
    the bottleneck and the GPU waits);
  * graph: the same chain captured once with torch.cuda.graph and replayed (no host work per
    kernel; what remains is the GPU-side gap between back-to-back kernels);
  * the ratio graph / eager.
Kernels: an in-place add on a 4096-element BF16 tensor, a 256x256x256 BF16 GEMM, and a
silu*mul on 4096 elements (three kernels: silu, mul, and the output copy) -- the shapes of
per-layer glue kernels and of one small expert GEMM.

Writes DIR/launch.jsonl: a first line {"environment": ...}, then one line per point
{"kernel", "chain", "mode": "eager" | "graph", "seconds_per_kernel"}.
"""
import argparse
import os
import time

import torch
import torch.nn.functional as F

from bench_util import write_jsonl


def per_kernel(fn, kernels, repeats):
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best / kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chain", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    os.makedirs(args.out, exist_ok=True)
    x = torch.zeros(4096, device=dev, dtype=torch.bfloat16)
    a = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
    b = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
    g = torch.randn(4096, device=dev, dtype=torch.bfloat16)
    out = torch.empty(256, 256, device=dev, dtype=torch.bfloat16)
    y = torch.empty(4096, device=dev, dtype=torch.bfloat16)

    def add_chain():
        for _ in range(args.chain):
            x.add_(1)

    def gemm_chain():
        for _ in range(args.chain):
            torch.mm(a, b, out=out)

    def swiglu_chain():
        for _ in range(args.chain):
            y.copy_(F.silu(g) * g)

    cases = [("add_4096", add_chain, 1), ("gemm_256", gemm_chain, 1), ("silu_mul_4096", swiglu_chain, 3)]
    rows = []
    for name, fn, kernels_per_op in cases:
        fn()  # warm up (cuBLAS handles, allocator)
        kernels = args.chain * kernels_per_op
        eager = per_kernel(fn, kernels, args.repeats)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graph.replay()
        replay = per_kernel(graph.replay, kernels, args.repeats)
        rows.append({"kernel": name, "chain": kernels, "mode": "eager", "seconds_per_kernel": eager})
        rows.append({"kernel": name, "chain": kernels, "mode": "graph", "seconds_per_kernel": replay})
        print(f"{name:15s} eager {eager * 1e6:6.2f} us/kernel  graph {replay * 1e6:6.2f} us/kernel  "
              f"ratio {replay / eager:.3f}", flush=True)
    write_jsonl(os.path.join(args.out, "launch.jsonl"), rows, dev, chain=args.chain, repeats=args.repeats)


if __name__ == "__main__":
    main()
