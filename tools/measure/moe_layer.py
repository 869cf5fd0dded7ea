#!/usr/bin/env python3
"""What one EP rank's MoE layer costs in NeMo AutoModel's own MoE implementation, op by op.

    python3 tools/measure/moe_layer.py --out DIR        # one GPU, about 3 minutes

AutoModel trains its MoE models (DeepSeek-V3, Kimi-K2, Qwen3-MoE, GPT-OSS, ...) with its own
modules (nemo_automodel/components/moe/): a Gate (layers.py Gate: F.linear to the routed
experts' logits, softmax or sigmoid in fp32, top-k, optional group limit, renormalisation),
the experts of experts.py GroupedExpertsDeepEP (DeepEP / HybridEP dispatch, then
Megatron-Core's permute to local-expert order (moe_utils.permute), torch._grouped_mm for the
gate+up and down projections (backend.experts torch_mm), the token-weighted SwiGLU of
moe_utils.weighted_bias_swiglu_impl (torch.compile'd forward and backward), the unpermute
that sums a token's expert outputs (moe_utils.unpermute), then combine) and the shared
experts' MLP (layers.py MLP: F.silu(gate) * up, eager). The layer's norms are Transformer
Engine's fused RMSNorm, its residual adds eager.

AutoModel is not installed here, so this reimplements that computation with plain torch, per
EP rank under balanced routing: T tokens per micro-batch reach the router (all E routed
experts); the rank's E_l local experts receive R = T * top_k token copies (every rank sends
T * top_k copies and balanced routing spreads them evenly), R / E_l per expert. Each part is
timed forward + backward (CUDA events, mean over --iters; the GPU kernel time from
torch.profiler beside it, which excludes host gaps):
  router      F.linear(x, W[E, h]) + score function + top-k + gather + renormalise
  index       the routing bookkeeping (argsort of expert ids, bincount, cumsum)
  permute     x[idx] of R rows from T * top_k / c input rows (c = min(top_k, E_l) copies each)
  fc1, fc2    torch._grouped_mm, (R x h) x (h x 2f) and (R x f) x (f x h), E_l groups
  act         weighted SwiGLU on R x 2f (compiled forward and backward, fp32 probs)
  unpermute   fp32 zeros(T', h).scatter_add_(R rows) then .to(bf16), as moe_utils.unpermute
  shared      the shared experts' MLP (dense GEMMs + eager silu * up), where the model has one
  norms_adds  two fused RMSNorms (torch's F.rms_norm as Transformer Engine's stand-in) and two
              residual adds of the decoder layer
  block       router + permute + fc1 + act + fc2 + unpermute (+ shared) chained
Gradients of the inputs and weights are dropped after each backward (no accumulation adds).
If torch.compile cannot build the activation here, the eager ops run instead and the
environment line says so ("act_impl").

Writes DIR/moe_layer.jsonl: {"environment": ...}, then one line per (shape, tokens, part)
{"kind": "moe_part", "shape", "hidden", "ffn", "experts", "top_k", "local_experts",
"shared_ffn", "score", "tokens", "rows", "part", "seconds", "kernel_seconds", "kernels"}.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from bench_util import parse_args, timed, write_jsonl

# name, hidden, expert FFN width, routed experts, top-k, local experts, shared FFN width, score
SHAPES = [
    ("mixtral-8x7b", 4096, 14336, 8, 2, 8, 0, "softmax"),
    ("qwen3-30b-a3b-ep8", 2048, 768, 128, 8, 16, 0, "softmax"),
    ("qwen3-30b-a3b-ep1", 2048, 768, 128, 8, 128, 0, "softmax"),
    ("deepseek-v3-ep64", 7168, 2048, 256, 8, 4, 2048, "sigmoid"),
    ("deepseek-v3-ep8", 7168, 2048, 256, 8, 32, 2048, "sigmoid"),
]
TOKENS = [4096, 8192]


@torch.compile
def _swiglu(y):
    a, b = torch.chunk(y, 2, -1)
    return F.silu(a) * b


@torch.compile
def _wswiglu(y, w):
    return (_swiglu(y) * w).to(y.dtype)


@torch.compile
def _wswiglu_back(g, y, w):
    a, b = torch.chunk(y, 2, -1)
    gw = g * w
    sa = torch.sigmoid(a)
    dy = torch.cat((gw * sa * (1 + a * (1 - sa)) * b, gw * F.silu(a)), -1)
    dw = (_swiglu(y) * g.to(w.dtype)).sum(dim=-1, keepdim=True)
    return dy.to(y.dtype), dw.to(w.dtype)


class WeightedSwiGLU(torch.autograd.Function):
    """Forward and backward as moe_utils.WeightedSwiGLUFunction (both compiled)."""

    @staticmethod
    def forward(ctx, y, w):
        ctx.save_for_backward(y, w)
        return _wswiglu(y, w)

    @staticmethod
    def backward(ctx, g):
        y, w = ctx.saved_tensors
        return _wswiglu_back(g, y, w)


ACT = WeightedSwiGLU.apply
ACT_IMPL = "compiled"


def _eager_act(y, w):
    a, b = torch.chunk(y, 2, -1)
    return (F.silu(a) * b * w).to(y.dtype)


def router(x, wg, k, score, groups):
    logits = F.linear(x, wg)
    if score == "softmax":  # Qwen3 / Mixtral: softmax over all experts, top-k, renormalise
        s = logits.softmax(dim=-1, dtype=torch.float32)
        idx = torch.topk(s, k, dim=-1)[1]
        w = s.gather(1, idx)
    else:  # DeepSeek-V3: sigmoid, group-limited top-k (top-2 sum per group), renormalise
        s = logits.float().sigmoid()
        t = s.shape[0]
        gs = s.view(t, groups, -1).topk(2, dim=-1)[0].sum(dim=-1)
        gi = gs.topk(max(1, groups // 2), dim=-1)[1]
        mask = torch.zeros_like(gs).scatter_(1, gi, 1).unsqueeze(-1).expand(t, groups, s.shape[1] // groups)
        idx = torch.topk(s.masked_fill(~mask.reshape(t, -1).bool(), float("-inf")), k, dim=-1)[1]
        w = s.gather(1, idx)
    return w / (w.sum(dim=-1, keepdim=True) + 1e-20), idx


def make_parts(shape, t, dev):
    name, h, f, e, k, el, fs, score = shape
    bf = torch.bfloat16
    c = min(k, el)
    rows = t * k
    n_in = rows // c  # input rows of the permute: each picks c distinct local experts
    g = torch.Generator(device=dev).manual_seed(0)

    def p(*s, dt=bf, grad=True):
        return (torch.randn(*s, device=dev, dtype=dt, generator=g) * 0.02).requires_grad_(grad)

    x = p(t, h)
    wg = p(e, h)
    # balanced local routing: input row i goes to experts (i*c + j) % el, j < c
    eid = (torch.arange(n_in * c, device=dev) % el)
    tok = torch.arange(n_in, device=dev).repeat_interleave(c)
    order = eid.argsort(stable=True)
    src = tok[order].contiguous()
    counts = torch.bincount(eid, minlength=el)
    offs = counts.cumsum(0).to(torch.int32)
    xin = p(n_in, h)
    xs = p(rows, h)
    w1, w2 = p(el, h, 2 * f), p(el, f, h)
    y1 = p(rows, 2 * f)
    probs = torch.rand(rows, 1, device=dev, generator=g).requires_grad_(True)
    a1 = p(rows, f)
    out2 = p(rows, h)
    g_rows_h = torch.randn(rows, h, device=dev, dtype=bf, generator=g)
    g_rows_2f = torch.randn(rows, 2 * f, device=dev, dtype=bf, generator=g)
    g_rows_f = torch.randn(rows, f, device=dev, dtype=bf, generator=g)
    g_t_h = torch.randn(t, h, device=dev, dtype=bf, generator=g)
    g_in_h = torch.randn(n_in, h, device=dev, dtype=bf, generator=g)
    groups = 8 if score == "sigmoid" else 1
    ids = src.unsqueeze(1).expand(rows, h)
    norm_w = [torch.ones(h, device=dev, dtype=bf, requires_grad=True) for _ in range(2)]
    if fs:
        ws_gu = p(2 * fs, h)
        ws_d = p(h, fs)

    def clear(*ts):
        for q in ts:
            q.grad = None

    def run_router():
        w, idx = router(x, wg, k, score, groups)
        w.sum().backward()
        clear(x, wg)

    def run_index():
        ids_flat = (torch.arange(t * k, device=dev) * 7) % e
        o = ids_flat.argsort(stable=True)
        cnt = torch.bincount(ids_flat[o], minlength=e)
        return cnt.cumsum(0).to(torch.int32)

    def run_permute():
        xin[src].backward(g_rows_h)
        clear(xin)

    def run_fc1():
        torch._grouped_mm(xs, w1, offs).backward(g_rows_2f)
        clear(xs, w1)

    def run_fc2():
        torch._grouped_mm(a1, w2, offs).backward(g_rows_h)
        clear(a1, w2)

    def run_act():
        ACT(y1, probs).backward(g_rows_f)
        clear(y1, probs)

    def run_unpermute():
        y = torch.zeros(n_in, h, device=dev, dtype=torch.float32)
        y.scatter_add_(0, ids, out2.float())
        y.to(bf).backward(g_in_h)
        clear(out2)

    def run_shared():
        gu = F.linear(x, ws_gu)
        a, b = gu.chunk(2, -1)
        F.linear(F.silu(a) * b, ws_d).backward(g_t_h)
        clear(x, ws_gu, ws_d)

    def run_norms_adds():
        r = x
        for nw in norm_w:
            r = r + F.rms_norm(r, (h,), nw, 1e-6)
        r.backward(g_t_h)
        clear(x, *norm_w)

    def run_block():
        w, idx = router(x, wg, k, score, groups)
        pw = w.reshape(-1)[: rows].reshape(rows, 1).float()
        hs = xin[src]
        o1 = torch._grouped_mm(hs, w1, offs)
        o2 = torch._grouped_mm(ACT(o1, pw), w2, offs)
        y = torch.zeros(n_in, h, device=dev, dtype=torch.float32)
        y.scatter_add_(0, ids, o2.float())
        out = y.to(bf)
        if fs:
            gu = F.linear(x, ws_gu)
            a, b = gu.chunk(2, -1)
            z = F.linear(F.silu(a) * b, ws_d)
            torch.autograd.backward([out, z], [g_in_h, g_t_h])
            clear(ws_gu, ws_d)
        else:
            out.backward(g_in_h)
        clear(x, wg, xin, w1, w2)

    parts = {"router": run_router, "index": run_index, "permute": run_permute, "fc1": run_fc1, "fc2": run_fc2,
             "act": run_act, "unpermute": run_unpermute, "norms_adds": run_norms_adds, "block": run_block}
    if fs:
        parts["shared"] = run_shared
    meta = {"shape": name, "hidden": h, "ffn": f, "experts": e, "top_k": k, "local_experts": el,
            "shared_ffn": fs, "score": score, "tokens": t, "rows": rows, "permute_in_rows": n_in}
    return parts, meta


def kernel_time(fn, iters):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    total, count = 0.0, 0
    for ev in prof.key_averages():
        tm = getattr(ev, "self_device_time_total", None)
        if tm is None:
            tm = getattr(ev, "self_cuda_time_total", 0.0)
        if tm > 0:
            total += tm
            count += ev.count
    return total * 1e-6 / iters, count / iters


def main():
    args, dev = parse_args(__doc__, lambda ap: ap.add_argument("--shapes", default=""))
    want = set(s for s in args.shapes.split(",") if s)
    global ACT, ACT_IMPL
    try:
        y = torch.randn(64, 256, device=dev, dtype=torch.bfloat16, requires_grad=True)
        ACT(y, torch.rand(64, 1, device=dev)).sum().backward()
    except Exception as exc:  # no compiler on this host: eager ops
        print(f"moe_layer.py: torch.compile failed ({exc}); eager activation", file=sys.stderr)
        ACT, ACT_IMPL = _eager_act, "eager"
    rows = []
    for shape in SHAPES:
        if want and shape[0] not in want:
            continue
        for t in TOKENS:
            parts, meta = make_parts(shape, t, dev)
            for part, fn in parts.items():
                sec = timed(fn, args.warmup, args.iters)
                ksec, kern = kernel_time(fn, max(2, args.iters // 4))
                r = dict(kind="moe_part", part=part, seconds=sec, kernel_seconds=ksec, kernels=kern, **meta)
                rows.append(r)
                print(json.dumps(r), flush=True)
            del parts
            torch.cuda.empty_cache()
        print(f"moe_layer.py: {shape[0]} done", file=sys.stderr, flush=True)
    write_jsonl(os.path.join(args.out, "moe_layer.jsonl"), rows, dev, warmup=args.warmup, iters=args.iters,
                timing="cuda_events; kernel_seconds from torch.profiler", act_impl=ACT_IMPL)


if __name__ == "__main__":
    main()
