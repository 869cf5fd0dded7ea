#!/usr/bin/env python3
"""Compute / communication contention: how much a NCCL collective running on a side stream
slows the kernels it hides behind, and how much those kernels slow the collective.

    torchrun --standalone --nproc-per-node 2 tools/measure/overlap.py --out DIR

Overlapping a collective with compute is not free: NCCL's kernels occupy SMs (one CTA per
channel) and move every byte through HBM, so the GEMMs, attention and elementwise kernels that
"hide" the collective run slower while it is in flight, and the collective runs slower beside
them. The step-time model charges each second of hidden communication
kappa = s_comm * (1 - 1/s_compute) seconds of extra compute (planner/cost/time.hpp,
kHiddenCommCost), where s_compute and s_comm are the slowdowns measured here.

Per (compute kind, collective, message size), on every rank at once (the collective spans all
ranks of the job):
  * compute alone: a chain of kernels on the compute stream (CUDA events);
  * collective alone: a chain of calls on a second stream;
  * both at once, twice: once with the collective chain long enough to cover the whole compute
    chain (gives s_compute = compute time overlapped / alone), once with the compute chain
    covering the whole collective chain (gives s_comm).
Compute kinds: BF16 GEMM 8192^3 (tensor-core bound), causal flash attention forward+backward
(BF16, 32 heads x 128, 4096 tokens), and an HBM-bound residual add on 2^28 BF16 elements.
Collectives: all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single on BF16 buffers
of 64 MiB and 512 MiB (the full, unsharded size).

Rank 0 writes DIR/overlap.jsonl: {"environment": ...}, then one line per point
{"kind": "overlap", "compute", "op", "n", "bytes", "compute_alone_s", "compute_overlapped_s",
"s_compute", "comm_alone_s", "comm_overlapped_s", "s_comm"} (seconds per call, max over ranks).
"""
import argparse
import json
import os
import socket

import torch
import torch.distributed as dist
import torch.nn.functional as F


def event_pair():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes-mib", default="64,512")
    ap.add_argument("--ops", default="all_gather,reduce_scatter,all_to_all")
    ap.add_argument("--computes", default="gemm_bf16,attention,elementwise")
    ap.add_argument("--window-s", type=float, default=0.25, help="length of each timed chain")
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    cstream = torch.cuda.Stream(device=dev)
    mstream = torch.cuda.Stream(device=dev)

    # --- compute kinds ---
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    c = torch.empty(8192, 8192, device=dev, dtype=torch.bfloat16)
    q = torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16)
    x = torch.randn(1 << 28, device=dev, dtype=torch.bfloat16)
    y = torch.randn(1 << 28, device=dev, dtype=torch.bfloat16)
    z = torch.empty(1 << 28, device=dev, dtype=torch.bfloat16)

    def gemm():
        torch.matmul(a, b, out=c)

    def attention():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(g)

    def elementwise():
        torch.add(x, y, out=z)

    computes = {"gemm_bf16": gemm, "attention": attention, "elementwise": elementwise}

    def time_chain(fn, n, stream):
        """Seconds of n calls of fn on stream (CUDA events), after one warm-up call."""
        with torch.cuda.stream(stream):
            fn()
            s, e = event_pair()
            s.record(stream)
            for _ in range(n):
                fn()
            e.record(stream)
        torch.cuda.synchronize()
        return s.elapsed_time(e) / 1e3

    def reduce_max(val):
        t = torch.tensor([val], device=dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def calls_for(fn, stream):
        one = reduce_max(time_chain(fn, 3, stream) / 3)
        n = max(3, int(args.window_s / one))
        return n, reduce_max(time_chain(fn, n, stream) / n)

    out = None
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        out = open(os.path.join(args.out, "overlap.jsonl"), "w")
        env = {"torch": torch.__version__, "cuda": torch.version.cuda,
               "nccl": ".".join(map(str, torch.cuda.nccl.version())), "gpu": torch.cuda.get_device_name(dev),
               "world": world, "host": socket.gethostname(), "dtype": "bfloat16",
               "NCCL_MAX_NCHANNELS": os.environ.get("NCCL_MAX_NCHANNELS", ""), "window_s": args.window_s}
        out.write(json.dumps({"environment": env}) + "\n")

    for mib in [int(s) for s in args.sizes_mib.split(",")]:
        numel = (mib << 20) // 2 // world * world
        full = torch.ones(numel, dtype=torch.bfloat16, device=dev)
        full2 = torch.empty_like(full)
        shard = torch.ones(numel // world, dtype=torch.bfloat16, device=dev)
        for op in args.ops.split(","):
            def comm(op=op):
                if op == "all_gather":
                    dist.all_gather_into_tensor(full2, shard)
                elif op == "reduce_scatter":
                    dist.reduce_scatter_tensor(shard, full)
                elif op == "all_to_all":
                    dist.all_to_all_single(full2, full)
                else:
                    raise SystemExit(f"unknown op {op}")

            n_comm, comm_one = calls_for(comm, mstream)
            for name in args.computes.split(","):
                fn = computes[name]
                n_comp, comp_one = calls_for(fn, cstream)
                res = {}
                for cover in ("comm_covers", "compute_covers"):
                    # The covering chain runs 1.5x the window so the covered one overlaps throughout.
                    nm = int(n_comm * 1.5) if cover == "comm_covers" else max(1, n_comm // 2)
                    nc = max(1, n_comp // 2) if cover == "comm_covers" else int(n_comp * 1.5)
                    dist.barrier()
                    torch.cuda.synchronize()
                    sm, em = event_pair()
                    sc, ec = event_pair()
                    with torch.cuda.stream(mstream):
                        sm.record(mstream)
                        for _ in range(nm):
                            comm()
                        em.record(mstream)
                    with torch.cuda.stream(cstream):
                        sc.record(cstream)
                        for _ in range(nc):
                            fn()
                        ec.record(cstream)
                    torch.cuda.synchronize()
                    res[cover] = (sm.elapsed_time(em) / 1e3 / nm, sc.elapsed_time(ec) / 1e3 / nc)
                comp_ov = reduce_max(res["comm_covers"][1])
                comm_ov = reduce_max(res["compute_covers"][0])
                if rank == 0:
                    rec = {"kind": "overlap", "compute": name, "op": op, "n": world, "bytes": numel * 2,
                           "compute_alone_s": comp_one, "compute_overlapped_s": comp_ov,
                           "s_compute": comp_ov / comp_one, "comm_alone_s": comm_one,
                           "comm_overlapped_s": comm_ov, "s_comm": comm_ov / comm_one}
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    print(f"{name:12s} {op:15s} {mib:4d} MiB  s_compute {rec['s_compute']:.3f}  s_comm {rec['s_comm']:.3f}",
                          flush=True)
        del full, full2, shard
    if out:
        out.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
