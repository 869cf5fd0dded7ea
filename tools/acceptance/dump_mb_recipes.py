#!/usr/bin/env python3
"""Dump what meshplan needs to know of Megatron-Bridge's recipe functions, from Megatron-Bridge's
own code, into recipes/megatron-bridge-recipe-functions.json.

For every recipe function meshplan launches by default (planner/frameworks/megatron_bridge/
launch.cpp MbRecipeName) and every pretraining and SFT benchmark recipe of megatron.bridge.perf_recipes of those
model families (what MB_RECIPE may name), it calls scripts/training/recipe_runner.py load_recipe
(the function run_recipe.py calls) and records:
  - where the TransformerConfig keys live in the override tree: "model" (a model provider, e.g.
    the Qwen3 recipes' to_megatron_provider()) or "model.transformer" (a GPTModelConfig built by
    AutoBridge...get_model_config(), as the Llama 3 recipes do);
  - the recipe's own value of every setting that interacts with the layout (KEYS below);
  - whether comm_overlap is None (a Hydra override of comm_overlap.X then needs ++);
  - the schema: for each config class reached (model / transformer, train, dataset, ddp,
    optimizer, dist, comm_overlap, checkpoint, mixed_precision), its dataclass fields and their
    types, so that a test without torch can check every key meshplan writes.

It runs inside the Megatron-Bridge acceptance harness (../shared/acceptance/mbridge_check: its
vendored snapshot, stubs and stand-ins), on a machine with torch:
    python3 tools/acceptance/dump_mb_recipes.py HARNESS_DIR OUT.json [--only PREFIX,...] [--merge OLD.json]
--only dumps just the recipe functions whose names start with one of the prefixes; --merge folds
an earlier dump of the same vendored snapshot into OUT.json (its recipes, errors and classes; the
new dump's entries win; a snapshot that differs is an error).
"""
import argparse, contextlib, dataclasses, importlib, json, os, sys, typing

KEYS = {
    "model": [
        "num_layers", "tensor_model_parallel_size", "pipeline_model_parallel_size",
        "virtual_pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size",
        "expert_tensor_parallel_size", "sequence_parallel", "pipeline_model_parallel_layout",
        "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
        "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage", "recompute_granularity",
        "recompute_method", "recompute_num_layers", "recompute_modules", "cuda_graph_impl", "cuda_graph_scope",
        "cuda_graph_warmup_steps", "enable_cuda_graph", "external_cuda_graph", "moe_token_dispatcher_type",
        "moe_flex_dispatcher_backend", "moe_enable_deepep", "moe_shared_expert_overlap",
        "overlap_moe_expert_parallel_comm", "delay_wgrad_compute", "mtp_num_layers", "seq_length", "fp8",
        "fp8_recipe", "fp8_param", "cp_comm_type", "moe_grouped_gemm", "moe_permute_fusion", "pipeline_dtype",
        "params_dtype", "bf16", "gradient_accumulation_fusion", "use_te_rng_tracker", "cpu_offloading",
        "cpu_offloading_num_layers", "cpu_offloading_activations", "cpu_offloading_weights",
        "fine_grained_activation_offloading", "offload_modules", "cross_entropy_loss_fusion",
        "cross_entropy_fusion_impl"],
    "train": ["global_batch_size", "micro_batch_size", "train_iters", "manual_gc"],
    "dataset": ["seq_length"],
    "ddp": ["use_distributed_optimizer", "use_megatron_fsdp", "overlap_grad_reduce", "overlap_param_gather",
            "bucket_size", "grad_reduce_in_fp32", "average_in_collective", "data_parallel_sharding_strategy"],
    "optimizer": ["use_distributed_optimizer", "optimizer", "lr", "bf16", "fp16", "use_precision_aware_optimizer",
                  "main_params_dtype", "main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype",
                  "store_param_remainders"],
    "dist": ["use_megatron_fsdp", "use_torch_fsdp2", "use_decentralized_pg"],
    "comm_overlap": ["tp_comm_overlap", "overlap_p2p_comm", "batch_p2p_comm", "overlap_grad_reduce",
                     "overlap_param_gather", "bucket_size", "align_param_gather", "defer_embedding_wgrad_compute",
                     "wgrad_deferral_limit", "overlap_moe_expert_parallel_comm", "delay_wgrad_compute"],
    "checkpoint": ["ckpt_format"],
    "mixed_precision": ["fp8", "fp8_recipe", "fp8_param", "bf16", "grad_reduce_in_fp32",
                        "num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"],
}
SECTIONS = list(KEYS)
# Kimi-K2's recipes load moonshotai/Kimi-K2-Instruct with trust_remote_code, which an offline
# harness cannot run: left out (meshplan's Kimi-K2 recipes are written with flat paths).
# Nemotron 3: nano / super / ultra only (nemotron_3_5_lightning is not a meshplan preset).
FAMILIES = ("llama3", "llama31", "qwen3", "deepseek_v3", "gpt_oss", "nemotron_3_nano", "nemotron_3_super",
            "nemotron_3_ultra")
DEFAULTS = ["llama3_8b_pretrain_config", "llama3_70b_pretrain_config", "llama31_8b_pretrain_config",
            "llama31_70b_pretrain_config", "llama31_405b_pretrain_config", "qwen3_8b_pretrain_config",
            "qwen3_30b_a3b_pretrain_config", "qwen3_235b_a22b_pretrain_config", "deepseek_v3_pretrain_config",
            "gpt_oss_20b_pretrain_config", "gpt_oss_120b_pretrain_config", "nemotron_3_nano_pretrain_config",
            "nemotron_3_super_pretrain_config", "nemotron_3_ultra_pretrain_config"]


