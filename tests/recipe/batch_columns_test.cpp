// The plan table's mb/step column, the JSON layout fields and the recipe comment give the
// micro-batches per optimizer step per pipeline, global_batch / (dp * micro-batch), also for
// pipeline-parallel layouts, whose micro-batches sit inside one schedule call (the table
// showed gradient-accumulation steps there: 1 for every Megatron-Bridge PP layout).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/search.hpp"

using namespace meshplan;

namespace {

PlanRequest Request(const std::string& model, int64_t gpus, int64_t gbs, Framework f) {
  PlanRequest req;
  req.model = LoadModel(model);
  req.system = LoadSystem("dgx-h100");
  req.setup.num_gpus = gpus;
  req.setup.seq_len = 8192;
  req.setup.global_batch = gbs;
  req.framework = f;
  return req;
}

// AutoModel tp4 pp4 cp2 dp2 (64 GPUs), local batch 8 in pipeline micro-batches of 1, sequence parallel.
Layout Tp4Pp4Cp2Dp2() {
  Layout l;
  l.tp = 4;
  l.pp = 4;
  l.cp = 2;
  l.dp = 2;
  l.local_batch_size = 8;
  l.pp_microbatch_size = 1;
  l.sequence_parallel = true;
  return l;
}

// The whitespace-separated fields of the table line starting with `first`.
std::vector<std::string> Row(const std::string& table, const std::string& first) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::vector<std::string> out;
    for (std::string f; fields >> f;) out.push_back(f);
    if (!out.empty() && out[0] == first) return out;
  }
  return {};
}

}  // namespace

TEST_CASE("output: AutoModel PP layout shows 256 micro-batches per step (32 accumulation steps x 8 per schedule call)") {
  // llama3.1-70b on 64 H100, global batch 512: tp4 pp4 cp2 gives dp = 64 / 32 = 2; local batch
  // 8 in micro-batches of 1. By hand: 512 / (2 * 1) = 256 micro-batches per step per pipeline,
  // = 512 / (8 * 2) = 32 accumulation steps x 8 / 1 = 8 micro-batches per schedule call.
  const PlanRequest req = Request("llama3.1-70b", 64, 512, Framework::kAutoModel);
  Layout l = Tp4Pp4Cp2Dp2();
  CHECK(l.GradAccumSteps(req.setup) == 32);
  CHECK(l.pp_microbatches() == 8);
  CHECK(l.MicroBatchesPerStep(req.setup) == 256);
  PlanResult result;
  result.top.push_back(Candidate{l, Cost{}});

  const std::string table = RankTable(result, req);
  const std::vector<std::string> header = Row(table, "rank");
  REQUIRE(header.size() > 10);
  CHECK(header[8] == "mbs");
  CHECK(header[9] == "lbs");
  CHECK(header[10] == "mb/step");
  const std::vector<std::string> row = Row(table, "1");
  REQUIRE(row.size() > 10);
  CHECK(row[8] == "1");     // micro-batch size
  CHECK(row[9] == "8");     // step_scheduler.local_batch_size
  CHECK(row[10] == "256");  // the old ga column showed 32 here

  const nlohmann::json j = nlohmann::json::parse(ResultJson(result, req));
  CHECK(j["recipes"][0]["layout"]["microbatches_per_step"] == 256);
  CHECK(j["recipes"][0]["layout"]["grad_accum_steps"] == 32);  // AutoModel step_scheduler's count

  const std::string yaml = RecipesYaml(result, req);
  CHECK(yaml.find("# batch: 256 micro-batches of 1 per optimizer step per pipeline (32 gradient-accumulation "
                  "steps x 8 per schedule call), dp 2\n") != std::string::npos);
}

TEST_CASE("output: Megatron-Bridge PP layout shows its 64 micro-batches per step (not 1)") {
  // llama3-70b on 64 H100, global batch 256: tp4 pp4 gives dp 4; micro-batch 1. By hand:
  // M = 256 / (4 * 1) = 64, all in one pipeline schedule call (local batch 256 / 4 = 64).
  const PlanRequest req = Request("llama3-70b", 64, 256, Framework::kMegatronBridge);
  Layout l;
  l.framework = Framework::kMegatronBridge;
  l.tp = 4;
  l.pp = 4;
  l.dp = 4;
  l.vpp = 5;
  l.sequence_parallel = true;
  l.use_distributed_optimizer = true;
  SetMegatronMicroBatch(l, 1, req.setup);
  CHECK(l.local_batch_size == 64);
  CHECK(l.GradAccumSteps(req.setup) == 1);  // what the table used to show
  CHECK(l.MicroBatchesPerStep(req.setup) == 64);
  PlanResult result;
  result.top.push_back(Candidate{l, Cost{}});

  const std::vector<std::string> row = Row(RankTable(result, req), "1");
  REQUIRE(row.size() > 10);
  CHECK(row[1] == "ddp+distopt");
  CHECK(row[9] == "-");  // no local batch: mbs and mb/step say it
  CHECK(row[10] == "64");
  const nlohmann::json j = nlohmann::json::parse(ResultJson(result, req));
  CHECK(j["recipes"][0]["layout"]["microbatches_per_step"] == 64);
  CHECK(j["recipes"][0]["layout"]["grad_accum_steps"] == 64);  // Megatron accumulates over its M micro-batches
  CHECK(RecipesYaml(result, req).find(", 64 micro-batches per step)") != std::string::npos);
}

