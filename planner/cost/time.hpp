#pragma once
/// \file time.hpp
/// Step time of one pipeline rank (seconds). Private to planner/cost.

#include <cstdint>

#include "cost/context.hpp"

namespace meshplan::cost {

/// Small-GEMM efficiency factor in (0, 1]:
///   factor = T/(T + kGemmTokensK0) · w/(w + kGemmWidthK0)
/// T = rows of the GEMM (tokens), w = the TP-sliced width. Assumption, uncalibrated: a
/// saturating curve so that small per-GPU GEMMs (short micro-batches, wide TP, small
/// experts) run below the large-GEMM rate; calibrate later against measured runs.
double GemmSizeFactor(double tokens, double width);
inline constexpr double kGemmTokensK0 = 256.0;
inline constexpr double kGemmWidthK0 = 128.0;

/// Fraction of FSDP all-gather / reduce-scatter time that prefetch can hide behind the
/// compute of the same step. Assumption, uncalibrated.
inline constexpr double kFsdpOverlapFraction = 0.8;
/// Fraction of pipeline p2p time left exposed (the rest overlaps compute). Assumption.
inline constexpr double kPpP2pExposedFraction = 0.2;

/// Dense peak FLOP/s for `precision`; fp8 falls back to bf16 on GPUs without fp8.
double PeakFlops(const GpuSpec& gpu, Precision precision);
/// Best-GEMM efficiency (MAMF / peak) for the precision actually used.
double MatmulEfficiency(const GpuSpec& gpu, Precision precision);

/// Step time of PP rank `pp_rank`; `mem` is that rank's memory (for the optimizer step).
TimeBreakdown RankTime(const Ctx& c, int64_t pp_rank, const MemoryBreakdown& mem);

}  // namespace meshplan::cost