def plain(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "name") and hasattr(v, "value") and type(v).__module__ != "builtins":  # enum
        return str(v.name)
    if isinstance(v, type):
        return f"<class {v.__name__}>"
    if callable(v):
        return f"<callable {getattr(v, '__name__', type(v).__name__)}>"
    return f"<{type(v).__name__}>"


def type_name(t):
    s = str(t) if not isinstance(t, type) else t.__name__
    return s.replace("typing.", "")


def schema(cls, classes):
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name not in classes:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # noqa: BLE001
            hints = {}
        classes[name] = {f.name: type_name(hints.get(f.name, f.type)) for f in dataclasses.fields(cls)}
    return name


def dump(cfg, classes):
    out = {"sections": {}, "values": {}}
    model = cfg.model
    inner = getattr(model, "__dict__", {}).get("transformer")
    nested = inner is not None and dataclasses.is_dataclass(inner)
    out["transformer_path"] = "model.transformer" if nested else "model"
    out["sections"]["model"] = schema(type(model), classes)
    if nested:
        out["sections"]["model.transformer"] = schema(type(inner), classes)
    for sec in SECTIONS:
        obj = getattr(cfg, sec, None)
        if sec == "model":
            for k in KEYS[sec]:
                src = inner if nested and hasattr(inner, k) else model
                if hasattr(src, k):
                    out["values"][f"{out['transformer_path'] if src is inner else 'model'}.{k}"] = plain(getattr(src, k))
            continue
        if obj is None:
            out["sections"][sec] = None
        elif isinstance(obj, str):
            out["sections"][sec] = "str"
            out["values"][sec] = obj
        elif dataclasses.is_dataclass(obj):
            out["sections"][sec] = schema(type(obj), classes)
            for k in KEYS[sec]:
                if hasattr(obj, k):
                    out["values"][f"{sec}.{k}"] = plain(getattr(obj, k))
        else:
            out["sections"][sec] = f"<{type(obj).__name__}>"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("harness")
    ap.add_argument("out")
    ap.add_argument("--only", default="", help="comma-separated name prefixes to dump")
    ap.add_argument("--merge", default="", help="an earlier dump of the same snapshot to fold in")
    args = ap.parse_args()
    harness, out_path = args.harness, args.out
    only = tuple(p for p in args.only.split(",") if p)
    sys.path.insert(0, harness)
    cr = importlib.import_module("check_recipe")
    cr.bootstrap(use_gpu=False)
    with contextlib.redirect_stdout(sys.stderr):
        mods = cr.import_bridge()
    cr.apply_standins(mods, "h100")
    import pkgutil

    perf = importlib.import_module("megatron.bridge.perf_recipes")
    names = list(DEFAULTS)
    for info in pkgutil.walk_packages(perf.__path__, perf.__name__ + "."):
        try:
            mod = importlib.import_module(info.name)
        except BaseException:  # noqa: BLE001
            continue
        for n in sorted(vars(mod)):
            if n.endswith("_config") and n.startswith(FAMILIES) and ("_pretrain_" in n or "_sft_" in n) and n not in names \
                    and callable(getattr(mod, n)) and getattr(getattr(mod, n), "__module__", "") == info.name:
                names.append(n)
    if only:
        names = [n for n in names if n.startswith(only)]
    classes, recipes, errors = {}, {}, {}
    # The CommOverlapConfig class, for recipes whose comm_overlap is None (meshplan force-adds it).
    schema(mods["comm_overlap"].CommOverlapConfig, classes)
    vendored = open(os.path.join(harness, "vendor", "VENDORED.txt")).read().splitlines()
    old = {}
    if args.merge:
        old = json.load(open(args.merge))
        if old.get("vendored") != vendored:
            sys.exit(f"{args.merge}: dumped from another snapshot ({old.get('vendored')}), not {vendored}")
        for k in ("recipes", "errors", "classes"):
            old.setdefault(k, {})
    for i, n in enumerate(names):
        try:
            with contextlib.redirect_stdout(sys.stderr):
                cfg = mods["recipe_runner"].load_recipe(n)
            recipes[n] = dump(cfg, classes)
        except BaseException as e:  # noqa: BLE001
            errors[n] = f"{type(e).__name__}: {e}"[:400]
        doc = {"source": "tools/acceptance/dump_mb_recipes.py on the vendored snapshot below",
               "vendored": vendored, "torch": mods["torch"].__version__, "complete": i + 1 == len(names),
               "defaults": DEFAULTS,
               "recipes": {**old.get("recipes", {}), **recipes},
               "errors": {k: v for k, v in {**old.get("errors", {}), **errors}.items() if k not in recipes},
               "classes": {**old.get("classes", {}), **classes}}
        for k in ("note", "layout_builders"):  # written by other tools: kept as they were
            if k in old:
                doc[k] = old[k]
        with open(out_path + ".tmp", "w") as f:  # after every recipe: a run stopped early keeps what it has
            json.dump(doc, f, indent=1, sort_keys=True)
        os.replace(out_path + ".tmp", out_path)
    print(f"{len(recipes)} recipe functions dumped, {len(errors)} failed, {len(classes)} classes", file=sys.stderr)


if __name__ == "__main__":
    main()
