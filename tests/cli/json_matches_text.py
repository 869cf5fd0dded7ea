#!/usr/bin/env python3
"""Runs a meshplan explain or check command twice, as text and with --format json, and checks
that every number the text prints is the JSON's (rounded as the text rounds it), plus the exit
status and any expected JSON values given as PATH=VALUE before the command.

usage: json_matches_text.py [PATH=VALUE ...] -- MESHPLAN explain|check ARGS...
PATH is dotted with list indices ("documents.0.nearest.1.layout.ep_size"); VALUE is JSON.
"""
import json
import re
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout


def get(j, path):
    for part in path.split("."):
        j = j[int(part)] if isinstance(j, list) else j[part]
    return j


failures = []


def same(what, text_value, json_value, digits):
    want = f"{json_value:.{digits}f}"
    if text_value != want:
        failures.append(f"{what}: text {text_value}, JSON {json_value} ({want} rounded)")


def pct(v):
    return f"{100 * v:.1f}"


TIME_ROWS = {"compute": "compute", "TP communication": "tp_comm", "CP communication": "cp_comm",
             "DP communication": "dp_comm", "EP communication": "ep_comm", "PP communication": "pp_comm",
             "pipeline bubble": "bubble", "optimizer step": "optimizer", "host-bound (CPU)": "host", "step": "step"}
MEMORY_ROWS = {"weights": "weights", "gradients": "gradients", "optimizer state": "optimizer",
               "activations": "activations", "logits + loss": "logits", "FSDP / optimizer buffers": "buffers",
               "cuBLAS workspace": "workspace", "CUDA context + NCCL + EP": "overhead", "total": "total"}
COMPUTE_ROWS = {"GEMMs": "gemm", "attention core": "attention", "HBM-bound kernels": "memory_bound",
                "kernel launches": "kernels"}
EP_ROWS = {"dispatch + combine": "dispatch_combine", "NVLink busy": "nvlink_busy", "RDMA (NICs) busy": "rdma_busy",
           "hidden": "hidden", "exposed": "exposed"}


def total_and_usable(m, memory_gib, digits):
    """A match of "TOTAL GiB ... USABLE GiB" against memory_gib's total and capacity."""
    if m:
        same("memory total", m.group(1), memory_gib["total"], digits)
        same("memory usable", m.group(2), memory_gib["capacity"], digits)


def check_throughput(line, j, what):
    """The throughput line against j's tokens_per_s_per_gpu, model_tflops_per_gpu, mfu (against the
    BF16 dense peak) and, where the text names the precision's own peak, mfu_precision_peak; precision_peak
    names that peak (BF16 where the text names none)."""
    m = re.search(r"(\d+) tokens/s per GPU, ([\d.]+) model TFLOP/s per GPU, MFU ([\d.]+)% of the BF16 dense peak"
                  r"(?: \(([\d.]+)% of the (FP8|FP4) dense peak\))?", line)
    if m:
        same(what + " tokens/s", m.group(1), j["tokens_per_s_per_gpu"] or 0, 0)
        same(what + " TFLOP/s", m.group(2), j["model_tflops_per_gpu"] or 0, 1)
        same(what + " MFU", m.group(3), 100 * (j["mfu"] or 0), 1)
        if m.group(4) is not None:
            same(what + " MFU of the " + m.group(5) + " peak", m.group(4), 100 * (j["mfu_precision_peak"] or 0), 1)
        elif j["mfu_precision_peak"] != j["mfu"]:
            failures.append(what + ": the text names no precision peak, but mfu_precision_peak differs from mfu")
        peak = m.group(5) or "BF16"
        if j.get("precision_peak") != peak:
            failures.append(what + ": the text's MFU is of the %s dense peak, the JSON's precision_peak is %r" %
                            (peak, j.get("precision_peak")))
    return bool(m)


