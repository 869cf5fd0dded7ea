// Search: the enumerator covers the space, and every layout Plan() returns passes every rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "meshplan/framework.hpp"
#include "meshplan/search.hpp"
#include "fixtures/plan_request.hpp"

using namespace meshplan;

namespace {

PlanRequest Request(const std::string& model, const std::string& system, int64_t gpus, int64_t seq, int64_t gbs) {
  PlanRequest req = test::PresetRequest(model, system, gpus, seq, gbs);
  req.top_n = 20;
  return req;
}

void CheckAllValid(const PlanRequest& req, const PlanResult& r) {
  for (const Candidate& c : r.top) {
    const Rule* f = FirstFailure({req.model, req.setup, c.layout, req.version});
    CHECK_MESSAGE(f == nullptr, Describe(c.layout) << " fails " << (f ? f->name : ""));
    CHECK(c.cost.fits);
    CHECK(c.layout.tp * c.layout.cp * c.layout.pp * c.layout.dp == req.setup.num_gpus);
  }
  if (!req.risk_ranking) {
    CHECK(std::is_sorted(r.top.begin(), r.top.end(), RanksBefore));
    return;
  }
  // Risk-aware order (RiskRanked): the tied layouts first, each within the step band of the
  // best expected step, then the rest by expected step, none of them within it.
  const auto tied_end =
      std::find_if(r.top.begin(), r.top.end(), [](const Candidate& c) { return !c.risk.tie; });
  CHECK(std::none_of(tied_end, r.top.end(), [](const Candidate& c) { return c.risk.tie; }));
  double best = std::numeric_limits<double>::infinity();
  for (const Candidate& c : r.top) best = std::min(best, c.risk.expected_step_seconds);
  for (auto it = r.top.begin(); it != tied_end; ++it) {
    CHECK(it->risk.expected_step_seconds <= best * (1 + it->risk.step_band));
  }
  // (An untied first layout is the best itself, alone within its band.)
  for (auto it = tied_end == r.top.begin() ? tied_end + 1 : tied_end; it < r.top.end(); ++it) {
    CHECK(it->risk.expected_step_seconds > best * (1 + it->risk.step_band));
  }
  CHECK(std::is_sorted(tied_end, r.top.end(), ExpectedBefore));
}

}  // namespace

TEST_CASE("search: llama3.1-70b on 32 H100 finds valid and fitting and ranked layouts") {
  PlanRequest req = Request("llama3.1-70b", "dgx-h100", 32, 8192, 512);
  PlanResult r = Plan(req);
  CHECK(r.valid > 0);
  CHECK(r.fitting > 0);
  REQUIRE(r.top.size() == 20);
  CheckAllValid(req, r);
  // A 70B model does not fit unsharded: no DDP layout can be among the fitting ones
  // (16 bytes/param * 70.6e9 = 1.1 TB per GPU).
  for (const Candidate& c : r.top) CHECK(c.layout.strategy != Strategy::kDdp);
  // Rejections are attributed to named rules.
  CHECK(!r.rejected_by_rule.empty());
  for (const auto& [name, n] : r.rejected_by_rule) {
    CHECK(FindRule(name) != nullptr);
    CHECK(n > 0);
  }
}

TEST_CASE("search: the published AutoModel 70B layout is enumerated and valid") {
  // automodel.md 1.5 A: 32 GPUs, tp 4, pp 4, dp 2, interleaved1f1b, lps 4 (20 stages, 5 per rank).
  PlanRequest req = Request("llama3.1-70b", "dgx-h100", 32, 4096, 128);
  const std::vector<Layout> all = EnumerateLayouts(req);
  bool found = false;
  for (const Layout& l : all) {
    if (l.strategy == Strategy::kFsdp2 && l.tp == 4 && l.pp == 4 && l.cp == 1 && l.dp == 2 &&
        l.dp_replicate == 1 && l.pp_schedule == PpSchedule::kInterleaved1F1B &&
        SplitStages(80, l).stages_per_rank == 5 && l.pp_microbatch_size == 1 && l.local_batch_size == 4 &&
        l.recompute == Recompute::kFull && !l.sequence_parallel) {
      found = true;
      CHECK(FirstFailure({req.model, req.setup, l, req.version}) == nullptr);
    }
  }
  CHECK(found);
}

TEST_CASE("search: MoE layouts use EP and never TP") {
  PlanRequest req = Request("qwen3-30b-a3b", "dgx-h100", 8, 4096, 512);
  PlanResult r = Plan(req);
  REQUIRE(!r.top.empty());
  CheckAllValid(req, r);
  for (const Candidate& c : r.top) CHECK(c.layout.tp == 1);
}

TEST_CASE("search: an impossible request has no fitting layout and reports the least memory") {
  // 405B on one 8-GPU node cannot hold even its sharded fp32 Adam moments
  // (8 B/param * 405.85e9 / 8 GPUs = 406 GB per GPU).
  PlanRequest req = Request("llama3.1-405b", "dgx-h100", 8, 8192, 64);
  PlanResult r = Plan(req);
  CHECK(r.valid > 0);
  CHECK(r.fitting == 0);
  REQUIRE(r.least_memory.has_value());
  CHECK(r.least_memory->cost.memory.Total() > 405.85e9 * 8 / 8);
  CHECK(r.least_memory->cost.memory.Total() > r.least_memory->cost.capacity_bytes);
}

