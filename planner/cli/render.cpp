// Text rendering of the commands' reports (render.hpp): the sweep's lines and files, and the
// JSON of an error.
#include "cli/render.hpp"

#include <cstdio>

#include "cli/commands.hpp"
#include "recipe/format.hpp"

namespace meshplan::cli {

namespace {

// Why a sweep point has no layout.
std::string NoLayoutReason(const PlanResult& r) {
  return r.valid == 0 ? "no valid layout"
                      : "no layout fits (least " + recipe::Fixed(recipe::GiB(r.least_memory->cost.memory.Total()), 1) +
                            " GiB per GPU)";
}

}  // namespace

nlohmann::json ErrorJson(const std::string& kind, const std::string& message, int exit_status, const SourceLoc& loc,
                         const std::string& field) {
  auto or_null = [](auto v, bool known) { return known ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const bool file = !loc.file.empty() && loc.file != "<command line>";
  return {{"error",
           {{"kind", kind},
            {"message", message},
            {"exit_status", exit_status},
            {"file", or_null(loc.file, file && !loc.output)},
            {"output", or_null(loc.file, file && loc.output)},
            {"line", or_null(loc.line, loc.line > 0)},
            {"column", or_null(loc.column, loc.column > 0)},
            {"field", or_null(field, !field.empty())}}}};
}

std::string JsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string PointName(const SweepPoint& p) {
  return std::to_string(p.gpus) + " GPUs, seq_len " + std::to_string(p.seq_len);
}

std::string SweepHeader() {
  char line[128];
  std::snprintf(line, sizeof line, "%7s %8s  %-58s %8s %9s %10s %6s\n", "gpus", "seq_len", "best layout", "GiB/GPU",
                "step_s", "tok/s/GPU", "MFU%");
  return line;
}

std::string SweepLine(const SweepPoint& p) {
  char line[512];
  const long long g = p.gpus, s = p.seq_len;
  if (!p.result.top.empty()) {
    const Candidate& c = p.result.top.front();
    std::snprintf(line, sizeof line, "%7lld %8lld  %-58s %8.1f %9.3f %10.0f %6.1f\n", g, s, Describe(c.layout).c_str(),
                  recipe::GiB(c.cost.memory.Total()), c.cost.step_seconds, c.cost.tokens_per_s_per_gpu, 100 * c.cost.mfu);
  } else {
    std::snprintf(line, sizeof line, "%7lld %8lld  %-58s\n", g, s, NoLayoutReason(p.result).c_str());
  }
  return line;
}

std::string SweepYaml(const SweepReport& sweep) {
  const PlanRequest& first = sweep.points.front().request;
  std::string head = "# meshplan sweep: " + first.model.name + " on " + first.system.name + ", global batch " +
                     std::to_string(first.setup.global_batch) + "; the best recipe of each point\n";
  std::string docs;
  int n = 0;
  for (const SweepPoint& p : sweep.points) {
    head += "#   " + PointName(p) + ": ";
    if (p.result.top.empty()) {
      head += NoLayoutReason(p.result) + "\n";
      continue;
    }
    ++n;
    head += "recipe " + std::to_string(n) + "\n";
    if (n > 1) docs += "---\n";
    docs += RecipeYaml(p.result.top.front(), p.request, n);
  }
  return head + docs;
}

std::string SweepJson(const SweepReport& sweep, const std::string& error) {
  nlohmann::json arr = nlohmann::json::array();
  for (const SweepPoint& p : sweep.points) {
    nlohmann::json j = {{"gpus", p.gpus}, {"seq_len", p.seq_len}};
    if (p.result.top.empty()) {
      j["best"] = nullptr;
      j["why"] = NoLayoutReason(p.result);
    } else {
      j["best"] = nlohmann::json::parse(ResultJson(p.result, p.request));
    }
    arr.push_back(std::move(j));
  }
  nlohmann::json out = {{"sweep", arr}};
  if (!error.empty()) out["error"] = ErrorJson("no_layout", error, 1)["error"];
  return JsonText(out);
}

}  // namespace meshplan::cli
