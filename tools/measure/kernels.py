#!/usr/bin/env python3
"""Attention-core and HBM-bound kernel efficiency on one NVIDIA GPU.

    python3 tools/measure/kernels.py --out DIR

Two measurements behind physical constants of the Megatron-Core step-time model
(planner/cost/time_megatron.cpp):

* attention: torch scaled_dot_product_attention, causal, BF16, head dim 128 (and 64), forward
  and forward + backward, at 4096 and 8192 tokens. FLOP counted as Megatron does (causal half
  of 4·b·a·s²·d per forward; backward 2x forward). Compared with kFlashAttentionEfficiency.
* elementwise: the ops the model charges as HBM traffic, each timed alone on a tensor of
  tokens x width BF16 elements: residual add (read 2, write 1), RMSNorm (torch.rms_norm,
  read 1 + weight, write 1), SwiGLU (silu(gate) * up: read 2, write 1), a copy (read 1, write
  1, the token permute), and the same with an FP8 cast. Bytes / time against the HBM peak
  gives the achieved fraction, the inverse of what the fitted memory_bound constant scales.

Writes DIR/kernels.jsonl: a first line {"environment": ...}, then one line per point
{"kind": "attention" | "elementwise", ...,"seconds", "tflops" or "gbps"}.
"""
import json
import os

import torch
import torch.nn.functional as F

from bench_util import parse_args, timed, write_jsonl


def main():
    args, dev = parse_args(__doc__)
    rows = []
    # --- attention ---
    for d, heads in [(128, 32), (128, 64), (64, 64)]:
        for s, b in [(4096, 2), (8192, 1)]:
            q = torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
            grad = torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16)
            fwd_flop = 4.0 * b * heads * s * s * d / 2.0
            with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.FLASH_ATTENTION,
                                                 torch.nn.attention.SDPBackend.CUDNN_ATTENTION]):
                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=True)

                def fwd_bwd():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    o.backward(grad)

                tf = timed(fwd, args.warmup, args.iters)
                tfb = timed(fwd_bwd, args.warmup, args.iters)
            rows.append({"kind": "attention", "pass": "forward", "batch": b, "heads": heads, "seq": s, "head_dim": d,
                         "seconds": tf, "tflops": fwd_flop / tf / 1e12})
            rows.append({"kind": "attention", "pass": "forward+backward", "batch": b, "heads": heads, "seq": s,
                         "head_dim": d, "seconds": tfb, "tflops": 3.0 * fwd_flop / tfb / 1e12})
            del q, k, v, grad
    # --- elementwise ---
    fp8 = getattr(torch, "float8_e4m3fn", None)
    for tokens, width in [(16384, 4096), (16384, 8192), (8192, 14336), (65536, 2048)]:
        x = torch.randn(tokens, width, device=dev, dtype=torch.bfloat16)
        y = torch.randn(tokens, width, device=dev, dtype=torch.bfloat16)
        w = torch.ones(width, device=dev, dtype=torch.bfloat16)
        e = x.numel() * 2.0
        ops = [("add", lambda: x + y, 3 * e),
               ("rmsnorm", lambda: F.rms_norm(x, (width,), w), 2 * e),
               ("swiglu", lambda: F.silu(x) * y, 3 * e),
               ("copy", lambda: x.clone(), 2 * e)]
        if fp8 is not None:
            ops.append(("cast_fp8", lambda: x.to(fp8), 1.5 * e))
        for name, fn, nbytes in ops:
            t = timed(fn, args.warmup, args.iters)
            rows.append({"kind": "elementwise", "op": name, "tokens": tokens, "width": width, "bytes": nbytes,
                         "seconds": t, "gbps": nbytes / t / 1e9})
        del x, y
    write_jsonl(os.path.join(args.out, "kernels.jsonl"), rows, dev, warmup=args.warmup, iters=args.iters)
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