def explain(text, j):
    seen = set()
    section = None
    stage_heads = []
    for line in text.splitlines():
        if line.startswith("memory per GPU"):
            section = "memory"
        elif line.startswith("time per step"):
            section = "time"
        elif line.startswith("compute of the slowest rank"):
            section = "compute"
        elif line.startswith("EP all-to-all"):
            section = "ep"
            m = re.search(r"EP (\d+) over (\d+) NVLink domain", line)
            same("EP size", m.group(1), j["ep_all_to_all"]["ep_size"], 0)
            same("NVLink domains", m.group(2), j["ep_all_to_all"]["nvlink_domains"], 0)
            m = re.search(r"([\d.]+) token copies per dispatch", line)
            same("token copies", m.group(1), j["ep_all_to_all"]["token_copies_per_dispatch"], 2)
        m = re.match(r"  (term)\s+(.*)$", line)
        if section == "memory" and m:
            stage_heads = [int(s) for s in re.findall(r"stage (\d+)", m.group(2))] or [0]
            continue
        m = re.match(r"  (\S.*?)\s{2,}(-?[\d.]+)( s)?( .*)?$", line)
        if m and section == "memory" and m.group(1) in MEMORY_ROWS:
            values = re.findall(r"(-?\d+\.\d\d) +[\d.]+%", line)
            for stage, v in zip(stage_heads, values):
                same(f"memory {m.group(1)} stage {stage}", v, j["memory_per_rank_gib"][stage][MEMORY_ROWS[m.group(1)]], 2)
                seen.add("memory")
        elif m and section == "time" and m.group(1) in TIME_ROWS:
            same("time " + m.group(1), m.group(2), j["time_s"][TIME_ROWS[m.group(1)]], 4)
            seen.add("time")
        elif m and section == "compute" and m.group(1) in COMPUTE_ROWS:
            same("compute " + m.group(1), m.group(2), j["compute_split_s"][COMPUTE_ROWS[m.group(1)]], 4)
            seen.add("compute")
        elif section == "ep" and re.match(r"  +(\S.*?)\s{2,}(-?[\d.]+) s", line):
            mm = re.match(r"  +(\S.*?)\s{2,}(-?[\d.]+) s", line)
            if mm.group(1) in EP_ROWS:
                same("EP " + mm.group(1), mm.group(2), j["ep_all_to_all"]["time_s"][EP_ROWS[mm.group(1)]], 4)
                seen.add("ep")
        if check_throughput(line, j, "explain"):
            seen.add("throughput")
        total_and_usable(re.search(r"most loaded GPU: ([\d.]+) GiB of ([\d.]+) GiB usable", line), j["memory_gib"], 2)
        m = re.match(r"(fits|does NOT fit): (-?[\d.]+) GiB", line)
        if m:
            same("spare", m.group(2), j["spare_gib"] if m.group(1) == "fits" else -j["spare_gib"], 2)
            if (m.group(1) == "fits") != j["fits"]:
                failures.append("fits differs")
            seen.add("verdict")
        m = re.search(r"passes all (\d+)", line)
        if m:
            same("rules checked", m.group(1), j["rules"]["checked"], 0)
        m = re.match(r"rules: INVALID, (\d+) rule", line)
        if m:
            same("rules broken", m.group(1), len(j["rules"]["failures"]), 0)
        m = re.match(r"  (\w+): ", line)
        if m and section is None and line.startswith("  mb_") or line.startswith("  am_") or line.startswith("  rule_"):
            if m.group(1) not in [f["name"] for f in j["rules"]["failures"]]:
                failures.append("rule " + m.group(1) + " not in JSON")
        m = re.match(r"pipeline split: decoder layers per rank((?: \d+)+)", line)
        if m:
            # The list may wrap: the numbers up to the line's end, then continued lines.
            pass
    if j["scorable"]:
        for part in ("memory", "time", "throughput", "verdict"):
            if part not in seen:
                failures.append("explain text has no " + part + " lines to compare")
    split = re.search(r"pipeline split: decoder layers per rank([\d \n]+)", text)
    if split:
        got = [int(x) for x in split.group(1).split()]
        if got != j["pipeline_split"]["layers_per_rank"]:
            failures.append(f"layers per rank: text {got}, JSON {j['pipeline_split']['layers_per_rank']}")


