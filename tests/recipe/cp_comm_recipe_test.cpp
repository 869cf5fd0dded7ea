// model.cp_comm_type and hierarchical_context_parallel_sizes in Megatron-Bridge recipes: read
// (with the recipe function's own value where the file sets none), refused when Transformer
// Engine would not take them, written where the priced type is not the function's, and the types
// the space emits per mesh (search::MegatronCpCommChoices).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "frameworks/megatron_bridge/recipe_functions.hpp"
#include "frameworks/megatron_bridge/space.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

ParsedRecipe Read(const std::string& text, const char* fn = "") {
  return ParseMegatronRecipe(text, "r.yaml", 64, nullptr, fn);
}

std::string Override(const std::vector<std::pair<std::string, std::string>>& o, const std::string& suffix) {
  for (const auto& [k, v] : o) {
    if (k.size() >= suffix.size() && k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0) return v;
  }
  return "";
}

PlanRequest Request(const char* model, int64_t gpus) {
  PlanRequest req;
  req.model = LoadModel(model);
  req.system = LoadSystem("dgx-h100");
  req.framework = Framework::kMegatronBridge;
  req.setup.num_gpus = gpus;
  req.setup.seq_len = 32768;
  req.setup.global_batch = 64;
  return req;
}

}  // namespace

TEST_CASE("cp_comm recipe: the types and the hierarchical sizes are read and bad ones refused") {
  const ParsedRecipe a = Read("model:\n  context_parallel_size: 4\n  cp_comm_type: a2a\n");
  CHECK(a.layout.mb.cp_comm == MbCpComm::kA2a);
  CHECK(Read("model:\n  cp_comm_type: all_gather\n").layout.mb.cp_comm == MbCpComm::kAllGather);
  CHECK(Read("model:\n  cp_comm_type: p2p\n").layout.mb.cp_comm == MbCpComm::kP2p);
  CHECK(Read("model:\n  cp_comm_type: null\n").layout.mb.cp_comm == MbCpComm::kUnset);
  const ParsedRecipe h =
      Read("model:\n  context_parallel_size: 16\n  cp_comm_type: a2a+p2p\n  hierarchical_context_parallel_sizes: [8, 2]\n");
  CHECK(h.layout.mb.cp_comm == MbCpComm::kA2aP2p);
  CHECK(h.layout.mb.hcp_levels == 2);
  CHECK(h.layout.mb.hcp_first == 8);
  CHECK(h.layout.mb.hcp_product == 16);
  // Megatron-Bridge's own spelling check is Transformer Engine's: "allgather" is no type there.
  CHECK_THROWS_AS(Read("model:\n  cp_comm_type: allgather\n"), InputError);
  CHECK_THROWS_AS(Read("model:\n  cp_comm_type: [p2p, a2a]\n"), InputError);
  CHECK_THROWS_AS(Read("model:\n  hierarchical_context_parallel_sizes: [8, 0]\n"), InputError);
  // A file that sets none takes the recipe function's: GPT-OSS 120B's a2a.
  const ParsedRecipe g = Read("model:\n  context_parallel_size: 2\n", "gpt_oss_120b_pretrain_config");
  CHECK(g.layout.mb.cp_comm == MbCpComm::kA2a);
}

