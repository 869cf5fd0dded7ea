// The change list of a nearest layout names expert_tensor_parallel_size whenever applying the
// other listed changes alone would give a different ETP: unset, Megatron-Core's ETP follows
// tensor_model_parallel_size (TransformerConfig: expert_tensor_parallel_size None -> TP).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "meshplan/recipe.hpp"
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

TEST_CASE("nearest changes: an overlap the recipe leaves unset is named when the other layout turns it on") {
  PlanRequest req = test::PresetRequest("llama3.1-70b", "dgx-h100", 64, 4096, 512);
  req.framework = Framework::kMegatronBridge;
  const std::string mesh =
      "model: {tensor_model_parallel_size: 8, pipeline_model_parallel_size: 2, sequence_parallel: true}\n"
      "train: {global_batch_size: 512, micro_batch_size: 2}\nddp: {use_distributed_optimizer: true}\n";
  const Layout from = ParseMegatronRecipe(mesh, "a.yaml", 64, &req.model).layout;
  REQUIRE(from.mb.tp_comm_overlap == Tri::kUnset);  // priced off
  const Layout to = ParseMegatronRecipe(mesh + "comm_overlap: {tp_comm_overlap: true}\n", "b.yaml", 64, &req.model).layout;
  REQUIRE(to.mb.tp_comm_overlap == Tri::kTrue);
  const std::vector<std::string> lines = LayoutChanges(from, to, req.model.num_layers, req.setup);
  CHECK(Has(lines, "tp_comm_overlap: unset (off) -> true"));
  CHECK(lines.size() == 1);
  // The reverse: set in the recipe, off in the other layout's.
  CHECK(Has(LayoutChanges(to, from, req.model.num_layers, req.setup), "tp_comm_overlap: true -> false"));
}
