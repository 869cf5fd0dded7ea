// Output of a plan: AutoModel recipes, the ranked table, JSON.
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rule_domains.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "recipe/format.hpp"

namespace meshplan {

using recipe::Fixed;
using recipe::GiB;

const char* AutoModelCheckpointingValue(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "false";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "true";
  }
  return "false";
}

std::string AutoModelRecipeYaml(const Candidate& c, const PlanRequest& req, int rank) {
  const Layout& l = c.layout;
  const Cost& k = c.cost;
  const MemoryBreakdown& m = k.memory;
  const TimeBreakdown& t = k.time;
  std::ostringstream y;
  y << "# meshplan recipe " << rank << ": " << recipe::OneLine(req.model.name) << " on " << req.setup.num_gpus
    << " GPUs of " << recipe::OneLine(req.system.name) << " (" << recipe::OneLine(req.system.gpu.display_name)
    << "), seq_len " << req.setup.seq_len
    << ", global batch " << req.setup.global_batch << ", " << PrecisionName(req.setup.precision) << "\n";
  y << "# layout: " << Describe(l) << "\n";
  y << "# batch: " << l.MicroBatchesPerStep(req.setup) << " micro-batches of " << l.micro_batch()
    << " per optimizer step per pipeline (" << l.GradAccumSteps(req.setup) << " gradient-accumulation steps x "
    << l.pp_microbatches() << " per schedule call), dp " << l.dp << "\n";
  y << "# predicted memory per GPU: " << Fixed(GiB(m.Total()), 1) << " GiB of " << Fixed(GiB(k.capacity_bytes), 1)
    << " GiB usable (" << Fixed(GiB(k.capacity_bytes - m.Total()), 1) << " GiB headroom left)\n";
  y << "#   weights " << Fixed(GiB(m.weights), 2) << ", gradients " << Fixed(GiB(m.gradients), 2) << ", optimizer "
    << Fixed(GiB(m.optimizer), 2) << ", activations " << Fixed(GiB(m.activations), 2) << ", logits "
    << Fixed(GiB(m.logits), 2) << ", buffers " << Fixed(GiB(m.buffers), 2) << ", workspace "
    << Fixed(GiB(m.workspace), 2) << ", overhead " << Fixed(GiB(m.overhead), 2) << " GiB\n";
  y << "# predicted step: " << Fixed(k.step_seconds, 3) << " s, " << Fixed(k.tokens_per_s_per_gpu, 0)
    << " tokens/s/GPU, " << Fixed(k.model_tflops_per_gpu, 0) << " model TFLOP/s/GPU, "
    << recipe::MfuText(k, req.system.gpu, req.setup.precision) << "\n";
  y << "#   compute " << Fixed(t.compute, 3) << " s, exposed comm: tp " << Fixed(t.tp_comm, 3) << ", cp "
    << Fixed(t.cp_comm, 3) << ", dp " << Fixed(t.dp_comm, 3) << ", ep " << Fixed(t.ep_comm, 3) << ", pp "
    << Fixed(t.pp_comm, 3) << "; bubble " << Fixed(t.bubble, 3) << " s; optimizer " << Fixed(t.optimizer, 3)
    << " s; host-bound " << Fixed(t.host, 3) << " s\n";
  y << recipe::kAutoModelMaxStepsNote;
  // DeepSeek-V4's hash-routed layers (the first num_hash_layers) pick their experts from the token
  // ids, which AutoModel hands to the first pipeline stage only (components/models/deepseek_v4/
  // model.py): one on a later stage routes by score top-k instead, with no error. Its stages hold
  // floor(L/V) layers, the first L mod V one more (pipelining/functional.py
  // generate_hf_model_fqn_per_model_part).
  if (req.model.architecture == Architecture::kDeepseekV4 && l.pp > 1 && req.model.dsv4.num_hash_layers > 0) {
    const int64_t stages = std::max<int64_t>(1, SplitStages(req.model.num_layers, l).num_stages);
    const int64_t first = req.model.num_layers / stages + (req.model.num_layers % stages > 0 ? 1 : 0);
    if (first < req.model.dsv4.num_hash_layers) {
      y << "# note: the first pipeline stage holds " << first << " of the " << req.model.dsv4.num_hash_layers
        << " hash-routed layers; AutoModel gives the token ids to that stage only, so the other "
        << req.model.dsv4.num_hash_layers - first << " route by score top-k instead (no error; predictions assume hash routing)\n";
    }
  }
  y << "step_scheduler:\n";
  y << "  global_batch_size: " << req.setup.global_batch << "\n";
  y << "  local_batch_size: " << l.local_batch_size << "\n";
  y << "distributed:\n";
  y << "  strategy: " << StrategyName(l.strategy) << "\n";
  y << "  dp_size: null  # inferred: " << l.dp << "\n";
  if (l.dp_replicate > 1) y << "  dp_replicate_size: " << l.dp_replicate << "\n";
  y << "  tp_size: " << l.tp << "\n";
  y << "  cp_size: " << l.cp << "\n";
  y << "  pp_size: " << l.pp << "\n";
  y << "  ep_size: " << l.ep << "\n";
  if (l.strategy == Strategy::kFsdp2) {
    y << "  sequence_parallel: " << (l.sequence_parallel ? "true" : "false") << "\n";
    // Gradient accumulation with the default deferred reduce-scatter keeps unsharded
    // gradients across micro-batches (Automodel issue #3960); the cost model assumes it off.
    if (l.GradAccumSteps(req.setup) > 1) y << "  defer_fsdp_grad_sync: false\n";
  }
  y << "  activation_checkpointing: " << AutoModelCheckpointingValue(l.recompute) << "\n";
  if (l.pp > 1) {
    y << "  pipeline:\n";
    y << "    pp_schedule: " << PpScheduleName(l.pp_schedule) << "\n";
    y << "    pp_microbatch_size: " << l.pp_microbatch_size << "\n";
    if (l.layers_per_stage > 0) {
      y << "    layers_per_stage: " << l.layers_per_stage << "\n";
    } else {
      y << "    layers_per_stage: null\n";
    }
    if (l.stage_rounding != StageRounding::kNone) {
      y << "    round_virtual_stages_to_pp_multiple: " << StageRoundingName(l.stage_rounding) << "\n";
    }
    y << "    scale_grads_in_schedule: false\n";
  }
  if (l.ep > 1) {
    // MoEParallelizerConfig (components/moe/config): the default keeps gathered experts
    // resident when ep_shard > 1; the cost model prices exactly that default.
    y << "  moe:\n";
    y << "    reshard_after_forward: false\n";
  }
  if (req.setup.precision != Precision::kBf16) {
    // --precision fp8: AutoModel's TorchAO float8 training (components/quantization/fp8.py
    // FP8Config, read by the recipe from the top-level `fp8:` section; docs/guides/
    // fp8_training.md: tensorwise scaling, lm_head kept in BF16; torch.compile is what makes
    // it fast there). The cost model prices the GEMMs at the FP8 rate.
    y << "fp8:\n";
    y << "  enabled: true\n";
    y << "  recipe_name: tensorwise\n";
    y << "  filter_fqns: [lm_head]\n";
  }
  // The planned sequence length, under the key AutoModel itself reads for it: dataset.seq_len
  // (MockIterableDataset's argument; PipelineConfig.pp_seq_len is inferred from it when
  // packed_sequence.packed_sequence_size is unset, automodel.md 1.3). `meshplan check` reads it back.
  y << "dataset:  # merge into your dataset section (seq_len is what MockIterableDataset and pp_seq_len read)\n";
  y << "  seq_len: " << req.setup.seq_len << "\n";
  // DeepSeek-V4: backend.attn tilelang (AutoModel's deepseek_v4 recipes; the planner prices it).
  const bool tilelang = l.am_backend.attn_tilelang && req.model.architecture == Architecture::kDeepseekV4;
  if (l.ep > 1 && l.am_backend.dispatcher == AmDispatcher::kHybridEP) {
    // Automodel PR #2630: EP across nodes needs the HybridEP dispatcher (DeepEP's internode
    // dispatch times out, issues #2327, #3906); the planner prices it so (DefaultBackend). A real
    // key, since `check` reads it back (absent, BackendConfig defaults to deepep where installed), written after
    // the dataset section (AutoModelFullRecipeYaml writes its own model section).
    // BackendConfig.dispatcher accepts "hybridep" (components/models/common/utils.py @36044ad),
    // which runs MoEFlexTokenDispatcher's _HybridEPManager (components/moe/megatron/
    // token_dispatcher.py) and needs DeepEP's hybrid-ep branch installed (deep_ep.HybridEPBuffer,
    // else ImportError).
    // Inside a node it is written where DeepEP has no kernel configuration for ep_size
    // (domain::DeepEpRanksSupported; automodel::DefaultBackend).
    if (l.ep > req.system.gpus_per_node) {
      y << "model:  # merge into your model section: EP spans " << (l.ep + req.system.gpus_per_node - 1) / req.system.gpus_per_node
        << " nodes (deepep, the default, is for ep_size <= GPUs per node); needs DeepEP's hybrid-ep branch installed\n";
    } else if (!domain::DeepEpRanksSupported(l.ep)) {
      y << "model:  # merge into your model section: deepep, the default, has no kernel configuration for ep_size " << l.ep
        << " (DeepEP Buffer.get_dispatch_config); needs DeepEP's hybrid-ep branch installed\n";
    } else {
      y << "model:  # merge into your model section: the dispatcher this layout is priced with (absent, deepep); needs "
           "DeepEP's hybrid-ep branch installed\n";
    }
    y << "  backend:\n";
    y << "    dispatcher: hybridep\n";
    if (tilelang) y << "    attn: tilelang\n";
  } else if (l.ep > 1 && req.model.is_moe()) {
    // The dispatcher this layout is priced with, written: absent, BackendConfig takes deepep only
    // where deep_ep is installed (else uccl_ep or torch: components/models/common/utils.py
    // @36044ad), so the recipe would run a dispatcher it was not priced with. torch
    // (GroupedExperts' all-gather and all-reduce) on ROCm, where DeepEP and HybridEP do not run
    // (automodel::DefaultBackend), or where asked for.
    const AmDispatcher d = l.am_backend.dispatcher;
    y << "model:  # merge into your model section: the dispatcher this layout is priced with"
      << (d == AmDispatcher::kTorch && req.system.gpu.rocm ? " (DeepEP and HybridEP are CUDA libraries; this GPU runs ROCm)"
          : d == AmDispatcher::kDeepEP                     ? " (needs DeepEP installed)"
                                                           : "")
      << "\n";
    y << "  backend:\n";
    y << "    dispatcher: " << AmDispatcherName(d) << "\n";
    if (tilelang) y << "    attn: tilelang\n";
  } else if (tilelang) {
    y << "model:  # merge into your model section: DeepSeek-V4's TileLang sparse attention, indexer and Sinkhorn "
         "kernels, which this layout is priced with (and its CP needs)\n";
    y << "  backend:\n";
    y << "    attn: tilelang\n";
  }
  return y.str();
}

