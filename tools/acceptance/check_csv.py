#!/usr/bin/env python3
"""Refresh the 'check nearest' rows of tests/data/acceptance/check_results.csv from a
check_results.jsonl (mbridge_check/check_recipe.py --batch on .acceptance/chk/cases.jsonl),
keeping every row of another source (the Megatron FSDP rows, not re-run) as it was.
    check_csv.py CHECK_RESULTS.jsonl tests/data/acceptance/check_results.csv"""
import csv, json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
res = [r for r in res if not r.get("meta")]
old = list(csv.reader(open(sys.argv[2])))
keep = [r for r in old[1:] if r[0] != "check nearest"]
rows = [["check nearest", r.get("id"), r.get("accepted"), r.get("stage") or "", (r.get("error") or r.get("harness_error") or "")[:300]]
        for r in sorted(res, key=lambda r: r.get("id") or "")]
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f); w.writerow(old[0]); w.writerows(rows + keep)
acc = sum(r.get("accepted") is True for r in res)
print(f"{len(res)} check cases: {acc} accepted, {sum(r.get('accepted') is False for r in res)} rejected, "
      f"{sum(r.get('accepted') is None for r in res)} harness errors; {len(keep)} other rows kept")
