// `check`'s nearest valid layouts (planner/search/nearest.cpp): the changes listed for an
// AutoModel recipe are the fields whose value differs between the recipe read and the recipe
// written for the nearby layout, both read back as AutoModel reads them; none left out (dp_size
// given as a number was), none counted twice.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

// A setting as written, or its AutoModel default when the recipe leaves it unset.
std::string Or(const std::string& written, const char* default_value) {
  return written.empty() ? default_value : written;
}

// The fields of `b` (a recipe written for a nearby layout, read back) whose value differs from
// `a` (the recipe read). dp_size: `b` writes null, which is a change only from another number;
// the unpriced settings: only those `b` writes.
std::set<std::string> Differing(const Layout& a, const Layout& b) {
  std::set<std::string> d;
  auto differs = [&d](const char* field, bool differ) {
    if (differ) d.insert(field);
  };
  differs("strategy", a.strategy != b.strategy);
  differs("dp_size", a.am.dp_size && a.dp != b.dp);
  differs("tp_size", a.tp != b.tp);
  differs("pp_size", a.pp != b.pp);
  differs("cp_size", a.cp != b.cp);
  differs("ep_size", a.ep != b.ep);
  differs("model.backend.dispatcher", b.ep > 1 && a.am_backend.dispatcher != b.am_backend.dispatcher);
  differs("dp_replicate_size", a.dp_replicate != b.dp_replicate);
  differs("local_batch_size", a.local_batch_size != b.local_batch_size);
  if (a.pp > 1 || b.pp > 1) {
    differs("pp_microbatch_size", a.pp_microbatch_size != b.pp_microbatch_size);
    differs("pp_schedule", a.pp_schedule != b.pp_schedule);
    differs("layers_per_stage", a.layers_per_stage != b.layers_per_stage);
    differs("round_virtual_stages_to_pp_multiple", a.stage_rounding != b.stage_rounding);
  }
  const std::string a_defer = a.strategy == Strategy::kFsdp2 ? Or(a.am.defer_fsdp_grad_sync, "true") : "true";
  // Leaving fsdp2, its keys the recipe writes are removed.
  const bool leaves_fsdp2 = a.strategy == Strategy::kFsdp2 && b.strategy != Strategy::kFsdp2;
  differs("defer_fsdp_grad_sync", (!b.am.defer_fsdp_grad_sync.empty() && a_defer != b.am.defer_fsdp_grad_sync) ||
                                      (leaves_fsdp2 && !a.am.defer_fsdp_grad_sync.empty()));
  differs("scale_grads_in_schedule", !b.am.scale_grads_in_schedule.empty() &&
                                         Or(a.am.scale_grads_in_schedule, "false") != b.am.scale_grads_in_schedule);
  differs("moe.reshard_after_forward", !b.am.moe_reshard_after_forward.empty() &&
                                           Or(a.am.moe_reshard_after_forward, "false") != b.am.moe_reshard_after_forward);
  differs("sequence_parallel", a.sequence_parallel != b.sequence_parallel || (leaves_fsdp2 && a.am.sequence_parallel));
  differs("activation_checkpointing", a.recompute != b.recompute);
  return d;
}

// Sets the first `key` found (depth first) in the maps of `node` to `value`; false when none.
bool SetFound(YAML::Node node, const std::string& key, const YAML::Node& value) {
  if (!node.IsMap()) return false;
  if (node[key]) {
    node[key] = value;
    return true;
  }
  for (auto kv : node) {
    if (SetFound(kv.second, key, value)) return true;
  }
  return false;
}

