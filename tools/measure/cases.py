"""Measured cases: one dict per training configuration.

Keys (all required, see measure.py for their meaning):
  id        unique name
  model     file stem of tests/data/measured/models/<model>.json (a HF config.json)
  strategy  "fsdp2" | "ddp"  (AutoModel strategy; on one GPU AutoModel skips both wrappers
            and trains the plain model, which measure.py reproduces)
  tp        tensor-parallel size (fsdp2 only; dp = world / tp)
  seq       tokens per sequence
  mb        micro-batch (sequences per forward)
  ga        micro-batches per optimizer step (gradient accumulation)
  ac        "none" | "full" | "selective"
  params    "bf16" (AutoModel default: torch_dtype bf16, so weights, grads and Adam state
            are bf16) | "fp32" (fp32 weights, FSDP2 MixedPrecisionPolicy casts to bf16)
  defer     FSDP2 defer_fsdp_grad_sync (AutoModel default true; only matters when ga > 1)
  opt       torch.optim.AdamW implementation: "foreach" (torch's default on CUDA), "fused"
            (fused=True, as AutoModel's GPT-OSS recipes set) or "forloop" (foreach=False, as
            its TE recipes set)
  wrap1     wrap the model in FSDP2 / DDP on a one-rank process group (launch with
            torch.distributed.run --nproc-per-node 1): the wrapper's own memory (FSDP2's
            MixedPrecisionPolicy casts, DDP's bucket copy) on one GPU, which AutoModel itself
            skips at world size 1 (fsdp2.py::fsdp2_sharding_enabled, ddp.py)
"""


def _c(id, model, strategy, seq, mb, ac, tp=1, ga=1, params="bf16", defer=True, opt="foreach", wrap1=False):
    return dict(id=id, model=model, strategy=strategy, tp=tp, seq=seq, mb=mb, ga=ga, ac=ac,
                params=params, defer=defer, opt=opt, wrap1=wrap1)


# One GPU: AutoModel's world-size-1 path (no FSDP / DDP wrapper, bf16 model).
ONE_GPU = [
    _c("1g-q05-s4k-b2", "qwen2.5-0.5b", "fsdp2", 4096, 2, "none"),
    _c("1g-q05-s8k-b1-full", "qwen2.5-0.5b", "fsdp2", 8192, 1, "full"),
    _c("1g-l1-s2k-b4", "llama3.2-1b", "fsdp2", 2048, 4, "none"),
    _c("1g-l1-s8k-b1", "llama3.2-1b", "fsdp2", 8192, 1, "none"),
    _c("1g-l1-s8k-b2-sel", "llama3.2-1b", "fsdp2", 8192, 2, "selective"),
    _c("1g-l1-s8k-b4-full", "llama3.2-1b", "fsdp2", 8192, 4, "full"),
    _c("1g-l1-s4k-b2-ga2", "llama3.2-1b", "fsdp2", 4096, 2, "none", ga=2),
    _c("1g-q17-s4k-b2", "qwen3-1.7b", "fsdp2", 4096, 2, "none"),
    _c("1g-q17-s8k-b2-sel", "qwen3-1.7b", "fsdp2", 8192, 2, "selective"),
    _c("1g-l3-s4k-b1", "llama3.2-3b", "fsdp2", 4096, 1, "none"),
    _c("1g-l3-s8k-b2-full", "llama3.2-3b", "fsdp2", 8192, 2, "full"),
    _c("1g-q4-s2k-b2", "qwen3-4b", "fsdp2", 2048, 2, "none"),
    _c("1g-q4-s8k-b1-sel", "qwen3-4b", "fsdp2", 8192, 1, "selective"),
    _c("1g-q4-s8k-b2-full", "qwen3-4b", "fsdp2", 8192, 2, "full"),
    _c("1g-l8-s2k-b1", "llama3.1-8b", "fsdp2", 2048, 1, "none"),
    _c("1g-l8-s8k-b2-full", "llama3.1-8b", "fsdp2", 8192, 2, "full"),
    _c("1g-q8-s4k-b1-sel", "qwen3-8b", "fsdp2", 4096, 1, "selective"),
]

