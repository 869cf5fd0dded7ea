// Reading a Megatron-Bridge override file (planner/recipe/megatron_read.cpp): the values read,
// and the inputs Megatron-Bridge / Megatron-Core refuse, refused with file, line, field,
// expected and found.
#include <doctest/doctest.h>

#include <string>

#include "fixtures/input_error.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

ParsedRecipe Read(const std::string& text) { return ParseMegatronRecipe(text, "r.yaml", 8); }

// The InputError reading `text` throws (FAILs when there is none).
InputError ReadError(const std::string& text) {
  return test::ErrorOf([&] { (void)Read(text); });
}

}  // namespace

TEST_CASE("megatron_read: recompute_granularity is null or full or selective and the string none is refused") {
  // Python's None is YAML null (or the key left out): no recompute.
  CHECK(Read("model:\n  recompute_granularity: null\n").layout.recompute == Recompute::kNone);
  CHECK(Read("model:\n  recompute_granularity: ~\n").layout.recompute == Recompute::kNone);
  CHECK(Read("model:\n  tensor_model_parallel_size: 2\n").layout.recompute == Recompute::kNone);
  const ParsedRecipe full =
      Read("model:\n  recompute_granularity: full\n  recompute_method: block\n  recompute_num_layers: 3\n");
  CHECK(full.layout.recompute == Recompute::kFull);
  CHECK(full.layout.mb.recompute_method == MbRecomputeMethod::kBlock);
  CHECK(full.layout.mb.recompute_num_layers == 3);
  CHECK(Read("model:\n  recompute_granularity: selective\n").layout.recompute == Recompute::kSelective);
  // OmegaConf reads none / None as strings; Megatron-Core raises ValueError for them
  // (transformer_config.py:1901-1906). Quoted or not, they are refused where they stand.
  for (const std::string none : {"none", "None", "\"none\""}) {
    CAPTURE(none);
    const InputError e = ReadError("model:\n  tensor_model_parallel_size: 2\n  recompute_granularity: " + none + "\n");
    CHECK(e.loc().file == "r.yaml");
    CHECK(e.loc().line == 3);
    CHECK(e.loc().column == 3);
    CHECK(e.field() == "model.recompute_granularity");
    const std::string unquoted = none == "None" ? "None" : "none";
    CHECK(e.message() == "expected full, selective or null (no recompute); found '" + unquoted +
                             "' (a string, not None: Megatron-Bridge's YAML loader reads it as the string; write null)");
  }
  // Another misspelling names no null.
  CHECK(ReadError("model:\n  recompute_granularity: ful\n").message() ==
        "expected full, selective or null (no recompute); found 'ful'");
}

TEST_CASE("megatron_read: none is a value and not null in every field") {
  // cuda_graph_impl "none" is a Megatron-Core value (no graphs); the scope then has no effect.
  const ParsedRecipe no_graphs = Read("model:\n  cuda_graph_impl: none\n  cuda_graph_scope: [attn]\n");
  CHECK(no_graphs.layout.mb.cuda_graph == MbCudaGraph::kNone);
  CHECK(no_graphs.layout.mb.cuda_graph_scope == 0u);
  // A size written None is not the default: Megatron-Bridge would set the string.
  InputError e = ReadError("model:\n  virtual_pipeline_model_parallel_size: None\n");
  CHECK(e.field() == "model.virtual_pipeline_model_parallel_size");
  CHECK(e.loc().line == 2);
  CHECK(e.message() == "expected an integer, found 'None'");
  e = ReadError("model:\n  recompute_granularity: full\n  recompute_method: none\n");
  CHECK(e.field() == "model.recompute_method");
  CHECK(e.message().rfind("expected uniform, block or null; found 'none' (a string, not None", 0) == 0);
  e = ReadError("ddp:\n  overlap_grad_reduce: None\n");
  CHECK(e.field() == "ddp.overlap_grad_reduce");
  CHECK(e.message() == "expected true or false, found 'None'");
  // mixed_precision none names no registered recipe (get_mixed_precision_config raises).
  e = ReadError("model: {tensor_model_parallel_size: 1}\nmixed_precision: none\n");
  CHECK(e.field() == "mixed_precision");
  CHECK(e.message().find("found 'none'") != std::string::npos);
}
