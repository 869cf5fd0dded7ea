#!/usr/bin/env python3
"""Acceptance cases for the recipes `meshplan check` writes: the nearest valid layouts it
suggests for a broken Megatron-Bridge recipe, as cases for mbridge_check/check_recipe.py --batch.

    gen_check_cases.py MESHPLAN_BINARY GRID_DIR OUT_DIR [--jobs N]

GRID_DIR is gen_cases.py's output. For each Megatron-Bridge plan of the grid at 8, 64 and 256
GPUs (rank 1 recipe), three broken variants are written and checked: the expert-parallel size
(or, for a dense model, the tensor-parallel size) doubled, a pipeline size that does not divide
the layers or the world, and the micro-batch size times 16. Every suggestion `check --format json`
returns (its `nearest` list: the recipe function of the plan's header, the suggestion's
`overrides` and `environment`; the harness takes the GPU from `system`) is one case. Writes OUT_DIR/mb/cases.jsonl and OUT_DIR/checks.jsonl
(each check's exit status and how many suggestions it gave).
"""
import json, os, re, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

import yaml

GPU_COUNTS = {8, 64, 256}


def model_keys(doc):
    """The map holding the TransformerConfig keys: model, or model.transformer (the Llama
    recipe functions nest it there)."""
    return doc["model"]["transformer"] if isinstance(doc["model"].get("transformer"), dict) else doc["model"]


def variants(doc):
    m = model_keys(doc)
    out = []
    ep = m.get("expert_model_parallel_size") or 1
    v = json.loads(json.dumps(doc))
    if ep > 1:
        model_keys(v)["expert_model_parallel_size"] = ep * 2
        out.append(("ep_x2", v))
    else:
        model_keys(v)["tensor_model_parallel_size"] = (m.get("tensor_model_parallel_size") or 1) * 2
        out.append(("tp_x2", v))
    v = json.loads(json.dumps(doc))
    model_keys(v)["pipeline_model_parallel_size"] = 3
    model_keys(v)["virtual_pipeline_model_parallel_size"] = None
    out.append(("pp3", v))
    v = json.loads(json.dumps(doc))
    v["train"]["micro_batch_size"] = (doc["train"].get("micro_batch_size") or 1) * 16
    out.append(("mbs_x16", v))
    return out


def main():
    binary, grid, out = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 2
    os.makedirs(os.path.join(out, "mb", "recipes"), exist_ok=True)
    work = []
    for case in (json.loads(l) for l in open(os.path.join(grid, "mb", "cases.jsonl")) if l.strip()):
        if case["rank_in_plan"] != 1 or case["gpus"] not in GPU_COUNTS or case["seq_len"] != 4096:
            continue
        d = os.path.join(grid, "mb", os.path.dirname(case["launch"]))
        text = open(os.path.join(d, "plan.rank1.yaml")).read()
        fn = re.search(r"^# recipe function: (\S+)", text, re.M)
        if not fn:
            continue
        header = "".join(l + "\n" for l in text.splitlines() if l.startswith("# recipe function:"))
        # As the plan's launch writes them: comm_overlap keys force-added (++) after the class to
        # build where the recipe function leaves comm_overlap None (its COMM_OVERLAP prelude).
        target = re.search(r"'(\+\+comm_overlap\._target_=[^']+)'", open(os.path.join(grid, "mb", case["launch"])).read())
        force = target.group(1) if target else None
        doc = yaml.safe_load(text)
        for tag, v in variants(doc):
            name = f"{case['model']}_{case['system']}_{case['gpus']}_{tag}"
            path = os.path.join(out, "mb", "recipes", name + ".yaml")
            with open(path, "w") as f:
                f.write(header + yaml.safe_dump(v, sort_keys=False))
            work.append((name, path, case, fn.group(1), force))

    def run(w):
        name, path, case, fn, force = w
        cmd = [binary, "check", path, "--model", case["model"], "--system", case["system"], "--gpus",
               str(case["gpus"]), "--format", "json"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        try:
            j = json.loads(p.stdout)
        except json.JSONDecodeError:
            j = None
        return name, case, fn, force, p.returncode, j, (p.stderr.strip().splitlines() or [""])[-1]

    with ThreadPoolExecutor(jobs) as ex:
        results = list(ex.map(run, work))
    n = 0
    with open(os.path.join(out, "mb", "cases.jsonl"), "w") as cases, open(os.path.join(out, "checks.jsonl"), "w") as log:
        for name, case, fn, force, rc, j, tail in results:
            docs = (j or {}).get("documents", [j] if j else [])
            nearest = [s for d in docs for s in (d.get("nearest") or [])]
            log.write(json.dumps({"id": name, "exit": rc, "suggestions": len(nearest), "stderr": tail}) + "\n")
            for i, s in enumerate(nearest, 1):
                ov = [("++" if force and k.startswith("comm_overlap.") else "") + f"{k}={v}"
                      for k, v in s.get("overrides", {}).items()]
                if force and any(k.startswith("comm_overlap.") for k in s.get("overrides", {})):
                    ov.insert(0, force)
                cases.write(json.dumps({"id": f"{name}_s{i}", "source": "check", "recipe_func": fn,
                                        "world_size": case["gpus"],
                                        "model": case["model"], "system": case["system"], "gpus": case["gpus"],
                                        "seq_len": case["seq_len"], "overrides": ov,
                                        "env": s.get("environment", {})}) + "\n")
                n += 1
    print(f"{len(work)} broken recipes checked, {n} suggestions written to {out}/mb/cases.jsonl")


if __name__ == "__main__":
    main()
