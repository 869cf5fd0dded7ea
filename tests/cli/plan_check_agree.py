#!/usr/bin/env python3
"""plan's predicted step for each recipe it writes equals check's step for the same recipe read back.

usage: plan_check_agree.py MESHPLAN OUT_DIR PLAN_ARGS...
Runs `plan PLAN_ARGS --format yaml --out OUT_DIR/plan.yaml` and `plan PLAN_ARGS --format json`,
then `check OUT_DIR/plan.yaml --format json` with the same --model / --system / --gpus, and fails
unless every document's step time matches plan's (relative 1e-6) and at least one recipe has an
ep_size above 8 (EP across the nodes of an 8-GPU system: the AutoModel fragment then names
model.backend.dispatcher: hybridep, which check must price as plan did).
"""
import json
import os
import subprocess
import sys

mp, out_dir, *args = sys.argv[1:]
os.makedirs(out_dir, exist_ok=True)
path = os.path.join(out_dir, "plan.yaml")
subprocess.run([mp, "plan", *args, "--format", "yaml", "--out", path, "--force"], check=True, stdout=subprocess.DEVNULL)
plan = json.loads(subprocess.run([mp, "plan", *args, "--format", "json"], check=True, stdout=subprocess.PIPE, text=True).stdout)
job = []
for flag in ("--model", "--system", "--gpus"):
    job += [flag, args[args.index(flag) + 1]]
check = json.loads(subprocess.run([mp, "check", path, *job, "--format", "json"], stdout=subprocess.PIPE, text=True).stdout)
docs, recipes = check["documents"], plan["recipes"]
assert len(docs) == len(recipes), f"{len(docs)} documents checked, {len(recipes)} planned"
bad, cross_node = [], 0
for d, r in zip(docs, recipes):
    cross_node += r["layout"]["ep_size"] > 8
    want, got = r["time_s"]["step"], d["predicted"]["step_s"]
    print(f"{d['description']}: plan {want:.3f} s, check {got:.3f} s")
    if abs(got - want) > 1e-6 * want:
        bad.append(d["label"])
assert cross_node > 0, "no planned recipe has EP across nodes"
if bad:
    print("check's step differs from plan's for " + ", ".join(bad))
    sys.exit(1)
