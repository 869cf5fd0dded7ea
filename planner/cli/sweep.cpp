// `meshplan plan --sweep-gpus 8,16,... --sweep-seq 4096,8192,...`: capacity planning, one
// line per point with the best layout (the whole search runs at every point); with --format
// yaml / json or --out, the best recipe of every point.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"

namespace meshplan::cli {

namespace {

// One point of the sweep and its search.
struct Point {
  long long gpus = 0, seq_len = 0;
  PlanRequest req;
  PlanResult result;
};

// Why a point has no layout.
std::string NoLayoutReason(const PlanResult& r) {
  return r.valid == 0 ? "no valid layout"
                      : "no layout fits (least " + recipe::Fixed(recipe::GiB(r.least_memory->cost.memory.Total()), 1) +
                            " GiB per GPU)";
}

std::string PointName(long long gpus, long long seq_len) {
  return std::to_string(gpus) + " GPUs, seq_len " + std::to_string(seq_len);
}

// The options of a sweep point and the option each value came from, for MakePlanRequest.
std::pair<PlanOptions, PointSource> PointOptions(const PlanOptions& o, long long gpus, long long seq_len) {
  PlanOptions point = o;
  point.gpus = gpus;
  point.seq_len = seq_len;
  PointSource source;
  if (!o.sweep_gpus.empty()) source = {"--sweep-gpus", "point " + std::to_string(gpus) + ": ", "--seq-len", ""};
  if (!o.sweep_seq.empty()) {
    source.seq_len_flag = "--sweep-seq";
    source.seq_len_prefix = "point " + std::to_string(seq_len) + ": ";
  }
  return {point, source};
}

// The best recipe of every point as YAML documents (one per point that has a layout), after a
// comment listing every point.
std::string SweepYaml(const std::vector<Point>& points, const PlanRequest& first) {
  std::string head = "# meshplan sweep: " + first.model.name + " on " + first.system.name + ", global batch " +
                     std::to_string(first.setup.global_batch) + "; the best recipe of each point\n";
  std::string docs;
  int n = 0;
  for (const Point& p : points) {
    head += "#   " + PointName(p.gpus, p.seq_len) + ": ";
    if (p.result.top.empty()) {
      head += NoLayoutReason(p.result) + "\n";
      continue;
    }
    ++n;
    head += "recipe " + std::to_string(n) + "\n";
    if (n > 1) docs += "---\n";
    docs += RecipeYaml(p.result.top.front(), p.req, n);
  }
  return head + docs;
}

// Every point with its plan result (ResultJson, best layout only) or why it has none; with a
// non-empty `error` (some point has no layout: exit 1) also the error object of ErrorJson.
std::string SweepJson(const std::vector<Point>& points, const std::string& error = "") {
  nlohmann::json arr = nlohmann::json::array();
  for (const Point& p : points) {
    nlohmann::json j = {{"gpus", p.gpus}, {"seq_len", p.seq_len}};
    if (p.result.top.empty()) {
      j["best"] = nullptr;
      j["why"] = NoLayoutReason(p.result);
    } else {
      j["best"] = nlohmann::json::parse(ResultJson(p.result, p.req));
    }
    arr.push_back(std::move(j));
  }
  nlohmann::json out = {{"sweep", arr}};
  if (!error.empty()) out["error"] = ErrorJson("no_layout", error, 1)["error"];
  return JsonText(out);
}

}  // namespace

int RunSweep(const PlanOptions& o) {
  const std::vector<long long> gpus = o.sweep_gpus.empty() ? std::vector<long long>{o.gpus} : o.sweep_gpus;
  const std::vector<long long> seqs = o.sweep_seq.empty() ? std::vector<long long>{o.seq_len} : o.sweep_seq;
  if (!o.sweep_gpus.empty() && o.gpus != kNotGiven) {
    throw InputError({"<command line>", 0, 0}, "--gpus", "give either --gpus or --sweep-gpus, not both");
  }
  if (!o.sweep_seq.empty() && o.seq_len != kNotGiven) {
    throw InputError({"<command line>", 0, 0}, "--seq-len", "give either --seq-len or --sweep-seq, not both");
  }
  // The report and the launch files describe the recipes of one plan, not of a sweep.
  for (const auto& [given, flag] : {std::pair<bool, const char*>{!o.report.empty(), "--report"},
                                    {o.emit_launch, "--emit-launch"},
                                    {o.full_recipe, "--full-recipe"}}) {
    if (given) {
      throw InputError({"<command line>", 0, 0}, flag,
                       "expected a plan at one point (--gpus and --seq-len), found --sweep-gpus / --sweep-seq: it "
                       "describes the recipes of one plan; use --out for the sweep's recipes (nothing was written)");
    }
  }
  // A repeated value would plan the same point twice.
  for (const auto& [values, flag] : {std::pair<const std::vector<long long>*, const char*>{&o.sweep_gpus, "--sweep-gpus"},
                                     {&o.sweep_seq, "--sweep-seq"}}) {
    for (size_t i = 0; i < values->size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if ((*values)[i] == (*values)[j]) {
          throw InputError({"<command line>", 0, 0}, flag,
                           "expected distinct values, found " + std::to_string((*values)[i]) + " twice");
        }
      }
    }
  }
  // Every point is validated, and its request built (model and system loaded) once, before
  // the first search, so a bad point fails at once; so does an --out that could not be
  // written. Errors name the sweep option the point came from.
  std::vector<Point> points;
  for (long long g : gpus) {
    for (long long s : seqs) {
      const auto [point, source] = PointOptions(o, g, s);
      Point& p = points.emplace_back(Point{g, s, MakePlanRequest(point, source), {}});
      p.req.top_n = 1;
      const std::string w = g == gpus.front() ? SeqLenWarning(p.req.model, s) : "";
      if (!w.empty()) std::cerr << "meshplan: warning: " << w << "\n";
    }
  }
  if (!o.out.empty()) RefuseInputsAsOutputs({{o.out, "--out"}}, {{o.model, "--model"}, {o.system, "--system"}});
  CheckOutputPath(o.out, "--out", o.force);
  const bool table = o.format == "table";
  char line[512];
  if (table) {
    std::snprintf(line, sizeof line, "%7s %8s  %-58s %8s %9s %10s %6s\n", "gpus", "seq_len", "best layout", "GiB/GPU",
                  "step_s", "tok/s/GPU", "MFU%");
    std::cout << line;
  }
  bool all = true;
  Progress progress("sweep", static_cast<long>(points.size()));
  long step = 0;
  for (Point& p : points) {
    const long long g = p.gpus, s = p.seq_len;
    progress.Step(++step, "planning " + PointName(g, s));
    p.req.deadline = SearchDeadline(o.max_seconds);  // --max-seconds counts per point, from its search
    p.result = Plan(p.req);
    progress.Clear();
    if (!p.result.stopped.empty()) std::cerr << PointName(g, s) << ": " << StopWarning(o, p.result) << "\n";
    if (!p.result.top.empty()) {
      const Candidate& c = p.result.top.front();
      std::snprintf(line, sizeof line, "%7lld %8lld  %-58s %8.1f %9.3f %10.0f %6.1f\n", g, s,
                    Describe(c.layout).c_str(), recipe::GiB(c.cost.memory.Total()), c.cost.step_seconds,
                    c.cost.tokens_per_s_per_gpu, 100 * c.cost.mfu);
    } else {
      all = false;
      std::snprintf(line, sizeof line, "%7lld %8lld  %-58s\n", g, s, NoLayoutReason(p.result).c_str());
    }
    if (table) std::cout << line << std::flush;
  }
  const bool json = o.format == "json";
  // Exit 1 when a point has no layout: say so on stderr (and in the JSON), not only per point.
  std::string error;
  if (!all) {
    size_t missing = 0;
    for (const Point& p : points) missing += p.result.top.empty() ? 1 : 0;
    error = std::to_string(missing) + " of " + std::to_string(points.size()) +
            " sweep points have no layout (each point says why)";
    std::cerr << "meshplan: " << error << "\n";
  }
  // JSON after --out is written: a failure to write it leaves only the error's JSON on stdout.
  if (!table && !json) std::cout << SweepYaml(points, points.front().req);
  if (!o.out.empty()) {
    size_t recipes = 0;
    for (const Point& p : points) recipes += p.result.top.empty() ? 0 : 1;
    if (recipes == 0) {
      std::cerr << "meshplan: no point has a layout; " << o.out << " was not written\n";
    } else {
      WriteFileAtomically(o.out, json ? SweepJson(points) : SweepYaml(points, points.front().req), o.force);
      if (table) {
        std::cout << "wrote " << recipes << (recipes == 1 ? " recipe" : " recipes") << " (the best of each point) to "
                  << o.out << "\n";
      }
    }
  }
  if (json) std::cout << SweepJson(points, error);
  return all ? 0 : 1;
}

}  // namespace meshplan::cli
