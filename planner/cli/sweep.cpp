// `meshplan plan --sweep-gpus 8,16,... --sweep-seq 4096,8192,...`: capacity planning, one
// line per point with the best layout (the whole search runs at every point).
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "recipe/format.hpp"

namespace meshplan::cli {

int RunSweep(const PlanOptions& o) {
  const std::vector<long long> gpus = o.sweep_gpus.empty() ? std::vector<long long>{o.gpus} : o.sweep_gpus;
  const std::vector<long long> seqs = o.sweep_seq.empty() ? std::vector<long long>{o.seq_len} : o.sweep_seq;
  char line[512];
  std::snprintf(line, sizeof line, "%7s %8s  %-58s %8s %9s %10s %6s\n", "gpus", "seq_len", "best layout", "GiB/GPU",
                "step_s", "tok/s/GPU", "MFU%");
  std::cout << line;
  if (!o.sweep_gpus.empty() && o.gpus != kNotGiven) {
    throw InputError({"<command line>", 0, 0}, "--gpus", "give either --gpus or --sweep-gpus, not both");
  }
  if (!o.sweep_seq.empty() && o.seq_len != kNotGiven) {
    throw InputError({"<command line>", 0, 0}, "--seq-len", "give either --seq-len or --sweep-seq, not both");
  }
  // Every point is validated before the first search, so a bad point fails at once.
  for (long long g : gpus) {
    for (long long s : seqs) {
      PlanOptions point = o;
      point.gpus = g;
      point.seq_len = s;
      (void)MakePlanRequest(point);
    }
  }
  bool all = true;
  Progress progress("sweep", static_cast<long>(gpus.size() * seqs.size()));
  long step = 0;
  for (long long g : gpus) {
    for (long long s : seqs) {
      progress.Step(++step, "planning " + std::to_string(g) + " GPUs, seq_len " + std::to_string(s));
      PlanOptions point = o;
      point.gpus = g;
      point.seq_len = s;
      PlanRequest req = MakePlanRequest(point);  // validates every point like a plain plan
      req.top_n = 1;
      const PlanResult r = Plan(req);
      if (!r.top.empty()) {
        const Candidate& c = r.top.front();
        std::snprintf(line, sizeof line, "%7lld %8lld  %-58s %8.1f %9.3f %10.0f %6.1f\n", g, s,
                      Describe(c.layout).c_str(), recipe::GiB(c.cost.memory.Total()), c.cost.step_seconds,
                      c.cost.tokens_per_s_per_gpu, 100 * c.cost.mfu);
      } else {
        all = false;
        std::string why = r.valid == 0 ? "no valid layout"
                                       : "no layout fits (least " +
                                             recipe::Fixed(recipe::GiB(r.least_memory->cost.memory.Total()), 1) +
                                             " GiB per GPU)";
        std::snprintf(line, sizeof line, "%7lld %8lld  %-58s\n", g, s, why.c_str());
      }
      progress.Clear();
      std::cout << line << std::flush;
    }
  }
  return all ? 0 : 1;
}

}  // namespace meshplan::cli
