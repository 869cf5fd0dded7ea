// The change list of a nearest layout names expert_tensor_parallel_size whenever applying the
// other listed changes alone would give a different ETP: unset, Megatron-Core's ETP follows
// tensor_model_parallel_size (TransformerConfig: expert_tensor_parallel_size None -> TP).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/search.hpp"
#include "../fixtures/plan_request.hpp"

using namespace meshplan;

namespace {

bool Has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

}  // namespace

TEST_CASE("nearest changes: ETP left unset is listed when a TP change would move it") {
  PlanRequest req = test::PresetRequest("deepseek-v3", "dgx-h100", 256, 4096, 2048);
  req.framework = Framework::kMegatronBridge;
  const std::string head = "train: {global_batch_size: 2048, micro_batch_size: 1}\nddp: {use_distributed_optimizer: true}\n";
  const Layout from = ParseMegatronRecipe("model: {tensor_model_parallel_size: 1, pipeline_model_parallel_size: 8, "
                                          "expert_model_parallel_size: 32}\n" + head,
                                          "a.yaml", 256, &req.model).layout;
  REQUIRE(from.etp == 0);  // unset in the recipe
  // TP 1 -> 8 with ETP 1: ETP must be written, or it would follow TP to 8.
  Layout to = ParseMegatronRecipe("model: {tensor_model_parallel_size: 8, pipeline_model_parallel_size: 8, "
                                  "expert_model_parallel_size: 32, expert_tensor_parallel_size: 1, "
                                  "sequence_parallel: true}\n" + head,
                                  "b.yaml", 256, &req.model).layout;
  std::vector<std::string> lines = LayoutChanges(from, to, req.model.num_layers, req.setup);
  CHECK(Has(lines, "tensor_model_parallel_size: 1 -> 8"));
  CHECK(Has(lines, "expert_tensor_parallel_size: null -> 1"));
  // TP 1 -> 8 with ETP left unset (ETP 8 follows): the TP change alone gives it, nothing to add.
  to = ParseMegatronRecipe("model: {tensor_model_parallel_size: 8, pipeline_model_parallel_size: 8, "
                           "expert_model_parallel_size: 4, sequence_parallel: true}\n" + head,
                           "c.yaml", 256, &req.model).layout;
  lines = LayoutChanges(from, to, req.model.num_layers, req.setup);
  CHECK(Has(lines, "tensor_model_parallel_size: 1 -> 8"));
  for (const std::string& l : lines) CHECK(l.rfind("expert_tensor_parallel_size", 0) == std::string::npos);
  // Same TP, ETP written as the value it had: no edit.
  to = ParseMegatronRecipe("model: {tensor_model_parallel_size: 1, pipeline_model_parallel_size: 8, "
                           "expert_model_parallel_size: 32, expert_tensor_parallel_size: 1}\n" + head,
                           "d.yaml", 256, &req.model).layout;
  CHECK(LayoutChanges(from, to, req.model.num_layers, req.setup).empty());
}

TEST_CASE("nearest changes: an overlap the recipe leaves unset is a note and not a change where it is priced") {
  PlanRequest req = test::PresetRequest("llama3.1-70b", "dgx-h100", 64, 4096, 512);
  req.framework = Framework::kMegatronBridge;
  const CostModel cost(req.model, req.system, req.setup);
  const std::string head = "train: {global_batch_size: 512, micro_batch_size: 1}\nddp: {use_distributed_optimizer: true}\n";
  auto read = [&](const std::string& model, const std::string& more) {
    return ParseMegatronRecipe("model: {" + model + "}\n" + head + more, "r.yaml", 64, &req.model).layout;
  };
  const std::string overlaps =
      "comm_overlap: {tp_comm_overlap: true, overlap_p2p_comm: true, batch_p2p_comm: true, overlap_grad_reduce: true, "
      "overlap_param_gather: true}\n";
  // TP 8, PP 2, DP 4: the recipe leaves every overlap unset (priced off).
  const std::string tp8pp2 = "tensor_model_parallel_size: 8, pipeline_model_parallel_size: 2, sequence_parallel: true";
  const Layout from = read(tp8pp2, "");
  REQUIRE(from.mb.tp_comm_overlap == Tri::kUnset);
  REQUIRE(from.dp == 4);
  const Layout to = read(tp8pp2, overlaps);
  REQUIRE(to.mb.tp_comm_overlap == Tri::kTrue);
  // Not edits: the layout is the same.
  CHECK(LayoutChanges(from, to, req.model.num_layers, req.setup).empty());
  // Priced for this layout: TP overlap (TP 8), the P2P overlap (PP 2), the DP reduce (DP 4).
  // batch_p2p_comm is not read under overlap_p2p_comm (MegatronPipelineComm), and
  // overlap_param_gather not by the cost model: not named.
  CHECK(PricedNotes(from, to, req.model.num_layers, req.setup, cost) ==
        std::vector<std::string>{"tp_comm_overlap: unset (off) -> true", "overlap_p2p_comm: unset (off) -> true",
                                 "overlap_grad_reduce: unset (off) -> true"});
  // PP 1: nothing to overlap between stages, no P2P setting named; TP 1: no TP overlap.
  const std::string tp1pp1 = "tensor_model_parallel_size: 1, pipeline_model_parallel_size: 1";
  const Layout dp64 = read(tp1pp1, overlaps);
  REQUIRE(dp64.dp == 64);
  CHECK(PricedNotes(read(tp1pp1, ""), dp64, req.model.num_layers, req.setup, cost) ==
        std::vector<std::string>{"overlap_grad_reduce: unset (off) -> true"});
  // DP 1 (TP 8 x PP 8 of a dense model): no gradient reduce to overlap.
  const std::string dp1 = "tensor_model_parallel_size: 8, pipeline_model_parallel_size: 8, sequence_parallel: true";
  const Layout pp8 = read(dp1, overlaps);
  REQUIRE(pp8.dp == 1);
  CHECK(PricedNotes(read(dp1, ""), pp8, req.model.num_layers, req.setup, cost) ==
        std::vector<std::string>{"tp_comm_overlap: unset (off) -> true", "overlap_p2p_comm: unset (off) -> true"});
  // The reverse: set in the recipe, off in the other layout's, is an edit.
  CHECK(Has(LayoutChanges(to, read(tp8pp2, "comm_overlap: {tp_comm_overlap: false}\n"), req.model.num_layers, req.setup),
            "tp_comm_overlap: true -> false"));
}
