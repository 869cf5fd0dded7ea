// The published-runs reader (planner/accuracy/published_runs.cpp): CSV text -> typed runs with
// their skip reasons, the errors that refuse a file, and the layout of a run.
#include <doctest/doctest.h>

#include <string>

#include "accuracy/published_runs.hpp"
#include "meshplan/diag.hpp"

using namespace meshplan;
using namespace meshplan::accuracy;

namespace {

const std::string kPerfHeader =
    "release,task,model,system,gpus,precision,gbs,mbs,seq,fsdp,tp,pp,cp,vp,ep,ga,tokens_per_s_per_gpu,"
    "model_tflops_per_gpu\n";

}  // namespace

TEST_CASE("published runs: a perf-table row reads into its sizes and setup and throughput") {
  const PublishedRuns p = ParsePublishedRuns(
      kPerfHeader + "26.04,Pre-Training,LLAMA3_70B,DGX-H100,64,FP8,256,1,8192,0,4,8,1,5,n/a,,1633 (1600),734\n", "t.csv");
  CHECK(p.format == PublishedRunsFormat::kMegatronBridgePerf);
  REQUIRE(p.runs.size() == 1);
  const PublishedRun& r = p.runs[0];
  CHECK(r.line == 2);
  CHECK(r.skip == "");
  CHECK(r.label == "LLAMA3_70B DGX-H100 64 FP8");
  CHECK(r.release == "26.04");
  CHECK(r.preset == "llama3-70b");
  CHECK(r.system == "dgx-h100");
  CHECK(r.setup.num_gpus == 64);
  CHECK(r.setup.global_batch == 256);
  CHECK(r.setup.seq_len == 8192);
  CHECK(r.setup.precision == Precision::kFp8);
  CHECK(r.tp == 4);
  CHECK(r.pp == 8);
  CHECK(r.vpp == 5);
  CHECK(r.ep == 1);  // n/a
  CHECK(r.published_tokens == 1633);  // the first configuration of "1633 (1600)"
  CHECK(r.published_tflops == 734);
  // Its layout: DP 64 / (4 x 8) = 2, sequence parallel with TP, 80 layers over PP 8 evenly.
  const Layout l = PublishedLayout(r, LoadModel(r.preset), LoadSystem(r.system), nullptr);
  CHECK(l.dp == 2);
  CHECK(l.sequence_parallel);
  CHECK(l.etp == 0);  // a dense model
  CHECK(l.pp_split == MbPpSplit::kEven);
}

TEST_CASE("published runs: rows that cannot be priced carry their reason and blank lines are not rows") {
  const PublishedRuns p = ParsePublishedRuns(
      kPerfHeader +
          "26.06,LoRA,LLAMA3_70B,DGX-H100,8,FP8,32,1,4096,,2,4,1,20,n/a,,2643,735\n"
          "\n"
          "26.04,Pre-Training,LLAMA3_70B,DGX-X900,64,FP8,256,1,8192,0,4,8,1,5,n/a,,1633,734\n"
          "26.04,Pre-Training,LLAMA3_70B,DGX-H100,64,FP8,256,1,8192,0,3.5,8,1,5,n/a,,1633,734\n"
          "26.04,Pre-Training,NEMOTRONH_56B,DGX-H100,64,FP8,256,1,8192,0,4,8,1,5,n/a,,1633,734\n"
          "26.04,Pre-Training,LLAMA3_70B,DGX-H100,64,FP8,256,1,8192,0,4,8,1,5,n/a,,,\n"
          "26.04,Pre-Training,LLAMA3_70B,DGX-H100,60,FP8,256,1,8192,0,4,8,1,5,n/a,,1633,734\n",
      "t.csv");
  REQUIRE(p.runs.size() == 6);
  CHECK(p.runs[0].skip == "LoRA (frozen base weights: no weight-gradient GEMMs) not modelled");
  CHECK(p.runs[1].line == 4);
  CHECK(p.runs[1].skip == "no hwdb system for the GPU");
  CHECK(p.runs[1].skip_detail == "no hwdb system for the GPU 'DGX-X900'");
  CHECK(p.runs[2].skip == "tp: expected an integer in [1, 1048576], found '3.5'");
  CHECK(p.runs[3].skip == "model not describable (no preset for the model name)");
  CHECK(p.runs[4].skip == "no published throughput");
  CHECK(p.runs[5].skip == "sizes do not divide the GPUs");
}

TEST_CASE("published runs: a survey row reads its columns by name") {
  const PublishedRuns p = ParsePublishedRuns(
      "id,model,num_gpus,gpu_type,TP,PP,VPP,CP,EP,global_batch,seq_len,micro_batch,zero_fsdp_distopt,recompute,"
      "precision,tflops_per_gpu,tokens_per_s_per_gpu\n"
      "7,Llama 3 70B,64,H100 80GB SXM,4,4,interleaved (v=?),1,1,128,8192,1,distributed optimizer,full,BF16,400,\n",
      "s.csv");
  CHECK(p.format == PublishedRunsFormat::kSurvey);
  REQUIRE(p.runs.size() == 1);
  const PublishedRun& r = p.runs[0];
  CHECK(r.skip == "");
  CHECK(r.label == "#7 Llama 3 70B 64");
  CHECK(r.preset == "llama3-70b");
  CHECK(r.system == "dgx-h100");
  CHECK(r.vpp == 1);  // unknown interleaving: 1
  CHECK(r.recompute == Recompute::kFull);
  CHECK(r.published_tflops == 400);
  CHECK(r.published_tokens == 0);
}

TEST_CASE("published runs: a file that is not a runs table or has a row the CSV breaks is refused") {
  auto error = [](const std::string& text) {
    try {
      ParsePublishedRuns(text, "t.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("").find("found an empty file") != std::string::npos);
  CHECK(error("\nrelease\n").find("found an empty first line") != std::string::npos);
  CHECK(error("a,b\n").find("found 'a,b'") != std::string::npos);
  CHECK(error("release,task,model_tflops_per_gpu\n").find("expected column 3 of a Megatron-Bridge perf table to be "
                                                          "'model', found 'model_tflops_per_gpu'") != std::string::npos);
  CHECK(error(kPerfHeader + "26.04,\"Pre-Training\n").find("t.csv:2:1") != std::string::npos);
  CHECK(error(kPerfHeader + "26.04,Pre-Training\n").find("expected 18 cells as in the header, found 2") !=
        std::string::npos);
}
