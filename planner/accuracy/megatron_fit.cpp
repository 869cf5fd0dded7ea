// Least-squares fit of the Megatron-Core step-time constants of a system (validate --fit).

#include "accuracy/megatron_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "accuracy/least_squares.hpp"
#include "meshplan/framework.hpp"
#include "cost/comm.hpp"
#include "cost/context.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "meshplan/framework.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan::accuracy {

namespace {

constexpr int kConstants = 5;  // gemm_bf16, gemm_fp8, gemm_fp4, memory_bound, kernel_overhead
constexpr double kKernelPrior = 4e-6;
const char* const kNames[kConstants] = {"gemm_bf16", "gemm_fp8", "gemm_fp4", "memory_bound", "kernel_overhead_us"};

int GemmIndex(Precision p) { return p == Precision::kFp4 ? 2 : p == Precision::kFp8 ? 1 : 0; }

MegatronTimeFit FromVector(const std::array<double, kConstants>& x) {
  MegatronTimeFit f;
  f.gemm_bf16 = x[0];
  f.gemm_fp8 = x[1];
  f.gemm_fp4 = x[2];
  f.memory_bound = x[3];
  f.kernel_overhead = x[4] * kKernelPrior;
  f.fitted = true;
  return f;
}

// MegatronTime's host-bound term of `row` whose compute is `compute`: its GPU time is the
// stretched compute plus the fixed part less the optimizer step.
double FitHostBound(const FitRow& row, double compute, const MegatronTimeFit& fit) {
  const double gpu = (1.0 + row.bubble_fraction) * compute + row.fixed - row.optimizer;
  return cost::MegatronHostBound(row.host, row.bubble_fraction, gpu, row.sync, fit, row.precision);
}

double FitCompute(const FitRow& row, const MegatronTimeFit& fit) {
  return cost::MegatronGemmFactor(fit, row.precision) * row.gemm + row.attention + fit.memory_bound * row.memory_bound +
         fit.kernel_overhead * row.kernels;
}

// The GEMM constant each precision's rows are fitted with: its own when kFitMinModels models
// ran in it, else that of the identified precision with the most rows (fp8 first on a tie),
// else its own at the prior (-1: no rows need it). tie[g] == g: fitted on its own.
std::array<int, 3> GemmTies(const std::vector<FitRow>& rows, long skip) {
  std::array<std::vector<std::string>, 3> models;
  std::array<long, 3> count{};
  for (long i = 0; i < long(rows.size()); ++i) {
    const FitRow& row = rows[size_t(i)];
    if (i == skip) continue;
    const int g = GemmIndex(row.precision);
    ++count[size_t(g)];
    auto& m = models[size_t(g)];
    if (std::find(m.begin(), m.end(), row.model) == m.end()) m.push_back(row.model);
  }
  int donor = -1;
  for (int g : {1, 0, 2}) {
    if (int(models[size_t(g)].size()) >= kFitMinModels && (donor < 0 || count[size_t(g)] > count[size_t(donor)])) donor = g;
  }
  std::array<int, 3> tie{};
  for (int g = 0; g < 3; ++g) {
    tie[size_t(g)] = int(models[size_t(g)].size()) >= kFitMinModels ? g : donor >= 0 ? donor : (count[size_t(g)] ? g : -1);
  }
  return tie;
}

// Solves the ridge-regularised, bounded problem on `rows` except `skip` (-1: none) and the rows
// marked in `host_bound`.
std::array<double, kConstants> SolveLinear(const std::vector<FitRow>& rows, long skip,
                                           const std::vector<bool>& host_bound, std::array<bool, kConstants>& used) {
  // A GEMM factor below 1 would run GEMMs faster than the measured best (MAMF): not physical.
  const std::array<double, kConstants> lower{1.0, 1.0, 1.0, 0.0, 0.0};
  used.fill(false);
  used[3] = used[4] = true;
  const std::array<int, 3> tie = GemmTies(rows, skip);
  for (int g = 0; g < 3; ++g) {
    if (tie[size_t(g)] == g) used[size_t(g)] = true;
  }
  std::vector<Unknown> unknowns(kConstants);
  for (int j = 0; j < kConstants; ++j) unknowns[size_t(j)] = {used[size_t(j)], 1.0, lower[size_t(j)]};
  long n = 0;
  for (long i = 0; i < long(rows.size()); ++i) n += (i != skip && !host_bound[size_t(i)]) ? 1 : 0;
  // Rows weighted by 1 / published: relative residuals.
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, kConstants);
  Eigen::VectorXd b(n);
  long r = 0;
  for (long i = 0; i < long(rows.size()); ++i) {
    if (i == skip || host_bound[size_t(i)]) continue;
    const FitRow& row = rows[size_t(i)];
    const double w = 1.0 / row.published_step, one_b = 1.0 + row.bubble_fraction;
    // A row's precision has rows, so GemmTies gave it a fitted column: its own or the donor's.
    A(r, tie[size_t(GemmIndex(row.precision))]) = w * (one_b * row.gemm);
    A(r, 3) = w * (one_b * row.memory_bound);
    A(r, 4) = w * (one_b * row.kernels * kKernelPrior);
    b(r) = w * (row.published_step - one_b * row.attention - row.fixed);
    ++r;
  }
  const BoundedSolution sol = SolveBounded(A, b, unknowns, kMegatronFitRidge);
  std::array<double, kConstants> x{};
  std::copy(sol.x.begin(), sol.x.end(), x.begin());
  for (int g = 0; g < 3; ++g) {
    if (tie[size_t(g)] >= 0 && tie[size_t(g)] != g) x[size_t(g)] = x[size_t(tie[size_t(g)])];
  }
  return x;
}

