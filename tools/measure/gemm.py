#!/usr/bin/env python3
"""BF16 and FP8 GEMM throughput against shape on one NVIDIA GPU.

    python3 tools/measure/gemm.py --out DIR [--dtypes bf16,fp8]

Shapes: square M=N=K from 512 to 16384 and the projections of Llama-style layers
(M = tokens per micro-batch, N x K = hidden x hidden, hidden x 3.5 hidden, ...). BF16 uses
torch.matmul; FP8 uses torch._scaled_mm (e4m3 inputs, per-tensor scales, bf16 output;
Hopper or newer). Time: mean over --iters calls after --warmup, CUDA events; FLOP = 2 M N K.

Writes DIR/gemm.jsonl: a first line {"environment": ...}, then one line per point
{"kind": "gemm", "dtype", "m", "n", "k", "seconds", "tflops"}. `meshplan calibrate` fits the
GPU's achievable matmul efficiency from them (MAMF: the best shapes, groundtruth C.3).
"""
import argparse
import json
import os
import sys

import torch


def shapes():
    for s in [512, 1024, 2048, 4096, 6144, 8192, 12288, 16384]:
        yield s, s, s
    for tokens in [4096, 8192, 16384]:
        for n, k in [(4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336), (8192, 8192), (57344, 8192), (8192, 28672)]:
            yield tokens, n, k


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", default="bf16,fp8")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(dev)
    os.makedirs(args.out, exist_ok=True)
    show = os.isatty(2)
    shp = list(shapes())
    dtypes = args.dtypes.split(",")
    fp8_ok = torch.cuda.get_device_capability(dev) >= (8, 9) and hasattr(torch, "float8_e4m3fn")
    with open(os.path.join(args.out, "gemm.jsonl"), "w") as out:
        out.write(json.dumps({"environment": {"torch": torch.__version__, "cuda": torch.version.cuda,
                                              "gpu": torch.cuda.get_device_name(dev),
                                              "warmup": args.warmup, "iters": args.iters}}) + "\n")
        total, done = len(shp) * len(dtypes), 0
        for dt in dtypes:
            if dt == "fp8" and not fp8_ok:
                print("gemm.py: no FP8 tensor cores on this GPU; skipping fp8", file=sys.stderr)
                continue
            for m, n, k in shp:
                a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                b = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
                if dt == "bf16":
                    bt = b.t()
                    call = lambda: torch.matmul(a, bt)
                else:
                    a8 = a.to(torch.float8_e4m3fn)
                    b8 = b.to(torch.float8_e4m3fn).t()  # column-major second operand, as _scaled_mm requires
                    one = torch.ones((), device=dev, dtype=torch.float32)
                    call = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                for _ in range(args.warmup):
                    call()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(args.iters):
                    call()
                end.record()
                torch.cuda.synchronize()
                sec = start.elapsed_time(end) / 1e3 / args.iters
                out.write(json.dumps({"kind": "gemm", "dtype": dt, "m": m, "n": n, "k": k, "seconds": sec,
                                      "tflops": 2.0 * m * n * k / sec / 1e12}) + "\n")
                out.flush()
                done += 1
                if show:
                    print(f"\r[{done}/{total}] {dt} {m}x{n}x{k}: {2.0 * m * n * k / sec / 1e12:.0f} TFLOP/s   ",
                          end="", file=sys.stderr, flush=True)
                del a, b
    if show:
        print(file=sys.stderr)


if __name__ == "__main__":
    main()
