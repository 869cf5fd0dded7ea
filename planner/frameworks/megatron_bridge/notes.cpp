// Megatron-Bridge's notes on a request: the unfitted step-time constants, what the search includes
// against advice.
#include "meshplan/framework.hpp"

#include <cstdio>

#include "meshplan/risk.hpp"

namespace meshplan::megatron_bridge {

namespace {

// " Measured on the fitted systems, this rule's step times are off by a median X% (dense ...)":
// UnfittedSystemErrorBand of the request's model kind.
std::string TransferErrorText(const PlanRequest& req) {
  const ErrorBand band =
      UnfittedSystemErrorBand(ErrorKindOf(CostRuntime::kMegatronCore, req.model, req.system, req.setup));
  if (band.value <= 0) return "";
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100 * band.value);
  return std::string("; priced this way, the fitted systems' published runs come out a median ") + pct + " off (" +
         band.source + "): read step times as that uncertain";
}

}  // namespace

std::string UnfittedNote(const PlanRequest& req) {
  const SystemSpec& system = req.system;
  if (system.megatron_fit.fitted) return "";
  if (system.megatron_fit.physical) {
    return "note: " + system.name + " has no fitted Megatron-Core step-time constants (megatron_time_fit): its "
           "Megatron-Bridge step times use the physical constants of its GPU generation (GEMMs at 1/1.15 of the "
           "GPU's MAMF, elementwise kernels at 0.67 of its HBM bandwidth), not fitted to runs of this system (fit "
           "its own with validate --fit)" + TransferErrorText(req);
  }
  if (!system.megatron_fit.borrowed_from.empty()) {
    return "note: " + system.name + " has no fitted Megatron-Core step-time constants (megatron_time_fit): its "
           "Megatron-Bridge step times use those of " + system.megatron_fit.borrowed_from +
           ", not checked against runs of this system (fit its own with validate --fit)" + TransferErrorText(req);
  }
  return "warning: " + system.name + " has no fitted Megatron-Core step-time constants (megatron_time_fit): its "
         "Megatron-Bridge step times are the unfitted physical model, GEMMs at the measured best rate (MAMF), and "
         "read fast; the fitted systems' GEMM factors are 1.2-2.5 (hwdb/systems/dgx-h100.yaml and others; fit yours "
         "with validate --fit)";
}

std::vector<std::string> SearchWarnings(const PlanRequest& req) {
  if (!req.mb_torch_fsdp2) return {};
  return {"warning: torch FSDP2 (dist.use_torch_fsdp2) is searched because --strategy names fsdp2; Megatron-Bridge "
          "issue #2785 reports that it does not start (open), so it is left out by default: prefer megatron_fsdp"};
}

}  // namespace meshplan::megatron_bridge
