// DeepSeek-V4's hash-routed layers need the token ids, which AutoModel gives to the first
// pipeline stage only: an AutoModel recipe whose first stage holds fewer layers than
// num_hash_layers says so (recipe.cpp), one whose first stage holds them all does not.
#include <doctest/doctest.h>

#include <string>

#include "fixtures/plan_request.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/recipe.hpp"
#include "meshplan/rules.hpp"

namespace meshplan {
namespace {

TEST_CASE("recipe: a DeepSeek-V4 pipeline whose first stage misses hash-routed layers is said") {
  PlanRequest req = test::PresetRequest("deepseek-v4-flash", "dgx-h100", 16, 4096, 64);
  req.framework = Framework::kAutoModel;
  REQUIRE(req.model.dsv4.num_hash_layers == 3);
  const CostModel cm(req.model, req.system, req.setup);
  int with_note = 0, without = 0;
  for (const Layout& l : EnumerateLayouts(req)) {
    if (l.pp <= 1) continue;
    const RuleContext ctx{req.model, req.setup, l, req.version, req.mb_version, &req.system};
    if (FirstFailure(ctx) != nullptr) continue;
    // AutoModel's split (pipelining/functional.py): V stages of floor(L/V), the first L mod V one more.
    const int64_t v = SplitStages(req.model.num_layers, l).num_stages;
    const int64_t first = req.model.num_layers / v + (req.model.num_layers % v > 0 ? 1 : 0);
    const std::string yaml = AutoModelRecipeYaml(Candidate{l, Score(cm, l), {}}, req, 1);
    const bool noted = yaml.find("hash-routed layers") != std::string::npos;
    CAPTURE(Describe(l));
    CHECK(noted == (first < 3));
    if (noted) {
      CHECK(yaml.find("the first pipeline stage holds " + std::to_string(first) + " of the 3 hash-routed layers") !=
            std::string::npos);
    }
    (noted ? with_note : without)++;
    if (with_note >= 20 && without >= 20) break;
  }
  CHECK(with_note > 0);
  CHECK(without > 0);
}

}  // namespace
}  // namespace meshplan
