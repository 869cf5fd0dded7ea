// The Megatron-Bridge space's shortcuts give what the plain walk gives: MeshesAt builds the
// meshes Meshes emits at the positions asked for, FeatureView's patched view of a feature set
// equals ToCostView of it (the search bounds subtrees from both), and the rows the walk leaves
// out because the space passes them by construction (EmitsOnlyLayoutsPassing) pass on every mesh
// and feature set it emits.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/plan_request.hpp"
#include "frameworks/megatron_bridge/space.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/rules.hpp"
#include "search/driver.hpp"

namespace meshplan {
namespace {

PlanRequest MbRequest(const char* model, const char* system, int64_t gpus, int64_t seq, int64_t gbs) {
  PlanRequest req = test::PresetRequest(model, system, gpus, seq, gbs);
  req.framework = Framework::kMegatronBridge;
  req.mb_search_dispatchers = true;  // several dispatchers per mesh: the blocks' mesh counts
  return req;
}

TEST_CASE("search: Megatron-Bridge MeshesAt builds exactly the meshes Meshes emits there") {
  for (const PlanRequest& req : {MbRequest("deepseek-v3", "dgx-h100", 256, 4096, 1024),
                                 MbRequest("qwen3-30b-a3b", "gb200-nvl72", 72, 8192, 576),
                                 MbRequest("llama3.1-70b", "dgx-h100", 64, 8192, 512)}) {
    CAPTURE(req.model.name);
    const auto space = search::MakeMegatronSpace(req);
    int64_t compared = 0;
    for (size_t part = 0; part < space->MeshParts(); ++part) {
      std::vector<Layout> all;
      space->Meshes(part, [&](const Layout& l) { all.push_back(l); });
      // Every third position, and the last one plus one past the end (none there).
      std::vector<uint32_t> positions;
      for (uint32_t i = part % 3; i < all.size(); i += 3) positions.push_back(i);
      if (!all.empty() && (positions.empty() || positions.back() != all.size() - 1)) {
        positions.push_back(static_cast<uint32_t>(all.size() - 1));
      }
      positions.push_back(static_cast<uint32_t>(all.size()) + 5);
      std::vector<Layout> some;
      space->MeshesAt(part, positions, [&](const Layout& l) { some.push_back(l); });
      REQUIRE(some.size() == positions.size() - 1);
      for (size_t k = 0; k < some.size(); ++k) {
        const Layout& a = all[positions[k]];
        CHECK(Describe(some[k]) == Describe(a));
        CHECK(some[k].mb.token_dispatcher == a.mb.token_dispatcher);
        CHECK(some[k].mb.flex_backend == a.mb.flex_backend);
        CHECK(some[k].mb.cp_comm == a.mb.cp_comm);
        CHECK(some[k].mb.use_megatron_fsdp == a.mb.use_megatron_fsdp);
        CHECK(some[k].use_distributed_optimizer == a.use_distributed_optimizer);
        CHECK(some[k].etp == a.etp);
        ++compared;
      }
    }
    CHECK(compared > 100);
  }
}

TEST_CASE("search: a Megatron-Bridge feature set's view patched from its sibling's equals its own") {
  for (const PlanRequest& req : {MbRequest("deepseek-v3", "dgx-h100", 256, 4096, 1024),
                                 MbRequest("qwen3-30b-a3b", "gb200-nvl72", 72, 8192, 576)}) {
    CAPTURE(req.model.name);
    const auto space = search::MakeMegatronSpace(req);
    int64_t compared = 0;
    std::vector<Layout> features;
    for (size_t part = 0; part < space->MeshParts(); part += 13) {
      space->Meshes(part, [&](const Layout& mesh) {
        features.clear();
        space->Features(mesh, features);
        // Each feature set's view from each other one's (full recompute turns CUDA graphs off:
        // the views differ in more than the recompute mode).
        for (const Layout& from : features) {
          const CostView sibling = ToCostView(from, req.model, req.setup);
          for (const Layout& f : features) {
            CHECK(space->FeatureView(f, req.model, req.setup, &sibling) == ToCostView(f, req.model, req.setup));
            ++compared;
          }
        }
      });
    }
    CHECK(compared > 1000);
  }
}

TEST_CASE("search: the rows the Megatron-Bridge space passes by construction pass on all it emits") {
  std::vector<PlanRequest> requests = {MbRequest("deepseek-v3", "dgx-h100", 256, 4096, 1024),
                                       MbRequest("qwen3-30b-a3b", "gb200-nvl72", 72, 8192, 576),
                                       MbRequest("llama3.1-70b", "dgx-h100", 64, 8192, 512),
                                       MbRequest("nemotron-3-nano", "dgx-b200", 64, 8192, 512),
                                       MbRequest("deepseek-v4-flash", "dgx-b200", 128, 4096, 512),
                                       MbRequest("llama3.1-8b", "dgx-b200", 48, 8192, 96)};
  requests[2].mb_torch_fsdp2 = true;  // the torch FSDP2 flavour too
  requests[5].mb_torch_fsdp2 = true;
  requests[1].setup.precision = Precision::kFp8;
  requests[3].setup.precision = Precision::kFp8;
  const auto any_space = search::MakeMegatronSpace(requests[0]);
  std::vector<const Rule*> claimed;
  for (const Rule& r : MegatronBridgeRules()) {
    if (!any_space->EmitsOnlyLayoutsPassing(r)) continue;
    claimed.push_back(&r);
    CHECK(r.stage == RuleStage::kMesh);
    CHECK(r.severity == Severity::kError);
  }
  CHECK(claimed.size() == 27);
  for (const PlanRequest& req : requests) {
    CAPTURE(req.model.name);
    const auto space = search::MakeMegatronSpace(req);
    int64_t checked = 0, failed = 0;
    std::string first_failure;
    std::vector<Layout> features;
    for (size_t part = 0; part < space->MeshParts(); ++part) {
      space->Meshes(part, [&](const Layout& mesh) {
        features.clear();
        space->Features(mesh, features);
        features.push_back(mesh);
        for (const Layout& l : features) {
          const RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
          for (const Rule* r : claimed) {
            if (r->check(ctx)) continue;
            ++failed;
            if (first_failure.empty()) first_failure = std::string(r->name) + ": " + Describe(l);
          }
          ++checked;
        }
      });
    }
    CHECK(checked > 500);
    CHECK(failed == 0);
    CHECK(first_failure == "");
  }
}

}  // namespace
}  // namespace meshplan
