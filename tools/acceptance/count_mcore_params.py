#!/usr/bin/env python3
"""Counts each pipeline rank's parameters as Megatron-Core builds them, for meshplan's static memory test.

For every case of CASES (a model preset of meshplan's models/, a layout), this builds the real
Megatron-Core GPTModel (megatron/core at Megatron-LM d98e8a64, vendored, not modified) of one rank
on the `meta` device, after parallel_state.initialize_model_parallel on torch's "fake" process
group of the layout's world size, and counts its parameters: dense (replicated over DP) and
expert (param.allreduce == False: sharded over expert-DP), for the rank at TP rank 0, CP rank 0,
EP rank 0 of every pipeline rank, summed over its virtual stages. Layer specs are Megatron-Core's
get_gpt_decoder_block_spec(use_transformer_engine=False) and get_gpt_mtp_block_spec, which hold the
same parameter shapes as the Transformer Engine specs (TE fuses the input norms' weights into its
linears; the count is the same); sequence parallelism is left off (it changes no parameter, and the
local specs' torch norms refuse it). The word-embedding table is padded as Megatron-Bridge pads it
(make_vocab_size_divisible_by 128 times TP, GPTModelProvider).

Also builds Megatron-Core's DistributedDataParallel (distributed optimizer on, bucket_size as
Megatron-Bridge sets it) over the rank's model with its buffers on the meta device, and records
each buffer's padded element count (param_and_grad_buffer.py: parameter starts padded to 64
elements, each bucket and the buffer end padded to a multiple of lcm(DP, 128)).

Usage (a machine with torch >= 2.6; no GPU, no Transformer Engine needed):
  python3 tools/acceptance/count_mcore_params.py --mcore VENDOR_DIR --models models/ --out FILE.json
VENDOR_DIR holds megatron/core (git archive d98e8a64 megatron/core of NVIDIA/Megatron-LM).
"""

import argparse
import contextlib
import json
import math
import os
import sys
import traceback

# (preset, tp, pp, vpp, cp, ep, etp, dp, split); world = tp * pp * cp * dp; EP and ETP over the same
# ranks. split: "even" (num_layers / (pp * vpp)), "account" (account_for_embedding_in_pipeline_split
# and account_for_loss_in_pipeline_split: (num_layers + 2) / stages) or "dsv3" (Megatron-Bridge's
# DeepSeek-V3 layout of 16 stages, recipes/deepseek/deepseek_v3.py: E + 4 decoder layers, 14 x 4,
# then 1 decoder layer + MTP + loss); "dsv3-nomtp" the same without the MTP layer (the model trained
# without MTP, as Megatron-Bridge's "(w/o MTP)" rows; the MTP layer of the local specs does not build
# without Transformer Engine at d98e8a64).
CASES = [
    ("llama3.1-8b", 1, 1, 1, 1, 1, 1, 8, "even"),
    ("llama3.1-8b", 2, 2, 1, 1, 1, 1, 2, "even"),
    ("llama3.1-8b", 4, 2, 2, 1, 1, 1, 1, "even"),
    ("llama3.1-70b", 4, 4, 5, 2, 1, 1, 1, "even"),
    ("llama3.1-70b", 8, 4, 1, 1, 1, 1, 2, "even"),
    ("llama3.1-70b", 4, 8, 5, 1, 1, 1, 2, "even"),
    ("llama3.1-405b", 8, 16, 1, 1, 1, 1, 2, "account"),
    ("llama3.1-405b", 4, 16, 4, 1, 1, 1, 4, "account"),
    ("qwen3-8b", 1, 1, 1, 1, 1, 1, 8, "even"),
    ("qwen3-8b", 2, 4, 1, 1, 1, 1, 2, "even"),
    ("qwen3-30b-a3b", 1, 1, 1, 1, 8, 1, 8, "even"),
    ("qwen3-30b-a3b", 2, 2, 1, 1, 4, 1, 4, "even"),
    ("qwen3-30b-a3b", 1, 4, 12, 1, 8, 1, 8, "even"),
    ("qwen3-235b-a22b", 2, 8, 4, 1, 32, 1, 16, "account"),
    ("qwen3-235b-a22b", 4, 16, 1, 2, 8, 1, 2, "account"),
    ("mixtral-8x7b", 2, 4, 1, 1, 8, 1, 4, "even"),
    ("deepseek-v3", 1, 16, 1, 1, 64, 1, 64, "dsv3-nomtp"),
    ("deepseek-v3", 2, 8, 2, 1, 32, 1, 32, "dsv3-nomtp"),
    ("kimi-k2", 1, 16, 1, 1, 32, 1, 32, "dsv3"),
]


def hf(models, preset):
    with open(os.path.join(models, preset + ".json")) as f:
        return json.load(f)