def check(text, j):
    docs = j["documents"]
    d = docs[0]
    shown = None
    for line in text.splitlines():
        total_and_usable(re.match(r"memory: ([\d.]+) GiB per GPU predicted of ([\d.]+) GiB usable", line), d["memory_gib"], 1)
        m = re.match(r"predicted: step ([\d.]+) s, ", line)
        if m:
            same("step", m.group(1), d["predicted"]["step_s"], 3)
            p = d["predicted"]
            if not check_throughput(line, p, "check"):
                failures.append("predicted line unparsed")
        m = re.match(r"against the planner \(its first (\d+) fitting", line)
        if m:
            a = d["against_plan"]
            same("searched", m.group(1), a["searched"], 0)
            mm = re.search(r"\): rank (>?\d+)(=?)", line)
            if not mm:
                failures.append("against the planner: no rank")
            else:
                if not mm.group(1).startswith(">"):
                    same("rank", mm.group(1), a["rank"], 0)
                if (mm.group(2) == "=") != a["tie"]:
                    failures.append(f"rank tie: text {mm.group(2)!r}, JSON {a['tie']}")
            mm = re.search(r"(\d+) tokens/s per GPU at ([\d.]+) GiB \(out-of-memory risk [^)]*\), is expected ([\d.]+)% faster", line)
            if mm:
                same("fastest tokens/s", mm.group(1), a["fastest"]["tokens_per_s_per_gpu"], 0)
                same("fastest GiB", mm.group(2), a["fastest"]["memory_gib"]["total"], 1)
                same("gap", mm.group(3), 100 * a["gap"], 1)
        m = re.match(r"INVALID: (\d+) rule", line)
        if m:
            same("failures", m.group(1), len(d["rules"]["failures"]), 0)
        m = re.match(r"nearest valid layouts \((\d+)\)", line)
        if m:
            same("nearest", m.group(1), len(d["nearest"]), 0)
        m = re.match(r"--- (\d+): (\d+) edits?(?: \((\d+) keys?\))?((?:; .*)?)$", line)
        if m:
            x = d["nearest"][int(m.group(1)) - 1]
            shown = x
            changes = [c for c in m.group(4).split("; ") if c]
            if changes != x["changes"]:
                failures.append(f"nearest {m.group(1)} changes: text {changes}, JSON {x['changes']}")
            same("nearest edits", m.group(2), x["edits"], 0)
            if m.group(3) is not None:
                same("nearest keys", m.group(3), len(x["changes"]), 0)
            elif len(x["changes"]) != x["edits"]:
                failures.append(f"nearest {m.group(1)}: {len(x['changes'])} keys in JSON, not said in the text")
            if any("unset (off)" in c for c in x["changes"]):
                failures.append(f"nearest {m.group(1)}: a note among the changes: {x['changes']}")
            shown_notes = []
        m = re.match(r"# not edits, settings the recipe leaves unset \(priced off\) and this recipe turns on: (.*)$", line)
        if m:
            shown_notes = m.group(1).split("; ")
            if shown_notes != shown["notes"]:
                failures.append(f"nearest notes: text {shown_notes}, JSON {shown['notes']}")
        m = re.match(r"# predicted: ([\d.]+) GiB/GPU.*?step ([\d.]+) s", line)
    if not d["rules"]["valid"] and d["nearest"] is None:
        failures.append("an invalid recipe has no nearest list in JSON")


def main():
    args = sys.argv[1:]
    sep = args.index("--")
    expected, cmd = args[:sep], args[sep + 1:]
    rc_text, text = run(cmd)
    rc_json, out = run(cmd + ["--format", "json"])
    j = json.loads(out)
    if rc_text != rc_json:
        failures.append(f"exit status: text {rc_text}, JSON {rc_json}")
    if j.get("exit_status") != rc_json:
        failures.append(f"exit_status {j.get('exit_status')} but the command exited {rc_json}")
    (explain if cmd[1] == "explain" else check)(text, j)
    for e in expected:
        path, value = e.split("=", 1)
        try:
            got = get(j, path)
        except (KeyError, IndexError, TypeError):
            failures.append(f"{path}: missing")
            continue
        want = json.loads(value)
        if isinstance(want, float) and isinstance(got, (int, float)):
            ok = abs(got - want) <= 1e-3 * max(1.0, abs(want))
        else:
            ok = got == want
        if not ok:
            failures.append(f"{path}: expected {want!r}, found {got!r}")
    if failures:
        print("\n".join(failures))
        print("---- text:\n" + text[:4000])
        sys.exit(1)


main()