# Two GPUs: FSDP2 (dp 2), FSDP2 + DTensor TP (tp 2, dp 1), DDP (dp 2).
TWO_GPU = [
    _c("2g-fsdp-q17-s4k-b2", "qwen3-1.7b", "fsdp2", 4096, 2, "none"),
    _c("2g-fsdp-l3-s8k-b1", "llama3.2-3b", "fsdp2", 8192, 1, "none"),
    _c("2g-fsdp-q4-s8k-b2-sel", "qwen3-4b", "fsdp2", 8192, 2, "selective"),
    _c("2g-fsdp-l8-s4k-b1", "llama3.1-8b", "fsdp2", 4096, 1, "none"),
    _c("2g-fsdp-l8-s8k-b2-full", "llama3.1-8b", "fsdp2", 8192, 2, "full"),
    _c("2g-fsdp-q8-s8k-b1-sel", "qwen3-8b", "fsdp2", 8192, 1, "selective"),
    _c("2g-fsdp-l8-s2k-b1", "llama3.1-8b", "fsdp2", 2048, 1, "none"),
    _c("2g-fsdp-l8-s4k-b1-ga2-defer", "llama3.1-8b", "fsdp2", 4096, 1, "none", ga=2, defer=True),
    _c("2g-fsdp-l8-s4k-b1-ga2-sync", "llama3.1-8b", "fsdp2", 4096, 1, "none", ga=2, defer=False),
    _c("2g-fsdp32-l3-s4k-b2", "llama3.2-3b", "fsdp2", 4096, 2, "none", params="fp32"),
    _c("2g-fsdp32-l8-s8k-b1-full", "llama3.1-8b", "fsdp2", 8192, 1, "full", params="fp32"),
    _c("2g-ddp-q05-s4k-b2", "qwen2.5-0.5b", "ddp", 4096, 2, "none"),
    _c("2g-ddp-l1-s8k-b1-full", "llama3.2-1b", "ddp", 8192, 1, "full"),
    _c("2g-ddp-q17-s2k-b4", "qwen3-1.7b", "ddp", 2048, 4, "none"),
    _c("2g-ddp-l1-s4k-b2-ga2", "llama3.2-1b", "ddp", 4096, 2, "none", ga=2),
    _c("2g-ddp-q05-s8k-b2-sel", "qwen2.5-0.5b", "ddp", 8192, 2, "selective"),
    _c("2g-tp2-l3-s4k-b1", "llama3.2-3b", "fsdp2", 4096, 1, "none", tp=2),
    _c("2g-tp2-l8-s4k-b2", "llama3.1-8b", "fsdp2", 4096, 2, "none", tp=2),
    _c("2g-tp2-q8-s8k-b1-full", "qwen3-8b", "fsdp2", 8192, 1, "full", tp=2),
    _c("2g-tp2-l8-s2k-b2-sel", "llama3.1-8b", "fsdp2", 2048, 2, "selective", tp=2),
]

# fp32 master weights and the AdamW implementations, one GPU, wrappers on a one-rank group:
# FSDP2 with MixedPrecisionPolicy(bf16, reduce fp32) and DDP, whose fp32 model also computes
# in fp32 (AutoModel casts only at world size 1 and runs no autocast outside FP8).
def _w(id, model, strategy, seq, mb, ac, **kw):
    return _c(id, model, strategy, seq, mb, ac, params=kw.pop("params", "fp32"), wrap1=True, **kw)


