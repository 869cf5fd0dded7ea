#!/usr/bin/env python3
"""Adds to recipes/megatron-bridge-recipe-functions.json what Megatron-Bridge's recipe functions set
in their own source but the dump does not record: the activation-offloading and loss-kernel
settings, and the pipeline-layout builder a recipe installs.

The table's values were dumped before dump_mb_recipes.py recorded these keys; until the next dump
(which records them from the built configs), this reads each recipe function's own body in the
Megatron-Bridge snapshot the table was dumped from (git show, no checkout) and records the
literal assignments `cfg.model.<key> = <value>` of KEYS it finds there, at the key's place in
the function's override tree. Assignments outside the function's body (helpers it calls) are not
seen; the grep of perf_recipes/ in the commit message lists where they occur.

The layout builder (`model._pipeline_model_parallel_layout_builder = fn`: DeepSeek-V3, Kimi-K2,
Moonlight, K-EXAONE) is recorded as the builder's function name under the model key
`_pipeline_model_parallel_layout_builder`. It is found in the recipe function's body or in a
function of the same file that the body calls (Moonlight's `_moonlight_16b_model_provider`),
with the package's `import X as Y` aliases resolved (`deepseek_v3_pretrain_config`); the table's
top-level `layout_builders` lists every recipe function name with one, also those the dump left
out (Kimi-K2's, which need remote code). Megatron-Bridge's
scripts/training/recipe_runner.py `sync_model_pipeline_layout` re-runs that builder after a PP or
VP override that does not set `model.pipeline_model_parallel_layout`, and the builders raise for
(PP, VP) pairs outside their tables.

Usage: python3 tools/acceptance/scan_mb_recipe_bodies.py MB_GITDIR [TABLE.json]
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


BUILDER = "_pipeline_model_parallel_layout_builder"
BUILDER_ASSIGN = re.compile(r"^\s+(?:cfg\.)?model(?:_cfg)?\." + BUILDER + r"\s*=\s*(\w+)")
CALL = re.compile(r"\b(\w+)\(")
ALIAS = re.compile(r"\b(\w+)\s+as\s+(\w+)")


def read_bodies(gitdir, commit):
    """Every top-level function of the two recipe packages, per package ("perf" for perf_recipes,
    "lib" for recipes): name -> (file, body lines), and each package's `import X as Y` aliases
    (Y -> X)."""
    files = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", commit, "src/megatron/bridge/"],
                           check=True, capture_output=True, text=True).stdout.split()
    bodies, aliases = {"perf": {}, "lib": {}}, {"perf": {}, "lib": {}}
    for f in files:
        if not f.endswith(".py") or "/recipes/" not in f and "/perf_recipes/" not in f:
            continue
        pkg = "perf" if "/perf_recipes/" in f else "lib"
        text = subprocess.run(["git", "--git-dir", gitdir, "show", f"{commit}:{f}"], check=True, capture_output=True,
                              text=True).stdout
        for a, b in ALIAS.findall(text):
            if a != b:
                aliases[pkg].setdefault(b, a)
        name, lines = None, []
        for line in text.splitlines():
            m = re.match(r"^def (\w+)\(", line)
            if m:
                if name:
                    bodies[pkg].setdefault(name, (f, lines))
                name, lines = m.group(1), []
            elif name:
                lines.append(line)
        if name:
            bodies[pkg].setdefault(name, (f, lines))
    return bodies, aliases


def find_body(name, bodies, aliases):
    """The function recipe_runner.py load_recipe runs for a name: the benchmark (perf_recipes)
    definition first, as its BENCHMARK_RECIPE_PRECEDENCE_COLLISIONS say, else the library one,
    through the library's aliases (megatron.bridge.recipes.deepseek_v3_pretrain_config)."""
    for pkg in ("perf", "lib"):
        if name in bodies[pkg]:
            return bodies[pkg][name]
    target = aliases["lib"].get(name)
    return bodies["lib"].get(target) if target else None


def layout_builder(body, bodies, aliases, seen):
    """The layout builder a function installs: in its body, or in a function it calls (one of its
    own file, else a library recipe such as the perf recipes' deepseek_v3_pretrain_config())."""
    if body is None or id(body) in seen:
        return None
    seen.add(id(body))
    f, lines = body
    for line in lines:
        m = BUILDER_ASSIGN.match(line)
        if m:
            return m.group(1)
    pkg = "perf" if "/perf_recipes/" in f else "lib"
    same_file = {n: b for n, b in bodies[pkg].items() if b[0] == f}
    for line in lines:
        for callee in CALL.findall(line):
            b = same_file.get(callee)
            if b is None:  # an import of its package, by its alias there, else a library recipe
                name = aliases[pkg].get(callee, callee)
                b = bodies["lib"].get(name) or bodies["lib"].get(aliases["lib"].get(name, ""))
            found = layout_builder(b, bodies, aliases, seen)
            if found:
                return found
    return None


def main():
    gitdir = sys.argv[1]
    table_path = sys.argv[2] if len(sys.argv) > 2 else "recipes/megatron-bridge-recipe-functions.json"
    table = json.load(open(table_path))
    commit = table["vendored"][0].split()[1].rstrip(":")
    bodies, aliases = read_bodies(gitdir, commit)
    added = builders = 0
    for name, fn in table["recipes"].items():
        body = find_body(name, bodies, aliases)
        prefix = fn.get("transformer_path", "model") + "."
        for line in (body or (None, []))[1]:
            m = ASSIGN.match(line)
            if not m or m.group(1) not in KEYS:
                continue
            try:
                value = ast.literal_eval(m.group(2))
            except (ValueError, SyntaxError):
                continue
            fn["values"][prefix + m.group(1)] = value
            added += 1
        builder = layout_builder(body, bodies, aliases, set())
        if builder:
            fn["values"][prefix + BUILDER] = builder
            builders += 1
    # Every recipe function name load_recipe resolves, also those the dump could not build
    # (Kimi-K2's need remote code): name -> its layout builder.
    names = set(bodies["perf"]) | set(bodies["lib"]) | set(aliases["lib"])
    table["layout_builders"] = {n: b for n in sorted(names) if n.endswith("_config")
                                for b in [layout_builder(find_body(n, bodies, aliases), bodies, aliases, set())] if b}
    said = (" The model keys " + ", ".join(KEYS + [BUILDER]) + " were read from each recipe function's own body at"
            " the same commit (tools/acceptance/scan_mb_recipe_bodies.py: literal assignments only; the layout"
            " builder's function name, also from same-file helpers the body calls).")
    note = table["note"]
    cut = note.find(" The model keys ")
    table["note"] = (note[:cut] if cut >= 0 else note) + said
    with open(table_path, "w") as f:
        f.write(json.dumps(table, indent=0, separators=(",", ":")))  # the table's own order
    print(f"{added} values and {builders} layout builders added; {len(table['layout_builders'])} recipe functions"
          " with a layout builder", file=sys.stderr)


if __name__ == "__main__":
    main()
