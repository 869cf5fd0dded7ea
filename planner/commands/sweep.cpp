// `plan --sweep-gpus / --sweep-seq`: every (GPU count, sequence length) point planned on its own,
// its request built before any search so that a bad point fails at once.
#include "commands/internal.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace meshplan {

namespace {

using commands::FlagError;

// The options of a sweep point and the option each value came from, for BuildPlanRequest.
std::pair<PlanInput, PointSource> PointInput(const PlanInput& in, int64_t gpus, int64_t seq_len) {
  PlanInput point = in;
  PointSource source;
  if (!in.sweep_gpus.empty()) {
    point.gpus = gpus;
    source = {"--sweep-gpus", "point " + std::to_string(gpus) + ": ", "--seq-len", ""};
  }
  if (!in.sweep_seq.empty()) {
    point.seq_len = seq_len;
    source.seq_len_flag = "--sweep-seq";
    source.seq_len_prefix = "point " + std::to_string(seq_len) + ": ";
  }
  return {point, source};
}

}  // namespace

SweepReport PrepareSweep(const PlanInput& in) {
  if (!in.sweep_gpus.empty() && in.gpus) FlagError("--gpus", "give either --gpus or --sweep-gpus, not both");
  if (!in.sweep_seq.empty() && in.seq_len) FlagError("--seq-len", "give either --seq-len or --sweep-seq, not both");
  const PlanOutputs& o = in.outputs;
  // The report and the launch files describe the recipes of one plan, not of a sweep.
  for (const auto& [given, flag] :
       {std::pair{o.report.has_value(), "--report"}, {o.emit_launch, "--emit-launch"}, {o.full_recipe, "--full-recipe"}}) {
    if (given) {
      FlagError(flag, "expected a plan at one point (--gpus and --seq-len), found --sweep-gpus / --sweep-seq: it "
                      "describes the recipes of one plan; use --out for the sweep's recipes (nothing was written)");
    }
  }
  if (in.top_given) {
    FlagError("--top", "expected a plan at one point (--gpus and --seq-len), found --sweep-gpus / --sweep-seq: a sweep "
                       "keeps the best layout of each point; plan a point on its own for its top " + std::to_string(in.top));
  }
  // A repeated value would plan the same point twice.
  for (const auto& [values, flag] : {std::pair{&in.sweep_gpus, "--sweep-gpus"}, {&in.sweep_seq, "--sweep-seq"}}) {
    for (size_t i = 0; i < values->size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if ((*values)[i] == (*values)[j]) {
          FlagError(flag, "expected distinct values, found " + std::to_string((*values)[i]) + " twice");
        }
      }
    }
  }
  // A value neither given nor swept is refused by BuildPlanRequest, naming --gpus / --seq-len.
  const std::vector<int64_t> gpus = in.sweep_gpus.empty() ? std::vector<int64_t>{in.gpus.value_or(0)} : in.sweep_gpus;
  const std::vector<int64_t> seqs = in.sweep_seq.empty() ? std::vector<int64_t>{in.seq_len.value_or(0)} : in.sweep_seq;
  // Errors name the sweep option the point came from.
  SweepReport rep;
  for (int64_t g : gpus) {
    for (int64_t s : seqs) {
      const auto [point, source] = PointInput(in, g, s);
      SweepPoint& p = rep.points.emplace_back(SweepPoint{g, s, BuildPlanRequest(point, source), {}, {}});
      p.request.top_n = 1;
      const std::string w = g == gpus.front() ? SeqLenWarning(p.request.model, s) : "";
      if (!w.empty()) p.warnings.push_back("warning: " + w);
      if (rep.points.size() == 1 && !GenericModelWarning(p.request.model).empty()) {
        p.warnings.push_back("warning: " + GenericModelWarning(p.request.model));
      }
    }
  }
  if (o.out) RefuseInputsAsOutputs({{*o.out, "--out"}}, {{in.model, "--model"}, {in.system, "--system"}});
  CheckOutputPath(o.out.value_or(""), "--out", o.force);
  return rep;
}

void SearchSweepPoint(SweepPoint& p, const PlanInput& in) {
  p.request.deadline = SearchDeadline(in.max_seconds);  // --max-seconds counts per point, from its search
  p.result = Plan(p.request);
  if (!p.result.stopped.empty()) p.warnings.push_back("warning: " + StopWarning(in, p.result));
}

std::string SweepReport::Failure() const {
  size_t missing = 0;
  for (const SweepPoint& p : points) missing += p.result.top.empty() ? 1 : 0;
  if (missing == 0) return "";
  return std::to_string(missing) + " of " + std::to_string(points.size()) +
         " sweep points have no layout (each point says why)";
}

void SearchSweepPoints(SweepReport& sweep, const PlanInput& in, const std::function<void(size_t)>& done) {
  const size_t n = sweep.points.size();
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t at_once = std::min(n, cores);
  if (at_once <= 1) {
    for (size_t i = 0; i < n; ++i) {
      SearchSweepPoint(sweep.points[i], in);
      if (done) done(i);
    }
    return;
  }
  // Points run whole on their own threads: a search's serial parts (the link table, the seed
  // scan) then overlap with another point's, where points one after the other would leave
  // cores idle during them.
  for (SweepPoint& p : sweep.points) {
    if (p.request.threads == 0) p.request.threads = static_cast<int>(std::max<size_t>(1, cores / at_once));
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<char> finished(n, 0);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      std::exception_ptr error;
      try {
        SearchSweepPoint(sweep.points[i], in);
      } catch (...) {
        error = std::current_exception();
      }
      const std::lock_guard<std::mutex> lock(mu);
      errors[i] = error;
      finished[i] = 1;
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(at_once);
  for (size_t t = 0; t < at_once; ++t) pool.emplace_back(work);
  std::exception_ptr first_error;
  for (size_t i = 0; i < n && !first_error; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return finished[i] != 0; });
      first_error = errors[i];
    }
    if (!first_error && done) {
      try {
        done(i);
      } catch (...) {
        first_error = std::current_exception();
      }
    }
  }
  next.store(n);  // after an error: no point not yet started is started
  for (std::thread& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

SweepReport SweepLayouts(const PlanInput& in) {
  SweepReport rep = PrepareSweep(in);
  SearchSweepPoints(rep, in);
  return rep;
}

}  // namespace meshplan
