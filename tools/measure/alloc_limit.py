#!/usr/bin/env python3
"""How close to the GPU's whole memory can a training step's allocated peak get before it runs
out of memory? The caching allocator's headroom, measured.

A training step of a Hugging Face decoder (random weights, bf16, AdamW, AutoModel's
MaskedCrossEntropy; measure.py's Runner) runs beside a persistent block of B bytes allocated
once before the model: the stand-in for memory that is allocated once and never freed
(Megatron-Core's contiguous parameter / gradient buffers and optimizer state, FSDP's sharded
state). B is raised by bisection until the step runs out of memory. At the largest B that runs,
the script records the allocated peak (block included), the reserved peak, and the memory left
below the GPU's total once the CUDA context is taken out:

    slack = total - context - peak_allocated     (bytes the allocator could not hand out)

`slack / total` is the headroom a planner must keep beside the allocated peak it predicts; it is
what `--headroom` stands for. On an out-of-memory the caching allocator frees its cached blocks
and retries before it raises (c10/cuda/CUDACachingAllocator.cpp: release_cached_blocks, then
alloc_block again), so the reserved-but-free memory is not lost; what is lost is the
fragmentation of segments still in use, which expandable_segments largely removes (segments grow
by mapping pages instead of new cudaMalloc blocks).

Each allocator setting runs in its own process (PYTORCH_CUDA_ALLOC_CONF is read at CUDA
initialisation). One GPU.

    python3 tools/measure/alloc_limit.py --out DIR [--step-mib 128]

Writes DIR/alloc_limit.jsonl: an environment line, then one line per (allocator, case).
"""
import argparse
import gc
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_util  # noqa: E402
ALLOCATORS = ["", "expandable_segments:True"]
# (model, seq, micro-batch, checkpointing): small and mid-size decoders, with and without
# whole-layer checkpointing, so that the transient (activation) share of the peak varies.
CASES = [
    ("qwen2.5-0.5b", 4096, 4, "none"),
    ("qwen2.5-0.5b", 8192, 4, "full"),
    ("llama3.2-1b", 4096, 4, "none"),
    ("qwen3-1.7b", 8192, 2, "none"),
    ("qwen3-1.7b", 8192, 8, "full"),
]
STEPS = 3


def child(args):
    import torch

    import measure  # noqa: E402

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.zeros(1, device=dev)
    free0, total = torch.cuda.mem_get_info(dev)
    context = total - free0 - torch.cuda.memory_reserved(dev)
    model, seq, mb, ac = args.case.split(":")
    case = {"model": model, "seq": int(seq), "mb": int(mb), "ga": 1, "ac": ac, "params": "bf16",
            "strategy": "single", "tp": 1, "defer": False, "opt": "foreach"}

    def trial(block_bytes):
        """(ran, peak allocated, peak reserved, retries) of STEPS steps beside a block."""
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        block = runner = None
        try:
            block = torch.empty(block_bytes, dtype=torch.uint8, device=dev) if block_bytes else None
            runner = measure.Runner(case, 1, 0, dev, None)  # ac "full": HF gradient checkpointing
            for _ in range(STEPS):
                runner.step()
            torch.cuda.synchronize(dev)
            stats = torch.cuda.memory_stats(dev)
            return True, torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev), \
                stats.get("num_alloc_retries", 0)
        except torch.OutOfMemoryError:
            return False, 0, 0, 0
        finally:
            del block, runner
            gc.collect()
            torch.cuda.empty_cache()

    t0 = time.time()
    ok, peak0, res0, _ = trial(0)
    if not ok:
        print(json.dumps({"case": args.case, "error": "does not run without a block"}))
        return
    step = args.step_mib << 20
    best = bench_util.bisect_block(trial, total, context, peak0, res0, step, below=6 << 30)
    block, peak, reserved, retries = best
    print(json.dumps({
        "case": args.case, "model": model, "seq": int(seq), "mb": int(mb), "ac": ac,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "total_bytes": total,
        "context_bytes": context, "peak_alloc_no_block": peak0, "peak_reserved_no_block": res0,
        "transient_bytes": peak0, "block_bytes": block, "peak_alloc": peak, "peak_reserved": reserved,
        "alloc_retries": retries, "bisection_step_bytes": step,
        "slack_bytes": total - context - peak, "slack_share": (total - context - peak) / total,
        "seconds": round(time.time() - t0, 1)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--step-mib", type=int, default=128)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--only", help="comma-separated case indices to run")
    args = ap.parse_args()
    if args.case:
        return child(args)
    import torch
    import transformers

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "alloc_limit.jsonl")
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(0), "script": "tools/measure/alloc_limit.py", "steps": STEPS,
           "optimizer": "torch.optim.AdamW foreach, bf16 state", "params": "bf16"}
    picked = [CASES[int(i)] for i in args.only.split(",")] if args.only else CASES
    runs = [(f"{m}:{s}:{b}:{ac}", [sys.executable, __file__, "--case", f"{m}:{s}:{b}:{ac}", "--step-mib",
                                   str(args.step_mib)]) for m, s, b, ac in picked]
    bench_util.run_per_allocator(path, env, ALLOCATORS, runs)

if __name__ == "__main__":
    main()