TEST_CASE("output: JSON round_virtual_stages_to_pp_multiple is JSON null without rounding and up or down with it") {
  // The YAML recipe spells "no rounding" null; the JSON printed the string "null" for it.
  const PlanRequest req = Request("llama3.1-70b", 64, 512, Framework::kAutoModel);
  Layout l = Tp4Pp4Cp2Dp2();
  PlanResult result;
  result.top.push_back(Candidate{l, Cost{}});
  l.stage_rounding = StageRounding::kUp;
  result.top.push_back(Candidate{l, Cost{}});
  const nlohmann::json j = nlohmann::json::parse(ResultJson(result, req));
  const nlohmann::json& none = j["recipes"][0]["layout"]["pipeline"]["round_virtual_stages_to_pp_multiple"];
  CHECK(none.is_null());
  CHECK(j["recipes"][1]["layout"]["pipeline"]["round_virtual_stages_to_pp_multiple"] == "up");
}

TEST_CASE("output: the plan table has TFLOP/s and BF16-peak MFU and FP8-peak MFU and band and out-of-memory and tie columns") {
  // 400 model TFLOP/s per GPU on H100 (989 TFLOP/s dense BF16, 1979 FP8 in hwdb): MFU
  // 400 / 989 = 40.4% against the BF16 peak; an FP8 plan adds MFU8% against the FP8 peak,
  // 400 / 1979 = 20.2%.
  PlanRequest req = Request("llama3.1-70b", 64, 512, Framework::kAutoModel);
  req.setup.precision = Precision::kFp8;
  Candidate c{Tp4Pp4Cp2Dp2(), Cost{}, {}};
  c.cost.model_tflops_per_gpu = 400;
  c.cost.mfu = 400e12 / 989e12;
  c.cost.mfu_precision_peak = 400e12 / 1979e12;
  c.cost.capacity_bytes = 71.2 * 1073741824.0;
  c.cost.memory.weights = 60.0 * 1073741824.0;
  c.risk.step_band = 0.083;
  c.risk.oom_probability = 0.012;
  c.risk.tie = true;
  PlanResult result;
  result.top = {c, c};
  result.top[1].risk.tie = false;
  const std::string table = RankTable(result, req);
  const std::vector<std::string> header = Row(table, "rank");
  const std::vector<std::string> row = Row(table, "1=");
  REQUIRE(header.size() == 22);
  REQUIRE(row.size() == 22);
  CHECK(header[15] == "oom%");
  CHECK(row[15] == "1.2");
  CHECK(header[17] == "band");
  CHECK(row[17] == "\u00b18%");
  CHECK(header[19] == "TFLOP/s");
  CHECK(row[19] == "400");
  CHECK(header[20] == "MFU%");
  CHECK(row[20] == "40.4");
  CHECK(header[21] == "MFU8%");
  CHECK(row[21] == "20.2");
  CHECK(Row(table, "2").size() == 22);  // not tied: no mark
  CHECK(table.find("=: tied, expected step within \u00b18% of the best") != std::string::npos);
  // FP8 JSON: mfu against the BF16 peak, mfu_precision_peak against FP8's.
  const nlohmann::json j8 = nlohmann::json::parse(ResultJson(result, req));
  CHECK(j8["recipes"][0]["mfu"] == doctest::Approx(0.404449));
  CHECK(j8["recipes"][0]["mfu_precision_peak"] == doctest::Approx(0.202122));
  CHECK(j8["recipes"][0]["precision_peak"] == "FP8");  // the peak mfu_precision_peak is against
  CHECK_FALSE(j8["recipes"][0].contains("mfu_bf16_peak"));
  // FP4 on GB200 (2500 TFLOP/s dense BF16, 10000 FP4): its own column is MFU4%.
  PlanRequest fp4 = req;
  fp4.system = LoadSystem("gb200-nvl72");
  fp4.setup.precision = Precision::kFp4;
  const std::vector<std::string> head4 = Row(RankTable(result, fp4), "rank");
  REQUIRE(head4.size() == 22);
  CHECK(head4[21] == "MFU4%");
  CHECK(nlohmann::json::parse(ResultJson(result, fp4))["recipes"][0]["precision_peak"] == "FP4");
  // BF16 plans have no MFU8% column.
  req.setup.precision = Precision::kBf16;
  CHECK(Row(RankTable(result, req), "rank").size() == 21);

  const nlohmann::json j = nlohmann::json::parse(ResultJson(result, req));
  CHECK(j["recipes"][0]["mfu"] == doctest::Approx(400e12 / req.system.gpu.bf16_flops));
  CHECK(j["recipes"][0]["precision_peak"] == "BF16");
  CHECK(j["recipes"][0]["risk"]["tie"] == true);
  CHECK(j["recipes"][1]["risk"]["tie"] == false);
  CHECK(j["recipes"][0]["risk"]["oom_probability"] == doctest::Approx(0.012));
  CHECK(j["recipes"][0]["risk"]["margin_gib"] == doctest::Approx(0.0));  // risk as set, not recomputed
  CHECK(j["ranking"]["rank_by"] == "expected");
  CHECK(j["ranking"]["step_band"] == doctest::Approx(0.083));  // AutoModel dense across nodes
  CHECK(j["ranking"]["memory_band"] == doctest::Approx(0.039));
}
