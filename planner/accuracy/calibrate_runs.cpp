// `meshplan calibrate --runs RUNS.csv`: a system's Megatron-Core step-time constants fitted to a
// user's measured training runs, by the fit `validate --fit` runs on the published tables
// (accuracy/megatron_fit.cpp), with what each constant was identified from.
#include <cmath>
#include <sstream>

#include "accuracy/megatron_fit.hpp"
#include "meshplan/calibrate.hpp"

namespace meshplan {

namespace {

const char* const kGemmKeys[3] = {"gemm_bf16", "gemm_fp8", "gemm_fp4"};
const char* const kPrecisionNames[3] = {"BF16", "FP8", "FP4"};

std::string Runs(int n) { return std::to_string(n) + (n == 1 ? " run" : " runs"); }
std::string Models(int n) { return std::to_string(n) + (n == 1 ? " model" : " models"); }

// Where the GEMM constant of precision `g` comes from, as FitMegatronTime decided (GemmTies).
RunsFitConstant GemmConstant(const MegatronFitOutcome& o, int g) {
  RunsFitConstant c;
  c.key = kGemmKeys[g];
  c.value = g == 0 ? o.fit.gemm_bf16 : g == 1 ? o.fit.gemm_fp8 : o.fit.gemm_fp4;
  c.prior = 1.0;
  const int rows = o.gemm_rows[g], models = o.gemm_models[g], tie = o.gemm_tie[g];
  const std::string p = kPrecisionNames[g];
  if (tie == g) {
    c.fitted = true;
    c.basis = "fitted from " + Runs(rows) + " of " + Models(models) + " in " + p;
    if (models < accuracy::kFitMinModels) {
      c.basis += " (no precision has runs of " + std::to_string(accuracy::kFitMinModels) +
                 " models: a cost this model misses is charged to the GEMMs; add runs of another model)";
    }
  } else if (tie >= 0) {
    c.basis = std::string("= ") + kGemmKeys[tie] + ": ";
    c.basis += rows > 0 ? p + " runs of " + Models(models) + " (a constant of its own needs runs of " +
                              std::to_string(accuracy::kFitMinModels) + " models), fitted with " + kGemmKeys[tie] +
                              "'s runs"
                        : "no " + p + " runs (large GEMMs sustain about the same share of MAMF in BF16 and FP8)";
  } else {
    c.basis = "kept at the prior: no " + p + " runs";
  }
  return c;
}

}  // namespace

RunsCalibration CalibrateFromRuns(const SystemSpec& system, const std::string& runs, const std::string& hwdb,
                                  const std::string& recipe_settings) {
  ValidateRequest req;
  req.runs = runs;
  req.hwdb = hwdb;
  req.rank_top = 0;  // no search: the constants need the runs' own layouts only
  req.system = system;
  req.fit_in_memory = true;
  req.recipe_settings = recipe_settings;
  ValidateReport report = Validate(req);
  if (report.format != PublishedRunsFormat::kMegatronBridgePerf) {
    throw InputError(SourceLoc{runs, 1, 1}, "--runs",
                     "expected the columns of a Megatron-Bridge performance table (release,task,model,system,gpus,...); "
                     "found the published-runs survey's, whose runs ran on many GPUs: give the runs of this system alone "
                     "(nothing was written)");
  }
  RunsCalibration out;
  out.rows = std::move(report.rows);
  if (report.fits.empty()) return out;
  out.fit = std::move(report.fits.front());
  const MegatronFitOutcome& o = out.fit.outcome;
  out.fitted_rows = int(o.residuals.size());
  for (int g = 0; g < 3; ++g) out.constants.push_back(GemmConstant(o, g));
  const std::string all = "fitted from all " + Runs(out.fitted_rows) +
                          (out.fitted_rows < 5 ? " (fewer runs than the 5 constants: the ridge keeps it near the prior)"
                                               : "");
  out.constants.push_back(RunsFitConstant{"memory_bound", o.fit.memory_bound, 1.0, true, all});
  out.constants.push_back(RunsFitConstant{"kernel_overhead_us", o.fit.kernel_overhead * 1e6, 4.0, true, all});
  return out;
}

std::string RunsCalibrationNeeds() {
  std::ostringstream os;
  os << "what the fit needs (the same fit as `validate --fit`):\n"
     << "  gemm_<precision>: runs of at least " << accuracy::kFitMinModels
     << " different models in that precision (BF16, FP8 of any scaling, NVFP4); with fewer, the precision\n"
     << "    shares the constant of the precision with the most runs, or with one model only is fitted on its own\n"
     << "  memory_bound, kernel_overhead_us: every run; runs that differ in micro-batch size or model separate\n"
     << "    them (small micro-batches raise the kernel launches' share, large ones the HBM-bound kernels')\n"
     << "  at least 5 runs (one per constant) before the ridge (" << kMegatronFitRidge
     << " toward 1, 1, 1, 1, 4 us) stops holding them near\n"
     << "    the prior; the leave-one-out residuals above say how well the constants predict a run they did not see\n"
     << "  runs of Megatron-Core layouts of decoders without a layer pattern (Mamba-2, Gated DeltaNet, DeepSeek-V4\n"
     << "    attention); others are priced, not fitted\n";
  return os.str();
}

}  // namespace meshplan