// `recipe` with every change "key: old -> new" of `changes` made as a user would edit the file:
// the key set to the new value where the recipe writes it, else added where AutoModel reads it
// (step_scheduler, distributed.pipeline, distributed.moe for "moe.KEY", model.backend for
// "model.backend.KEY", distributed), or removed
// ("(remove the key: ...)"). A value's remark in parentheses ("null (inferred 8)") is not part of it.
std::string Applied(const std::string& recipe, const std::vector<std::string>& changes) {
  YAML::Node root = YAML::Load(recipe);
  for (const std::string& c : changes) {
    const std::string key = c.substr(0, c.find(": "));
    std::string value = c.substr(c.find(" -> ") + 4);
    value = value.substr(0, value.find(" ("));
    REQUIRE_MESSAGE(key.find(' ') == std::string::npos, "not a recipe key: " << c);
    const YAML::Node v = YAML::Load(value);
    if (value.rfind("(remove the key", 0) == 0) {
      REQUIRE(root["distributed"][key]);
      root["distributed"].remove(key);
    } else if (key.rfind("moe.", 0) == 0) {
      root["distributed"]["moe"][key.substr(4)] = v;
    } else if (key.rfind("model.backend.", 0) == 0) {
      root["model"]["backend"][key.substr(14)] = v;
    } else if (!SetFound(root, key, v)) {
      const bool pipeline = key == "pp_microbatch_size" || key == "pp_schedule" || key == "layers_per_stage" ||
                            key == "round_virtual_stages_to_pp_multiple" || key == "scale_grads_in_schedule";
      if (key == "local_batch_size") {
        root["step_scheduler"][key] = v;
      } else if (pipeline) {
        root["distributed"]["pipeline"][key] = v;
      } else {
        root["distributed"][key] = v;
      }
    }
  }
  YAML::Emitter e;
  e << root;
  return e.c_str();
}

// The nearest layouts of `recipe` (invalid as written); checks every one's changes against the
// recipe written for it, and that making those changes in `recipe` gives its layout, and returns
// them.
std::vector<NearbyLayout> CheckNearest(const std::string& recipe, const char* model, int64_t gpus, int64_t seq_len,
                                       const char* system = "dgx-h100") {
  const ParsedRecipe read = ParseAutoModelRecipe(recipe, "r.yaml", gpus);
  PlanRequest req;
  req.model = LoadModel(model);
  req.system = LoadSystem(system);
  req.setup.num_gpus = gpus;
  req.setup.seq_len = seq_len;
  req.setup.global_batch = read.global_batch;
  const std::vector<NearbyLayout> near = NearestValidLayouts(req, read.layout, 3);
  REQUIRE(near.size() == 3);
  for (size_t i = 0; i < near.size(); ++i) {
    const std::string yaml = AutoModelRecipeYaml(near[i].candidate, req, static_cast<int>(i + 1));
    CAPTURE(yaml);
    const Layout back = ParseAutoModelRecipe(yaml, "nearest.yaml", gpus).layout;
    std::set<std::string> named;
    for (const std::string& change : near[i].changes) named.insert(change.substr(0, change.find(": ")));
    CHECK(named.size() == near[i].changes.size());
    CHECK(named == Differing(read.layout, back));
    const std::string applied = Applied(recipe, near[i].changes);
    CAPTURE(applied);
    const Layout edited = ParseAutoModelRecipe(applied, "applied.yaml", gpus).layout;
    CHECK(Describe(edited) == Describe(near[i].candidate.layout));
    CHECK(LayoutChanges(edited, near[i].candidate.layout, req.model.num_layers, req.setup).empty());
  }
  return near;
}

}  // namespace

TEST_CASE("nearest: an AutoModel dp_size that no layout has is a change of every nearby layout") {
  // tests/data/recipes/automodel_a_llama3_70b_pretrain_32gpu.yaml with dp_size 3: every valid
  // layout infers another dp, and the recipes written say dp_size: null (was "0 changes").
  const std::string recipe =
      "step_scheduler: {global_batch_size: 128, local_batch_size: 4}\n"
      "distributed:\n  strategy: fsdp2\n  dp_size: 3\n  tp_size: 4\n  cp_size: 1\n  pp_size: 4\n"
      "  sequence_parallel: false\n  activation_checkpointing: true\n"
      "  pipeline:\n    pp_schedule: interleaved1f1b\n    pp_microbatch_size: 1\n    layers_per_stage: 4\n"
      "    scale_grads_in_schedule: false\n    round_virtual_stages_to_pp_multiple: up\n";
  for (const NearbyLayout& x : CheckNearest(recipe, "llama3.1-70b", 32, 8192)) {
    const std::string dp = "dp_size: 3 -> null (inferred " + std::to_string(x.candidate.layout.dp) + ")";
    CHECK(std::find(x.changes.begin(), x.changes.end(), dp) != x.changes.end());
  }
}

