#!/usr/bin/env python3
"""How close to the GPU's whole memory can a Megatron-Core training step's allocated peak get
before it runs out of memory? The caching allocator's loss under Megatron-Core's own allocation
pattern, measured on one GPU.

alloc_limit.py measures it for a Hugging Face decoder beside one persistent block. This script
runs Megatron-Core itself (megatron/core vendored, not modified): GPTModel with the local layer
specs (get_gpt_layer_local_spec: no Transformer Engine needed), its DistributedDataParallel with
the distributed optimizer (contiguous bf16 parameter buffer and fp32 gradient buffer,
param_and_grad_buffer.py, overlap_grad_reduce on), Megatron's optimizer (get_megatron_optimizer:
fp32 master weights and Adam moments, TE / apex FusedAdam when present, else torch AdamW), and
forward_backward_no_pipelining over NUM_MICROBATCHES micro-batches per step. Beside it a block of
B bytes is allocated before the model (what other ranks' layouts would add: a larger model's
buffers); B is raised by bisection until a step runs out of memory. At the largest B that runs:

    slack = total - context - peak_allocated     (bytes the allocator could not hand out)

`slack / total` is the share of the GPU a planner must keep free beside the allocated peak it
predicts for a Megatron-Core job (meshplan's --headroom). Each allocator setting runs in its own
process (PYTORCH_CUDA_ALLOC_CONF is read at CUDA initialisation). One GPU, world size 1: no NCCL
communicator buffers beyond the process group's own (those are counted by meshplan's
"CUDA context + NCCL" term, not by the headroom).

    python3 tools/measure/mcore_alloc_limit.py --mcore VENDOR_DIR --out DIR [--step-mib 128]

VENDOR_DIR holds megatron/core (Megatron-LM d98e8a64). Writes DIR/mcore_alloc_limit.jsonl: an
environment line, then one line per (allocator, case).
"""
import argparse
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util  # noqa: E402

ALLOCATORS = ["", "expandable_segments:True"]
# (name, hidden, layers, heads, kv heads, ffn, seq, micro-batch, recompute): Llama-shaped decoders
# (vocab 128256, SwiGLU, RMSNorm, GQA), with and without full recompute so the transient
# (activation) share of the peak varies. The local attention materialises the s x s scores, so the
# sequences are short.
CASES = [
    ("1.2b", 2048, 16, 16, 8, 8192, 2048, 2, "none"),
    ("1.2b-full", 2048, 16, 16, 8, 8192, 4096, 4, "full"),
    ("3b", 3072, 28, 24, 8, 8192, 2048, 2, "none"),
]
VOCAB = 128256
NUM_MICROBATCHES = 4
STEPS = 3


def build(case, dev):
    import torch
    import torch.nn.functional as F
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    from megatron.core.transformer.transformer_config import TransformerConfig

    name, h, L, a, g, f, s, b, rc = case
    kw = dict(num_layers=L, hidden_size=h, num_attention_heads=a, num_query_groups=g, ffn_hidden_size=f,
              normalization="RMSNorm", gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
              params_dtype=torch.bfloat16, bf16=True, pipeline_dtype=torch.bfloat16,
              hidden_dropout=0.0, attention_dropout=0.0, perform_initialization=False)
    if rc == "full":
        kw.update(recompute_granularity="full", recompute_method="uniform", recompute_num_layers=1)
    cfg = TransformerConfig(**kw)
    model = GPTModel(config=cfg, transformer_layer_spec=get_gpt_layer_local_spec(normalization="RMSNorm"),
                     vocab_size=VOCAB, max_sequence_length=s, position_embedding_type="rope").to(dev)
    ddp_cfg = DistributedDataParallelConfig(use_distributed_optimizer=True, overlap_grad_reduce=True,
                                            grad_reduce_in_fp32=True, bucket_size=40_000_000)
    model = DistributedDataParallel(cfg, ddp_cfg, model)
    opt = get_megatron_optimizer(OptimizerConfig(optimizer="adam", lr=1e-5, bf16=True,
                                                 use_distributed_optimizer=True), [model])
    return cfg, model, opt


