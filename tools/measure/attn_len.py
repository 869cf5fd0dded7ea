#!/usr/bin/env python3
"""Attention-core efficiency against sequence (or context-parallel chunk) length, one GPU.

    python3 tools/measure/attn_len.py --out DIR

The Megatron-Core time model prices the attention core at a fixed fraction of the BF16 peak
(kFlashAttentionEfficiency x AttentionHeadDimFactor). Flash attention loses efficiency on
short sequences: each query tile streams fewer key tiles, so its fixed prologue, epilogue and
softmax rescaling weigh more. Context parallelism (Transformer Engine's P2P ring) runs the
core as cp steps over chunks of seq/cp tokens, so the chunk length sets the rate.

Times torch scaled_dot_product_attention with the cuDNN backend (the fused attention Transformer
Engine runs on Hopper and Blackwell) and with the flash backend (FlashAttention-2), BF16, head
dim 128 and 32 heads,
forward + backward, at a constant 32768 tokens per call (batch = 32768 / length) for lengths
256 ... 16384, causal (one sequence) and non-causal (a query chunk against a key chunk of the
same length: a ring step away from the diagonal). FLOP counted as Megatron does: causal half
of 4·b·a·L²·d per forward, non-causal all of it; backward 2x forward.

Writes DIR/attn_len.jsonl: a first line {"environment": ...}, then one line per point
{"backend", "causal", "length", "batch", "heads", "head_dim", "seconds", "tflops"}.
"""
import os

import torch

from bench_util import parse_args, timed, write_jsonl


def main():
    args, dev = parse_args(__doc__)
    heads, d, tokens = 32, 128, 32768
    rows = []
    backends = {"cudnn": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
                "flash": torch.nn.attention.SDPBackend.FLASH_ATTENTION}
    points = [(be, c, n) for be in backends.items() for c in (True, False)
              for n in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    for (backend, sdpa), causal, length in points:
        b = tokens // length
        q = torch.randn(b, heads, length, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, heads, length, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, heads, length, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        grad = torch.randn(b, heads, length, d, device=dev, dtype=torch.bfloat16)
        fwd_flop = 4.0 * b * heads * length * length * d * (0.5 if causal else 1.0)
        with torch.nn.attention.sdpa_kernel([sdpa]):

            def fwd_bwd():
                q.grad = k.grad = v.grad = None
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(grad)

            s = timed(fwd_bwd, args.warmup, args.iters)
        rows.append({"backend": backend, "causal": causal, "length": length, "batch": b, "heads": heads,
                     "head_dim": d, "seconds": s, "tflops": 3.0 * fwd_flop / s / 1e12})
        print(rows[-1], flush=True)
    write_jsonl(os.path.join(args.out, "attn_len.jsonl"), rows, dev, warmup=args.warmup, iters=args.iters)


if __name__ == "__main__":
    main()