TEST_CASE("nearest: the settings an AutoModel recipe writes as the cost model prices them are changes") {
  // defer_fsdp_grad_sync true, scale_grads_in_schedule true and moe.reshard_after_forward true
  // become false in the recipes written (with gradient accumulation, pp > 1, ep > 1).
  CheckNearest("step_scheduler: {global_batch_size: 64, local_batch_size: 1}\n"
               "distributed:\n  strategy: fsdp2\n  tp_size: 3\n  defer_fsdp_grad_sync: true\n",
               "llama3.1-8b", 8, 4096);
  CheckNearest("step_scheduler: {global_batch_size: 64, local_batch_size: 4}\n"
               "distributed:\n  strategy: fsdp2\n  dp_size: 2\n  tp_size: 3\n  pp_size: 2\n"
               "  pipeline: {pp_schedule: 1f1b, pp_microbatch_size: 1, scale_grads_in_schedule: true}\n",
               "llama3.1-8b", 8, 4096);
  CheckNearest("step_scheduler: {global_batch_size: 64, local_batch_size: 1}\n"
               "distributed:\n  strategy: fsdp2\n  tp_size: 3\n  ep_size: 8\n  moe: {reshard_after_forward: true}\n",
               "qwen3-30b-a3b", 8, 4096);
}

TEST_CASE("nearest: an AutoModel deepep recipe whose EP leaves a GB200 tray is offered the hybridep dispatcher") {
  // EP 8 with deepep on 16 GB200 (4 GPUs per tray) breaks deepep_nvl_peers_in_node, whose
  // message names model.backend.dispatcher: hybridep; that one key alone is among the fixes
  // (the recipe as written fits: 141.9 GiB of 165.9 GiB), at EP 8, and EP 16 takes it too.
  const std::vector<NearbyLayout> near =
      CheckNearest("step_scheduler: {global_batch_size: 256, local_batch_size: 4}\n"
                   "distributed: {strategy: fsdp2, tp_size: 1, cp_size: 1, pp_size: 1, ep_size: 8,\n"
                   "  defer_fsdp_grad_sync: false, activation_checkpointing: false, moe: {reshard_after_forward: false}}\n"
                   "dataset: {seq_len: 4096}\nmodel: {backend: {dispatcher: deepep}}\n",
                   "qwen3-30b-a3b", 16, 4096, "gb200-nvl72");
  const auto alone = std::find_if(near.begin(), near.end(), [](const NearbyLayout& x) {
    return x.changes == std::vector<std::string>{"model.backend.dispatcher: deepep -> hybridep"};
  });
  REQUIRE(alone != near.end());
  CHECK(alone->candidate.layout.ep == 8);
  CHECK(alone->candidate.layout.am_backend.dispatcher == AmDispatcher::kHybridEP);
  CHECK(alone->edits == 1);
  CHECK(EditCount({"ep_size: 8 -> 16", "model.backend.dispatcher: deepep -> hybridep"}) == 1);
}

TEST_CASE("nearest: the fields of one decision are one edit") {
  // Full recompute writes three keys: one decision.
  CHECK(EditCount({"recompute_method: null -> uniform", "recompute_num_layers: null -> 1", "recompute_granularity: null -> full"}) == 1);
  // A TP size with the sequence parallelism and expert TP it brings: one; an EP size another.
  CHECK(EditCount({"tensor_model_parallel_size: 1 -> 8", "expert_model_parallel_size: 16 -> 8",
                   "expert_tensor_parallel_size: null -> 1", "sequence_parallel: false -> true"}) == 2);
  // A PP size with the layer split its 61 layers need: one; the DP flavour with its overlap: one.
  CHECK(EditCount({"pipeline_model_parallel_size: 16 -> 8",
                   "pipeline layer split: even (num_layers / (pp x vpp)) -> pipeline_model_parallel_layout",
                   "data-parallel flavour: ddp+distopt -> megatron_fsdp", "overlap_grad_reduce: false -> true"}) == 2);
  // Fields of no family count one each.
  CHECK(EditCount({"context_parallel_size: 1 -> 8", "micro_batch_size: 1 -> 2"}) == 2);
  CHECK(EditCount({}) == 0);
}
