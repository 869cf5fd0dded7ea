// Static memory against Megatron-Core's own model: each pipeline rank's parameters as
// Megatron-Core builds them (GPTModel on the meta device, Megatron-LM d98e8a64;
// tools/acceptance/count_mcore_params.py, tests/data/mcore/param_counts.json) against the
// megatron-bridge profile's weights (2 bytes per parameter) of the same rank, to the parameter.
// The distributed data-parallel buffers Megatron-Core builds over those ranks (distributed
// optimizer, padded) hold exactly the parameters on every case, so the gradient and optimizer
// terms, which the profile writes per parameter, follow.
// MLA with TP > 1 is printed, not checked: Megatron-Core's local specs build MLA's q / kv down
// projections as ColumnParallelLinear (split over TP), its Transformer Engine specs, which
// Megatron-Bridge runs and the profile follows, as TELinear in parallel_mode "duplicated" (whole
// on every TP rank; multi_latent_attention.py), so the local count is lower by
// (1 - 1/t)·h·(q_lora_rank + kv_lora_rank + qk_rope_head_dim) and the norms' share per layer.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "meshplan/cost.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/search.hpp"

namespace meshplan {
namespace {

nlohmann::json Counts() {
  std::ifstream f(std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/mcore/param_counts.json");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

}  // namespace

TEST_CASE("static memory: every pipeline rank's parameters match Megatron-Core's model to the parameter") {
  const nlohmann::json counts = Counts();
  const SystemSpec sys = LoadSystem("dgx-h100");
  int ranks = 0;
  std::printf("\nParameters per pipeline rank, Megatron-Core (meta device) vs meshplan (megatron-bridge profile)\n");
  for (const nlohmann::json& c : counts.at("cases")) {
    REQUIRE_MESSAGE(!c.contains("error"), c.dump());
    const std::string preset = c.at("preset");
    ModelSpec m = LoadModel(preset);
    const std::string split = c.at("split");
    if (split == "dsv3-nomtp") m.mtp_num_layers = 0;
    Layout l;
    l.framework = FindFramework("megatron-bridge")->id;
    l.tp = c.at("tp");
    l.pp = c.at("pp");
    l.vpp = c.at("vpp");
    l.cp = c.at("cp");
    l.ep = c.at("ep");
    l.etp = m.is_moe() && l.tp > 1 ? int64_t(c.at("etp")) : 0;
    l.dp = c.at("dp");
    l.sequence_parallel = l.tp > 1;
    l.use_distributed_optimizer = true;
    l.mtp_layers = m.mtp_num_layers;
    l.pp_split = split == "account" ? MbPpSplit::kAccountEmbeddingLoss
                 : split == "even"  ? MbPpSplit::kEven
                                    : MbPpSplit::kLayout;
    TrainSetup setup;
    setup.num_gpus = c.at("world");
    setup.seq_len = 4096;
    setup.global_batch = 64 * l.dp * l.pp;
    SetMegatronMicroBatch(l, 1, setup);
    if (split.starts_with("dsv3")) {
      // Megatron-Bridge's DeepSeek-V3 layout of 16 stages, as a recipe gives it.
      const std::string text =
          "model:\n  tensor_model_parallel_size: " + std::to_string(l.tp) + "\n  pipeline_model_parallel_size: " +
          std::to_string(l.pp) + "\n  virtual_pipeline_model_parallel_size: " +
          (l.vpp > 1 ? std::to_string(l.vpp) : std::string("null")) + "\n  expert_model_parallel_size: " +
          std::to_string(l.ep) + "\n  expert_tensor_parallel_size: 1\n  sequence_parallel: " +
          (l.tp > 1 ? "true" : "false") + "\n  seq_length: 4096\n  mtp_num_layers: " +
          (m.mtp_num_layers > 0 ? std::to_string(m.mtp_num_layers) : std::string("null")) +
          "\n  pipeline_model_parallel_layout: \"Et*4|(t*4|)*14t" + (m.mtp_num_layers > 0 ? "m" : "") +
          "L\"\ntrain: {global_batch_size: " + std::to_string(setup.global_batch) +
          ", micro_batch_size: 1}\nddp: {use_distributed_optimizer: true}\n";
      l = ParseMegatronRecipe(text, "dsv3.yaml", setup.num_gpus, &m).layout;
    }
    const CostModel cm(m, sys, setup);
    const std::vector<MemoryBreakdown> mem = cm.RankMemories(ToCostView(l, cm.model(), cm.setup()));
    REQUIRE(mem.size() == c.at("ranks").size());
    for (const nlohmann::json& r : c.at("ranks")) {
      const int64_t rank = r.at("pp_rank");
      const double mcore = double(r.at("dense")) + double(r.at("expert"));
      const double ours = mem[size_t(rank)].weights / 2.0;
      std::printf("%-16s tp%-2lld pp%-2lld vpp%-2lld ep%-3lld %-10s rank %2lld: Megatron-Core %14.0f meshplan %14.0f %+.0f\n",
                  preset.c_str(), (long long)l.tp, (long long)l.pp, (long long)l.vpp, (long long)l.ep, split.c_str(),
                  (long long)rank, mcore, ours, ours - mcore);
      if (m.mla && l.tp > 1) continue;
      CAPTURE(preset);
      CAPTURE(split);
      CAPTURE(rank);
      CHECK(std::llround(ours) == std::llround(mcore));  // to the parameter (the profile computes in doubles)
      CHECK(double(r.at("ddp_dense_numel")) == double(r.at("dense")));
      ++ranks;
    }
  }
  CHECK(ranks == 125);
}

}  // namespace meshplan