std::string RecipeYaml(const Candidate& c, const PlanRequest& req, int rank) {
  const std::string w = GenericModelWarning(req.model);
  return (w.empty() ? "" : "# warning: " + recipe::OneLine(w) + "\n") + FrameworkOf(req.framework).recipe_yaml(c, req, rank);
}

std::string RecipesYaml(const PlanResult& result, const PlanRequest& req) {
  std::string out;
  for (size_t i = 0; i < result.top.size(); ++i) {
    if (i > 0) out += "---\n";
    out += RecipeYaml(result.top[i], req, static_cast<int>(i + 1));
  }
  return out;
}

namespace {

// Terminal columns of a UTF-8 cell (the band's "±" is two bytes, one column).
size_t Columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// "±7%": a relative band as the table prints it.
std::string BandCell(double band) { return "\u00b1" + Fixed(100 * band, 0) + "%"; }

// The runtime whose measured errors give the bands of `result`'s layouts.
ErrorKind KindOf(const PlanResult& result, const PlanRequest& req) {
  const CostRuntime runtime = result.top.empty()
                                  ? CostRuntime::kPyTorchEager
                                  : ToCostView(result.top.front().layout, req.model, req.setup).runtime;
  return ErrorKindOf(runtime, req.model, req.system, req.setup);
}

}  // namespace

