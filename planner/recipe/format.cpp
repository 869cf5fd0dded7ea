#include "recipe/format.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdio>

#include "meshplan/framework.hpp"

namespace meshplan::recipe {

const char* const kAutoModelMaxStepsNote =
    "# your recipe must set step_scheduler.max_steps: AutoModel derives it from len(dataloader) otherwise, which "
    "an iterable dataset (no len()) cannot give (components/training/step_scheduler.py)\n";

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string PeakName(Precision p) {
  std::string name = PrecisionName(p);
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return name;
}

std::string PrecisionPeakName(const PlanRequest& req) { return PeakName(PeakPrecision(req.system.gpu, req.setup.precision)); }

const char* OwnPeakMfuHead(Precision own_peak) {
  switch (own_peak) {
    case Precision::kFp8:
      return "MFU8%";
    case Precision::kFp4:
      return "MFU4%";
    case Precision::kBf16:
      break;
  }
  return "";
}

std::string MfuText(const Cost& c, const GpuSpec& gpu, Precision precision) {
  std::string s = "MFU " + Fixed(100 * c.mfu, 1) + "% of the BF16 dense peak";
  const Precision own = PeakPrecision(gpu, precision);
  if (own != Precision::kBf16) s += " (" + Fixed(100 * c.mfu_precision_peak, 1) + "% of the " + PeakName(own) + " dense peak)";
  return s;
}

std::string OneLine(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string YamlQuoted(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

nlohmann::json RequestJson(const PlanRequest& req) {
  return {{"model", req.model.name},
          {"system", req.system.name},
          {"gpus", req.setup.num_gpus},
          {"seq_len", req.setup.seq_len},
          {"global_batch", req.setup.global_batch},
          {"precision", PrecisionName(req.setup.precision)},
          {"headroom", req.setup.headroom},
          {"framework", FrameworkOf(req.framework).name}};
}

nlohmann::json CandidateJson(const Candidate& c, const PlanRequest& req, int rank) {
  const Layout& l = c.layout;
  const MemoryBreakdown& m = c.cost.memory;
  const TimeBreakdown& t = c.cost.time;
  nlohmann::json layout = {{"strategy", StrategyName(l.strategy)},
                           {"tp_size", l.tp},
                           {"pp_size", l.pp},
                           {"cp_size", l.cp},
                           {"ep_size", l.ep},
                           {"dp_size", l.dp},
                           {"dp_replicate_size", l.dp_replicate},
                           {"local_batch_size", l.local_batch_size},
                           {"micro_batch", l.micro_batch()},
                           {"grad_accum_steps", FrameworkOf(l).accumulation_steps(l, req.setup)},
                           {"microbatches_per_step", l.MicroBatchesPerStep(req.setup)},
                           {"sequence_parallel", l.sequence_parallel},
                           {"activation_checkpointing", RecomputeName(l.recompute)}};
  if (l.pp > 1) {
    layout["pipeline"] = {{"pp_schedule", PpScheduleName(l.pp_schedule)},
                          {"pp_microbatch_size", l.pp_microbatch_size},
                          {"layers_per_stage", l.layers_per_stage > 0 ? nlohmann::json(l.layers_per_stage)
                                                                      : nlohmann::json(nullptr)},
                          // StageRoundingName spells "no rounding" as the YAML word null: JSON null here.
                          {"round_virtual_stages_to_pp_multiple",
                           l.stage_rounding == StageRounding::kNone ? nlohmann::json(nullptr)
                                                                    : nlohmann::json(StageRoundingName(l.stage_rounding))},
                          {"stages_per_rank", SplitStages(req.model.num_layers, l).stages_per_rank}};
  }
  return {{"rank", rank},
          {"layout", layout},
          {"memory_gib",
           {{"weights", GiB(m.weights)},
            {"gradients", GiB(m.gradients)},
            {"optimizer", GiB(m.optimizer)},
            {"activations", GiB(m.activations)},
            {"logits", GiB(m.logits)},
            {"buffers", GiB(m.buffers)},
            {"workspace", GiB(m.workspace)},
            {"overhead", GiB(m.overhead)},
            {"total", GiB(m.Total())},
            {"capacity", GiB(c.cost.capacity_bytes)},
            {"fits", c.cost.fits}}},
          {"time_s",
           {{"compute", t.compute},
            {"tp_comm", t.tp_comm},
            {"cp_comm", t.cp_comm},
            {"dp_comm", t.dp_comm},
            {"ep_comm", t.ep_comm},
            {"pp_comm", t.pp_comm},
            {"bubble", t.bubble},
            {"optimizer", t.optimizer},
            {"host", t.host},
            {"step", c.cost.step_seconds}}},
          {"tokens_per_s_per_gpu", c.cost.tokens_per_s_per_gpu},
          {"model_tflops_per_gpu", c.cost.model_tflops_per_gpu},
          {"mfu", c.cost.mfu},
          {"mfu_precision_peak", c.cost.mfu_precision_peak},
          {"precision_peak", PrecisionPeakName(req)}};
}

}  // namespace meshplan::recipe
