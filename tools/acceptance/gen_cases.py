#!/usr/bin/env python3
"""Generate the acceptance grid: meshplan's recipes and launch files for both frameworks, as
cases for the two harnesses of ../shared/acceptance (no torch needed here).

    gen_cases.py MESHPLAN_BINARY OUT_DIR [--jobs N] [--small] [--models NAME,NAME] [--frameworks automodel,megatron-bridge]

Grid (issue "every recipe meshplan writes is accepted"): every preset, DGX H100 / DGX B200 /
GB200 NVL72, 8..1024 GPUs, seq 4096 and 8192, top 3; Megatron-Bridge launches (--emit-launch)
and AutoModel fragments and --full-recipe recipes. Writes OUT_DIR/mb/cases.jsonl (the format of
mbridge_check/check_recipe.py --batch), OUT_DIR/am/cases.jsonl (tools/acceptance/run_automodel.py)
and OUT_DIR/plans.jsonl (every plan's exit status). AutoModel cases whose inputs are identical
(recipe body, world size, sequence length, model) are checked once: `same_as` lists the others.
Model configs are named relative to the repository root (models/NAME.json).
"""
import hashlib, itertools, json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

PRESETS = ["llama3-8b", "llama3-70b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "mixtral-8x7b", "mixtral-8x22b",
           "qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "kimi-k2", "gpt-oss-20b", "gpt-oss-120b",
           "nemotron-3-nano", "nemotron-3-super", "nemotron-3-ultra", "deepseek-v4-flash"]
# Megatron-Bridge has no recipe function for Mixtral; Kimi-K2's config needs remote code the
# offline harness cannot load.
MB_SKIP = {"mixtral-8x7b": "no Megatron-Bridge recipe function", "mixtral-8x22b": "no Megatron-Bridge recipe function",
           "kimi-k2": "its config.json needs trust_remote_code (not available offline)",
           "deepseek-v4-flash": "meshplan names no default recipe function (deepseek_v4_flash_pretrain_config reads "
                                "its config with trust_remote_code, not available offline)"}
SYSTEMS = {"dgx-h100": "h100", "dgx-b200": "b200", "gb200-nvl72": "gb200"}
GPUS = [8, 16, 32, 64, 128, 256, 512, 1024]
SEQS = [4096, 8192]
GBS = {8: 128, 16: 256, 32: 256, 64: 512, 72: 576, 128: 1024, 144: 1152, 256: 1024, 512: 2048, 1024: 4096}


def main():
    binary, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 2
    gpus = [8, 64] if "--small" in sys.argv else GPUS
    presets = sys.argv[sys.argv.index("--models") + 1].split(",") if "--models" in sys.argv else PRESETS
    frameworks = (sys.argv[sys.argv.index("--frameworks") + 1].split(",") if "--frameworks" in sys.argv
                  else ["automodel", "megatron-bridge"])
    runs = []
    # GB200 NVL72 also at one and two whole NVL72 domains (72, 144 GPUs: PP 9 and the like).
    grid = [(m, s, g, L) for m, s, g, L in itertools.product(presets, SYSTEMS, gpus, SEQS)]
    grid += [(m, "gb200-nvl72", g, L) for m, g, L in itertools.product(presets, [72, 144], SEQS)]
    for m, s, g, L in grid:
        if "megatron-bridge" in frameworks:
            runs.append(("megatron-bridge", m, s, g, L, False))
        if "automodel" in frameworks:
            runs.append(("automodel", m, s, g, L, False))
            runs.append(("automodel", m, s, g, L, True))

    def one(r):
        fw, m, s, g, L, full = r
        stem = f"{m}_{s}_{g}_{L}" + ("_full" if full else "")
        d = os.path.join(out, "mb" if fw == "megatron-bridge" else "am", stem)
        os.makedirs(d, exist_ok=True)
        cmd = [binary, "plan", "--framework", fw, "--model", m, "--system", s, "--gpus", str(g), "--seq-len", str(L),
               "--global-batch", str(GBS[g]), "--top", "3", "--format", "yaml", "--out", os.path.join(d, "plan.yaml"),
               "--emit-launch", "--force"]
        if full:
            cmd.append("--full-recipe")
        p = subprocess.run(cmd, capture_output=True, text=True)
        return r, stem, d, p.returncode, (p.stderr.strip().splitlines() or [""])[-1]

    with ThreadPoolExecutor(jobs) as ex:
        results = list(ex.map(one, runs))
    mb_cases, am_cases, seen, dups = [], [], {}, 0
    with open(os.path.join(out, "plans.jsonl"), "w") as plans:
        for (fw, m, s, g, L, full), stem, d, rc, tail in results:
            files = sorted(os.listdir(d))
            plans.write(json.dumps({"framework": fw, "model": m, "system": s, "gpus": g, "seq_len": L, "full": full,
                                    "rc": rc, "recipes": sum(f.endswith(".yaml") and ".rank" in f for f in files),
                                    "stderr_tail": tail}) + "\n")
            for f in files:
                if ".rank" not in f:
                    continue
                rank = int(f.split(".rank")[1].split(".")[0])
                base = {"model": m, "system": s, "gpus": g, "seq_len": L, "rank_in_plan": rank}
                if fw == "megatron-bridge" and f.endswith(".launch.sh"):
                    if m in MB_SKIP:
                        continue
                    mb_cases.append(dict(base, id=f"{stem}_r{rank}", launch=os.path.join(stem, f)))
                elif fw == "automodel" and f.endswith(".yaml"):
                    text = open(os.path.join(d, f)).read()
                    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
                    key = hashlib.sha1(f"{body}|{g}|{L}|{m}".encode()).hexdigest()
                    case = dict(base, id=f"{stem}_r{rank}", recipe=os.path.join(stem, f), world_size=g,
                                hf_config=os.path.join("models", m + ".json"), full=full)
                    if key in seen:
                        dups += 1
                        seen[key]["same_as"] = seen[key].get("same_as", []) + [case["id"]]
                        continue
                    seen[key] = case
                    am_cases.append(case)
    for sub, cases in (("mb", mb_cases), ("am", am_cases)):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
        with open(os.path.join(out, sub, "cases.jsonl"), "w") as f:
            for c in cases:
                f.write(json.dumps(c) + "\n")
    bad = [r for r in results if r[3] not in (0, 1)]  # 1: no layout fits (small worlds)
    print(f"{len(results)} plans ({len(bad)} with an unexpected exit status), {len(mb_cases)} Megatron-Bridge launches, "
          f"{len(am_cases)} distinct AutoModel recipes (+{dups} identical ones)")
    for r in bad[:10]:
        print("  ", r[0], r[3], r[4])


if __name__ == "__main__":
    main()
