#!/usr/bin/env python3
"""Adds the activation-offloading and loss-kernel settings of Megatron-Bridge's recipe functions to
recipes/megatron-bridge-recipe-functions.json, read from their source.

The table's values were dumped before dump_mb_recipes.py recorded these keys; until the next dump
(which records them from the built configs), this reads each recipe function's own body in the
Megatron-Bridge snapshot the table was dumped from (git show, no checkout) and records the
literal assignments `cfg.model.<key> = <value>` of KEYS it finds there, at the key's place in
the function's override tree. Assignments outside the function's body (helpers it calls) are not
seen; the grep of perf_recipes/ in the commit message lists where they occur.

Usage: python3 tools/acceptance/scan_mb_offloading.py MB_GITDIR [TABLE.json]
"""
import ast
import json
import re
import subprocess
import sys

KEYS = ["cpu_offloading", "cpu_offloading_num_layers", "cpu_offloading_activations", "cpu_offloading_weights",
        "fine_grained_activation_offloading", "offload_modules", "cross_entropy_loss_fusion",
        "cross_entropy_fusion_impl"]
ASSIGN = re.compile(r"^\s+cfg\.model\.(\w+)\s*=\s*(.+?)\s*(#.*)?$")


def main():
    gitdir = sys.argv[1]
    table_path = sys.argv[2] if len(sys.argv) > 2 else "recipes/megatron-bridge-recipe-functions.json"
    table = json.load(open(table_path))
    commit = table["vendored"][0].split()[1].rstrip(":")
    files = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", commit, "src/megatron/bridge/"],
                           check=True, capture_output=True, text=True).stdout.split()
    bodies = {}
    for f in files:
        if not f.endswith(".py") or "/recipes/" not in f and "/perf_recipes/" not in f:
            continue
        text = subprocess.run(["git", "--git-dir", gitdir, "show", f"{commit}:{f}"], check=True, capture_output=True,
                              text=True).stdout
        name, lines = None, []
        for line in text.splitlines():
            m = re.match(r"^def (\w+)\(", line)
            if m:
                if name:
                    bodies[name] = lines
                name, lines = m.group(1), []
            elif name:
                lines.append(line)
        if name:
            bodies[name] = lines
    added = 0
    for name, fn in table["recipes"].items():
        for line in bodies.get(name, []):
            m = ASSIGN.match(line)
            if not m or m.group(1) not in KEYS:
                continue
            try:
                value = ast.literal_eval(m.group(2))
            except (ValueError, SyntaxError):
                continue
            path = fn.get("transformer_path", "model") + "." + m.group(1)
            fn["values"][path] = value
            added += 1
    table["note"] += (" The model keys " + ", ".join(KEYS) + " were read from each recipe function's own body at the"
                      " same commit (tools/acceptance/scan_mb_offloading.py: literal assignments only).")
    with open(table_path, "w") as f:
        f.write(json.dumps(table, indent=0, sort_keys=True, separators=(",", ":")))  # the dump's own format
    print(f"{added} values added", file=sys.stderr)


if __name__ == "__main__":
    main()