def child(args):
    sys.path.insert(0, args.mcore)
    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state as ps
    from megatron.core.pipeline_parallel import get_forward_backward_func

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    ps.initialize_model_parallel(1, 1)
    from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed
    model_parallel_cuda_manual_seed(1234)
    torch.zeros(1, device=dev)
    torch.cuda.synchronize(dev)
    free0, total = torch.cuda.mem_get_info(dev)
    context = total - free0 - torch.cuda.memory_reserved(dev)
    case = next(c for c in CASES if c[0] == args.case)
    name, h, L, a, g, f, s, b, rc = case
    fwd_bwd = get_forward_backward_func()

    def batches():
        tokens = torch.randint(0, VOCAB, (b, s), device=dev)
        pos = torch.arange(s, device=dev).unsqueeze(0).expand(b, s)
        for _ in range(NUM_MICROBATCHES):
            yield tokens, pos

    def forward_step(it, model):
        tokens, pos = next(it)
        out = model(tokens, pos, None, labels=tokens)  # [b, s] per-token loss

        def loss_func(o):
            loss = o.float().mean()
            return loss, {"loss": loss.detach()}
        return out, loss_func

    def trial(block_bytes):
        """(ran, peak allocated, peak reserved, retries) of STEPS steps beside a block."""
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        block = model = opt = None
        try:
            block = torch.empty(block_bytes, dtype=torch.uint8, device=dev) if block_bytes else None
            cfg, model, opt = build(case, dev)
            for _ in range(STEPS):
                model.zero_grad_buffer()
                opt.zero_grad()
                fwd_bwd(forward_step_func=forward_step, data_iterator=batches(), model=[model],
                        num_microbatches=NUM_MICROBATCHES, seq_length=s, micro_batch_size=b,
                        forward_only=False)
                model.finish_grad_sync()
                opt.step()
            torch.cuda.synchronize(dev)
            stats = torch.cuda.memory_stats(dev)
            return True, torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev), \
                stats.get("num_alloc_retries", 0)
        except torch.OutOfMemoryError:
            return False, 0, 0, 0
        finally:
            del block, model, opt
            gc.collect()
            torch.cuda.empty_cache()

    t0 = time.time()
    ok, peak0, res0, _ = trial(0)
    if not ok:
        print(json.dumps({"case": name, "error": "does not run without a block"}))
        return
    step = args.step_mib << 20
    best = bench_util.bisect_block(trial, total, context, peak0, res0, step, below=4 << 30)
    block, peak, reserved, retries = best
    print(json.dumps({
        "case": name, "hidden": h, "layers": L, "heads": a, "kv_heads": g, "ffn": f, "vocab": VOCAB, "seq": s,
        "mb": b, "num_microbatches": NUM_MICROBATCHES, "recompute": rc,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "total_bytes": total,
        "context_bytes": context, "peak_alloc_no_block": peak0, "peak_reserved_no_block": res0,
        "block_bytes": block, "peak_alloc": peak, "peak_reserved": reserved, "alloc_retries": retries,
        "bisection_step_bytes": step, "slack_bytes": total - context - peak,
        "slack_share": (total - context - peak) / total, "seconds": round(time.time() - t0, 1)}))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mcore", required=True, help="folder holding megatron/core")
    ap.add_argument("--out")
    ap.add_argument("--step-mib", type=int, default=128)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--only", help="comma-separated case names to run")
    args = ap.parse_args()
    if args.case:
        return child(args)
    import torch

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "mcore_alloc_limit.jsonl")
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
           "script": "tools/measure/mcore_alloc_limit.py", "megatron_core": "Megatron-LM d98e8a64",
           "steps": STEPS, "num_microbatches": NUM_MICROBATCHES,
           "ddp": "distributed optimizer, overlap_grad_reduce, grad_reduce_in_fp32, bucket_size 4e7",
           "specs": "get_gpt_layer_local_spec (no Transformer Engine)"}
    picked = [c for c in CASES if not args.only or c[0] in args.only.split(",")]
    runs = [(c[0], [sys.executable, __file__, "--mcore", args.mcore, "--case", c[0], "--step-mib", str(args.step_mib)])
            for c in picked]
    bench_util.run_per_allocator(path, env, ALLOCATORS, runs)

if __name__ == "__main__":
    main()
