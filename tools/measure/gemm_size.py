#!/usr/bin/env python3
"""Small-GEMM efficiency of a linear layer's training GEMMs against tokens and width.

    python3 tools/measure/gemm_size.py --out DIR [--dtypes bf16,fp8]    # one GPU, about 1 min

For each point (tokens T, input width K, output width N) times the three GEMMs one linear
layer runs per training step, back to back:
    forward   Y  = X W^T     (T x K) . (K x N)
    dgrad     dX = dY W      (T x N) . (N x K)
    wgrad     dW = dY^T X    (N x T) . (T x K)   (the reduction runs over the tokens)
6·T·K·N FLOP in all. BF16 uses torch.matmul; FP8 uses torch._scaled_mm (e4m3 operands,
per-tensor scales, bf16 output; the operands are cast and laid out before timing, as
Transformer Engine keeps FP8 copies and transposes). Time: the three GEMMs are captured
--reps times in one CUDA graph and the graph is replayed (CUDA events, mean over --iters
replays), so that the host's launch time, which the time models charge separately (kernel
and host terms), does not enter: launched one by one from Python, a GEMM below ~20 us is
host-bound and would read as a slow GEMM.

The Megatron-Core and AutoModel time models price GEMMs at peak x MAMF x GemmSizeFactor(T, N)
with GemmSizeFactor = T/(T + kGemmTokensK0) · N/(N + kGemmWidthK0) (planner/cost/time.hpp);
tests/accuracy/gemm_size_test.cpp fits the two constants to these points, each normalised by
the best rate of its dtype in the same run.

Writes DIR/gemm_size.jsonl: a first line {"environment": ...}, then one line per point
{"kind": "linear_train", "dtype", "tokens", "k", "n", "seconds", "tflops"}.
"""
import os
import sys

import torch

from bench_util import parse_args, timed, write_jsonl

TOKENS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
IN_WIDTHS = [2048, 4096, 8192]
OUT_WIDTHS = [256, 512, 1024, 2048, 4096, 8192, 16384]


def linear_train(dt, t, k, n, dev):
    """A callable running the three GEMMs of (t, k, n) in dtype `dt`."""
    x = torch.randn(t, k, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    dy = torch.randn(t, n, device=dev, dtype=torch.bfloat16)
    if dt == "bf16":
        return lambda: (torch.matmul(x, w.t()), torch.matmul(dy, w), torch.matmul(dy.t(), x))
    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=dev, dtype=torch.float32)
    # _scaled_mm wants a row-major first and a column-major second operand.
    x8, w8 = x.to(f8), w.to(f8)
    dy8 = dy.to(f8)
    w8_t = w8.t()                          # (k, n) column-major: forward
    w8_col = w8.t().contiguous().t()       # (n, k) column-major: dgrad
    dy8_t = dy8.t().contiguous()           # (n, t) row-major: wgrad
    x8_col = x8.t().contiguous().t()       # (t, k) column-major: wgrad
    mm = torch._scaled_mm
    return lambda: (mm(x8, w8_t, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                    mm(dy8, w8_col, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                    mm(dy8_t, x8_col, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))


def graphed(call, reps):
    """A callable replaying one CUDA graph of `reps` calls of `call`."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            call()  # warm-up outside the capture (cuBLAS workspaces, heuristics)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            call()
    return g.replay


def options(ap):
    ap.add_argument("--dtypes", default="bf16,fp8")
    ap.add_argument("--reps", type=int, default=10, help="calls captured per graph")


def main():
    args, dev = parse_args(__doc__, options)
    fp8_ok = torch.cuda.get_device_capability(dev) >= (8, 9) and hasattr(torch, "float8_e4m3fn")
    dtypes = [d for d in args.dtypes.split(",") if d == "bf16" or fp8_ok]
    if len(dtypes) < len(args.dtypes.split(",")):
        print("gemm_size.py: no FP8 tensor cores on this GPU; skipping fp8", file=sys.stderr)
    rows = []
    for dt in dtypes:
        for t in TOKENS:
            for k in IN_WIDTHS:
                for n in OUT_WIDTHS:
                    call = graphed(linear_train(dt, t, k, n, dev), args.reps)
                    sec = timed(call, args.warmup, args.iters) / args.reps
                    flop = 6.0 * t * k * n
                    rows.append({"kind": "linear_train", "dtype": dt, "tokens": t, "k": k, "n": n,
                                 "seconds": sec, "tflops": flop / sec / 1e12})
                    del call
                    torch.cuda.empty_cache()
            print(f"gemm_size.py: {dt} tokens {t} done", file=sys.stderr, flush=True)
    write_jsonl(os.path.join(args.out, "gemm_size.jsonl"), rows, dev, warmup=args.warmup, iters=args.iters,
                reps=args.reps, timing="cuda_graph")


if __name__ == "__main__":
    main()
