// The Megatron-Bridge rule registry: every mb_ rule, in check order (mesh, then features,
// then batch; mb_axes_positive first, since later rules divide by the sizes), then the
// findings rows (warnings, silently-off settings: frameworks/megatron_bridge/rules_findings.cpp).
#include <algorithm>
#include <vector>

#include "frameworks/megatron_bridge/rule_util.hpp"

namespace meshplan {
namespace {

std::vector<Rule> Build() {
  std::vector<Rule> all;
  for (auto part : {rules::MegatronMeshRules(), rules::MegatronHybridRules(), rules::MegatronGdnRules(), rules::MegatronDsv4Rules(),
                    rules::MegatronLayoutRules(), rules::MegatronCpRules(), rules::MegatronDpRules(),
                    rules::MegatronFindingRules()}) {
    all.insert(all.end(), part.begin(), part.end());
  }
  rules::SortTable(all);
  return all;
}

}  // namespace

std::span<const Rule> MegatronBridgeRules() {
  static const std::vector<Rule> registry = Build();
  return registry;
}

}  // namespace meshplan
