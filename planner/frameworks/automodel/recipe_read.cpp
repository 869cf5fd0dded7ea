// Reading an AutoModel recipe back into a Layout.
// Source: nemo_automodel/recipes/_dist_utils.py::parse_distributed_section and
// components/distributed/config.py (strategy dataclass fields), main / v0.5.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "data/yaml_util.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/key_places.hpp"

namespace meshplan {
namespace {

using yamlutil::MapReader;

// AutoModel's config loader turns a quoted "4" into the integer 4 (and "4.0" into a float, which
// is refused): components/config/loader.py, translate_value. Every reader of the recipe reads so.
constexpr yamlutil::QuotedScalars kQuoted = yamlutil::QuotedScalars::kRead;

// Keys of each strategy dataclass that meshplan does not model but accepts as written.
constexpr std::array kFsdp2Fields = {"tp_plan", "patch_is_packed_sequence", "mp_policy", "offload_policy",
                                     "autocast_dtype", "activation_checkpointing_scope", "defer_fsdp_grad_sync",
                                     "reshard_after_forward", "enable_async_tensor_parallel", "enable_compile",
                                     "enable_fsdp2_prefetch", "fsdp2_backward_prefetch_depth",
                                     "fsdp2_forward_prefetch_depth", "multimodal"};
constexpr std::array kMegatronFsdpFields = {
    "megatron_fsdp_unit_modules", "zero_dp_strategy", "init_fsdp_with_meta_device", "grad_reduce_in_fp32",
    "preserve_fp32_weights", "overlap_grad_reduce", "overlap_param_gather", "check_for_nan_in_grad",
    "report_nan_in_param_grad", "average_in_collective", "disable_bucketing", "calculate_per_token_loss",
    "keep_fp8_transpose_cache", "nccl_ub", "fsdp_double_buffer"};
constexpr std::array kDdpFields = {"activation_checkpointing_scope", "broadcast_buffers", "find_unused_parameters",
                                   "static_graph", "bucket_cap_mb", "gradient_as_bucket_view", "autocast_dtype"};

int64_t SizeKey(MapReader& r, const char* key) {
  if (!r.HasValue(key)) return 1;
  YAML::Node n = r.Get(key);
  if (n.IsScalar() && (n.Scalar() == "none" || n.Scalar() == "None")) return 1;
  return r.Int(key, 1, 1LL << 20);
}

// A boolean setting meshplan does not price, as written: "true" / "false" for a boolean (YAML's
// true / false / yes / no / on / off in any case, quoted too, as AutoModel's loader reads them),
// else the text found; "" when absent or null. Not refused: AutoModel decides what it takes.
std::string Written(MapReader& r, const char* key) {
  if (!r.HasValue(key)) return "";
  const YAML::Node n = r.Get(key);
  bool b = false;
  if (n.IsScalar() && YAML::convert<bool>::decode(n, b)) return b ? "true" : "false";
  return n.IsScalar() ? n.Scalar() : yamlutil::Shown(n);
}

Recompute ParseCheckpointing(MapReader& r) {
  if (!r.HasValue("activation_checkpointing")) return Recompute::kNone;
  std::string v = r.Str("activation_checkpointing");
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (v == "true" || v == "on" || v == "full" || v == "enabled" || v == "yes") return Recompute::kFull;
  if (v == "selective") return Recompute::kSelective;
  if (v == "false" || v == "off" || v == "none" || v == "disabled" || v == "no") return Recompute::kNone;
  r.Fail("activation_checkpointing", "must be a boolean or one of 'full', 'selective', 'false'; found '" + v + "'");
}

void ReadPipeline(MapReader& d, Layout& l) {
  if (!d.HasValue("pipeline")) {
    if (l.pp > 1) {
      d.Fail("pipeline", "pp_size=" + std::to_string(l.pp) +
                             " (> 1) enables pipeline parallelism but no distributed.pipeline block was provided; "
                             "an empty `pipeline: {}` selects defaults");
    }
    return;
  }
  YAML::Node node = d.Get("pipeline");
  if (!node.IsMap()) d.Fail("pipeline", "expected a map, found " + yamlutil::Shown(node));
  MapReader p(node, d.filename(), "distributed.pipeline", kQuoted);
  if (l.pp > 1) {
    std::string sched = p.Str("pp_schedule", std::string("1f1b"));
    std::string lower = sched;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (lower == "1f1b") {
      l.pp_schedule = PpSchedule::k1F1B;
    } else if (lower == "interleaved1f1b") {
      l.pp_schedule = PpSchedule::kInterleaved1F1B;
    } else {
      p.Fail("pp_schedule", "meshplan models 1f1b and interleaved1f1b; found '" + sched + "'");
    }
    l.pp_microbatch_size = p.Int("pp_microbatch_size", 1, 1LL << 20, 1);
    l.layers_per_stage = p.HasValue("layers_per_stage") ? p.Int("layers_per_stage", 1, 1LL << 20) : 0;
    std::string round = p.Str("round_virtual_stages_to_pp_multiple", std::string("null"));
    if (round == "up") {
      l.stage_rounding = StageRounding::kUp;
    } else if (round == "down") {
      l.stage_rounding = StageRounding::kDown;
    } else if (round != "null") {
      p.Fail("round_virtual_stages_to_pp_multiple", "expected up, down or null; found '" + round + "'");
    }
  }
  l.am.scale_grads_in_schedule = Written(p, "scale_grads_in_schedule");
  // A pipeline block with pp_size 1 is ignored by AutoModel (with a warning); other
  // PipelineConfig fields are accepted as written.
  p.Ignore({"pp_schedule", "pp_microbatch_size", "layers_per_stage", "round_virtual_stages_to_pp_multiple",
            "pp_schedule_csv", "pp_batch_size", "module_fqns_per_model_part", "patch_inner_model",
            "patch_causal_lm_model", "patch_stage_backward_maybe_with_nosync", "dtype", "scale_grads_in_schedule",
            "loss_fn", "pp_seq_len"});
  p.RejectUnknown();
}

// BackendConfig's fields (components/models/common/utils.py @36044ad, a kw_only dataclass:
// BackendConfig(**backend) raises TypeError for any other keyword) that meshplan does not price.
constexpr std::array kBackendFields = {"_target_", "attn", "linear", "rms_norm", "rope", "rope_fusion", "experts",
                                       "dispatcher_num_sms", "dispatcher_share_token_dispatcher",
                                       "dispatcher_async_dispatch", "mok", "enable_deepep",
                                       "enable_hf_state_dict_adapter", "enable_fsdp_optimizations", "te_fp8",
                                       "gate_precision", "compile_attn", "cuda_graph"};

// model.backend (BackendConfig @36044ad), the MoE settings the cost model prices: dispatcher
// (MoE.__init__ in components/moe/layers.py picks GroupedExperts for torch, GroupedExpertsDeepEP
// for deepep / hybridep / uccl_ep, GroupedExpertsMoK for mok), fake_balanced_gate and
// fake_gate_noise (FakeBalancedGate instead of the learned Gate). Every other field is accepted
// as written; an unknown one is refused, as BackendConfig refuses it. No backend: BackendConfig's
// defaults (deepep with DeepEP installed, the learned gate).
void ReadBackend(MapReader& top, Layout& l, ParsedRecipe& out) {
  if (!top.HasValue("model") || !top.Get("model").IsMap()) return;
  MapReader model(top.Get("model"), top.filename(), "model", kQuoted);
  if (!model.HasValue("backend")) return;
  if (!model.Get("backend").IsMap()) model.Fail("backend", "expected a map of BackendConfig fields, found " + yamlutil::Shown(model.Get("backend")));
  MapReader b(model.Get("backend"), top.filename(), "model.backend", kQuoted);
  AmMoeBackend& mb = l.am_backend;
  if (b.HasValue("dispatcher")) {
    const std::string d = b.Str("dispatcher");
    if (d == "torch") {
      mb.dispatcher = AmDispatcher::kTorch;
    } else if (d == "deepep") {
      mb.dispatcher = AmDispatcher::kDeepEP;
    } else if (d == "hybridep") {
      mb.dispatcher = AmDispatcher::kHybridEP;
    } else if (d == "uccl_ep" || d == "mok") {
      mb.dispatcher = d == "mok" ? AmDispatcher::kMok : AmDispatcher::kUcclEp;
      out.defaults_used.push_back("model.backend.dispatcher " + d +
                                  " is priced with DeepEP's published bandwidths (meshplan has no published figures of " + d + ")");
    } else {
      b.Fail("dispatcher", "expected one of torch, deepep, hybridep, uccl_ep, mok (BackendConfig.dispatcher); found '" + d + "'");
    }
  }
  // experts te / gmm need a flex dispatcher: with torch AutoModel keeps torch and switches the
  // experts to torch_mm (BackendConfig.__post_init__), which the pricing does not tell apart.
  mb.fake_balanced_gate = b.Bool("fake_balanced_gate", false);
  if (b.HasValue("attn")) mb.attn_tilelang = b.Str("attn") == "tilelang";
  mb.fake_gate_noise = b.Num("fake_gate_noise", 0.0, 1.0, 0.0);
  for (const char* k : kBackendFields) b.Ignore({k});
  b.RejectUnknown();
}

// The keys this reader reads, under the section each belongs to. AutoModel reads them nowhere
// else: parse_distributed_section and the strategy and pipeline dataclasses refuse unknown
// options, StepSchedulerConfig(**step_scheduler) raises for an unknown keyword, and a top-level
// key is read by nobody. One exception: step_scheduler.dp_size is a runtime argument AutoModel
// expects there (recipes/_typed_config.py _STEP_SCHEDULER_RUNTIME_KEYS: dropped since 0.5; 0.4
// passes it to StepScheduler), so it is accepted there.
const std::vector<recipe::KeyPlace>& KeyPlaces() {
  static const std::vector<recipe::KeyPlace> places = [] {
    std::vector<recipe::KeyPlace> p;
    for (const char* k : {"strategy", "tp_size", "pp_size", "cp_size", "ep_size", "dp_replicate_size",
                          "sequence_parallel", "activation_checkpointing", "pipeline"}) {
      p.push_back({k, {"distributed"}});
    }
    p.push_back({"dp_size", {"distributed"}, {"step_scheduler"}});
    for (const char* k : {"pp_schedule", "pp_microbatch_size", "layers_per_stage", "round_virtual_stages_to_pp_multiple"}) {
      p.push_back({k, {"distributed.pipeline"}});
    }
    for (const char* k : {"global_batch_size", "local_batch_size"}) p.push_back({k, {"step_scheduler"}});
    p.push_back({"seq_len", {"dataset"}});
    return p;
  }();
  return places;
}

}  // namespace

ParsedRecipe ParseAutoModelRecipe(std::string_view text, const std::string& filename, int64_t num_gpus) {
  YAML::Node root = yamlutil::ParseMap(text, filename);
  // Before anything is read: a key in the wrong section would otherwise read as its default.
  recipe::RefuseMisplacedKeys(root, {"", "distributed", "distributed.pipeline", "step_scheduler"}, KeyPlaces(), filename);
  MapReader top(root, filename, "", kQuoted);
  if (!top.HasValue("distributed")) top.FailMissing("distributed", "expected the AutoModel distributed: section");
  if (!top.Get("distributed").IsMap()) top.Fail("distributed", "expected a map, found " + yamlutil::Shown(top.Get("distributed")));
  MapReader d(top.Get("distributed"), filename, "distributed", kQuoted);
  ParsedRecipe out;
  Layout& l = out.layout;
  // Megatron-Bridge override sections in an AutoModel recipe: AutoModel ignores them, and the
  // layout they describe is not the one checked.
  std::string mb_sections;
  for (const char* key : {"train", "ddp", "comm_overlap", "mixed_precision", "dist"}) {
    if (top.Has(key)) mb_sections += std::string(mb_sections.empty() ? "" : ", ") + key;
  }
  if (!mb_sections.empty()) {
    out.overridden.push_back("the recipe also has Megatron-Bridge sections (" + mb_sections +
                             "), which AutoModel ignores; it is checked as the AutoModel recipe its distributed: "
                             "section makes it (a Megatron-Bridge override file has no distributed: or step_scheduler:)");
  }

  // Legacy recipes name the manager class (`_target_: ...DDPManager`) instead of `strategy:`;
  // parse_distributed_section ignores _target_, so fsdp2 applies: say so.
  if (!d.HasValue("strategy") && d.HasValue("_target_") && d.Get("_target_").IsScalar()) {
    out.defaults_used.push_back("distributed.strategy = fsdp2 (AutoModel ignores distributed._target_ '" +
                                d.Get("_target_").Scalar() + "'; set strategy: to choose fsdp2, megatron_fsdp or ddp)");
  }
  std::string strategy = d.Str("strategy", std::string("fsdp2"));
  std::transform(strategy.begin(), strategy.end(), strategy.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (strategy == "fsdp2") {
    l.strategy = Strategy::kFsdp2;
  } else if (strategy == "megatron_fsdp" || strategy == "megatron-fsdp" || strategy == "mfsdp") {
    l.strategy = Strategy::kMegatronFsdp;
  } else if (strategy == "ddp") {
    l.strategy = Strategy::kDdp;
  } else {
    d.Fail("strategy", "Unknown strategy: " + strategy + ". Valid strategies: fsdp2, megatron_fsdp, ddp");
  }
  l.tp = SizeKey(d, "tp_size");
  l.pp = SizeKey(d, "pp_size");
  l.cp = SizeKey(d, "cp_size");
  l.ep = SizeKey(d, "ep_size");
  l.dp_replicate = SizeKey(d, "dp_replicate_size");
  const int64_t model_ranks = l.tp * l.cp * l.pp;  // each <= 2^20: no overflow
  if (model_ranks > (int64_t{1} << 20)) {
    d.Fail("tp_size", "expected tp_size * cp_size * pp_size at most 1048576 (the largest world size), found " +
                          std::to_string(l.tp) + " * " + std::to_string(l.cp) + " * " + std::to_string(l.pp) + " = " +
                          std::to_string(model_ranks));
  }
  const bool dp_given = d.HasValue("dp_size") && !(d.Get("dp_size").IsScalar() &&
                                                   (d.Get("dp_size").Scalar() == "none" || d.Get("dp_size").Scalar() == "None"));
  // Not dividing: keep dp >= 1 so that every rule can still be evaluated and reported
  // (world_divisible_by_model_parallel names the problem).
  l.dp = dp_given ? d.Int("dp_size", 1, 1LL << 20) : std::max<int64_t>(1, num_gpus / model_ranks);
  l.am.dp_size = dp_given;
  l.recompute = ParseCheckpointing(d);
  if (d.Has("sequence_parallel")) {
    if (l.strategy != Strategy::kFsdp2) {
      throw InputError(d.Loc("sequence_parallel"), "distributed.sequence_parallel",
                       std::string("Unknown options for strategy '") + StrategyName(l.strategy) +
                           "': ['sequence_parallel']");
    }
    l.sequence_parallel = d.Bool("sequence_parallel", false);
    l.am.sequence_parallel = true;
  }
  ReadPipeline(d, l);
  ReadBackend(top, l, out);
  // loss_fn: MaskedCrossEntropy(fp32_upcast=...) (components/loss/masked_ce.py; the default
  // loss), FusedLinearCrossEntropy (components/loss/linear_ce.py: no logits kept). Another
  // loss class is priced as the default one.
  if (top.HasValue("loss_fn") && top.Get("loss_fn").IsMap()) {
    MapReader loss(top.Get("loss_fn"), filename, "loss_fn", kQuoted);
    const std::string target = loss.HasValue("_target_") && loss.Get("_target_").IsScalar() ? loss.Get("_target_").Scalar() : "";
    if (target.empty() || target.ends_with("MaskedCrossEntropy")) l.loss_fp32_upcast = loss.Bool("fp32_upcast", true);
    l.loss_fused_linear = target.ends_with("FusedLinearCrossEntropy");
  }
  // Settings check's nearest layouts write (nearest.cpp names them when they write another value).
  l.am.from_recipe = true;
  if (l.strategy == Strategy::kFsdp2) l.am.defer_fsdp_grad_sync = Written(d, "defer_fsdp_grad_sync");
  if (d.HasValue("moe") && d.Get("moe").IsMap()) {
    MapReader moe(d.Get("moe"), d.filename(), "distributed.moe", kQuoted);
    l.am.moe_reshard_after_forward = Written(moe, "reshard_after_forward");
  }
  d.Ignore({"moe", "_target_", "_recursive_", "_convert_"});
  if (l.strategy == Strategy::kFsdp2) {
    for (const char* k : kFsdp2Fields) d.Ignore({k});
  } else if (l.strategy == Strategy::kMegatronFsdp) {
    // MegatronFSDPConfig.zero_dp_strategy (components/distributed/config.py @36044ad, default 3),
    // passed to Megatron-Core's fully_shard, which takes 0..3 (megatron_fsdp/fully_shard.py).
    if (d.HasValue("zero_dp_strategy")) l.am.zero_dp_strategy = int(d.Int("zero_dp_strategy", 0, 3));
    for (const char* k : kMegatronFsdpFields) d.Ignore({k});
  } else {
    for (const char* k : kDdpFields) d.Ignore({k});
  }
  d.RejectUnknown();

  if (!top.HasValue("step_scheduler")) top.FailMissing("step_scheduler", "expected global_batch_size and local_batch_size");
  if (!top.Get("step_scheduler").IsMap()) {  // fuzz finding
    top.Fail("step_scheduler", "expected a map, found " + yamlutil::Shown(top.Get("step_scheduler")));
  }
  MapReader s(top.Get("step_scheduler"), filename, "step_scheduler", kQuoted);
  out.global_batch = s.Int("global_batch_size", 1, 1LL << 30);
  l.local_batch_size = s.Int("local_batch_size", 1, 1LL << 30);
  // The full recipe's dataset.seq_len and fp8.enabled (TorchAO float8), when present.
  if (top.HasValue("dataset") && top.Get("dataset").IsMap()) {
    MapReader ds(top.Get("dataset"), filename, "dataset", kQuoted);
    if (ds.HasValue("seq_len")) out.seq_len = ds.Int("seq_len", 1, 1LL << 24);
  }
  if (top.HasValue("fp8") && top.Get("fp8").IsMap()) {
    MapReader f(top.Get("fp8"), filename, "fp8", kQuoted);
    if (f.HasValue("enabled")) {
      out.precision = f.Bool("enabled") ? Precision::kFp8 : Precision::kBf16;
      out.precision_set = true;
    }
  }
  return out;
}

}  // namespace meshplan
