#!/usr/bin/env python3
"""Run the AutoModel acceptance harness (../shared/acceptance/automodel_check/check_recipe.py)
on every case of a cases.jsonl written by gen_cases.py, in forked children of one process that
has imported torch once, and summarise.

    run_automodel.py HARNESS_DIR CASES_DIR OUT_DIR [--jobs N] [--time-limit S]

Each case runs check_recipe.main([recipe, world_size, --seq-len, --hf-config,
--simulate-pp-schedule]) in its own child (it builds a fake process group of the recipe's world
size); the JSON line it prints is the result. Writes OUT_DIR/am_results.jsonl and
OUT_DIR/am_summary.txt (accepted / rejected / harness errors, each distinct rejection with a count
and an example).
"""
import collections, importlib, json, multiprocessing as mp, os, sys, tempfile, time

H = None


def child(case):
    fd, path = tempfile.mkstemp()
    saved = os.dup(1)
    os.dup2(fd, 1)
    try:
        argv = [case["recipe_path"], str(case["world_size"]), "--seq-len", str(case["seq_len"]),
                "--hf-config", case["hf_config"], "--simulate-pp-schedule"]
        code = H.main(argv)
    except BaseException as e:  # noqa: BLE001
        code = -1
        print(json.dumps({"accepted": None, "harness_error": f"{type(e).__name__}: {e}"}))
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(fd)
    text = open(path).read().strip().splitlines()
    os.unlink(path)
    try:
        r = json.loads(text[-1]) if text else {"accepted": None, "harness_error": "no output"}
    except ValueError:
        r = {"accepted": None, "harness_error": "unparsable output: " + text[-1][:300]}
    r["id"], r["exit"] = case["id"], code
    for k in ("model", "system", "gpus", "seq_len", "full", "same_as"):
        if k in case:
            r[k] = case[k]
    return r


def main():
    global H
    harness, cases_dir, out = sys.argv[1:4]
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 16
    limit = float(sys.argv[sys.argv.index("--time-limit") + 1]) if "--time-limit" in sys.argv else 1e9
    os.makedirs(out, exist_ok=True)
    sys.path.insert(0, harness)
    H = importlib.import_module("check_recipe")
    import torch  # noqa: F401  (imported once, before forking)
    sys.path.insert(0, os.path.join(harness, "vendor"))
    for m in ("nemo_automodel.recipes._dist_utils", "nemo_automodel.components.distributed.config",
              "nemo_automodel.components.distributed.mesh", "nemo_automodel.components.distributed.pipelining.autopipeline",
              "nemo_automodel.components.training.step_scheduler", "torch.distributed.pipelining"):
        try:
            importlib.import_module(m)
        except Exception as e:  # noqa: BLE001  (the harness reports what it cannot import)
            print(f"warm import {m}: {type(e).__name__}: {e}", file=sys.stderr)

    cases = [json.loads(l) for l in open(os.path.join(cases_dir, "cases.jsonl")) if l.strip()]
    for c in cases:
        c["recipe_path"] = os.path.join(cases_dir, c["recipe"])
    t0, results = time.time(), []
    with mp.get_context("fork").Pool(jobs, maxtasksperchild=1) as pool:
        it = pool.imap_unordered(child, cases, chunksize=1)
        for _ in cases:
            try:
                results.append(it.next(timeout=max(1.0, limit - (time.time() - t0))))
            except mp.TimeoutError:
                break
    with open(os.path.join(out, "am_results.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    acc = sum(r.get("accepted") is True for r in results)
    rej = [r for r in results if r.get("accepted") is False]
    har = [r for r in results if r.get("accepted") is None]
    dup = sum(len(r.get("same_as", [])) for r in results)
    lines = [f"AutoModel harness ({H.__file__}), {time.strftime('%Y-%m-%d')}",
             f"{len(cases)} distinct recipes (+{dup} identical ones checked through them), {len(results)} run: "
             f"{acc} accepted, {len(rej)} rejected, {len(har)} harness errors, {len(cases) - len(results)} not run"]
    for name, group in (("rejected", rej), ("harness error", har)):
        by = collections.Counter()
        ex = {}
        for r in group:
            msg = f"[{r.get('stage')}] {(r.get('error') or r.get('harness_error') or '')[:200]}"
            by[msg] += 1
            ex.setdefault(msg, r["id"])
        for msg, n in by.most_common():
            lines.append(f"  {name} {n:5d}  {msg}   e.g. {ex[msg]}")
    open(os.path.join(out, "am_summary.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
