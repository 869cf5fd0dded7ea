#!/usr/bin/env python3
"""check ranks each recipe plan writes as plan ranked it, and never calls one of them faster than
the search can find.

usage: plan_check_rank.py MESHPLAN OUT_DIR PLAN_ARGS...
Runs `plan PLAN_ARGS --out OUT_DIR/plan.yaml`, then `check` of that file with the same --model /
--system / --gpus, as JSON and as text, and fails unless document i's rank (against_plan.rank)
is i + 1 and no text line says the recipe has "a setting the search does not enumerate" (every
one of them is a layout the search produced).
"""
import json
import os
import subprocess
import sys

mp, out_dir, *args = sys.argv[1:]
os.makedirs(out_dir, exist_ok=True)
path = os.path.join(out_dir, "plan.yaml")
subprocess.run([mp, "plan", *args, "--out", path, "--force"], check=True, stdout=subprocess.DEVNULL)
job = []
for flag in ("--model", "--system", "--gpus"):
    job += [flag, args[args.index(flag) + 1]]
check = json.loads(subprocess.run([mp, "check", path, *job, "--format", "json"], stdout=subprocess.PIPE, text=True).stdout)
text = subprocess.run([mp, "check", path, *job], stdout=subprocess.PIPE, text=True).stdout
ranks = [d["against_plan"]["rank"] for d in check["documents"]]
print("check's ranks of plan's recipes:", ranks)
ok = ranks == list(range(1, len(ranks) + 1)) and len(ranks) >= 2
if "a setting the search does not enumerate" in text:
    print("check says a planned recipe has a setting the search does not enumerate")
    ok = False
sys.exit(0 if ok else 1)
