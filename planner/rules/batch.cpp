// Batch rules of NeMo AutoModel (main / v0.5).
#include "rules/rule_util.hpp"

namespace meshplan::rules {
namespace {

const Layout& L(const RuleContext& c) { return c.layout; }

/// Batch sizes are positive.
/// Source: components/training/step_scheduler.py; components/distributed/pipelining/config.py.
bool BatchSizesPositive(const RuleContext& c) { return L(c).local_batch_size >= 1 && L(c).pp_microbatch_size >= 1; }
std::string BatchSizesPositiveMsg(const RuleContext& c) {
  return Cat("local_batch_size (", L(c).local_batch_size, ") and pp_microbatch_size (", L(c).pp_microbatch_size,
             ") must be >= 1");
}

/// Every optimizer step consumes whole local batches on every data-parallel rank; dp here
/// is dp_replicate * dp_shard and excludes cp.
/// Source: components/training/step_scheduler.py ("global_batch_size (G) must be divisible by
/// local_batch_size * dp_size (L * D)"); recipes/base_recipe.py::_get_dp_group_size.
bool GlobalBatchDivisible(const RuleContext& c) {
  // dp is 0 when a recipe's mesh does not divide the world size (mesh rules report that).
  const int64_t per_step = L(c).local_batch_size * L(c).dp;
  return per_step > 0 && c.setup.global_batch % per_step == 0;
}
std::string GlobalBatchDivisibleMsg(const RuleContext& c) {
  return Cat("global_batch_size (", c.setup.global_batch, ") must be divisible by local_batch_size * dp_size (",
             L(c).local_batch_size, " * ", L(c).dp, " = ", L(c).local_batch_size * L(c).dp, ")");
}

const Rule kRules[] = {
    {"batch_sizes_positive", "components/training/step_scheduler.py", RuleStage::kBatch, BatchSizesPositive,
     BatchSizesPositiveMsg, kNoDp},
    {"global_batch_divisible", "components/training/step_scheduler.py", RuleStage::kBatch, GlobalBatchDivisible,
     GlobalBatchDivisibleMsg},
};

}  // namespace

std::span<const Rule> BatchRules() { return kRules; }

}  // namespace meshplan::rules