TEST_CASE("cp_comm recipe: the space's types per mesh") {
  // Llama 3 8B (32 heads, 8 KV heads) on DGX H100 (8 GPUs a node), no recipe-function type.
  const PlanRequest req = Request("llama3-8b", 64);
  const MbRuntime none;
  auto types = [&](int64_t tp, int64_t cp) {
    std::vector<std::pair<MbCpComm, int64_t>> out;
    for (const auto& c : search::MegatronCpCommChoices(req, none, false, tp, cp)) out.push_back({c.type, c.hcp_first});
    return out;
  };
  using P = std::vector<std::pair<MbCpComm, int64_t>>;
  CHECK(types(1, 1) == P{{MbCpComm::kUnset, 0}});
  // TP 2 CP 4 inside a node: 4 KV heads a TP rank divide over 4 (a2a); no hierarchy.
  CHECK(types(2, 4) == P{{MbCpComm::kUnset, 0}, {MbCpComm::kA2a, 0}, {MbCpComm::kAllGather, 0}});
  // TP 2 CP 8 spans two nodes: 4 KV heads do not divide over 8; a2a+p2p with 8 / 2 = 4 CP ranks a node.
  CHECK(types(2, 8) == P{{MbCpComm::kUnset, 0}, {MbCpComm::kAllGather, 0}, {MbCpComm::kA2aP2p, 4}});
  CHECK(search::HierarchicalCpA2aSize(req.system, 2, 8) == 4);
  CHECK(search::HierarchicalCpA2aSize(req.system, 2, 4) == 0);   // one node
  CHECK(search::HierarchicalCpA2aSize(req.system, 8, 4) == 0);   // one CP rank a node
  CHECK(search::HierarchicalCpA2aSize(req.system, 4, 3) == 0);   // 2 CP ranks a node do not divide 3
  // DeepSeek-V3's MLA (128 heads, as many key heads): a2a inside a node; across nodes a2a+p2p
  // keeps the all-to-all on NVLink instead.
  const PlanRequest ds = Request("deepseek-v3", 64);
  auto ds_types = [&](int64_t tp, int64_t cp) {
    std::vector<std::pair<MbCpComm, int64_t>> out;
    for (const auto& c : search::MegatronCpCommChoices(ds, none, false, tp, cp)) out.push_back({c.type, c.hcp_first});
    return out;
  };
  CHECK(ds_types(1, 8) == P{{MbCpComm::kUnset, 0}, {MbCpComm::kA2a, 0}, {MbCpComm::kAllGather, 0}});
  CHECK(ds_types(2, 8) == P{{MbCpComm::kUnset, 0}, {MbCpComm::kAllGather, 0}, {MbCpComm::kA2aP2p, 4}});
  // A fixed request (validate, check) or a recipe function that sets the type keeps it.
  MbRuntime own;
  own.cp_comm = MbCpComm::kA2a;
  CHECK(search::MegatronCpCommChoices(req, own, false, 2, 4).size() == 1);
  CHECK(search::MegatronCpCommChoices(req, none, true, 2, 4).size() == 1);
  // GPT-OSS (sliding windows and softmax sinks): only a2a runs under CP.
  const PlanRequest oss = Request("gpt-oss-20b", 64);
  const auto c = search::MegatronCpCommChoices(oss, none, false, 1, 2);
  REQUIRE(c.size() == 1);
  CHECK(c[0].type == MbCpComm::kA2a);
}

TEST_CASE("cp_comm recipe: written only where it is not the recipe function's") {
  const PlanRequest req = Request("llama3-8b", 64);
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.tp = 2;
  l.cp = 8;
  l.dp = 4;
  search::ApplyEmittedSettings(l, req.system);
  SetMegatronMicroBatch(l, 1, req.setup);
  search::ApplyCpComm(l, {MbCpComm::kUnset, 0});
  CHECK(Override(MegatronOverrides(l, req), "cp_comm_type") == "");  // null: Megatron-Core's p2p
  search::ApplyCpComm(l, {MbCpComm::kA2aP2p, 4});
  const auto o = MegatronOverrides(l, req);
  CHECK(Override(o, "cp_comm_type") == "a2a+p2p");
  CHECK(Override(o, "hierarchical_context_parallel_sizes") == "[4,2]");
  CHECK(Describe(l).find("cp8[a2a+p2p 4x2]") != std::string::npos);
  // GPT-OSS 20B's function sets a2a: a2a is not written again, all_gather would be.
  const PlanRequest oss = Request("gpt-oss-20b", 64);
  Layout g = l;
  g.tp = 1;
  g.dp = 8;
  search::ApplyCpComm(g, {MbCpComm::kA2a, 0});
  CHECK(Override(MegatronOverrides(g, oss), "cp_comm_type") == "");
  search::ApplyCpComm(g, {MbCpComm::kAllGather, 0});
  CHECK(Override(MegatronOverrides(g, oss), "cp_comm_type") == "all_gather");
}