TEST_CASE("search: a memory budget below the resident size stops the walk with the best layouts so far") {
  PlanRequest req = Request("llama3.1-70b", "dgx-h100", 32, 8192, 512);
  req.threads = 1;
  const int64_t resident = ResidentBytes();
  REQUIRE(resident > (1 << 20));  // this test binary holds more than 1 MiB
  req.max_memory_bytes = 1 << 20;
  const PlanResult r = Plan(req);
  CHECK(r.stopped == "memory");
  // The size that tripped the budget, not one read again later.
  CHECK(r.stopped_resident_bytes > req.max_memory_bytes);
  // The first check comes after 256 layouts: some were scored, and what is returned is valid.
  CHECK(r.enumerated >= 256);
  CHECK(r.valid > 0);
  CheckAllValid(req, r);
  // It stopped early: the unlimited search walks more layouts.
  req.max_memory_bytes = 0;
  const PlanResult full = Plan(req);
  CHECK(full.stopped.empty());
  CHECK(full.enumerated > r.enumerated);
}

TEST_CASE("search: a deadline already passed stops the walk before its first mesh") {
  // Megatron-Bridge DeepSeek-V3 on 2048 GPUs: a walk of ~0.1 s that a deadline shorter than it
  // used to run to its end (the deadline was read only while scoring).
  PlanRequest req = Request("deepseek-v3", "dgx-h100", 2048, 4096, 8192);
  req.framework = FindFramework("megatron-bridge")->id;
  req.deadline = std::chrono::steady_clock::now();
  const PlanResult r = Plan(req);
  CHECK(r.stopped == "deadline");
  CHECK(r.enumerated == 0);
  CHECK(r.tested == 0);
  CHECK(r.top.empty());
}

TEST_CASE("search: a deadline the search does not reach changes nothing") {
  PlanRequest req = Request("llama3.1-70b", "dgx-h100", 32, 8192, 512);
  req.framework = FindFramework("megatron-bridge")->id;
  const PlanResult free_run = Plan(req);
  req.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  const PlanResult r = Plan(req);
  CHECK(r.stopped.empty());
  CHECK(r.enumerated == free_run.enumerated);
  CHECK(r.tested == free_run.tested);
  CHECK(r.valid == free_run.valid);
  REQUIRE(r.top.size() == free_run.top.size());
  for (size_t i = 0; i < r.top.size(); ++i) CHECK(Describe(r.top[i].layout) == Describe(free_run.top[i].layout));
}

TEST_CASE("search: a memory budget above the resident size changes nothing") {
  PlanRequest req = Request("llama3.1-70b", "dgx-h100", 32, 8192, 512);
  const PlanResult free_run = Plan(req);
  req.max_memory_bytes = ResidentBytes() + (int64_t{64} << 30);  // 64 GiB more than held now
  const PlanResult r = Plan(req);
  CHECK(r.stopped.empty());
  CHECK(r.enumerated == free_run.enumerated);
  REQUIRE(r.top.size() == free_run.top.size());
  for (size_t i = 0; i < r.top.size(); ++i) {
    CHECK(Describe(r.top[i].layout) == Describe(free_run.top[i].layout));
    CHECK(r.top[i].cost.step_seconds == free_run.top[i].cost.step_seconds);
  }
}

TEST_CASE("search: ResidentBytes reads the resident set and grows with held memory") {
  const int64_t before = ResidentBytes();
  CHECK(before > 0);
  std::vector<char> block(size_t{64} << 20, 1);  // 64 MiB, touched
  const int64_t after = ResidentBytes();
  CHECK(after >= before + (int64_t{60} << 20));
  CHECK(block[block.size() - 1] == 1);
}

TEST_CASE("search: max_layouts N tests at most N complete layouts over every thread") {
  // The whole search of this problem tests 20145 valid layouts (more than any N below), so
  // the budget is spent exactly. Before, each thread counted its own layouts (and the mesh
  // walk's), and N = 1 scored 8 layouts, N = 1000 on two threads 4004.
  for (int threads : {1, 2, 4}) {
    for (int64_t n : {1, 50, 1000}) {
      PlanRequest req = Request("llama3.1-70b", "dgx-h100", 32, 8192, 512);
      req.threads = threads;
      req.max_layouts = n;
      const PlanResult r = Plan(req);
      CAPTURE(threads);
      CAPTURE(n);
      CHECK(r.stopped == "max_layouts");
      CHECK(r.tested == n);
      CHECK(r.valid <= n);
      CHECK(r.valid > 0);
      CheckAllValid(req, r);
    }
  }
  // Megatron-Bridge's space (llama3-70b on 64 H100), two threads.
  PlanRequest mb = Request("llama3-70b", "dgx-h100", 64, 8192, 256);
  mb.framework = Framework::kMegatronBridge;
  mb.threads = 2;
  mb.max_layouts = 500;
  const PlanResult r = Plan(mb);
  CHECK(r.stopped == "max_layouts");
  CHECK(r.tested == 500);
  CHECK(r.valid <= 500);
  // Without a limit every layout is tested, and none is counted twice.
  mb.max_layouts = 0;
  const PlanResult all = Plan(mb);
  CHECK(all.stopped.empty());
  CHECK(all.tested > 500);
  CHECK(all.tested >= all.valid);
}

TEST_CASE("search: EnumerateLayouts with max_layouts N returns exactly N layouts") {
  PlanRequest req = Request("llama3.1-70b", "dgx-h100", 32, 8192, 512);
  for (int64_t n : {1, 7, 100}) {
    req.max_layouts = n;
    CHECK(EnumerateLayouts(req).size() == static_cast<size_t>(n));
  }
}
