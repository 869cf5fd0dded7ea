#!/usr/bin/env python3
"""Saved activation memory of one decoder layer of NeMo AutoModel's own MoE models, measured.

    python3 tools/measure/automodel_moe_memory.py --automodel DIR --out OUT [--cases gpt-oss-120b,qwen3-30b-a3b]

DIR holds the `nemo_automodel` package of an AutoModel snapshot (not vendored here: fetch
NVIDIA-NeMo/Automodel and point at its root). One GPU, one-rank process group (EP 1).

AutoModel trains GPT-OSS, Qwen3-MoE, DeepSeek-V3 and the like with its own modules
(nemo_automodel/components/models/<model>/model.py, components/moe/layers.py MoE with the
experts of components/moe/experts.py). This builds each model from its Hugging Face config
(models/<name>.json of this repository) with 1 and 2 decoder layers, in bf16, with the backend
BackendConfig(attn=sdpa|flex, linear=torch, rms_norm=torch, rope_fusion=False, experts=torch_mm,
dispatcher=torch, fake_balanced_gate=True): the benchmark recipes' experts backend and balanced
fake gate; the attention, linear and norm kernels are PyTorch's because Transformer Engine is
not installed on the measuring machine (the difference is in the attention core's saved
tensors, not in the MoE block). Under balanced routing with EP N, each rank's experts receive
T x top_k token copies, as the one rank's here: the per-layer saved tensors of EP 1 are those of
an EP rank, without the dispatcher's own buffers.

For each (model, tokens = local_batch x seq_len): memory_allocated() after the forward (logits
returned, before the loss) less before it, at 1 and at 2 layers; the difference is one layer's
saved tensors (everything the autograd graph keeps for backward). The step's peak
(max_memory_allocated over forward + backward) is recorded beside it.

Writes OUT/automodel_moe_memory.jsonl: {"environment": ...}, then per case
{"kind": "layer_saved", "model", "layers", "local_batch", "seq_len", "tokens", "forward_delta_bytes",
 "peak_bytes", "weights_bytes"} and {"kind": "per_layer", "model", "tokens", "bytes",
 "bytes_per_token"}.
"""
import argparse
import json
import os
import sys
import time


def build(name, cfg_path, layers, attn):
    import torch
    import transformers

    with open(cfg_path) as f:
        raw = json.load(f)
    raw = dict(raw)
    raw["num_hidden_layers"] = layers
    if "layer_types" in raw:
        raw["layer_types"] = raw["layer_types"][:layers]
    if "first_k_dense_replace" in raw:
        raw["first_k_dense_replace"] = 0
    raw.pop("quantization_config", None)
    model_type = raw["model_type"]
    cfg = transformers.AutoConfig.for_model(**raw)
    from nemo_automodel.components.models.common.utils import BackendConfig

    backend = BackendConfig(attn=attn, linear="torch", rms_norm="torch", rope_fusion=False, experts="torch_mm",
                            dispatcher="torch", fake_balanced_gate=True, enable_hf_state_dict_adapter=False)
    if model_type == "gpt_oss":
        from nemo_automodel.components.models.gpt_oss.model import GptOssForCausalLM as M
    elif model_type == "qwen3_moe":
        from nemo_automodel.components.models.qwen3_moe.model import Qwen3MoeForCausalLM as M
    elif model_type in ("deepseek_v3", "kimi_k2"):
        from nemo_automodel.components.models.deepseek_v3.model import DeepseekV3ForCausalLM as M
    else:
        raise SystemExit(f"{name}: model_type {model_type} not handled")
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = M(cfg, backend=backend)
    model = model.to(torch.bfloat16)
    # Random weights small enough to keep the activations finite.
    with torch.no_grad():
        for p in model.parameters():
            if p.dtype.is_floating_point:
                p.normal_(0.0, 0.02)
    return model, cfg


def one(name, cfg_path, layers, lbs, seq, attn):
    import torch

    model, cfg = build(name, cfg_path, layers, attn)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    ids = torch.randint(0, cfg.vocab_size, (lbs, seq), device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = model(ids)
    logits = out.logits if hasattr(out, "logits") else out
    torch.cuda.synchronize()
    after = torch.cuda.memory_allocated()
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]).float(), ids.view(-1))
    loss.backward()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    rec = {"kind": "layer_saved", "model": name, "layers": layers, "local_batch": lbs, "seq_len": seq,
           "tokens": lbs * seq, "attn": attn, "forward_delta_bytes": after - before, "peak_bytes": peak,
           "weights_bytes": weights}
    del model, out, logits, loss
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--automodel", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=os.path.join(os.path.dirname(__file__), "..", "..", "models"))
    ap.add_argument("--cases", default="gpt-oss-120b,qwen3-30b-a3b")
    ap.add_argument("--shapes", default="1x4096,2x4096")
    ap.add_argument("--attn", default="sdpa")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.automodel))
    import torch
    import torch.distributed as dist
    import transformers

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    if not dist.is_initialized():
        dist.init_process_group("nccl", rank=0, world_size=1)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "automodel_moe_memory.jsonl")
    with open(path, "w") as f:
        env = {"environment": {"torch": torch.__version__, "transformers": transformers.__version__,
                               "gpu": torch.cuda.get_device_name(0), "time": time.strftime("%Y-%m-%d %H:%M:%S"),
                               "automodel": open(os.path.join(a.automodel, "COMMIT")).read().strip()
                               if os.path.exists(os.path.join(a.automodel, "COMMIT")) else "unknown",
                               "backend": f"attn={a.attn} linear=torch rms_norm=torch experts=torch_mm dispatcher=torch "
                                          "fake_balanced_gate=True"}}
        f.write(json.dumps(env) + "\n")
        print(json.dumps(env), flush=True)
        for name in a.cases.split(","):
            cfg_path = os.path.join(a.models, name + ".json")
            for shape in a.shapes.split(","):
                lbs, seq = (int(x) for x in shape.split("x"))
                recs = []
                for layers in (1, 2):
                    try:
                        r = one(name, cfg_path, layers, lbs, seq, a.attn)
                    except Exception as e:  # record and go on: one case must not lose the others
                        r = {"kind": "error", "model": name, "layers": layers, "tokens": lbs * seq,
                             "error": f"{type(e).__name__}: {e}"[:400]}
                    f.write(json.dumps(r) + "\n")
                    f.flush()
                    print(json.dumps(r), flush=True)
                    recs.append(r)
                if all(r["kind"] == "layer_saved" for r in recs):
                    b = recs[1]["forward_delta_bytes"] - recs[0]["forward_delta_bytes"]
                    r = {"kind": "per_layer", "model": name, "local_batch": lbs, "seq_len": seq, "tokens": lbs * seq,
                         "bytes": b, "bytes_per_token": b / (lbs * seq)}
                    f.write(json.dumps(r) + "\n")
                    f.flush()
                    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
