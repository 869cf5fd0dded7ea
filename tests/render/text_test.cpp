// Text rendering of the commands' reports (planner/render/text.cpp), into a string stream.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "meshplan/commands.hpp"
#include "render/text.hpp"

using namespace meshplan;

TEST_CASE("render: check's verdict on a broken Megatron-Bridge recipe names the rule with its source and a fix") {
  CheckInput in;
  in.recipe = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/recipes/mbridge_pp3_8gpu.yaml";
  in.setup.model = "llama3.1-8b";
  in.setup.system = "dgx-h100";
  in.setup.gpus = 8;
  in.setup.headroom = 0.10;  // the fixes below are those at the default allocator's headroom
  const CheckReport rep = CheckRecipe(in);
  REQUIRE(rep.documents.size() == 1);
  std::ostringstream out;
  render::PrintCheckedDocument(out, rep.documents[0]);
  const std::string text = out.str();
  CHECK(text.find("layout: ddp+distopt tp1 pp3 cp1 ep1 dp2 mbs1 recompute=none") != std::string::npos);
  CHECK(text.find("INVALID: 3 rules fail") != std::string::npos);
  CHECK(text.find("mb_world_divisible_by_tp_pp_cp: world_size (8) is not divisible") != std::string::npos);
  CHECK(text.find("source: MCore transformer/transformer_block.py:148-158") != std::string::npos);
  // TP 2 with PP 1 (two edits) is predicted 9.7% faster than the one-edit fix PP 2, more than
  // kNearestEditGain: it comes first, and the one-edit fix second with how much slower it is.
  // Headed by its edits, the keys counted when more.
  CHECK(text.find("--- 1: 2 edits (4 keys); tensor_model_parallel_size: 1 -> 2; pipeline_model_parallel_size: 3 -> 1") !=
        std::string::npos);
  // Ranked as plan ranks (expected step with the out-of-memory risk priced), PP 1 with CP 2 comes
  // second and the one-edit fix third, with how much slower it is.
  // Under its header, the overlaps the recipe left unset that the fix's recipe turns on and the
  // cost model prices for PP 2 x DP 4: notes, not edits (no tp_comm_overlap at TP 1).
  CHECK(text.find("--- 3: 1 edit; pipeline_model_parallel_size: 3 -> 2\n# not edits, settings the recipe leaves unset "
                  "(priced off) and this recipe turns on: batch_p2p_comm: unset (off) -> true; overlap_grad_reduce: "
                  "unset (off) -> true\n") != std::string::npos);
  CHECK(text.find("\n# the one-edit fix (pipeline_model_parallel_size: 3 -> 2); listed after fixes ranked before it "
                  "(expected throughput, the out-of-memory risk priced, 9% below the first)") != std::string::npos);
}

namespace {
// Llama 3.1 8B on 8 H100, 4096 tokens, global batch 64, the default AutoModel layout (FSDP2 dp8).
ExplainInput Llama8bOn8() {
  ExplainInput in;
  in.setup.model = "llama3.1-8b";
  in.setup.system = "dgx-h100";
  in.setup.gpus = 8;
  in.setup.seq_len = 4096;
  in.setup.global_batch = 64;
  in.defer_fsdp_grad_sync = false;  // as plan's recipes write it with gradient accumulation (8 steps)
  return in;
}
}  // namespace

TEST_CASE("render: explain of a layout prints its memory and step terms and the verdict") {
  const ExplainReport rep = ExplainLayout(Llama8bOn8());
  std::ostringstream out;
  render::PrintExplanation(out, rep);
  const std::string text = out.str();
  CHECK(text.find("layout: fsdp2 tp1 pp1 cp1 ep1 dp8 lbs1 ac=none") != std::string::npos);
  CHECK(text.find("rules: valid (passes all 42 AutoModel rules)") != std::string::npos);
  // 8.03e9 parameters in bf16 sharded over 8 ranks: 2 · 8.03e9 / 8 bytes = 1.87 GiB.
  CHECK(text.find("  weights                          1.87   4.3%") != std::string::npos);
  CHECK(text.find("  total                           43.27   100%") != std::string::npos);
  CHECK(text.find("MFU 39.1% of the BF16 dense peak\n") != std::string::npos);  // BF16: no second peak
}

TEST_CASE("render: explain of an FP8 layout prints MFU against the BF16 peak and against the FP8 peak") {
  ExplainInput in = Llama8bOn8();
  in.setup.precision = Precision::kFp8;
  const ExplainReport rep = ExplainLayout(in);
  REQUIRE(rep.scorable);
  std::ostringstream out;
  render::PrintExplanation(out, rep);
  // H100 (hwdb gpus/h100-sxm.yaml): 989 TFLOP/s dense BF16, 1979 FP8; the text rounds both
  // to one decimal of the model TFLOP/s per GPU over each peak.
  const double tflops = rep.cost.model_tflops_per_gpu;
  char want[160];
  std::snprintf(want, sizeof want, "MFU %.1f%% of the BF16 dense peak (%.1f%% of the FP8 dense peak)\n",
                100 * tflops / 989, 100 * tflops / 1979);
  CHECK(out.str().find(want) != std::string::npos);
  CHECK(rep.cost.mfu == doctest::Approx(tflops / 989));
  CHECK(rep.cost.mfu_precision_peak == doctest::Approx(tflops / 1979));
}
