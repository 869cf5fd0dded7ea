// Megatron-Bridge's notes on a request: the unfitted step-time constants, what the search includes
// against advice.
#include "meshplan/framework.hpp"

namespace meshplan::megatron_bridge {

std::string UnfittedNote(const PlanRequest& req) {
  const SystemSpec& system = req.system;
  if (system.megatron_fit.fitted) return "";
  if (system.megatron_fit.borrowed_from == "the physical model") {
    return "note: " + system.name + " has no fitted Megatron-Core step-time constants (megatron_time_fit): its "
           "Megatron-Bridge step times use the physical constants of its GPU generation (GEMMs at 1/1.15 of the "
           "GPU's MAMF, elementwise kernels at 0.67 of its HBM bandwidth; their errors on published runs are in docs/accuracy.md), "
           "not fitted to runs of this system (fit its own with validate --fit)";
  }
  if (!system.megatron_fit.borrowed_from.empty()) {
    return "note: " + system.name + " has no fitted Megatron-Core step-time constants (megatron_time_fit): its "
           "Megatron-Bridge step times use those of " + system.megatron_fit.borrowed_from +
           ", not checked against runs of this system (fit its own with validate --fit)";
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
