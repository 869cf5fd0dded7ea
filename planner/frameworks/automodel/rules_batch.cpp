// Batch rules of NeMo AutoModel (main / v0.5).
#include "meshplan/rule_domains.hpp"
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
  return domain::GlobalBatchDivides(c.setup.global_batch, L(c).local_batch_size, L(c).dp);
}
std::string GlobalBatchDivisibleMsg(const RuleContext& c) {
  return Cat("global_batch_size (", c.setup.global_batch, ") must be divisible by local_batch_size * dp_size (",
             L(c).local_batch_size, " * ", L(c).dp, " = ", L(c).local_batch_size * L(c).dp, ")");
}

/// FP8 (torchao float8, tensorwise): the weight-gradient GEMM contracts over the tokens, and
/// torch._scaled_mm needs every dimension divisible by 16, so micro_batch · seq_len / cp must be.
/// Source: torch._scaled_mm shape checks (aten/src/ATen/native/cuda/Blas.cpp); torchao float8
/// training without pad_inner_dim.
bool Fp8TokenRows(const RuleContext& c) {
  if (c.setup.precision != Precision::kFp8) return true;
  const int64_t cp = std::max<int64_t>(1, L(c).cp);
  if (c.setup.seq_len % cp != 0) return true;  // the CP rules report that
  return (L(c).micro_batch() * (c.setup.seq_len / cp)) % 16 == 0;
}
std::string Fp8TokenRowsMsg(const RuleContext& c) {
  const int64_t cp = std::max<int64_t>(1, L(c).cp);
  return Cat("fp8 GEMMs contract over the micro-batch's tokens in the weight gradient: micro-batch x seq_len / cp_size = ",
             L(c).micro_batch(), " x ", c.setup.seq_len, " / ", cp, " = ", L(c).micro_batch() * (c.setup.seq_len / cp),
             " must be a multiple of 16 (torch._scaled_mm)");
}

const Rule kRules[] = {
    {"batch_sizes_positive", "components/training/step_scheduler.py", RuleStage::kBatch, BatchSizesPositive,
     BatchSizesPositiveMsg, kNoDp},
    {"global_batch_divisible", "components/training/step_scheduler.py", RuleStage::kBatch, GlobalBatchDivisible,
     GlobalBatchDivisibleMsg},
    {"fp8_token_rows", "torch._scaled_mm (torchao float8 tensorwise)", RuleStage::kBatch, Fp8TokenRows,
     Fp8TokenRowsMsg, kNoDp},
};

}  // namespace

std::span<const Rule> BatchRules() { return kRules; }

}  // namespace meshplan::rules
