#!/usr/bin/env python3
"""What Megatron-Core's dropless alltoall dispatcher costs beside token drop, on two GPUs of one host.

    python3 -m torch.distributed.run --standalone --nproc-per-node 2 \\
        tools/measure/mcore_moe_sync.py --mcore VENDOR_DIR --out DIR
    python3 -m torch.distributed.run --standalone --nproc-per-node 1 \\
        tools/measure/mcore_moe_sync.py --mcore VENDOR_DIR --out DIR --ep 1 --experts 16 --tokens 512,4096,8192

VENDOR_DIR holds megatron/core (Megatron-LM d98e8a64, as tools/measure/mcore_alloc_limit.py).

The question it settles (docs/accuracy.md, "Where the rows miss"): Megatron-Bridge's dropless
runs on 8-GPU DGX hosts come out up to twice as slow as meshplan predicts, and the same layout with
token drop is not (Qwen3-30B-A3B on 16 H100, PP 2 x VPP 24: 12.5 s token drop, 24.8 s dropless).
Dropless, MoEAlltoAllTokenDispatcher (megatron/core/transformer/moe/token_dispatcher.py) copies
the token counts to the host and synchronises before the expert-parallel all-to-all
(cuda_sync_point "before_ep_alltoall") in every MoE layer's forward; with capacity factor 1 and
padding (moe_pad_expert_input_to_capacity) the splits are static and nothing synchronises
("no_sync"). This script runs a stack of Megatron-Core MoELayers with EP 2 in both modes, the
experts and router of Qwen3-30B-A3B (hidden 2048, 128 experts, top-8, expert FFN 768),
moe_router_force_load_balancing on as the perf configs set it, and times forward + backward:

  wall_s     one step's wall time (torch.cuda.synchronize before and after), mean over --iters
  kernel_s   the summed GPU kernel time of a step (torch.profiler, both streams), rank 0
  fwd_host_s the host time of the forward call alone (no synchronize): with no host sync it
             returns before the GPU is done; with one, it waits for the GPU at every layer
  idle_s     wall_s - kernel_s: GPU time lost to host waits and launch gaps

Dropless minus token drop, per layer, is what the host sync costs on this host (plus the
dropless permutation's own kernels, visible in kernel_s). Transformer Engine's grouped GEMM
experts (TEGroupedMLP) are used when Transformer Engine imports, else Megatron-Core's local
SequentialMLP; the environment line says which.

Writes DIR/mcore_moe_sync.jsonl (rank 0): {"environment": ...}, then one line per (mode,
tokens) {"kind": "mcore_moe_sync", "mode", "tokens", "layers", "experts", "top_k",
"local_experts", "wall_s", "kernel_s", "fwd_host_s", "idle_s", "experts_impl"}.
"""
import argparse
import json
import os
import platform
import sys
import time

SHAPE = {"name": "qwen3-30b-a3b", "hidden": 2048, "experts": 128, "top_k": 8, "ffn": 768}
TOKENS = [4096, 8192]  # tokens per rank per micro-batch: micro-batch 1 and 2 at seq 4096
MODES = ["drop_pad", "dropless"]
LAYERS = 4
EP = 2  # --ep; with --ep 1 on one GPU, --experts 16 keeps Qwen3-30B-A3B's per-rank expert load at EP 8


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build(mode, use_te):
    import torch
    import torch.nn.functional as F
    from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    kw = dict(num_layers=LAYERS, hidden_size=SHAPE["hidden"], num_attention_heads=16,
              ffn_hidden_size=4 * SHAPE["hidden"], moe_ffn_hidden_size=SHAPE["ffn"],
              num_moe_experts=SHAPE["experts"], moe_router_topk=SHAPE["top_k"],
              moe_token_dispatcher_type="alltoall", moe_router_load_balancing_type="none",
              moe_router_force_load_balancing=True, moe_grouped_gemm=use_te, moe_permute_fusion=False,
              expert_model_parallel_size=EP, gated_linear_unit=True, activation_func=F.silu,
              add_bias_linear=False, bf16=True, params_dtype=torch.bfloat16, hidden_dropout=0.0,
              attention_dropout=0.0)
    if mode == "drop_pad":
        kw.update(moe_expert_capacity_factor=1.0, moe_pad_expert_input_to_capacity=True)
    cfg = TransformerConfig(**kw)
    builder = get_moe_module_spec(use_te=use_te, num_experts=SHAPE["experts"], moe_grouped_gemm=use_te)
    layers = torch.nn.ModuleList()
    for i in range(LAYERS):
        layer = builder(config=cfg, pg_collection=None, is_mtp_layer=False)
        layer.set_layer_number(i + 1)
        layers.append(layer)
    return layers.cuda()


