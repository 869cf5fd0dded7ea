"""Host (CPU) time per decoder layer of AutoModel-style training: eager Hugging Face modules
under FSDP2, with and without DTensor tensor parallelism (AutoModel's Llama TP plan, no SP).

A Llama decoder so small that every GPU kernel takes a few microseconds is trained with the
same parallelisation as tools/measure/measure.py (parallel.py: FSDP2 per layer, TP plan, DDP,
the unwrapped model on one GPU, activation checkpointing, MaskedCrossEntropy, AdamW). The step is then bound by the host:
Python, the DTensor dispatcher, the FSDP2 hooks and kernel launches. The step time is measured
at 4, 8, 16 and 32 layers; its slope against the layer count is the host time of one decoder layer
per micro-batch (forward + backward, + the recomputed forward under checkpointing), the part
the GPU cannot hide when its own work per layer is shorter.

    python3 -m torch.distributed.run --standalone --nproc-per-node 2 \\
        tools/measure/host_overhead.py --out DIR          # FSDP2 TP 1 and 2, DDP
    python3 -m torch.distributed.run --standalone --nproc-per-node 1 \\
        tools/measure/host_overhead.py --out DIR          # one GPU, no wrapper

Writes DIR/host_overhead_<world>gpu.jsonl: one line per (strategy, tp, ac, layers) with the mean step seconds of
TIMED steps after WARMUP steps (maximum over ranks), then one line per (tp, ac) with the
least-squares slope (seconds per layer) and intercept per (strategy, tp, ac). The first line records the environment.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import parallel  # noqa: E402
from measure import default_dtype, environment, masked_ce  # noqa: E402

WARMUP = 3
TIMED = 20
LAYERS = [4, 8, 16, 32]
SEQ = 256
MB = 1


def tiny_llama(layers):
    import transformers

    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=4, head_dim=64,
                                   vocab_size=2048, max_position_embeddings=4096, tie_word_embeddings=False)
    cfg.use_cache = False
    cfg._attn_implementation = "sdpa"
    return transformers.LlamaForCausalLM, cfg


def measure(strategy, tp, ac, layers, world, rank, device, meshes):
    cls, cfg = tiny_llama(layers)
    with torch.device(device), default_dtype(torch.bfloat16):
        model = cls(cfg)
    model.train()
    case = {"strategy": strategy, "tp": tp, "ac": ac}
    model, kind = parallel.parallelize(model, case, world, device, meshes)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.95), weight_decay=0.01)
    g = torch.Generator(device=device).manual_seed(1234 + rank)
    ids = torch.randint(0, cfg.vocab_size, (MB, SEQ), device=device, generator=g)
    labels = torch.randint(0, cfg.vocab_size, (MB, SEQ), device=device, generator=g)

    def step():
        out = model(input_ids=ids)
        loss = masked_ce(out.logits, labels, MB * SEQ)
        loss.backward()
        del out, loss
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(TIMED):
        step()
    torch.cuda.synchronize()
    step_s = (time.perf_counter() - t0) / TIMED
    t = torch.tensor([step_s], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    del model, opt
    torch.cuda.empty_cache()
    return {"kind": kind, "world": world, "tp": tp, "ac": ac, "layers": layers, "seq": SEQ, "mb": MB,
            "hidden": 256, "step_s": t.item()}


def slope(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return b, my - b * mx


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    meshes = parallel.make_meshes(world)
    lines = [{"environment": dict(environment(world), warmup_steps=WARMUP, timed_steps=TIMED)}]
    configs = [("fsdp2", 1), ("fsdp2", 2), ("ddp", 1)] if world == 2 else [("fsdp2", 1)]
    for strategy, tp in configs:
        for ac in ("none", "full", "selective"):
            pts = []
            for layers in LAYERS:
                rec = measure(strategy, tp, ac, layers, world, rank, device, meshes)
                lines.append(rec)
                pts.append((layers, rec["step_s"]))
                if rank == 0:
                    print(json.dumps(rec), flush=True)
            b, a = slope(pts)
            fit = {"fit": "step_s = intercept + per_layer_s * layers", "kind": rec["kind"], "world": world,
                   "tp": tp, "ac": ac,
                   "per_layer_s": b, "intercept_s": a}
            lines.append(fit)
            if rank == 0:
                print(json.dumps(fit), flush=True)
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "host_overhead_%dgpu.jsonl" % world), "w") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
