// `meshplan explain` (planner/cli/explain.cpp): exit status and the report's content.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "meshplan/diag.hpp"

namespace meshplan {
namespace {

/// Runs RunExplain with stdout captured; returns the exit status.
int Explain(const cli::ExplainOptions& o, std::string& out) {
  std::fflush(stdout);
  std::cout.flush();
  FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  const int saved = dup(1);
  dup2(fileno(tmp), 1);
  int rc = -1;
  try {
    rc = cli::RunExplain(o);
  } catch (...) {
    std::fflush(stdout);
    std::cout.flush();
    dup2(saved, 1);
    close(saved);
    std::fclose(tmp);
    throw;
  }
  std::fflush(stdout);
  std::cout.flush();
  dup2(saved, 1);
  close(saved);
  std::rewind(tmp);
  out.clear();
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) out.append(buf, n);
  std::fclose(tmp);
  return rc;
}

cli::ExplainOptions Llama8B() {
  cli::ExplainOptions o;
  o.in.setup.model = "llama3.1-8b";
  o.in.setup.system = "dgx-h100";
  o.in.setup.gpus = 8;
  o.seq_len = 8192;
  o.global_batch = 64;
  o.in.keys.local_batch = 2;
  o.recompute = "selective";
  o.defer_fsdp_grad_sync = "false";  // as plan's recipes write it with gradient accumulation
  return o;
}

TEST_CASE("explain: a valid layout that fits exits 0 and prints every memory and time term") {
  std::string out;
  CHECK(Explain(Llama8B(), out) == 0);
  for (const char* s : {"rules: valid", "weights", "gradients", "optimizer state", "activations", "logits + loss",
                        "FSDP / optimizer buffers", "CUDA context + NCCL", "peak moment", "backward start",
                        "pipeline bubble", "MFU", "fits:"}) {
    CAPTURE(s);
    CHECK(out.find(s) != std::string::npos);
  }
}

TEST_CASE("explain: a layout breaking a rule names the rule and exits 1") {
  cli::ExplainOptions o = Llama8B();
  o.in.keys.tp = 3;  // 8 GPUs are not divisible by tp 3: dp cannot be inferred
  std::string out;
  CHECK(Explain(o, out) == 1);
  CHECK(out.find("INVALID") != std::string::npos);
  CHECK(out.find("axes_positive") != std::string::npos);
}

TEST_CASE("explain: pipeline stages that differ get a column each and a layout that does not fit exits 1") {
  cli::ExplainOptions o;
  o.in.setup.model = "llama3.1-70b";
  o.in.setup.system = "dgx-h100";
  o.in.setup.gpus = 32;
  o.seq_len = 8192;
  o.global_batch = 512;
  o.in.keys.tp = 4;
  o.in.keys.pp = 2;
  o.in.keys.local_batch = 8;
  o.pp_schedule = "interleaved1f1b";
  o.recompute = "full";
  o.in.keys.sequence_parallel = true;
  std::string out;
  CHECK(Explain(o, out) == 1);
  CHECK(out.find("stage 0") != std::string::npos);
  CHECK(out.find("stage 1") != std::string::npos);
  CHECK(out.find("does NOT fit") != std::string::npos);
}

TEST_CASE("explain: an AutoModel recipe gives the layout and the global batch") {
  cli::ExplainOptions o;
  o.in.setup.model = "llama3.1-70b";
  o.in.setup.system = "dgx-h100";
  o.in.setup.gpus = 32;
  o.seq_len = 8192;
  o.in.recipe = std::string(MESHPLAN_SOURCE_DIR) + "/tests/data/recipes/automodel_a_llama3_70b_pretrain_32gpu.yaml";
  std::string out;
  const int rc = Explain(o, out);
  CHECK((rc == 0 || rc == 1));
  CHECK(out.find("layout: fsdp2 tp4 pp") != std::string::npos);
  CHECK(out.find("global batch") != std::string::npos);
}

TEST_CASE("explain: unusable input throws InputError (exit 2)") {
  cli::ExplainOptions o = Llama8B();
  o.in.keys.tp = 0;
  std::string out;
  CHECK_THROWS_AS(Explain(o, out), InputError);
  o = Llama8B();
  o.global_batch = 0;
  CHECK_THROWS_AS(Explain(o, out), InputError);
  o = Llama8B();
  o.in.setup.model = "no-such-model";
  CHECK_THROWS_AS(Explain(o, out), InputError);
}

}  // namespace
}  // namespace meshplan
