#!/usr/bin/env python3
"""check's nearest fixes of an invalid recipe against plan's best for the same job.

usage: nearest_vs_plan.py MESHPLAN RECIPE MODEL SYSTEM GPUS SEQ GLOBAL_BATCH WANT
Runs `check RECIPE --format json` and `plan --format json --top 1` (Megatron-Bridge) and fails
unless fix 1 or 2 is WANT and predicted within 7% (kCheckStepBand) of plan's best throughput:
  tp_or_pp   a fix that changes the TP or the PP size
  ep8_recompute   a fix with EP 8 and recompute (selective or full)
and unless fix 1 keeps the memory model's band (3.9% of its peak, docs/ranking.md) to the usable
memory when a listed fix does: fixes are ranked with the out-of-memory risk priced, as plan ranks.
"""
import json
import subprocess
import sys

mp, recipe, model, system, gpus, seq, gbs, want = sys.argv[1:9]
job = ["--model", model, "--system", system, "--gpus", gpus]
check = json.loads(subprocess.run([mp, "check", recipe, *job, "--format", "json"], stdout=subprocess.PIPE,
                                  text=True).stdout)
plan = json.loads(subprocess.run([mp, "plan", *job, "--seq-len", seq, "--global-batch", gbs, "--framework",
                                  "megatron-bridge", "--top", "1", "--format", "json"], stdout=subprocess.PIPE,
                                 text=True).stdout)
doc = check["documents"][0]
best = plan["recipes"][0]["tokens_per_s_per_gpu"]
recipe_layout = doc["layout"]
fixes = doc["nearest"]
assert check["exit_status"] == 1 and not doc["rules"]["valid"], "the recipe is expected to break a rule"


def is_pick(x):
    l = x["layout"]
    if want == "tp_or_pp":
        return l["tp_size"] != recipe_layout["tp_size"] or l["pp_size"] != recipe_layout["pp_size"]
    return l["ep_size"] == 8 and l["activation_checkpointing"] != "none"


lines = [f"plan's best: {best:.0f} tokens/s per GPU"]
for i, x in enumerate(fixes):
    lines.append(f"fix {i + 1}: {x['description']}: {x['tokens_per_s_per_gpu']:.0f} tokens/s per GPU, "
                 f"{x['memory_gib']['total']:.1f} GiB, fits {x['memory_gib']['fits']}; {'; '.join(x['changes'])}")
ok = any(is_pick(x) and x["memory_gib"]["fits"] and x["tokens_per_s_per_gpu"] >= 0.93 * best for x in fixes[:2])
print("\n".join(lines))


def within_band(x):
    m = x["memory_gib"]
    return m["fits"] and m["capacity"] - m["total"] >= 0.039 * m["total"]


if any(within_band(x) for x in fixes) and not within_band(fixes[0]):
    print("a listed fix keeps the memory band to the usable memory and fix 1 does not")
    sys.exit(1)
if not ok:
    print(f"neither fix 1 nor 2 is the expected pick ({want}) within 7% of plan's best")
    sys.exit(1)