def transformer_config(c, preset, tp, pp, vpp, cp, ep, etp, split):
    import torch
    import torch.nn.functional as F
    from megatron.core.transformer.transformer_config import MLATransformerConfig, TransformerConfig

    arch = c["architectures"][0]
    L = c["num_hidden_layers"]
    kw = dict(
        num_layers=L, hidden_size=c["hidden_size"], num_attention_heads=c["num_attention_heads"],
        num_query_groups=c.get("num_key_value_heads", c["num_attention_heads"]),
        ffn_hidden_size=c["intermediate_size"], normalization="RMSNorm", gated_linear_unit=True,
        activation_func=F.silu, add_bias_linear=False, add_qkv_bias=bool(c.get("attention_bias", False)),
        layernorm_epsilon=c.get("rms_norm_eps", 1e-5), tensor_model_parallel_size=tp,
        pipeline_model_parallel_size=pp, context_parallel_size=cp, expert_model_parallel_size=ep,
        expert_tensor_parallel_size=etp, params_dtype=torch.bfloat16, bf16=True,
        pipeline_dtype=torch.bfloat16, use_cpu_initialization=True, perform_initialization=False,
        init_model_with_meta_device=True,
        hidden_dropout=0.0, attention_dropout=0.0,
    )
    if vpp > 1:
        kw["virtual_pipeline_model_parallel_size"] = vpp
    mtp = 0 if split == "dsv3-nomtp" else (c.get("num_nextn_predict_layers") or 0)
    if split == "account":
        kw.update(account_for_embedding_in_pipeline_split=True, account_for_loss_in_pipeline_split=True)
    if split.startswith("dsv3"):
        last = ["decoder"] + ["mtp"] * mtp + ["loss"]
        kw["pipeline_model_parallel_layout"] = [["embedding"] + ["decoder"] * 4] + [["decoder"] * 4] * 14 + [last]
    if "head_dim" in c and c["head_dim"]:
        kw["kv_channels"] = c["head_dim"]
    if arch.startswith("Qwen3"):
        kw["qk_layernorm"] = True
    experts = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    if experts:
        kw.update(num_moe_experts=experts, moe_router_topk=c["num_experts_per_tok"], moe_grouped_gemm=True,
                  moe_ffn_hidden_size=c.get("moe_intermediate_size") or c["intermediate_size"],
                  moe_token_dispatcher_type="alltoall")
        shared = c.get("n_shared_experts") or 0
        if shared:
            kw["moe_shared_expert_intermediate_size"] = shared * c["moe_intermediate_size"]
        k = c.get("first_k_dense_replace") or 0
        if k:
            kw["moe_layer_freq"] = [0] * k + [1] * (L - k)
        if c.get("topk_method") == "noaux_tc":
            kw.update(moe_router_enable_expert_bias=True, moe_router_score_function="sigmoid")
    if mtp:
        kw["mtp_num_layers"] = mtp
    if c.get("kv_lora_rank"):
        kw.update(q_lora_rank=c.get("q_lora_rank"), kv_lora_rank=c["kv_lora_rank"],
                  qk_head_dim=c["qk_nope_head_dim"], qk_pos_emb_head_dim=c["qk_rope_head_dim"],
                  v_head_dim=c["v_head_dim"], num_query_groups=c["num_attention_heads"],
                  qk_layernorm=True)  # MLA's q_a / kv_a layernorms (Megatron-Bridge's DeepSeek providers)
        kw.pop("kv_channels", None)
        return MLATransformerConfig(**kw)
    return TransformerConfig(**kw)


