// `meshplan plan --sweep-gpus 8,16,... --sweep-seq 4096,8192,...`: one line per point with the
// best layout, shown as each point's search ends; with --format yaml / json or --out, the best
// recipe of every point. The sweep itself: planner/commands/sweep.cpp.
#include <iostream>
#include <vector>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "render/text.hpp"

namespace meshplan::cli {

int RunSweep(const PlanOptions& o, const PlanInput& in) {
  SweepReport sweep = PrepareSweep(in);
  for (const SweepPoint& p : sweep.points) {
    for (const std::string& w : p.warnings) std::cerr << "meshplan: " << w << "\n";
  }
  const bool table = o.format == "table";
  if (table) std::cout << render::SweepHeader(sweep);
  Progress progress("sweep", static_cast<long>(sweep.points.size()));
  // The warnings each point had before its search (its search's come after them).
  std::vector<size_t> built;
  for (const SweepPoint& p : sweep.points) built.push_back(p.warnings.size());
  if (!sweep.points.empty()) progress.Step(1, "planning " + render::PointName(sweep.points.front()));
  SearchSweepPoints(sweep, in, [&](size_t k) {
    const SweepPoint& p = sweep.points[k];
    progress.Clear();
    for (size_t i = built[k]; i < p.warnings.size(); ++i) std::cerr << render::PointName(p) << ": meshplan: " << p.warnings[i] << "\n";
    if (table) std::cout << render::SweepLine(p) << std::flush;
    if (k + 1 < sweep.points.size()) {
      progress.Step(static_cast<long>(k) + 2, "planning " + render::PointName(sweep.points[k + 1]));
    }
  });
  const bool json = o.format == "json";
  // Exit 1 when a point has no layout: say so on stderr (and in the JSON), not only per point.
  const std::string error = sweep.Failure();
  if (!error.empty()) std::cerr << "meshplan: " << error << "\n";
  // JSON after --out is written: a failure to write it leaves only the error's JSON on stdout.
  if (!table && !json) std::cout << render::SweepYaml(sweep);
  if (!o.out.empty()) {
    size_t recipes = 0;
    for (const SweepPoint& p : sweep.points) recipes += p.result.top.empty() ? 0 : 1;
    if (recipes == 0) {
      std::cerr << "meshplan: no point has a layout; " << o.out << " was not written\n";
    } else {
      WriteFileAtomically(o.out, json ? render::SweepJson(sweep) : render::SweepYaml(sweep), in.outputs.force);
      if (table) {
        std::cout << "wrote " << recipes << (recipes == 1 ? " recipe" : " recipes") << " (the best of each point) to "
                  << o.out << "\n";
      }
    }
  }
  if (json) std::cout << render::SweepJson(sweep, error);
  return error.empty() ? 0 : 1;
}

}  // namespace meshplan::cli
