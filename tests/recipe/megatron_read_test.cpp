// Reading a Megatron-Bridge override file (planner/frameworks/megatron_bridge/recipe_read.cpp): the values read,
// and the inputs Megatron-Bridge / Megatron-Core refuse, refused with file, line, field,
// expected and found.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixtures/input_error.hpp"
#include "meshplan/recipe.hpp"

using namespace meshplan;

namespace {

ParsedRecipe Read(const std::string& text) { return ParseMegatronRecipe(text, "r.yaml", 8); }

// The InputError reading `text` throws (FAILs when there is none).
InputError ReadError(const std::string& text) {
  return test::ErrorOf([&] { (void)Read(text); });
}

// A recipe refused at `line` (the key's line, column 3), with its field and message.
struct Refused {
  std::string text, field, message;
  int line;
};

void CheckRefused(const Refused& c) {
  CAPTURE(c.text);
  const InputError e = ReadError(c.text);
  CHECK(e.loc().file == "r.yaml");
  CHECK(e.loc().line == c.line);
  CHECK(e.loc().column == 3);
  CHECK(e.field() == c.field);
  CHECK(e.message() == c.message);
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

TEST_CASE("megatron_read: integer fields take integers and refuse floats and quoted strings") {
  const ParsedRecipe r = Read(
      "model:\n  tensor_model_parallel_size: 4\n  pipeline_model_parallel_size: 2\n  seq_length: 8192\n"
      "train:\n  global_batch_size: 128\n  micro_batch_size: 2\nenv_vars:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\n");
  CHECK(r.layout.tp == 4);
  CHECK(r.layout.pp == 2);
  CHECK(r.layout.dp == 1);
  CHECK(r.seq_len == 8192);
  CHECK(r.global_batch == 128);
  CHECK(r.layout.mb.cuda_device_max_connections == 1);
  // OmegaConf reads 4.0 as a float and "4" as a string and sets either on the config as it is:
  // refused in every section, with the position of the key.
  for (const Refused& c : {
           Refused{"model:\n  tensor_model_parallel_size: 4.0\n", "model.tensor_model_parallel_size",
                "expected an integer, found '4.0' (a float; write 4)", 2},
           Refused{"model:\n  tensor_model_parallel_size: \"4\"\n", "model.tensor_model_parallel_size",
                "expected an integer, found the string \"4\"", 2},
           Refused{"model:\n  tensor_model_parallel_size: '4'\n", "model.tensor_model_parallel_size",
                "expected an integer, found the string \"4\"", 2},
           Refused{"model:\n  pipeline_model_parallel_size: 1e1\n", "model.pipeline_model_parallel_size",
                "expected an integer, found '1e1' (a float; write 10)", 2},
           Refused{"model:\n  tensor_model_parallel_size: 2\n  expert_model_parallel_size: 8.5\n",
                "model.expert_model_parallel_size", "expected an integer, found '8.5'", 3},
           Refused{"model: {seq_length: 4096}\ntrain:\n  global_batch_size: 64.0\n", "train.global_batch_size",
                "expected an integer, found '64.0' (a float; write 64)", 3},
           Refused{"ddp:\n  bucket_size: \"40000000\"\n", "ddp.bucket_size",
                "expected an integer, found the string \"40000000\"", 2},
       }) {
    CheckRefused(c);
  }
  // env_vars are strings to Megatron-Bridge (exported with str(value)): "8" is 8.
  CHECK(Read("model: {tensor_model_parallel_size: 1}\nenv_vars:\n  CUDA_DEVICE_MAX_CONNECTIONS: \"8\"\n")
            .layout.mb.cuda_device_max_connections == 8);
}

TEST_CASE("megatron_read: a mixed_precision map sets the precision from fp8 and fp4") {
  const std::string head = "model: {tensor_model_parallel_size: 1, seq_length: 4096}\nmixed_precision:\n";
  struct Case {
    std::string map;
    Precision precision;
  };
  // fp8 (e4m3 or hybrid) with any scaling recipe, MXFP8 included, is priced as FP8, as the
  // registered bf16_with_*fp8* recipes are; fp4 e2m1 (NVFP4) as FP4.
  for (const Case& c : {
           Case{"  fp8: hybrid\n  fp8_recipe: tensorwise\n  fp8_param_gather: true\n", Precision::kFp8},
           Case{"  bf16: true\n  fp8: e4m3\n  fp8_recipe: mxfp8\n  reuse_grad_buf_for_mxfp8_param_ag: true\n",
                Precision::kFp8},
           Case{"  fp8: hybrid\n  fp8_recipe: delayed\n  fp8_amax_history_len: 1024\n  fp8_amax_compute_algo: max\n",
                Precision::kFp8},
           Case{"  fp8: hybrid\n  fp8_recipe: blockwise\n  first_last_layers_bf16: true\n", Precision::kFp8},
           Case{"  fp8: null\n  fp4: e2m1\n  fp4_recipe: nvfp4\n  fp4_param_gather: true\n", Precision::kFp4},
           // The map says neither: bf16.
           Case{"  fp8: null\n  fp4: null\n  bf16: true\n", Precision::kBf16},
           Case{"  _target_: megatron.bridge.training.mixed_precision.MixedPrecisionConfig\n  bf16: true\n",
                Precision::kBf16},
       }) {
    CAPTURE(c.map);
    const ParsedRecipe r = Read(head + c.map);
    CHECK(r.precision_set);
    CHECK(r.precision == c.precision);
    // That no recipe function is named, then train.global_batch_size, train.micro_batch_size.
    REQUIRE(r.defaults_used.size() == 3);
    CHECK(r.defaults_used[0].find("no recipe function named (--mb-recipe)") == 0);
  }
  // A map that sets neither keeps the recipe's own fp8 / fp4: bf16 is assumed, and said.
  const ParsedRecipe partial = Read(head + "  bf16: true\n  grad_reduce_in_fp32: false\n");
  CHECK_FALSE(partial.precision_set);
  CHECK(partial.precision == Precision::kBf16);
  CHECK_FALSE(partial.layout.mb.grad_reduce_in_fp32);
  REQUIRE(partial.defaults_used.size() == 4);
  CHECK(partial.defaults_used[3].rfind("mixed_precision.fp8 / fp4 = the recipe's own (the map sets neither", 0) == 0);
}

TEST_CASE("megatron_read: a mixed_precision map refuses unknown keys and values Megatron-Core refuses") {
  const std::string head = "model: {tensor_model_parallel_size: 1, seq_length: 4096}\nmixed_precision:\n";
  for (const Refused& c : {
           // Megatron-Bridge would skip it with a logged warning and keep the recipe's fp8_recipe.
           Refused{head + "  fp8: hybrid\n  fp8_recipie: mxfp8\n", "mixed_precision.fp8_recipie",
                "unknown key; did you mean 'fp8_recipe'?", 4},
           Refused{head + "  fp8: true\n", "mixed_precision.fp8", "expected e4m3, hybrid or null; found 'true'", 3},
           Refused{head + "  fp8: e5m2\n", "mixed_precision.fp8", "expected e4m3, hybrid or null; found 'e5m2'", 3},
           Refused{head + "  fp8: hybrid\n  fp8_recipe: current\n", "mixed_precision.fp8_recipe",
                "expected tensorwise, delayed, mxfp8, blockwise, custom or null; found 'current'", 4},
           Refused{head + "  fp4: nvfp4\n", "mixed_precision.fp4", "expected e2m1 or null; found 'nvfp4'", 3},
           Refused{head + "  fp8: hybrid\n  fp4: e2m1\n", "mixed_precision.fp4",
                "expected fp8 or fp4, not both (Megatron-Bridge raises: fp4 and fp8 cannot be used simultaneously); "
                "found fp8: hybrid and fp4: e2m1",
                4},
           Refused{head + "  _target_: megatron.bridge.training.mixed_precision.bf16_mixed\n", "mixed_precision._target_",
                "expected megatron.bridge.training.mixed_precision.MixedPrecisionConfig (or no _target_: the keys then "
                "apply to the recipe's mixed-precision config); found 'megatron.bridge.training.mixed_precision.bf16_mixed'",
                3},
       }) {
    CheckRefused(c);
  }
}

TEST_CASE("megatron_read: a key meshplan reads is refused in a section whose config lacks it") {
  // Megatron-Bridge skips it there with a logged warning (omegaconf_utils.py _apply_overrides),
  // so the recipe's own value stays: train.tensor_model_parallel_size left TP at 1.
  const std::string note =
      "; Megatron-Bridge would not apply it there (it skips a key its config does not have, with only a logged warning)";
  for (const Refused& c : std::vector<Refused>{
           {"model:\n  seq_length: 4096\ntrain:\n  tensor_model_parallel_size: 8\n", "train.tensor_model_parallel_size",
            "expected tensor_model_parallel_size under model:, found it under train:" + note, 4},
           {"model:\n  tensor_model_parallel_size: 2\n  micro_batch_size: 2\n", "model.micro_batch_size",
            "expected micro_batch_size under train:, found it under model:" + note, 3},
           {"model:\n  tensor_model_parallel_size: 2\ntrain:\n  use_megatron_fsdp: true\n", "train.use_megatron_fsdp",
            "expected use_megatron_fsdp under ddp: or dist:, found it under train:" + note, 4},
           {"ddp:\n  use_distributed_optimizer: true\n  bucket_size: 1000\n  ckpt_format: torch_dist\n",
            "ddp.ckpt_format", "expected ckpt_format under checkpoint:, found it under ddp:" + note, 4},
           {"model:\n  tensor_model_parallel_size: 2\ndist:\n  overlap_param_gather: true\n", "dist.overlap_param_gather",
            "expected overlap_param_gather under ddp:, optimizer: or comm_overlap:, found it under dist:" + note, 4},
           {"model:\n  tensor_model_parallel_size: 2\nmixed_precision:\n  fp8: e4m3\n  seq_length: 4096\n",
            "mixed_precision.seq_length", "expected seq_length under model: or dataset:, found it under mixed_precision:" + note, 5},
       }) {
    CheckRefused(c);
  }
  // At the top level (ConfigContainer has no such field either): column 1.
  const InputError e = ReadError("model:\n  tensor_model_parallel_size: 2\nseq_length: 4096\n");
  CHECK(e.loc().line == 3);
  CHECK(e.loc().column == 1);
  CHECK(e.field() == "seq_length");
  CHECK(e.message() == "expected seq_length under model: or dataset:, found it at the top level" + note);
}

TEST_CASE("megatron_read: keys that several configs have are read in each and unread sections keep any key") {
  // DDP and optimizer configs both have use_distributed_optimizer and overlap_param_gather, DDP and
  // CommOverlapConfig overlap_grad_reduce and bucket_size, DDP and DistributedInitConfig
  // use_megatron_fsdp, TransformerConfig and CommOverlapConfig the p2p and TP/EP overlap switches,
  // MixedPrecisionConfig grad_reduce_in_fp32 and pipeline_dtype; GPTDatasetConfig has
  // seq_length, and env_vars takes any name.
  const ParsedRecipe r = Read(
      "model:\n  tensor_model_parallel_size: 2\n  seq_length: 4096\n  overlap_moe_expert_parallel_comm: false\n"
      "  tp_comm_overlap: false\n"
      "optimizer:\n  use_distributed_optimizer: true\n  overlap_param_gather: true\n"
      "comm_overlap:\n  overlap_grad_reduce: true\n  bucket_size: 1000\n  overlap_p2p_comm: false\n"
      "dist:\n  use_megatron_fsdp: false\n"
      "mixed_precision:\n  grad_reduce_in_fp32: true\n  pipeline_dtype: bf16\n"
      "dataset:\n  seq_length: 4096\n  micro_batch_size: 1\n"
      "env_vars:\n  seq_length: 1\n"
      "logger:\n  save: /tmp/x\n");
  CHECK(r.layout.tp == 2);
  CHECK(r.seq_len == 4096);
  CHECK(r.layout.use_distributed_optimizer);
  CHECK(r.layout.mb.bucket_size == 1000);
}