std::array<double, kConstants> Solve(const std::vector<FitRow>& rows, long skip, std::array<bool, kConstants>& used) {
  std::vector<bool> host_bound(rows.size(), false);
  std::array<double, kConstants> x = SolveLinear(rows, skip, host_bound, used);
  for (int round = 0; round < 4; ++round) {
    const MegatronTimeFit f = FromVector(x);
    std::vector<bool> next(rows.size(), false);
    for (size_t i = 0; i < rows.size(); ++i) next[i] = FitHostBound(rows[i], FitCompute(rows[i], f), f) > 0.0;
    if (next == host_bound) break;
    host_bound = next;
    x = SolveLinear(rows, skip, host_bound, used);
  }
  return x;
}

}  // namespace

FitRow MakeFitRow(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup, const Layout& layout,
                  double published_step) {
  const ParamCounts params = CountParams(model);
  const CostView view = ToCostView(layout, model, setup);  // outlives ctx, which refers to it
  cost::Ctx ctx = cost::MakeCtx(model, system, setup, params, view);
  std::shared_ptr<const cost::LinkTable> links;
  if (setup.num_gpus <= cost::kMaxGraphWorld) {
    links = cost::SharedLinkTable(system, setup.num_gpus, model.num_experts);
    ctx.links = links.get();
  }
  FitRow row;
  row.system = system.name;
  row.precision = setup.precision;
  row.published_step = published_step;
  double slowest = -1;
  const MemoryOptions opts;
  const cost::MegatronShared shared = cost::MegatronLayoutShared(ctx);
  for (int64_t r = 0; r < std::max<int64_t>(1, layout.pp); ++r) {
    const MemoryBreakdown mem = cost::RankMemory(ctx, r, opts);
    const cost::MegatronTerms t = cost::MegatronRankTerms(ctx, shared, r, mem);
    const double step = cost::MegatronTime(t, system.megatron_fit, setup.precision).Step();
    if (step > slowest) {
      slowest = step;
      row.gemm = t.gemm;
      row.attention = t.attention;
      row.memory_bound = t.memory_bound;
      row.kernels = t.kernels;
      row.bubble_fraction = t.bubble_fraction;
      row.fixed = (1.0 + t.bubble_fraction) * (t.tp + t.cp + t.ep) + t.dp + t.pp + t.optimizer;  // as MegatronTime
      row.optimizer = t.optimizer;
      row.host = t.host;
      row.sync = t.sync;
      row.ep = EpTraffic{t.ep_busy, t.ep_nvlink, t.ep_rdma, t.ep, shared.ep_a2a.domains, shared.a2a_copies,
                         shared.ep_a2a.node_copies};
    }
  }
  return row;
}

double FitPredict(const FitRow& row, const MegatronTimeFit& fit) {
  const double compute = FitCompute(row, fit);
  return (1.0 + row.bubble_fraction) * compute + row.fixed + FitHostBound(row, compute, fit);
}

MegatronTimeFit FitMegatronConstants(const std::vector<FitRow>& rows) {
  if (rows.empty()) return MegatronTimeFit{};
  std::array<bool, kConstants> used{};
  return FromVector(Solve(rows, -1, used));
}