std::string RankTable(const PlanResult& result, const PlanRequest& req) {
  // Cells first, then each column as wide as its widest cell (at least the usual width), so
  // that long schedules or huge values do not shift the columns after them.
  struct Column {
    const char* head;
    size_t width;
    bool left;
  };
  // MFU% against the BF16 dense peak; an FP8 or FP4 plan adds its own precision's (MFU8%, MFU4%).
  const Precision own_peak = PeakPrecision(req.system.gpu, req.setup.precision);
  const bool own_column = own_peak != Precision::kBf16;
  std::vector<Column> cols = {
      {"rank", 4, true},      {"strategy", 13, true}, {"tp", 4, false},        {"pp", 4, false},
      {"cp", 4, false},       {"ep", 4, false},       {"dp", 5, false},        {"rep", 4, false},
      {"mbs", 4, false},      {"lbs", 4, false},      {"mb/step", 7, false},   {"schedule", 18, true},
      {"recompute", 12, true}, {"GiB/GPU", 7, false}, {"headroom", 8, false},  {"oom%", 5, false},
      {"step_s", 9, false},   {"band", 5, false},     {"tok/s/GPU", 10, false}, {"TFLOP/s", 7, false},
      {"MFU%", 6, false}};
  if (own_column) cols.push_back({recipe::OwnPeakMfuHead(own_peak), 6, false});
  std::vector<std::vector<std::string>> rows;
  bool any_tie = false;
  for (size_t i = 0; i < result.top.size(); ++i) {
    const Candidate& c = result.top[i];
    const Layout& l = c.layout;
    const std::string sched = FrameworkOf(l).schedule_label(l, req.model);
    std::string rc = RecomputeLabel(l);
    if (l.sequence_parallel) rc += "+sp";
    any_tie = any_tie || c.risk.tie;
    rows.push_back({std::to_string(i + 1) + (c.risk.tie ? "=" : ""),
                    FrameworkOf(l).dp_flavour(l),
                    std::to_string(l.tp), std::to_string(l.pp), std::to_string(l.cp), std::to_string(l.ep),
                    std::to_string(l.dp), std::to_string(l.dp_replicate), std::to_string(l.micro_batch()),
                    FrameworkOf(l).local_batch_column ? std::to_string(l.local_batch_size) : "-",
                    std::to_string(l.MicroBatchesPerStep(req.setup)), sched, rc, Fixed(GiB(c.cost.memory.Total()), 1),
                    Fixed(GiB(c.cost.capacity_bytes - c.cost.memory.Total()), 1),
                    req.risk_ranking ? Fixed(100 * c.risk.oom_probability, 1) : "-", Fixed(c.cost.step_seconds, 3),
                    req.risk_ranking ? BandCell(c.risk.step_band) : "-", Fixed(c.cost.tokens_per_s_per_gpu, 0),
                    Fixed(c.cost.model_tflops_per_gpu, 0), Fixed(100 * c.cost.mfu, 1)});
    if (own_column) rows.back().push_back(Fixed(100 * c.cost.mfu_precision_peak, 1));
  }
  std::vector<size_t> width(cols.size());
  for (size_t j = 0; j < cols.size(); ++j) {
    width[j] = std::max(cols[j].width, std::string(cols[j].head).size());
    for (const auto& r : rows) width[j] = std::max(width[j], Columns(r[j]));
  }
  std::ostringstream o;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t j = 0; j < cells.size(); ++j) {
      const std::string pad(width[j] - std::min(width[j], Columns(cells[j])), ' ');
      line += (j ? " " : "") + (cols[j].left ? cells[j] + pad : pad + cells[j]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    o << line << "\n";
  };
  std::vector<std::string> head;
  for (const Column& c : cols) head.emplace_back(c.head);
  emit(head);
  for (const auto& r : rows) emit(r);
  if (any_tie) {
    const ErrorBand band = StepErrorBand(KindOf(result, req));
    o << "=: tied, expected step within " << BandCell(band.value) << " of the best (" << band.source << ", "
      << band.rows << " rows); tied layouts are listed by robustness (docs/ranking.md)\n";
  }
  o << SearchSummary(result, req) << "\n";
  if (const std::string w = GenericModelWarning(req.model); !w.empty()) o << "warning: " << w << "\n";
  return o.str();
}

