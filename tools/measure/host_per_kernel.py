"""Host (CPU) seconds per launched GPU kernel of eager PyTorch training code, dense and MoE.

A decoder so small that every GPU kernel takes a few microseconds is trained on one GPU, so the
step is bound by the host: Python, the autograd engine, PyTorch's dispatcher and the launches.
Two layer kinds:
  dense: Hugging Face's Llama decoder layer (hidden 256), as tools/measure/host_overhead.py;
  moe:   a Megatron-Core-style dropless MoE layer in eager PyTorch (hidden 256): attention block of
         the same Llama layer, then router GEMM, softmax, top-k, the per-expert token counts copied
         to the host and synchronised (as Megatron-Core's alltoall dispatcher does before its
         all-to-all, token_dispatcher.py _maybe_dtoh_and_synchronize), permutation by sort and
         index_select, one SwiGLU expert MLP per local expert over its slice (TE GroupedLinear runs
         one GEMM per expert), unpermutation by index_add with the routing weights.
For each kind and local-expert count the step time is measured at 2, 4, 8 and 16 layers and the
kernels launched per step are counted with torch.profiler (CUDA kernel events). The slopes against
the layer count give host seconds and kernels per layer per micro-batch (forward + backward); their
ratio is the host seconds per launched kernel.

    python3 tools/measure/host_per_kernel.py --out DIR

Writes DIR/host_per_kernel.jsonl: the environment, one line per (kind, experts, layers) and one
fit line per (kind, experts).
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from host_overhead import slope, tiny_llama  # noqa: E402
from measure import environment  # noqa: E402

WARMUP = 3
TIMED = 10
LAYERS = [2, 4, 8, 16]
SEQ = 256
HIDDEN = 256
TOPK = 4


class MoeMlp(torch.nn.Module):
    def __init__(self, experts, hidden, ffn):
        super().__init__()
        self.router = torch.nn.Linear(hidden, experts, bias=False)
        self.fc1 = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(2 * ffn, hidden) * 0.02) for _ in range(experts)])
        self.fc2 = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(hidden, ffn) * 0.02) for _ in range(experts)])
        self.experts = experts

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs = torch.softmax(self.router(x).float(), dim=-1)
        w, idx = torch.topk(probs, TOPK, dim=-1)
        flat = idx.reshape(-1)
        counts = torch.bincount(flat, minlength=self.experts)
        counts_host = counts.to("cpu", non_blocking=True)
        torch.cuda.current_stream().synchronize()  # the dropless dispatcher's host sync
        order = torch.argsort(flat, stable=True)
        token_of = order // TOPK
        xs = x.index_select(0, token_of)
        outs = []
        start = 0
        for e, n in enumerate(counts_host.tolist()):
            chunk = xs[start:start + n]
            h = F.linear(chunk, self.fc1[e])
            a, b = h.chunk(2, dim=-1)
            outs.append(F.linear(F.silu(a) * b, self.fc2[e]))
            start += n
        y = torch.cat(outs, dim=0) * w.reshape(-1)[order].unsqueeze(-1).to(x.dtype)
        out = torch.zeros_like(x).index_add(0, token_of, y)
        return out.reshape(shape)


def build(kind, experts, layers, device):
    cls, cfg = tiny_llama(layers)  # host_overhead.py's decoder: hidden 256 (HIDDEN)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = cls(cfg)
        if kind == "moe":
            for layer in model.model.layers:
                layer.mlp = MoeMlp(experts, HIDDEN, 128)
    torch.set_default_dtype(torch.float32)
    model.train()
    return model, cfg


def run(kind, experts, layers, device):
    model, cfg = build(kind, experts, layers, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    g = torch.Generator(device=device).manual_seed(1234)
    ids = torch.randint(0, cfg.vocab_size, (1, SEQ), device=device, generator=g)
    labels = torch.randint(0, cfg.vocab_size, (1, SEQ), device=device, generator=g)

    def step():
        out = model(input_ids=ids)
        loss = F.cross_entropy(out.logits.float().reshape(-1, cfg.vocab_size), labels.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(TIMED):
        step()
    torch.cuda.synchronize()
    step_s = (time.perf_counter() - t0) / TIMED
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    del model, opt
    torch.cuda.empty_cache()
    return {"kind": kind, "experts": experts, "layers": layers, "seq": SEQ, "hidden": HIDDEN,
            "step_s": step_s, "kernels": kernels}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    lines = [{"environment": dict(environment(1), warmup_steps=WARMUP, timed_steps=TIMED)}]
    for kind, experts in (("dense", 0), ("moe", 4), ("moe", 16)):
        recs = []
        for layers in LAYERS:
            rec = run(kind, experts, layers, device)
            recs.append(rec)
            lines.append(rec)
            print(json.dumps(rec), flush=True)
        s_time, _ = slope([(r["layers"], r["step_s"]) for r in recs])
        s_kern, _ = slope([(r["layers"], r["kernels"]) for r in recs])
        fit = {"fit": "slopes against layers", "kind": kind, "experts": experts, "host_s_per_layer": s_time,
               "kernels_per_layer": s_kern, "host_s_per_kernel": s_time / s_kern}
        lines.append(fit)
        print(json.dumps(fit), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "host_per_kernel.jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
