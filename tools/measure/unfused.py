#!/usr/bin/env python3
"""Unfused RoPE and bias-dropout-add against one fused pass, on one NVIDIA GPU.

    python3 tools/measure/unfused.py --out DIR

Megatron-Bridge runs two paths of GPT-OSS unfused (planner/cost/time_megatron.cpp,
MegatronUnfusedOps): RoPE, because a YaRN model without MLA gets position_embedding_type
"yarn" and apply_rope_fusion is then turned off, and the bias-dropout-add after the biased
attention projection (bias_dropout_fusion False). The time model counts the HBM element
passes of each op of the eager path (RoPE: 12 forward + 13 backward per rotated element,
against 2 + 2 for Transformer Engine's fused kernel; bias-dropout-add: 2h more forward).

This script times, in BF16 on GPT-OSS-120B shapes (sbhd layout, 64 query heads and 8 KV heads
of dim 64, 4096 tokens x micro-batch 1 and 4):
* rope_unfused: the eager RoPE written as Megatron-Core's rope_utils does it (t·cos +
  rotate_half(t)·sin, mscale on cos/sin, concatenated with the empty pass-through part),
  forward and forward + backward, for q and for k;
* rope_fused_floor: one read and one write of the same tensor (a copy), forward and forward +
  backward (two copies): what a fused kernel cannot beat;
* bda_unfused: x + bias, dropout(p=0), + residual, and bda_fused_floor: x + residual (+ bias
  in the forward + backward point, whose backward sums the bias gradient); dropout_p0: the
  dropout alone, which eager PyTorch runs as a kernel even at p = 0.

Writes DIR/unfused.jsonl: a first line {"environment": ...}, then one line per point with
"seconds" and "passes" (the time in units of one read + write pass of the tensor, i.e. the
time / (copy time / 2)); the test tests/cost/unfused_measured_test.cpp compares these with
the model's counts.
"""
import math
import os

import torch
import torch.nn.functional as F

from bench_util import parse_args, timed, write_jsonl


def rotate_half(x):
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_eager(t, freqs, mscale):
    rot_dim = freqs.shape[-1]
    t_rot, t_pass = t[..., :rot_dim], t[..., rot_dim:]
    cos_ = (torch.cos(freqs) * mscale).to(t.dtype)
    sin_ = (torch.sin(freqs) * mscale).to(t.dtype)
    t_rot = (t_rot * cos_) + (rotate_half(t_rot) * sin_)
    return torch.cat((t_rot, t_pass), dim=-1)


def main():
    args, dev = parse_args(__doc__)
    rows = []
    seq, dim, hidden = 4096, 64, 2880
    mscale = 0.1 * math.log(32.0) + 1.0  # YaRN factor 32
    for mbs in (1, 4):
        inv = 1.0 / (150000.0 ** (torch.arange(0, dim, 2, device=dev, dtype=torch.float32) / dim))
        pos = torch.arange(seq, device=dev, dtype=torch.float32)
        f = torch.outer(pos, inv)
        freqs = torch.cat((f, f), dim=-1)[:, None, None, :]  # [s, 1, 1, d]
        for name, heads in (("q", 64), ("k", 8)):
            t = torch.randn(seq, mbs, heads, dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
            grad = torch.randn_like(t)
            elems = t.numel()

            def copy_fwd():
                return t.detach().clone()

            def copy_fwd_bwd():
                t.detach().clone()
                grad.clone()

            def rope_fwd():
                with torch.no_grad():
                    return rope_eager(t, freqs, mscale)

            def rope_fwd_bwd():
                t.grad = None
                rope_eager(t, freqs, mscale).backward(grad)

            copy = timed(copy_fwd, args.warmup, args.iters)
            one_pass = copy / 2.0  # a copy reads and writes each element once: 2 passes
            base = {"batch": mbs, "seq": seq, "heads": heads, "head_dim": dim, "tensor": name,
                    "elements": elems}
            for kind, fn in (("rope_fused_floor", copy_fwd), ("rope_unfused", rope_fwd)):
                s = timed(fn, args.warmup, args.iters)
                rows.append(dict(base, kind=kind, pass_="forward", seconds=s, passes=s / one_pass,
                                 gbps=2.0 * elems * 2 / s / 1e9 if kind == "rope_fused_floor" else None))
            for kind, fn in (("rope_fused_floor", copy_fwd_bwd), ("rope_unfused", rope_fwd_bwd)):
                s = timed(fn, args.warmup, args.iters)
                rows.append(dict(base, kind=kind, pass_="forward+backward", seconds=s, passes=s / one_pass))
        # bias-dropout-add on [s, b, h]
        x = torch.randn(seq, mbs, hidden, device=dev, dtype=torch.bfloat16)
        res = torch.randn_like(x)
        bias = torch.randn(hidden, device=dev, dtype=torch.bfloat16)
        one_pass = timed(lambda: x.clone(), args.warmup, args.iters) / 2.0
        base = {"batch": mbs, "seq": seq, "hidden": hidden, "elements": x.numel()}

        def bda_unfused():
            y = x + bias
            y = F.dropout(y, p=0.0, training=True)
            return res + y

        for kind, fn in (("bda_fused_floor", lambda: x + res), ("bda_unfused", bda_unfused),
                         ("dropout_p0", lambda: F.dropout(x, p=0.0, training=True))):
            s = timed(fn, args.warmup, args.iters)
            rows.append(dict(base, kind=kind, pass_="forward", seconds=s, passes=s / one_pass))
        # forward + backward: x and residual need gradients (bias too, as in the model)
        xg = x.clone().requires_grad_(True)
        rg = res.clone().requires_grad_(True)
        bg = bias.clone().requires_grad_(True)
        gout = torch.randn_like(x)

        def bda_unfused_fb():
            xg.grad = rg.grad = bg.grad = None
            y = F.dropout(xg + bg, p=0.0, training=True)
            (rg + y).backward(gout)

        def bda_floor_fb():
            xg.grad = rg.grad = bg.grad = None
            (xg + rg + bg).backward(gout)

        for kind, fn in (("bda_fused_floor", bda_floor_fb), ("bda_unfused", bda_unfused_fb)):
            s = timed(fn, args.warmup, args.iters)
            rows.append(dict(base, kind=kind, pass_="forward+backward", seconds=s, passes=s / one_pass))
    for r in rows:
        r["pass"] = r.pop("pass_")
    rows = [{k: v for k, v in r.items() if v is not None} for r in rows]
    write_jsonl(os.path.join(args.out, "unfused.jsonl"), rows, dev, warmup=args.warmup, iters=args.iters)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
