#pragma once
/// \file transfer.hpp
/// `meshplan validate --transfer`: how the fitted Megatron-Core step-time constants transfer
/// to systems and model families they were not fitted on. Private to planner/accuracy.

#include <map>
#include <string>
#include <vector>

#include "accuracy/megatron_fit.hpp"
#include "meshplan/accuracy.hpp"
#include "meshplan/hardware.hpp"

namespace meshplan::accuracy {

/// The TransferReport of `rows` (system name -> its fitted rows, as validate --fit fits them),
/// `systems` (name -> the loaded system: its GPU's compute capability decides what a held-out
/// system borrows) and `fits` (each system's in-sample fit with its leave-one-out residuals,
/// Validate's Fit, one per key of `rows`). Per row:
///   in-sample and leave-one-out: the residuals of `fits`;
///   leave one system out, borrowed: the row's system with no fit of its own borrows from the
///     in-sample fits of the other systems by BorrowMegatronFitFrom's rule (the median per
///     constant over the other systems of the same GPU compute capability, else over all other
///     systems), as LoadSystem prices a system without megatron_time_fit; with no other
///     system, the unfitted physical model;
///   leave one system out, pooled: one FitMegatronConstants on the rows of every other system;
///   leave one family out: FitMegatronConstants on the rows of the row's own system whose model
///     family (ModelFamily) differs (the physical model when none is left);
///   leave one model out: the same on the rows of the other models (FitRow::model, the preset:
///     Llama 3 70B's rows predicted from its system's Llama 3 8B, 405B and other rows).
/// Throws nothing.
TransferReport MeasureTransfer(const std::map<std::string, std::vector<FitRow>>& rows,
                               const std::map<std::string, SystemSpec>& systems, const std::vector<SystemFit>& fits);

}  // namespace meshplan::accuracy
