#pragma once
// Number formatting and per-candidate JSON shared by the output writers.
#include <nlohmann/json.hpp>

#include <string>

#include "meshplan/search.hpp"

namespace meshplan::recipe {

/// bytes -> GiB (2^30 bytes).
inline double GiB(double bytes) { return bytes / 1073741824.0; }

/// `v` with `digits` decimals.
std::string Fixed(double v, int digits);

/// `s` safe inside a one-line `#` comment of a YAML file or a script: a line break or another
/// control character (a file name may hold any) is written as \n, \r, \t or \xNN.
std::string OneLine(const std::string& s);

/// `s` as a double-quoted YAML scalar (yaml-cpp's emitter) that reads back as exactly `s`: a
/// path with " #", ": ", quotes or a line break in it.
std::string YamlQuoted(const std::string& s);

/// The line of an AutoModel fragment's header (AutoModelRecipeYaml) saying that the recipe it
/// is merged into must set step_scheduler.max_steps. AutoModel main (commit 36044ad)
/// components/training/step_scheduler.py StepScheduler.__init__ derives max_steps from
/// ceil(len(dataloader) / grad_acc_steps) when it is unset and raises "epoch_len must be
/// provided if max_steps is not provided" where the dataloader has no len(), as with an
/// iterable dataset (MockIterableDataset). The complete recipe (AutoModelFullRecipeYaml) sets
/// max_steps and leaves the line out.
extern const char* const kAutoModelMaxStepsNote;

/// "MFU 31.2% of the BF16 dense peak" (Cost::mfu), and for a run whose precision has its own
/// peak on `gpu` (PeakPrecision: FP8 or FP4) " (62.4% of the FP8 dense peak)"
/// (Cost::mfu_precision_peak): the one wording of every text output's MFU, one decimal.
std::string MfuText(const Cost& c, const GpuSpec& gpu, Precision precision);

/// "BF16", "FP8" or "FP4": the precision as the tables and MFU texts name a dense peak.
std::string PeakName(Precision p);

/// The PeakName of the dense peak a request's mfu_precision_peak is against: PeakPrecision of its
/// GPU and precision ("FP8" for FP8 on H100, "BF16" for FP8 on A100, which has no FP8 peak).
/// The JSON outputs' precision_peak.
std::string PrecisionPeakName(const PlanRequest& req);

/// The head of a table's column of MFU against the run's own precision's dense peak
/// (Cost::mfu_precision_peak), beside the MFU% column against the BF16 peak: "MFU8%" or
/// "MFU4%" for PeakPrecision kFp8 or kFp4; "" for kBf16 (no such column: it would repeat MFU%).
const char* OwnPeakMfuHead(Precision own_peak);

/// One candidate: layout fields, memory (GiB) and time (s) breakdowns, throughput.
nlohmann::json CandidateJson(const Candidate& c, const PlanRequest& req, int rank);
/// The request object of every --format json output (plan, explain, check): model, system, gpus,
/// seq_len, global_batch, precision, headroom, framework.
nlohmann::json RequestJson(const PlanRequest& req);

}  // namespace meshplan::recipe
