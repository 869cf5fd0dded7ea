// Survey rows no preset describes, priced as the generic decoder of their shape columns.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "accuracy/published_runs.hpp"

using namespace meshplan;
using namespace meshplan::accuracy;

namespace {

const PublishedRun& Row(const PublishedRuns& runs, const std::string& id) {
  for (const PublishedRun& r : runs.runs) {
    if (r.label.rfind("#" + id + " ", 0) == 0) return r;
  }
  FAIL("no row #" << id);
  return runs.runs.front();
}

}  // namespace

TEST_CASE("published runs: a row's shape columns make a generic decoder") {
  const std::string file = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/published_runs_dev.csv";
  const PublishedRuns runs = ParsePublishedRuns(ReadRunsFile(file), file);
  // GPT-3 175B (96 x 12288, 96 heads, FFN 49152 = 4h, vocab 51200): the two-matrix MLP is the
  // one near its published 175B (a SwiGLU of that width would give 232B).
  const PublishedRun& gpt3 = Row(runs, "25");
  REQUIRE(gpt3.shape_model.has_value());
  CHECK(!gpt3.shape_model->gated_mlp);
  CHECK(gpt3.shape_model->generic_note.find("generic dense decoder given by its shape") != std::string::npos);
  // By hand: 96·(4·12288² + 8·12288² + 2·12288) + 2·51200·12288 + 12288.
  CHECK(CountParams(*gpt3.shape_model).total == 96LL * (12LL * 12288 * 12288 + 2 * 12288) + 2LL * 51200 * 12288 + 12288);
  CHECK(std::fabs(CountParams(*gpt3.shape_model).total / 175e9 - 1) < 0.005);
  // Llama 2 7B (FFN 11008): SwiGLU, 6,738,415,616 parameters (meta-llama/Llama-2-7b-hf).
  const PublishedRun& llama2 = Row(runs, "79");
  REQUIRE(llama2.shape_model.has_value());
  CHECK(llama2.shape_model->gated_mlp);
  CHECK(CountParams(*llama2.shape_model).total == 6738415616);
  // Nemotron-4 340B: squared-ReLU MLP of 4h, GQA 8; published 341B.
  const PublishedRun& n4 = Row(runs, "63");
  REQUIRE(n4.shape_model.has_value());
  CHECK(!n4.shape_model->gated_mlp);
  CHECK(n4.shape_model->num_key_value_heads == 8);
  CHECK(std::fabs(CountParams(*n4.shape_model).total / 341e9 - 1) < 0.005);
  // A size the survey marks uncertain ("50257?") leaves the row skipped, the cell named.
  const PublishedRun& nemo = Row(runs, "67");
  CHECK(!nemo.shape_model.has_value());
  CHECK(nemo.skip.rfind("model not describable", 0) == 0);
  CHECK(nemo.skip_detail.find("vocab '50257?' is not a stated size") != std::string::npos);
  // A preset's row keeps its preset.
  CHECK(!Row(runs, "65").shape_model.has_value());
  CHECK(Row(runs, "65").preset == "deepseek-v3");
  // Nemotron 3 Nano: the hybrid preset (skipped by Validate as not priced).
  CHECK(Row(runs, "114").preset == "nemotron-3-nano");
}
