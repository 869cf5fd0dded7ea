#!/usr/bin/env python3
"""Summarise an acceptance run into tests/data/acceptance/: summary.md (counts per framework,
model and system, every distinct rejection, the framework commits, what stood in) and
results.csv (one line per case: framework, id, accepted, stage).

    summarize.py CASES_DIR DEVICE_OUT_DIR MESHPLAN_COMMIT OUT_DIR

CASES_DIR is gen_cases.py's output (plans.jsonl, mb/cases.jsonl, am/cases.jsonl); DEVICE_OUT_DIR
holds mb_results.jsonl (mbridge_check/check_recipe.py --batch) and am_results.jsonl
(run_automodel.py).
"""
import collections, csv, json, os, sys, time


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def main():
    cases_dir, dev, commit, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    mb, am = load(os.path.join(dev, "mb_results.jsonl")), load(os.path.join(dev, "am_results.jsonl"))
    mb_cases = {c["id"]: c for c in load(os.path.join(cases_dir, "mb", "cases.jsonl"))}
    am_cases = load(os.path.join(cases_dir, "am", "cases.jsonl"))
    plans = load(os.path.join(cases_dir, "plans.jsonl"))
    vendored = json.load(open("recipes/megatron-bridge-recipe-functions.json"))["vendored"]
    am_commit = json.load(open("recipes/automodel-schema.json"))["automodel_commit"]
    L = [f"# Acceptance of meshplan's recipes by the frameworks' own code",
         "",
         f"meshplan {commit}, run {time.strftime('%Y-%m-%d')} with the harnesses of `../shared/acceptance/` "
         "(torch 2.11, one CPU process per recipe on torch's fake process group at the recipe's world size).",
         "Regenerate: `tools/acceptance/gen_cases.py` here, the harnesses on a machine with torch "
         "(docs/acceptance.md), then `tools/acceptance/summarize.py`.",
         "",
         "Frameworks: " + "; ".join(vendored[:2]) + f"; NeMo AutoModel {am_commit}.",
         "",
         "Grid: every preset, DGX H100 / DGX B200 / GB200 NVL72, 8 to 1024 GPUs (GB200 NVL72 also 72 and 144), "
         "seq 4096 and 8192, global batch per GPU count, top 3 recipes of each plan; AutoModel fragments and "
         "`--full-recipe` recipes, with the harness's `--simulate-pp-schedule`.",
         ""]
    nofit = sum(p["rc"] == 1 for p in plans)
    failed = sum(p["rc"] not in (0, 1) for p in plans)
    L.append(f"{len(plans)} plans: {len(plans) - nofit - failed} with recipes, {nofit} with no layout that fits "
             f"(small worlds for the largest models), {failed} failed otherwise.")
    L.append("")
    for name, rs in (("Megatron-Bridge launches (--emit-launch, as written)", mb), ("AutoModel recipes", am)):
        acc = sum(r.get("accepted") is True for r in rs)
        rej = sum(r.get("accepted") is False for r in rs)
        har = sum(r.get("accepted") is None for r in rs)
        extra = ""
        if rs is am:
            dups = sum(len(c.get("same_as", [])) for c in am_cases)
            extra = f" (distinct inputs; {dups} more recipes were identical to one of them)"
        untrusted = sum(bool(r.get("stub_calls")) or bool(r.get("te_facade_misses")) for r in rs)
        L.append(f"## {name}: {acc} of {len(rs)} accepted{extra}")
        L.append("")
        L.append(f"{rej} rejected, {har} harness errors; {untrusted} verdicts with a stand-in called (stub or TE facade).")
        L.append("")
        by = collections.Counter()
        for r in rs:
            c = mb_cases.get(r.get("id"), r) if rs is mb else r
            by[(c.get("model"), c.get("system"), r.get("accepted") is True)] += 1
        L.append("| model | system | accepted | not |")
        L.append("|---|---|---|---|")
        for m, s in sorted({(k[0], k[1]) for k in by}):
            L.append(f"| {m} | {s} | {by[(m, s, True)]} | {by[(m, s, False)]} |")
        L.append("")
        errs = collections.Counter((r.get("stage"), (r.get("error") or r.get("harness_error") or "")[:200])
                                   for r in rs if r.get("accepted") is not True)
        if errs:
            L.append("Distinct rejections:")
            for (stage, msg), n in errs.most_common():
                L.append(f"- {n} x [{stage}] {msg}")
            L.append("")
    L.append("Not covered: Mixtral (Megatron-Bridge has no recipe function for it) and Kimi-K2 (its config needs "
             "remote code, which the offline harness cannot load) under Megatron-Bridge; what the harnesses "
             "themselves skip (model construction, Transformer Engine kernels, NCCL: their READMEs).")
    open(os.path.join(out, "summary.md"), "w").write("\n".join(L) + "\n")
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["framework", "case", "accepted", "stage"])
        for fw, rs in (("megatron-bridge", mb), ("automodel", am)):
            for r in sorted(rs, key=lambda r: r.get("id") or ""):
                w.writerow([fw, r.get("id"), r.get("accepted"), r.get("stage") or ""])
    print("\n".join(L[:30]))


if __name__ == "__main__":
    main()
