#!/usr/bin/env python3
"""Measures per-GPU peak memory and step time of a few training steps, AutoModel style.

Builds Hugging Face Llama / Qwen2 / Qwen3 decoders from the config.json files in
tests/data/measured/models/ (random weights, nothing downloaded), parallelises them the way
NeMo AutoModel does (components/distributed/{fsdp2,ddp,parallelizer,activation_checkpointing}.py
at 36044ad) and trains a few AdamW steps on random tokens. For each case it records
torch.cuda.max_memory_allocated / max_memory_reserved per phase (forward, backward,
optimizer step), the allocator's current figures between phases, the device memory in use
(cudaMemGetInfo, which adds the CUDA context and NCCL's own buffers) and the step time after
warm-up. Values are the maximum over ranks.

One GPU:  python3 tools/measure/measure.py --suite 1gpu --out DIR
Two GPUs: python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
              tools/measure/measure.py --suite 2gpu --out DIR
Writes DIR/<suite>.jsonl (one JSON object per case, written as each case ends) and
DIR/<suite>.csv (<suite>-<tag> with --tag). Needs torch >= 2.6 (fully_shard, DTensor TP) and transformers.
"""

import argparse
import contextlib
import csv
import gc
import json
import os
import platform
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as case_lists  # noqa: E402
import parallel  # noqa: E402

MODELS_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "tests", "data", "measured", "models"))
WARMUP_STEPS = 2
TIMED_STEPS = 2
PHASE_KEYS = ["fwd", "bwd", "opt"]


def load_hf_model_class(name):
    """(model class, config, raw dict) for tests/data/measured/models/<name>.json."""
    import transformers

    with open(os.path.join(MODELS_DIR, name + ".json")) as f:
        raw = json.load(f)
    cls = getattr(transformers, raw["architectures"][0])
    skip = {"architectures", "torch_dtype", "transformers_version", "rope_scaling"}
    cfg = cls.config_class(**{k: v for k, v in raw.items() if k not in skip})
    cfg.use_cache = False  # AutoModel: auto_model.py _config_defaults {"use_cache": False}
    cfg._attn_implementation = "sdpa"
    return cls, cfg, raw


@contextlib.contextmanager
def default_dtype(dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def masked_ce(logits, labels, num_tokens):
    """AutoModel components/loss/masked_ce.py: fp32 upcast, full_tensor of DTensor logits,
    cross_entropy(reduction="sum") / number of label tokens."""
    logits = logits.view(-1, logits.size(-1))
    labels = labels.view(-1)
    logits = logits.float()
    if hasattr(logits, "full_tensor"):
        logits = logits.full_tensor()
    return F.cross_entropy(logits, labels, reduction="sum") / num_tokens


class Runner:
    def __init__(self, case, world, rank, device, meshes):
        self.case = case
        self.world = world
        self.rank = rank
        self.device = device
        cls, cfg, raw = load_hf_model_class(case["model"])
        dtype = torch.bfloat16 if case["params"] == "bf16" else torch.float32
        with torch.device(device), default_dtype(dtype):
            model = cls(cfg)
        model.train()
        self.num_params = sum(p.numel() for p in model.parameters())
        self.attn_impl = getattr(model.config, "_attn_implementation", "?")
        self.model, self.kind = parallel.parallelize(model, case, world, device, meshes)
        impl = {"foreach": {}, "fused": {"fused": True}, "forloop": {"foreach": False}}[case.get("opt", "foreach")]
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-5, betas=(0.9, 0.95),
                                     weight_decay=0.01, **impl)
        g = torch.Generator(device=device).manual_seed(1234 + rank)
        shape = (case["mb"], case["seq"])
        self.batches = []
        for _ in range(case["ga"]):
            ids = torch.randint(0, cfg.vocab_size, shape, device=device, generator=g)
            labels = torch.randint(0, cfg.vocab_size, shape, device=device, generator=g)
            self.batches.append((ids, labels))
        self.num_tokens = case["mb"] * case["seq"]

    def step(self, probe=None):
        c = self.case
        ga = c["ga"]
        for i, (ids, labels) in enumerate(self.batches):
            last = i == ga - 1
            sync = contextlib.nullcontext()
            if self.kind == "fsdp2":
                self.model.set_requires_gradient_sync(last if c["defer"] else True)
            elif self.kind == "ddp" and not last:
                sync = self.model.no_sync()
            with sync:
                out = self.model(input_ids=ids)
                loss = masked_ce(out.logits, labels, self.num_tokens)
                if probe is not None and i == 0:
                    probe("fwd")
                loss.backward()
                del out, loss  # AutoModel keeps `out` alive until the backward is done
        if probe is not None:
            probe("bwd")
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if probe is not None:
            probe("opt")


