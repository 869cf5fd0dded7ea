#!/usr/bin/env python3
"""Dump the schema of the AutoModel recipe keys meshplan writes (`distributed:` and
`step_scheduler:`), from AutoModel's own code, into recipes/automodel-schema.json.

Read from the vendored snapshot of the AutoModel acceptance harness
(../shared/acceptance/automodel_check, vendor/ assembled by its extract.sh), on a machine
with torch:
  - distributed: the keys recipes/_dist_utils.py parse_distributed_section pops itself
    (`strategy`, the parallelism sizes of _PARALLELISM_DEFAULTS, `pipeline`, `moe`,
    `activation_checkpointing`), then the fields of the strategy's config class
    (components/distributed/config.py _STRATEGY_MAP: FSDP2Config, MegatronFSDPConfig,
    DDPConfig), which receives every other key and refuses unknown ones (_resolve_strategy_config);
    `pipeline:` is PipelineConfig(**dict) (components/distributed/pipelining/config.py), `moe:`
    MoEParallelizerConfig(**dict);
  - step_scheduler: the parameters of components/training/step_scheduler.py StepScheduler.__init__
    (the recipe passes the section as keyword arguments; dp_size and dataloader come from the
    recipe itself).

    python3 tools/acceptance/dump_automodel_schema.py HARNESS_DIR OUT.json
"""
import dataclasses, importlib, inspect, json, os, sys, typing


def fields_of(cls):
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001
        hints = {}
    out = {}
    for f in dataclasses.fields(cls):
        t = hints.get(f.name, f.type)
        out[f.name] = (t.__name__ if isinstance(t, type) else str(t)).replace("typing.", "")
    return out


def main():
    harness, out_path = sys.argv[1], sys.argv[2]
    vendor = os.path.join(harness, "vendor")
    sys.path.insert(0, vendor)
    du = importlib.import_module("nemo_automodel.recipes._dist_utils")
    cfg = importlib.import_module("nemo_automodel.components.distributed.config")
    pc = importlib.import_module("nemo_automodel.components.distributed.pipelining.config")
    ss = importlib.import_module("nemo_automodel.components.training.step_scheduler")
    strategies = {name: fields_of(cls) for name, cls in sorted(cfg._STRATEGY_MAP.items())}
    params = inspect.signature(ss.StepScheduler.__init__).parameters
    doc = {
        "source": "tools/acceptance/dump_automodel_schema.py on the vendored snapshot below",
        "automodel_commit": open(os.path.join(vendor, "COMMIT")).read().strip(),
        "distributed": {
            "own_keys": ["strategy", "pipeline", "moe", "activation_checkpointing",
                         *sorted(du._PARALLELISM_DEFAULTS)],
            "strategies": strategies,
            "pipeline": fields_of(pc.PipelineConfig),
            "moe": fields_of(cfg.MoEParallelizerConfig),
        },
        "step_scheduler": {n: str(p.annotation).replace("typing.", "") for n, p in params.items()
                           if n not in ("self", "dp_size", "dataloader", "process_group")},
    }
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    print(f"strategies {sorted(strategies)}; {len(doc['step_scheduler'])} step_scheduler keys", file=sys.stderr)


if __name__ == "__main__":
    main()
