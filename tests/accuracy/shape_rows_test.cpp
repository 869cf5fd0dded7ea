// Survey rows no preset describes, priced as the generic decoder of their shape columns.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "accuracy/published_runs.hpp"
#include "fixtures/survey_rows.hpp"

using namespace meshplan;
using namespace meshplan::accuracy;

using test::SurveyRow;

TEST_CASE("published runs: a row's shape columns make a generic decoder") {
  const std::string file = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/published_runs_dev.csv";
  const PublishedRuns runs = ParsePublishedRuns(ReadRunsFile(file), file);
  // GPT-3 175B (96 x 12288, 96 heads, FFN 49152 = 4h, vocab 51200): the two-matrix MLP is the
  // one near its published 175B (a SwiGLU of that width would give 232B).
  const PublishedRun& gpt3 = SurveyRow(runs.runs, "25");
  REQUIRE(gpt3.shape_model.has_value());
  CHECK(!gpt3.shape_model->gated_mlp);
  CHECK(gpt3.shape_model->generic_note.find("generic dense decoder given by its shape") != std::string::npos);
  // By hand: 96·(4·12288² + 8·12288² + 2·12288) + 2·51200·12288 + 12288.
  CHECK(CountParams(*gpt3.shape_model).total == 96LL * (12LL * 12288 * 12288 + 2 * 12288) + 2LL * 51200 * 12288 + 12288);
  CHECK(std::fabs(CountParams(*gpt3.shape_model).total / 175e9 - 1) < 0.005);
  // Llama 2 7B (FFN 11008): SwiGLU, 6,738,415,616 parameters (meta-llama/Llama-2-7b-hf).
  const PublishedRun& llama2 = SurveyRow(runs.runs, "79");
  REQUIRE(llama2.shape_model.has_value());
  CHECK(llama2.shape_model->gated_mlp);
  CHECK(CountParams(*llama2.shape_model).total == 6738415616);
  // Nemotron-4 340B: squared-ReLU MLP of 4h, GQA 8; published 341B.
  const PublishedRun& n4 = SurveyRow(runs.runs, "63");
  REQUIRE(n4.shape_model.has_value());
  CHECK(!n4.shape_model->gated_mlp);
  CHECK(n4.shape_model->num_key_value_heads == 8);
  CHECK(std::fabs(CountParams(*n4.shape_model).total / 341e9 - 1) < 0.005);
  // A size the survey gives with a trailing '?' ("50257?") is used as given and named in the
  // model's note. NeMo GPT-3 5B: 24 x 4096, FFN 16384 = 4h (two-matrix), vocab 50257.
  const PublishedRun& nemo = SurveyRow(runs.runs, "67");
  REQUIRE(nemo.shape_model.has_value());
  CHECK(nemo.skip.empty());
  CHECK(nemo.shape_model->vocab_size == 50257);
  CHECK(CountParams(*nemo.shape_model).total == 24LL * (12LL * 4096 * 4096 + 2 * 4096) + 2LL * 50257 * 4096 + 4096);
  CHECK(nemo.shape_model->generic_note.find("used as given: vocab '50257?'") != std::string::npos);
  // Nemotron-3 8B: every size marked, all five named in the note, in column order.
  const PublishedRun& n3 = SurveyRow(runs.runs, "74");
  REQUIRE(n3.shape_model.has_value());
  CHECK(n3.shape_model->num_layers == 32);
  CHECK(n3.shape_model->generic_note.find("layers '32?', hidden '4096?', heads '32?', kv_heads '32?', ffn_hidden '16384?'") !=
        std::string::npos);
  // A preset's row keeps its preset.
  CHECK(!SurveyRow(runs.runs, "65").shape_model.has_value());
  CHECK(SurveyRow(runs.runs, "65").preset == "deepseek-v3");
  // Nemotron 3 Nano: the hybrid preset (skipped by Validate as not priced).
  CHECK(SurveyRow(runs.runs, "114").preset == "nemotron-3-nano");
}

TEST_CASE("published runs: a shape cell whose count is in doubt leaves the row skipped") {
  // '?' with words after the number ("52? (hybrid ...)"), a bare '?' or one inside the digits
  // is not a size to use. The survey's own header; a Llama-3-8B-shaped row on 64 H100.
  const std::string header =
      "id,model,params_B,active_params_B,layers,hidden,heads,kv_heads,ffn_hidden,vocab,experts,topk,seq_len,"
      "global_batch,micro_batch,num_gpus,gpu_type,TP,PP,VPP,CP,EP,DP,zero_fsdp_distopt,recompute,precision,"
      "tflops_per_gpu,mfu,tokens_per_s_per_gpu,step_time_s,mem_per_gpu,flops_basis,derived_tokens_per_s_per_gpu,"
      "notes,source\n";
  for (const char* layers : {"52? (hybrid)", "?", "3?2"}) {
    const std::string csv = header + "1,Some Model,8,," + layers +
                            ",4096,32,8,14336,128256,,,4096,512,1,64,H100 80GB SXM,1,1,,1,,64,,,BF16,400,,,,,,,,paper\n";
    const PublishedRuns runs = ParsePublishedRuns(csv, "inline.csv");
    REQUIRE(runs.runs.size() == 1);
    CHECK(!runs.runs[0].shape_model.has_value());
    CHECK(runs.runs[0].skip_detail.find(std::string("layers '") + layers + "' is not a stated size") != std::string::npos);
  }
}