def measure_case(case, world, rank, device, meshes):
    rec = dict(case)
    rec["world"] = world
    t_build = time.perf_counter()
    runner = Runner(case, world, rank, device, meshes)
    rec["num_params"] = runner.num_params
    rec["attn_impl"] = runner.attn_impl
    rec["wrapper"] = runner.kind
    rec["build_s"] = round(time.perf_counter() - t_build, 2)
    torch.cuda.synchronize()
    rec["alloc_after_build"] = torch.cuda.memory_allocated()
    for _ in range(WARMUP_STEPS):
        runner.step()
    torch.cuda.synchronize()
    stats = {"alloc_step_start": torch.cuda.memory_allocated(),
             "reserved_step_start": torch.cuda.memory_reserved()}
    torch.cuda.reset_peak_memory_stats()

    def probe(phase):
        torch.cuda.synchronize()
        stats["peak_alloc_" + phase] = torch.cuda.max_memory_allocated()
        stats["peak_reserved_" + phase] = torch.cuda.max_memory_reserved()
        stats["alloc_after_" + phase] = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()

    runner.step(probe)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(TIMED_STEPS):
        runner.step()
    torch.cuda.synchronize()
    step_s = (time.perf_counter() - t0) / TIMED_STEPS
    stats["peak_alloc"] = max(stats["peak_alloc_" + p] for p in PHASE_KEYS)
    stats["peak_reserved"] = max(stats["peak_reserved_" + p] for p in PHASE_KEYS)
    free, total = torch.cuda.mem_get_info()
    stats["device_used"] = total - free
    stats["reserved_end"] = torch.cuda.memory_reserved()
    stats["step_s"] = step_s
    stats["num_alloc_retries"] = torch.cuda.memory_stats().get("num_alloc_retries", 0)
    keys = sorted(stats)
    t = torch.tensor([float(stats[k]) for k in keys], dtype=torch.float64, device=device)
    if world > 1:
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    for k, v in zip(keys, t.tolist()):
        rec[k] = v if k == "step_s" else int(v)
    rec["status"] = "ok"
    del runner
    return rec


def cleanup():
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def environment(world):
    import transformers

    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "gpu_total_bytes": torch.cuda.mem_get_info()[1],
        "world": world,
        "python": platform.python_version(),
        "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "NCCL_MAX_NCHANNELS": os.environ.get("NCCL_MAX_NCHANNELS", ""),
        "warmup_steps": WARMUP_STEPS,
        "timed_steps": TIMED_STEPS,
        "optimizer": "torch.optim.AdamW(lr=1e-5, betas=(0.9, 0.95), weight_decay=0.01); case opt: foreach "
                     "(default), fused=True or foreach=False",
        "loss": "AutoModel MaskedCrossEntropy: logits.float(), cross_entropy(sum) / tokens",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", required=True, choices=sorted(case_lists.SUITES))
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated case ids to run")
    ap.add_argument("--tag", default="", help="suffix of the output file names")
    args = ap.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    grouped = world > 1 or "RANK" in os.environ  # torch.distributed.run, also with one rank
    if grouped:
        dist.init_process_group("nccl", device_id=device)
    torch.zeros(1, device=device)
    free, total = torch.cuda.mem_get_info()
    context_bytes = total - free - torch.cuda.memory_reserved()
    meshes = parallel.make_meshes(world) if grouped else {}

    todo = case_lists.SUITES[args.suite]
    if args.only:
        keep = set(args.only.split(","))
        todo = [c for c in todo if c["id"] in keep]
    os.makedirs(args.out, exist_ok=True)
    stem = args.suite + ("-" + args.tag if args.tag else "")
    jsonl = os.path.join(args.out, stem + ".jsonl")
    records = []
    if rank == 0:
        env = environment(world)
        env["context_bytes_at_start"] = context_bytes
        with open(jsonl, "w") as f:
            f.write(json.dumps({"environment": env}) + "\n")
        print(json.dumps(env), flush=True)
    for case in todo:
        t0 = time.perf_counter()
        try:
            rec = measure_case(case, world, rank, device, meshes)
        except torch.OutOfMemoryError as e:
            rec = dict(case, world=world, status="oom", error=str(e).splitlines()[0][:300])
        except Exception as e:  # record and go on with the next case
            rec = dict(case, world=world, status="error", error=f"{type(e).__name__}: {e}"[:600])
            if rank == 0:
                traceback.print_exc()
        cleanup()
        if world > 1:
            dist.barrier()
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        if rank == 0:
            records.append(rec)
            with open(jsonl, "a") as f:
                f.write(json.dumps(rec) + "\n")
            gib = 1024.0 ** 3
            print(f"{rec['id']:34s} {rec['status']:5s} alloc {rec.get('peak_alloc', 0) / gib:7.2f} GiB"
                  f" reserved {rec.get('peak_reserved', 0) / gib:7.2f} GiB step {rec.get('step_s', 0):6.3f} s"
                  f" wall {rec['wall_s']:5.1f} s {rec.get('error', '')}", flush=True)
    if rank == 0 and records:
        fields = sorted({k for r in records for k in r})
        with open(os.path.join(args.out, stem + ".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for r in records:
                w.writerow(r)
    if grouped:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
