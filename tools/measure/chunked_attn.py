#!/usr/bin/env python3
"""Time of Llama 4's chunked attention layers as transformers runs them, one GPU.

    python3 tools/measure/chunked_attn.py --out DIR

meshplan counts a chunked layer's core FLOPs by what the mask lets through (transformers
masking_utils.py chunked_causal_mask_function: kv_idx // C == q_idx // C and causal; cost/flops.cpp
ChunkedCoreFlops), so per token they stay 6·q·C whatever the sequence length. Whether the kernel
does only that work depends on the attention implementation: an explicit boolean mask (the
"sdpa" path) selects a kernel that visits every key block, flex_attention with a block mask (the
"flex_attention" path) skips the masked-out blocks, and the same attention as independent
chunks (Megatron-Bridge llama4_utils.py chunkify) is the ideal.

Times forward + backward, BF16, Llama 4's 40 query and 8 KV heads of head dim 128, chunk 8192,
for sequence lengths 8192 ... 65536 (batch 1):
  full_causal      sdpa is_causal=True over the whole sequence (a NoPE layer)
  sdpa_mask        sdpa with the chunked-causal boolean mask (enable_gqa)
  flex_block_mask  flex_attention with create_block_mask of the same mask (if available)
  chunkify         sdpa is_causal=True on the sequence reshaped to (s / C) sequences of C
FLOP counted as meshplan counts them (causal over the chunks: 4·a·d·(k·C²/2 + r²/2), backward
2x forward), so `tflops` compares each variant's time with the work the model counts.

Writes DIR/chunked_attn.jsonl: a first line {"environment": ...}, then one line per point
{"variant", "seq_len", "chunk", "seconds", "counted_flop", "tflops"}.
"""
import os

import torch
import torch.nn.functional as F

from bench_util import parse_args, timed, write_jsonl


def chunked_mask(s, chunk, dev):
    q = torch.arange(s, device=dev)[:, None]
    k = torch.arange(s, device=dev)[None, :]
    return (k <= q) & (k // chunk == q // chunk)


def counted_flop(s, chunk, heads, d):
    k, r = divmod(s, chunk)
    keys = k * chunk * chunk / 2.0 + r * r / 2.0  # summed over the queries
    return 3.0 * 4.0 * heads * d * keys


def main():
    args, dev = parse_args(__doc__)
    heads, kv_heads, d, chunk = 40, 8, 128, 8192
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = torch.compile(flex_attention)
    except ImportError:
        flex = None
    rows = []
    for s in (8192, 16384, 32768, 65536):
        q = torch.randn(1, heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(1, kv_heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(1, kv_heads, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
        grad = torch.randn(1, heads, s, d, device=dev, dtype=torch.bfloat16)
        mask = chunked_mask(s, chunk, dev)

        def run(fn):
            def step():
                q.grad = k.grad = v.grad = None
                fn().backward(grad)
            return step

        variants = {
            "full_causal": run(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)),
            "sdpa_mask": run(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)),
        }
        if s % chunk == 0:
            n = s // chunk

            def chunks(x):  # (1, h, s, d) -> (n, h, C, d)
                return x.reshape(x.shape[1], n, chunk, d).transpose(0, 1)

            variants["chunkify"] = run(lambda: F.scaled_dot_product_attention(
                chunks(q), chunks(k), chunks(v), is_causal=True, enable_gqa=True).transpose(0, 1).reshape(1, heads, s, d))
        if flex is not None:
            block = create_block_mask(lambda b, h, qi, ki: (ki <= qi) & (ki // chunk == qi // chunk), 1, 1, s, s,
                                      device=dev)
            variants["flex_block_mask"] = run(lambda: flex(q, k, v, block_mask=block, enable_gqa=True))
        flop = counted_flop(s, chunk, heads, d)
        for name, step in variants.items():
            try:
                sec = timed(step, args.warmup, args.iters)
            except (RuntimeError, torch.cuda.OutOfMemoryError) as e:  # a kernel the build lacks, or memory
                print({"variant": name, "seq_len": s, "error": str(e)[:200]}, flush=True)
                torch.cuda.empty_cache()
                continue
            rows.append({"variant": name, "seq_len": s, "chunk": chunk, "seconds": sec, "counted_flop": flop,
                         "tflops": flop / sec / 1e12})
            print(rows[-1], flush=True)
        del mask
        torch.cuda.empty_cache()
    write_jsonl(os.path.join(args.out, "chunked_attn.jsonl"), rows, dev, warmup=args.warmup, iters=args.iters)


if __name__ == "__main__":
    main()