std::string SearchSummary(const PlanResult& result, const PlanRequest& req) {
  std::ostringstream o;
  o << "searched " << result.enumerated << " layouts: " << result.valid << " valid, "
    << result.valid - result.pruned_layouts << " scored, " << result.fitting << " fit ("
    << result.recompute_dominated << " with recompute not ranked: the same layout fits without it); "
    << result.pruned << " subtrees and " << result.pruned_layouts << " layouts pruned by branch-and-bound; capacity " << Fixed(GiB(req.system.gpu.memory_bytes * (1 - req.setup.headroom)), 1) << " GiB ("
    << Fixed(100 * req.setup.headroom, 0) << "% headroom kept free)";
  return o.str();
}

std::string ResultJson(const PlanResult& result, const PlanRequest& req) {
  using nlohmann::json;
  json j;
  j["request"] = recipe::RequestJson(req);
  j["counts"] = {{"enumerated", result.enumerated},
                 {"valid", result.valid},
                 {"fitting", result.fitting},
                 {"pruned_subtrees", result.pruned},
                 {"pruned_layouts", result.pruned_layouts},
                 {"recompute_not_ranked", result.recompute_dominated},
                 {"stopped", result.stopped}};
  json rej = json::object();
  for (const auto& [name, n] : result.rejected_by_rule) rej[name] = n;
  j["rejected_by_rule"] = rej;
  const ErrorKind kind = KindOf(result, req);
  const ErrorBand step_band = StepErrorBand(kind), memory_band = MemoryErrorBand(kind.runtime);
  j["ranking"] = {{"rank_by", req.risk_ranking ? "expected" : "step"},
                  {"distinct_layouts", req.distinct_layouts},
                  {"step_band", step_band.value},
                  {"step_band_rows", step_band.rows},
                  {"step_band_source", step_band.source},
                  {"memory_band", memory_band.value},
                  {"memory_band_rows", memory_band.rows},
                  {"memory_band_source", memory_band.source}};
  json arr = json::array();
  for (size_t i = 0; i < result.top.size(); ++i) {
    json cj = recipe::CandidateJson(result.top[i], req, static_cast<int>(i + 1));
    const Risk& r = result.top[i].risk;
    if (req.risk_ranking) {
      cj["risk"] = {{"expected_step_s", r.expected_step_seconds},
                    {"step_band", r.step_band},
                    {"oom_probability", r.oom_probability},
                    {"memory_band_gib", GiB(r.memory_band_bytes)},
                    {"margin_gib", GiB(r.margin_bytes)},
                    {"tie", r.tie}};
    }
    FrameworkOf(req.framework).annotate_json(cj, result.top[i], req);
    arr.push_back(cj);
  }
  j["recipes"] = arr;
  if (const std::string w = GenericModelWarning(req.model); !w.empty()) j["model_warning"] = w;
  return j.dump(2) + "\n";
}

}  // namespace meshplan