MegatronFitOutcome FitMegatronTime(const std::vector<FitRow>& rows) {
  MegatronFitOutcome out;
  if (rows.empty()) return out;
  std::array<bool, kConstants> used{};
  out.fit = FromVector(Solve(rows, -1, used));
  const std::array<int, 3> tie = GemmTies(rows, -1);
  {
    std::array<std::vector<std::string>, 3> models;
    for (const FitRow& row : rows) {
      const int g = GemmIndex(row.precision);
      ++out.gemm_rows[g];
      if (std::find(models[size_t(g)].begin(), models[size_t(g)].end(), row.model) == models[size_t(g)].end()) {
        models[size_t(g)].push_back(row.model);
      }
    }
    for (int g = 0; g < 3; ++g) {
      out.gemm_models[g] = int(models[size_t(g)].size());
      out.gemm_tie[g] = tie[size_t(g)];
    }
  }
  for (int j = 0; j < kConstants; ++j) {
    if (used[size_t(j)]) {
      out.fitted.push_back(kNames[j]);
    } else if (j < 3 && tie[size_t(j)] >= 0 && tie[size_t(j)] != j) {
      out.fitted.push_back(std::string(kNames[j]) + " = " + kNames[tie[size_t(j)]]);
    }
  }
  std::vector<double> abs;
  for (long i = 0; i < long(rows.size()); ++i) {
    const FitRow& row = rows[size_t(i)];
    out.residuals.push_back(RelativeError(FitPredict(row, out.fit), row.published_step));
    abs.push_back(std::fabs(out.residuals.back()));
    std::array<bool, kConstants> u{};
    const MegatronTimeFit loo = FromVector(Solve(rows, i, u));
    out.loo_residuals.push_back(RelativeError(FitPredict(row, loo), row.published_step));
  }
  out.fit.rows = int(rows.size());
  out.fit.residual_median = Quantile(abs, 0.5);
  out.fit.residual_p90 = Quantile(abs, 0.9);
  return out;
}

}  // namespace meshplan::accuracy

namespace meshplan {

MegatronComputeSplit SplitMegatronCompute(const ModelSpec& model, const SystemSpec& system, const TrainSetup& setup,
                                          const Layout& layout) {
  const accuracy::FitRow t = accuracy::MakeFitRow(model, system, setup, layout, 0.0);
  const MegatronTimeFit& fit = system.megatron_fit;
  return MegatronComputeSplit{cost::MegatronGemmFactor(fit, setup.precision) * t.gemm, t.attention,
                              fit.memory_bound * t.memory_bound, fit.kernel_overhead * t.kernels, t.bubble_fraction,
                              t.ep};
}

std::string SystemYamlWithFit(const std::string& yaml, const SystemFit& fit) {
  const MegatronFitOutcome& o = fit.outcome;
  std::vector<std::string> lines;
  {
    std::istringstream in(yaml);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  // The old block: its "# megatron_time_fit" header comments, the key, and the indented (or
  // empty) lines under it. Everything before and after it is kept as it is.
  size_t end = lines.size(), resume = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("megatron_time_fit:", 0) == 0) {
      end = i;
      while (end > 0 && lines[end - 1].rfind("# megatron_time_fit", 0) == 0) --end;
      resume = i + 1;
      while (resume < lines.size() && (lines[resume].empty() || lines[resume][0] == ' ' || lines[resume][0] == '\t')) {
        ++resume;
      }
      break;
    }
  }
  std::ostringstream os;
  for (size_t i = 0; i < end; ++i) os << lines[i] << "\n";
  os.setf(std::ios::fixed);
  os.precision(4);
  os << "# megatron_time_fit: written by " << fit.written_by << " (planner/accuracy/megatron_fit.cpp):\n"
     << "# megatron_time_fit: least squares on relative step time, ridge " << kMegatronFitRidge
     << " toward the physical model; constants not listed under `fitted` stay at the prior.\n"
     << "megatron_time_fit:\n"
     << "  source: \"" << fit.source << "\"\n"
     << "  fitted: [";
  for (size_t i = 0; i < o.fitted.size(); ++i) os << (i ? ", " : "") << o.fitted[i];
  os << "]\n"
     << "  gemm_bf16: " << o.fit.gemm_bf16 << "\n"
     << "  gemm_fp8: " << o.fit.gemm_fp8 << "\n"
     << "  gemm_fp4: " << o.fit.gemm_fp4 << "\n"
     << "  memory_bound: " << o.fit.memory_bound << "\n"
     << "  kernel_overhead_us: " << o.fit.kernel_overhead * 1e6 << "\n"
     << "  rows: " << o.fit.rows << "\n"
     << "  residual_median: " << o.fit.residual_median << "\n"
     << "  residual_p90: " << o.fit.residual_p90 << "\n"
     << "  residuals:  # (predicted - published) / published step time; leave-one-out in brackets\n";
  for (size_t i = 0; i < fit.labels.size() && i < o.residuals.size(); ++i) {
    std::string label = fit.labels[i];
    std::replace(label.begin(), label.end(), '"', '\'');
    os << "    - \"" << label << ": " << std::showpos << o.residuals[i] << " [" << o.loo_residuals[i] << "]"
       << std::noshowpos << "\"\n";
  }
  for (size_t i = resume; i < lines.size(); ++i) os << lines[i] << "\n";
  return os.str();
}

void WriteSystemFit(const SystemFit& fit) {
  std::ifstream in(fit.file);
  if (!in.good()) throw InputError(SourceLoc{fit.file, 0, 0}, "megatron_time_fit", "cannot read the system file");
  std::ostringstream text;
  text << in.rdbuf();
  WriteFileAtomically(fit.file, SystemYamlWithFit(text.str(), fit), /*force=*/true);
}

}  // namespace meshplan
