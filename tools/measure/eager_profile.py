#!/usr/bin/env python3
"""Where an eager Hugging Face decoder's training step spends its GPU time, per layer.

    python3 tools/measure/eager_profile.py --out DIR       # one GPU, about a minute
    python3 tools/measure/eager_profile.py --out DIR --models mixtral-8x7b --name eager_profile_moe

AutoModel trains Hugging Face models in eager PyTorch (no fused norms, RoPE or SwiGLU), so
besides the GEMMs and the attention core every layer runs many elementwise and reduction
kernels that are HBM-bound. For each model config of tests/data/measured/models/ this builds
the model with 2 and with 4 decoder layers (random BF16 weights, SDPA attention, use_cache
off), runs forward, the AutoModel loss (logits upcast to fp32, cross entropy) and backward
under torch.profiler, and splits the CUDA kernel time into GEMM (cuBLAS / CUTLASS / nvjet),
attention (flash / cuDNN / efficient SDPA kernels) and everything else. The difference of
the 4- and 2-layer runs, halved, is one layer; the 2-layer run minus two layers is the rest
(embedding, final norm, lm_head, loss). Kernel counts likewise.

An HF MoE decoder (Mixtral, which AutoModel trains as a Hugging Face model: it has no MoE
implementation of its own for it) also records its experts, top-k and the experts
implementation transformers chose. Writes DIR/<--name>.jsonl (default eager_profile.jsonl): {"environment": ...}, then one line per model
{"kind": "eager_layer", "model", "hidden", "intermediate", "q_dim", "kv_dim", "vocab",
"tokens", "layer_gemm_s", "layer_attention_s", "layer_other_s", "layer_kernels",
"rest_gemm_s", "rest_other_s", "rest_kernels", "step_wall_s_2", "step_gpu_s_2"}.
"""
import json
import os
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from bench_util import parse_args, write_jsonl
from measure import default_dtype, load_hf_model_class

MODELS = ["qwen2.5-0.5b", "llama3.2-1b", "qwen3-1.7b", "llama3.2-3b", "qwen3-4b", "llama3.1-8b"]
GEMM_KEYS = ("gemm", "cutlass", "nvjet", "xmma", "cublas", "sm90_", "sm80_", "ampere_", "splitk")
ATTN_KEYS = ("flash", "fmha", "attention", "cudnn", "sdpa", "efficient")


def classify(name):
    n = name.lower()
    if any(k in n for k in ATTN_KEYS):
        return "attention"
    if any(k in n for k in GEMM_KEYS):
        return "gemm"
    return "other"


def run(name, layers, seq, mb, dev, iters):
    cls, cfg, _ = load_hf_model_class(name)  # built from the file: nothing is downloaded
    cfg.num_hidden_layers = layers
    if getattr(cfg, "layer_types", None) is not None:
        cfg.layer_types = cfg.layer_types[:layers]
    torch.manual_seed(0)
    with torch.device(dev), default_dtype(torch.bfloat16):
        model = cls(cfg)
    model.train()
    ids = torch.randint(0, cfg.vocab_size, (mb, seq), device=dev)

    def step():
        logits = model(input_ids=ids).logits
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), ids.view(-1))
        loss.backward()
        for p in model.parameters():
            p.grad = None

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / iters
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    sums = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    kernels = 0
    for ev in prof.key_averages():
        t = getattr(ev, "self_device_time_total", None)
        if t is None:
            t = getattr(ev, "self_cuda_time_total", 0.0)
        if t <= 0:
            continue
        sums[classify(ev.key)] += t * 1e-6 / iters
        kernels += ev.count
    del model
    torch.cuda.empty_cache()
    return cfg, sums, kernels / iters, wall


def main():
    args, dev = parse_args(__doc__, lambda ap: (ap.add_argument("--seq", type=int, default=4096),
                                                  ap.add_argument("--mb", type=int, default=2),
                                                  ap.add_argument("--models", default=",".join(MODELS)),
                                                  ap.add_argument("--name", default="eager_profile")))
    rows = []
    for name in args.models.split(","):
        cfg, s2, k2, wall2 = run(name, 2, args.seq, args.mb, dev, max(2, args.iters // 5))
        _, s4, k4, _ = run(name, 4, args.seq, args.mb, dev, max(2, args.iters // 5))
        layer = {k: (s4[k] - s2[k]) / 2 for k in s2}
        heads = cfg.num_attention_heads
        hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
        row = {"kind": "eager_layer", "model": name, "hidden": cfg.hidden_size,
               "intermediate": cfg.intermediate_size, "q_dim": heads * hd,
               "kv_dim": cfg.num_key_value_heads * hd, "vocab": cfg.vocab_size, "tokens": args.seq * args.mb,
               "layer_gemm_s": layer["gemm"], "layer_attention_s": layer["attention"],
               "layer_other_s": layer["other"], "layer_kernels": (k4 - k2) / 2,
               "rest_gemm_s": s2["gemm"] - 2 * layer["gemm"], "rest_other_s": s2["other"] - 2 * layer["other"],
               "rest_kernels": k2 - (k4 - k2), "step_wall_s_2": wall2, "step_gpu_s_2": sum(s2.values())}
        if getattr(cfg, "num_local_experts", None):  # an HF MoE decoder (Mixtral): its experts' settings
            row.update(experts=cfg.num_local_experts, top_k=cfg.num_experts_per_tok,
                       experts_implementation=str(getattr(cfg, "_experts_implementation", None)))
        rows.append(row)
        print(json.dumps(row), flush=True)
    write_jsonl(os.path.join(args.out, args.name + ".jsonl"), rows, dev, seq=args.seq, mb=args.mb)


if __name__ == "__main__":
    main()