def count_case(args, case):
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from megatron.core import parallel_state as ps
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec, get_gpt_mtp_block_spec

    preset, tp, pp, vpp, cp, ep, etp, dp, split = case
    world = tp * pp * cp * dp
    # Context parallelism changes no parameter (the local specs' attention refuses it): the
    # rank's model is built with its CP ranks counted as DP ranks.
    dp, cp = dp * cp, 1
    c = hf(args.models, preset)
    vocab = c["vocab_size"]
    mult = 128 * tp
    padded = (vocab + mult - 1) // mult * mult
    out = dict(preset=preset, tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, dp=dp, split=split, world=world,
               padded_vocab=padded, ranks=[])
    for pp_rank in range(pp):
        # Global rank of (tp 0, cp 0, dp 0, pp pp_rank) in Megatron's default order tp-cp-ep-dp-pp.
        rank = pp_rank * (world // pp)
        if dist.is_initialized():
            ps.destroy_model_parallel()
            dist.destroy_process_group()
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
        ps.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                                     virtual_pipeline_model_parallel_size=vpp if vpp > 1 else None,
                                     context_parallel_size=cp, expert_model_parallel_size=ep,
                                     expert_tensor_parallel_size=etp)
        cfg = transformer_config(c, preset, tp, pp, vpp, cp, ep, etp, split)
        dense = expert = 0
        chunks = []
        for vp in range(vpp if vpp > 1 else 1):
            vp_stage = vp if vpp > 1 else None
            pre = ps.is_pipeline_first_stage(ignore_virtual=False, vp_stage=vp_stage)
            post = ps.is_pipeline_last_stage(ignore_virtual=False, vp_stage=vp_stage)
            spec = get_gpt_decoder_block_spec(cfg, use_transformer_engine=False, vp_stage=vp_stage, pp_rank=pp_rank)
            mtp = None
            if getattr(cfg, "mtp_num_layers", None):
                mtp = get_gpt_mtp_block_spec(cfg, spec, use_transformer_engine=False, vp_stage=vp_stage,
                                             pp_rank=pp_rank)
            with torch.device("meta"):
                m = GPTModel(cfg, transformer_layer_spec=spec, vocab_size=padded,
                             max_sequence_length=4096, pre_process=pre, post_process=post,
                             share_embeddings_and_output_weights=bool(c.get("tie_word_embeddings", False)),
                             position_embedding_type="rope", mtp_block_spec=mtp, vp_stage=vp_stage)
            for p in m.parameters():
                if getattr(p, "allreduce", True):
                    dense += p.numel()
                else:
                    expert += p.numel()
            chunks.append(m)
        rec = dict(pp_rank=pp_rank, dense=dense, expert=expert,
                   decoder_layers=sum(len(m.decoder.layers) for m in chunks),
                   mtp_layers=sum(len(m.mtp.layers) if getattr(m, "mtp", None) is not None else 0 for m in chunks))
        try:
            rec.update(ddp_buffers(cfg, chunks, dp * cp, DistributedDataParallel, DistributedDataParallelConfig))
        except Exception as e:  # the parameter counts stand without the buffers
            rec["ddp_error"] = f"{type(e).__name__}: {e}"[:300]
        out["ranks"].append(rec)
        print(json.dumps(dict(case=case, **rec)), flush=True)
    return out


def ddp_buffers(cfg, chunks, dp_cp, DDP, DDPConfig):
    """Element counts of the DDP parameter and gradient buffers (meta tensors)."""
    import torch

    ddp_cfg = DDPConfig(grad_reduce_in_fp32=True, overlap_grad_reduce=True, overlap_param_gather=True,
                        use_distributed_optimizer=True, bucket_size=40000000)
    real_zeros = torch.zeros

    def meta_zeros(*a, **k):
        k["device"] = "meta"
        return real_zeros(*a, **k)

    dense = expert = 0
    with contextlib.ExitStack() as stack:
        import megatron.core.distributed.param_and_grad_buffer as pgb
        stack.enter_context(_patch(pgb.torch, "zeros", meta_zeros))
        for i, m in enumerate(chunks):
            d = DDP(cfg, ddp_cfg, m, disable_bucketing=i > 0)
            for b in d.buffers:
                dense += b.numel
            for b in d.expert_parallel_buffers:
                expert += b.numel
    return dict(ddp_dense_numel=dense, ddp_expert_numel=expert, ddp_bucket_size=40000000)


def _mla_standin():
    """Megatron-Core's local MLA spec passes k_channels / v_channels to its parameterless
    DotProductAttention, which takes neither (d98e8a64): they are dropped (no parameter changes)."""
    import megatron.core.transformer.dot_product_attention as dpa

    init = dpa.DotProductAttention.__init__

    def dpa_init(self, *a, **k):
        k.pop("k_channels", None)
        k.pop("v_channels", None)
        init(self, *a, **k)

    dpa.DotProductAttention.__init__ = dpa_init


@contextlib.contextmanager
def _patch(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mcore", required=True, help="folder holding megatron/core")
    ap.add_argument("--models", required=True, help="meshplan's models/ folder (HF config.json files)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated presets to count (default: every case)")
    args = ap.parse_args()
    sys.path.insert(0, args.mcore)
    import torch
    import torch.distributed as dist

    # parallel_state asks for gloo sub-groups beside the default ones: created on the fake
    # backend too (as the Megatron-Bridge acceptance harness does).
    new_group = dist.new_group

    def fake_new_group(*a, **k):
        if k.get("backend") == "gloo":
            k["backend"] = None
        return new_group(*a, **k)

    dist.new_group = fake_new_group
    _mla_standin()

    results = []
    for case in CASES:
        if args.only and case[0] not in args.only.split(","):
            continue
        try:
            results.append(count_case(args, case))
        except Exception as e:
            traceback.print_exc()
            results.append(dict(case=list(case), error=f"{type(e).__name__}: {e}"[:600]))
    with open(args.out, "w") as f:
        json.dump(dict(source="Megatron-LM d98e8a64 megatron/core, GPTModel on the meta device, local specs",
                       torch=torch.__version__, cases=results), f, indent=1)


if __name__ == "__main__":
    main()