def run(layers, x):
    for layer in layers:
        out, _ = layer(x)
        x = x + out
    return x


def kernel_seconds(step, iters):
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    total_us = 0.0
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        if t is None:
            t = getattr(e, "self_cuda_time_total", 0.0)
        total_us += t
    return total_us * 1e-6 / iters


def main():
    global EP, TOKENS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mcore", required=True, help="directory holding megatron/core")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ep", type=int, default=EP, help="expert-parallel size (= the world size)")
    ap.add_argument("--experts", type=int, default=SHAPE["experts"], help="routed experts")
    ap.add_argument("--tokens", default=",".join(str(t) for t in TOKENS), help="tokens per rank, comma-separated")
    args = ap.parse_args()
    EP = args.ep
    SHAPE["experts"] = args.experts
    TOKENS = [int(t) for t in args.tokens.split(",")]
    sys.path.insert(0, args.mcore)
    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state as ps
    from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    if dist.get_world_size() != EP:
        raise SystemExit(f"mcore_moe_sync.py: needs {EP} ranks (--nproc-per-node {EP}); found {dist.get_world_size()}")
    ps.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1,
                                 expert_model_parallel_size=EP)
    model_parallel_cuda_manual_seed(1234)
    try:
        import transformer_engine  # noqa: F401
        use_te = True
    except ImportError:
        use_te = False
    rank0 = dist.get_rank() == 0
    lines = []
    if rank0:
        lines.append({"environment": {"torch": torch.__version__, "cuda": torch.version.cuda,
                                      "gpu": torch.cuda.get_device_name(), "cpu": cpu_model(),
                                      "experts_impl": "TEGroupedMLP" if use_te else "SequentialMLP",
                                      "ep": EP, "layers": LAYERS, "iters": args.iters,
                                      "experts": SHAPE["experts"], "top_k": SHAPE["top_k"],
                                      "command": f"python3 -m torch.distributed.run --standalone --nproc-per-node {EP} "
                                                 f"tools/measure/mcore_moe_sync.py --mcore VENDOR_DIR --out DIR --ep {EP} "
                                                 f"--experts {SHAPE['experts']} --tokens {','.join(str(t) for t in TOKENS)}"}})
    for mode in MODES:
        layers = build(mode, use_te)
        for tokens in TOKENS:
            x = torch.randn(tokens, 1, SHAPE["hidden"], device="cuda", dtype=torch.bfloat16, requires_grad=True)
            fwd_host = []

            def step():
                t0 = time.perf_counter()
                y = run(layers, x)
                fwd_host.append(time.perf_counter() - t0)
                y.float().sum().backward()
                x.grad = None
                for p in layers.parameters():
                    p.grad = None

            for _ in range(args.warmup):
                step()
            torch.cuda.synchronize()
            dist.barrier()
            fwd_host.clear()
            t0 = time.perf_counter()
            for _ in range(args.iters):
                step()
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) / args.iters
            host = sum(fwd_host) / len(fwd_host)
            dist.barrier()
            kern = kernel_seconds(step, max(1, args.iters // 2))
            if rank0:
                lines.append({"kind": "mcore_moe_sync", "mode": mode, "tokens": tokens, "layers": LAYERS,
                              "experts": SHAPE["experts"], "top_k": SHAPE["top_k"],
                              "local_experts": SHAPE["experts"] // EP, "wall_s": wall, "kernel_s": kern,
                              "fwd_host_s": host, "idle_s": max(0.0, wall - kern),
                              "experts_impl": "TEGroupedMLP" if use_te else "SequentialMLP"})
                print(json.dumps(lines[-1]), flush=True)
        del layers
        torch.cuda.empty_cache()
    if rank0:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "mcore_moe_sync.jsonl"), "w") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
