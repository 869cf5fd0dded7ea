"""AutoModel's parallelisation of a Hugging Face decoder, reproduced with plain PyTorch.

Sources (NVIDIA-NeMo/Automodel @ 36044ad):
  components/distributed/fsdp2.py::FSDP2Manager.parallelize   (world 1: no wrapper)
  components/distributed/parallelizer.py::DefaultParallelizationStrategy.parallelize,
      apply_fsdp2_sharding_recursively (layers reshard after forward except the last; root
      module reshard_after_forward=False; MixedPrecisionPolicy bf16 / fp32 reduce / bf16 out)
  components/distributed/optimized_tp_plans.py::_parallelize_llama (TP plan, no SP)
  components/distributed/ddp.py::DDPManager.parallelize (submodule AC, DDP defaults)
  components/distributed/activation_checkpointing.py (whole-layer full AC, TorchTitan-style
      selective AC: every other mm saved, SDPA / compute-intensive ops saved)
"""

import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

aten = torch.ops.aten


def make_meshes(world):
    from torch.distributed.device_mesh import init_device_mesh

    meshes = {"dp": init_device_mesh("cuda", (world,), mesh_dim_names=("dp",))}
    if world % 2 == 0:
        meshes["dp_tp2"] = init_device_mesh("cuda", (world // 2, 2), mesh_dim_names=("dp", "tp"))
    return meshes


def _op(path):
    obj = torch.ops
    try:
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    except AttributeError:
        return None


_MM_OPS = {op for op in (_op("aten.mm.default"), _op("aten._grouped_mm.default")) if op is not None}


def _save_ops():
    ops = set()
    try:
        from torch._functorch.partitioners import get_default_op_list

        ops |= {op.default for op in get_default_op_list().compute_intensive_ops}
    except Exception:
        pass
    for p in ["aten.addmm.default", "aten.bmm.default", "aten._scaled_mm.default",
              "aten._scaled_dot_product_flash_attention.default",
              "aten._scaled_dot_product_efficient_attention.default",
              "aten._scaled_dot_product_cudnn_attention.default",
              "aten.topk.default", "aten.max.default",
              "_c10d_functional.reduce_scatter_tensor.default",
              "_c10d_functional.all_to_all_single.default"]:
        op = _op(p)
        if op is not None:
            ops.add(op)
    return frozenset(ops)


_SAVE_OPS = _save_ops()


def selective_context_fn():
    """activation_checkpointing.py::make_selective_checkpoint_context_fn."""
    counts = {False: 0, True: 0}

    def policy(ctx, func, *args, **kwargs):
        if func in _MM_OPS:
            counts[ctx.is_recompute] += 1
            return CheckpointPolicy.PREFER_RECOMPUTE if counts[ctx.is_recompute] % 2 == 0 else CheckpointPolicy.MUST_SAVE
        if func in _SAVE_OPS:
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def _wrap_layers(model, **kw):
    layers = model.model.layers
    for i in range(len(layers)):
        layers[i] = checkpoint_wrapper(layers[i], checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                       preserve_rng_state=True, **kw)


def _submodule_ac(model):
    """apply_submodule_checkpointing: mlp, self_attn and both norms wrapped separately."""
    for layer in model.model.layers:
        for attr in ("mlp", "self_attn", "input_layernorm", "post_attention_layernorm"):
            setattr(layer, attr, checkpoint_wrapper(getattr(layer, attr)))


def _apply_ac(model, case, kind):
    ac = case["ac"]
    if ac == "selective":
        _wrap_layers(model, context_fn=selective_context_fn)
    elif ac == "full":
        if kind == "plain":
            model.gradient_checkpointing_enable()  # HF-native path of FSDP2Manager (world 1)
        elif kind == "ddp":
            _submodule_ac(model)
        else:
            _wrap_layers(model)  # apply_full_layer_checkpointing_to_layers


def _tp_plan():
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    return {
        "model.embed_tokens": RowwiseParallel(input_layouts=Replicate()),
        "model.layers.*.self_attn.q_proj": ColwiseParallel(),
        "model.layers.*.self_attn.k_proj": ColwiseParallel(),
        "model.layers.*.self_attn.v_proj": ColwiseParallel(),
        "model.layers.*.self_attn.o_proj": RowwiseParallel(),
        "model.layers.*.mlp.up_proj": ColwiseParallel(),
        "model.layers.*.mlp.gate_proj": ColwiseParallel(),
        "model.layers.*.mlp.down_proj": RowwiseParallel(),
        "lm_head": ColwiseParallel(output_layouts=Shard(-1), use_local_output=False),
    }


def parallelize(model, case, world, device, meshes):
    """Returns (model, kind), kind in plain | fsdp2 | ddp."""
    if world == 1 and not case.get("wrap1"):
        _apply_ac(model, case, "plain")
        return model, "plain"
    if case["strategy"] == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        _apply_ac(model, case, "ddp")
        return DDP(model, device_ids=[device], broadcast_buffers=False, gradient_as_bucket_view=False), "ddp"

    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    tp = case["tp"]
    if tp > 1:
        from torch.distributed.tensor.parallel import parallelize_module

        mesh = meshes["dp_tp%d" % tp]
        tied = model.config.tie_word_embeddings
        parallelize_module(model, mesh["tp"], _tp_plan())
        if tied:
            model.lm_head.weight = model.model.embed_tokens.weight
        dp_mesh = mesh["dp"]
    else:
        dp_mesh = meshes["dp"]
    _apply_ac(model, case, "fsdp2")
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                              output_dtype=torch.bfloat16, cast_forward_inputs=True)
    layers = model.model.layers
    for i in range(len(layers)):
        fully_shard(layers[i], mesh=dp_mesh, mp_policy=mp, reshard_after_forward=i < len(layers) - 1)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=False)
    return model, "fsdp2"
