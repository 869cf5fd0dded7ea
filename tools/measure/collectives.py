#!/usr/bin/env python3
"""NCCL collective bus bandwidth against message size, for group sizes 2..N (torch.distributed).

Runs on any NVIDIA cluster under torchrun (one process per GPU, any number of nodes):

    torchrun --nnodes 1 --nproc-per-node 8 tools/measure/collectives.py --out DIR
    srun ... torchrun --nnodes $SLURM_NNODES --nproc-per-node 8 ... tools/measure/collectives.py --out DIR

For every group size n in --groups (default: powers of two from 2 to the world size, plus the
world size) the first n ranks form a group (ranks 0..n-1: one node first, then across nodes)
and time all_reduce, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single and a
send/recv pair (rank 0 -> rank n-1) on bf16 tensors of --min-bytes .. --max-bytes (x4 steps).
Bus bandwidth follows nccl-tests doc/PERFORMANCE.md: S = bytes of the full (unsharded)
buffer, t = seconds per call (mean over --iters after --warmup, CUDA events, max over ranks),
algbw = S / t, busbw = algbw * 2(n-1)/n (all-reduce), algbw * (n-1)/n (all-gather,
reduce-scatter, all-to-all), algbw (send/recv).

Rank 0 writes DIR/collectives.jsonl: a first line {"environment": ...}, then one line per
point {"kind": "collective", "op", "n", "bytes", "seconds", "algbw_gbps", "busbw_gbps",
"nodes_spanned"}. `meshplan calibrate` reads these lines.
"""
import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist


def sizes(lo, hi):
    s = lo
    while s <= hi:
        yield s
        s *= 4


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-bytes", type=int, default=1 << 10)
    ap.add_argument("--max-bytes", type=int, default=1 << 30)
    ap.add_argument("--groups", default="", help="comma-separated group sizes (default: 2,4,8,... and the world size)")
    ap.add_argument("--ops", default="all_reduce,all_gather,reduce_scatter,all_to_all,send_recv")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=2.0, help="at most this many seconds of timed calls per point")
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", torch.cuda.device_count()))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)

    if args.groups:
        groups = sorted({int(g) for g in args.groups.split(",") if 2 <= int(g) <= world})
    else:
        groups, g = [], 2
        while g <= world:
            groups.append(g)
            g *= 2
        if world >= 2 and world not in groups:
            groups.append(world)
    ops = args.ops.split(",")
    show = rank == 0 and os.isatty(2)
    out = None
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        out = open(os.path.join(args.out, "collectives.jsonl"), "w")
        env = {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
               "gpu": torch.cuda.get_device_name(dev), "world": world, "gpus_per_node": local_world,
               "host": socket.gethostname(), "NCCL_ALGO": os.environ.get("NCCL_ALGO", ""),
               "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE", ""),
               "NCCL_MAX_NCHANNELS": os.environ.get("NCCL_MAX_NCHANNELS", ""), "dtype": "bfloat16",
               "warmup": args.warmup, "iters": args.iters}
        out.write(json.dumps({"environment": env}) + "\n")

    total = len(groups) * len(ops) * len(list(sizes(args.min_bytes, args.max_bytes)))
    done = 0
    for n in groups:
        pg = dist.new_group(list(range(n)))  # every rank must call new_group
        member = rank < n
        for op in ops:
            for nbytes in sizes(args.min_bytes, args.max_bytes):
                numel = max(n, nbytes // 2 // n * n)  # bf16, divisible by n
                nbytes = numel * 2
                t = torch.zeros(1, device=dev)
                if member:
                    x = torch.ones(numel, dtype=torch.bfloat16, device=dev)
                    y = torch.empty_like(x)
                    shard = torch.empty(numel // n, dtype=torch.bfloat16, device=dev)

                    def call():
                        if op == "all_reduce":
                            dist.all_reduce(x, group=pg)
                        elif op == "all_gather":
                            dist.all_gather_into_tensor(y, shard, group=pg)
                        elif op == "reduce_scatter":
                            dist.reduce_scatter_tensor(shard, x, group=pg)
                        elif op == "all_to_all":
                            dist.all_to_all_single(y, x, group=pg)
                        elif op == "send_recv":
                            if rank == 0:
                                dist.send(x, dst=n - 1, group=pg)
                            elif rank == n - 1:
                                dist.recv(y, src=0, group=pg)
                        else:
                            raise SystemExit(f"unknown op {op}")

                    for _ in range(args.warmup):
                        call()
                    torch.cuda.synchronize()
                    # Probe one call to bound the iteration count by the time budget.
                    t0 = time.perf_counter()
                    call()
                    torch.cuda.synchronize()
                    one = time.perf_counter() - t0
                    iters = max(3, min(args.iters, int(args.budget_s / max(one, 1e-6))))
                    iters_t = torch.tensor([iters], device=dev)
                    dist.all_reduce(iters_t, op=dist.ReduceOp.MIN, group=pg)
                    iters = int(iters_t.item())
                    dist.barrier(group=pg)
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    for _ in range(iters):
                        call()
                    end.record()
                    torch.cuda.synchronize()
                    t[0] = start.elapsed_time(end) / 1e3 / iters
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                sec = float(t.item())
                done += 1
                if rank == 0:
                    alg = nbytes / sec / 1e9
                    factor = {"all_reduce": 2 * (n - 1) / n, "send_recv": 1.0}.get(op, (n - 1) / n)
                    rec = {"kind": "collective", "op": op, "n": n, "bytes": nbytes, "seconds": sec,
                           "algbw_gbps": alg, "busbw_gbps": alg * factor,
                           "nodes_spanned": (n + local_world - 1) // local_world}
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    if show:
                        print(f"\r[{done}/{total}] n={n} {op} {nbytes} B: {alg * factor:.1f} GB/s busbw   ",
                              end="", file=__import__("sys").stderr, flush=True)
        dist.barrier()
    if show:
        print(file=__import__("sys").stderr)
    if out:
        out.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