FP32_1GPU = [
    _w("w1-fsdp32-q05-s4k-b2", "qwen2.5-0.5b", "fsdp2", 4096, 2, "none"),
    _w("w1-fsdp32-q05-s4k-b2-fused", "qwen2.5-0.5b", "fsdp2", 4096, 2, "none", opt="fused"),
    _w("w1-fsdp32-l1-s8k-b1", "llama3.2-1b", "fsdp2", 8192, 1, "none"),
    _w("w1-fsdp32-l1-s8k-b1-fused", "llama3.2-1b", "fsdp2", 8192, 1, "none", opt="fused"),
    _w("w1-fsdp32-l1-s8k-b2-full-fused", "llama3.2-1b", "fsdp2", 8192, 2, "full", opt="fused"),
    _w("w1-fsdp32-l1-s4k-b2-sel", "llama3.2-1b", "fsdp2", 4096, 2, "selective"),
    _w("w1-fsdp32-l1-s4k-b2-ga2-fused", "llama3.2-1b", "fsdp2", 4096, 2, "none", ga=2, opt="fused"),
    _w("w1-fsdp32-q17-s4k-b2-forloop", "qwen3-1.7b", "fsdp2", 4096, 2, "none", opt="forloop"),
    _w("w1-fsdp32-l3-s4k-b1", "llama3.2-3b", "fsdp2", 4096, 1, "none"),
    _w("w1-fsdp32-l3-s4k-b1-fused", "llama3.2-3b", "fsdp2", 4096, 1, "none", opt="fused"),
    _w("w1-fsdp32-l3-s8k-b2-full", "llama3.2-3b", "fsdp2", 8192, 2, "full"),
    _w("w1-fsdp32-l3-s8k-b2-full-fused", "llama3.2-3b", "fsdp2", 8192, 2, "full", opt="fused"),
    _w("w1-fsdp32-q4-s4k-b1-sel-fused", "qwen3-4b", "fsdp2", 4096, 1, "selective", opt="fused"),
    _w("w1-fsdp32-q4-s8k-b1-full", "qwen3-4b", "fsdp2", 8192, 1, "full"),
    _w("w1-fsdp32-q4-s8k-b1-full-fused", "qwen3-4b", "fsdp2", 8192, 1, "full", opt="fused"),
    _w("w1-ddp32-q05-s4k-b2", "qwen2.5-0.5b", "ddp", 4096, 2, "none"),
    _w("w1-ddp32-q05-s4k-b2-fused", "qwen2.5-0.5b", "ddp", 4096, 2, "none", opt="fused"),
    _w("w1-ddp32-l1-s4k-b1-fused", "llama3.2-1b", "ddp", 4096, 1, "none", opt="fused"),
    _w("w1-ddp32-l1-s8k-b1-full", "llama3.2-1b", "ddp", 8192, 1, "full"),
    _w("w1-ddp32-l3-s4k-b1-full-fused", "llama3.2-3b", "ddp", 4096, 1, "full", opt="fused"),
    _w("w1-ddp32-l3-s2k-b1", "llama3.2-3b", "ddp", 2048, 1, "none"),
    _w("w1-ddp32-q17-s4k-b1-sel-fused", "qwen3-1.7b", "ddp", 4096, 1, "selective", opt="fused"),
    _w("w1-ddp32-q17-s2k-b2-forloop", "qwen3-1.7b", "ddp", 2048, 2, "none", opt="forloop"),
    _w("w1-fsdp16-l3-s4k-b1-fused", "llama3.2-3b", "fsdp2", 4096, 1, "none", params="bf16", opt="fused"),
    _w("w1-ddp16-l1-s4k-b2-fused", "llama3.2-1b", "ddp", 4096, 2, "none", params="bf16", opt="fused"),
]

# A few seconds each: checks that every code path runs (used by --smoke).
SMOKE = [
    _c("smoke-plain", "qwen2.5-0.5b", "fsdp2", 512, 1, "selective"),
]

# The same on two GPUs (dp 2), where lent.
FP32_2GPU = [dict(c, id="2g" + c["id"][2:], wrap1=False) for c in FP32_1GPU]

SUITES = {"1gpu": ONE_GPU, "2gpu": TWO_GPU, "fp32-1gpu": FP32_1GPU, "fp32-2gpu": FP32_2GPU, "smoke": SMOKE}
