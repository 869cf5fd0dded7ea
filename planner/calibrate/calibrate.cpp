// Least-squares calibration of a system from collective and GEMM microbenchmarks.
#include "meshplan/calibrate.hpp"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "meshplan/diag.hpp"

namespace meshplan {

namespace {

double Steps(const std::string& op, int64_t n) {
  if (op == "all_reduce") return 2.0 * double(n - 1);
  if (op == "send_recv") return 1.0;
  return double(n - 1);
}
double BusFactor(const std::string& op, int64_t n) {
  if (op == "all_reduce") return 2.0 * double(n - 1) / double(n);
  if (op == "send_recv") return 1.0;
  return double(n - 1) / double(n);
}

// Least squares of rows a_i . x = t_i on relative residuals (each row divided by t_i).
Eigen::Vector2d FitRelative(const std::vector<std::array<double, 3>>& rows) {
  Eigen::MatrixXd A(rows.size(), 2);
  Eigen::VectorXd b(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    A(i, 0) = rows[i][0] / rows[i][2];
    A(i, 1) = rows[i][1] / rows[i][2];
    b(i) = 1.0;
  }
  Eigen::Vector2d x = A.colPivHouseholderQr().solve(b);
  if (x(0) < 0) {  // a negative latency is not physical: fit the bandwidth term alone
    x(0) = 0;
    x(1) = A.col(1).dot(b) / A.col(1).squaredNorm();
  }
  return x;
}

}  // namespace

std::vector<CalibrationPoint> ReadCalibrationPoints(const std::vector<std::string>& files) {
  std::vector<CalibrationPoint> pts;
  for (const std::string& file : files) {
    std::ifstream f(file);
    if (!f.good()) throw InputError({file, 0, 0}, "MEASUREMENTS", "cannot read the file");
    std::string line;
    int ln = 0;
    while (std::getline(f, line)) {
      ++ln;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::parse_error& e) {
        throw InputError({file, ln, static_cast<int>(e.byte)}, "MEASUREMENTS", "expected one JSON object per line");
      }
      if (j.contains("environment")) continue;
      auto need = [&](const char* key) -> const nlohmann::json& {
        if (!j.is_object() || !j.contains(key)) {
          throw InputError({file, ln, 1}, key, "expected the key in a measurement line of collectives.py / gemm.py");
        }
        return j.at(key);
      };
      auto num = [&](const char* key) {
        const nlohmann::json& v = need(key);
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0) {
          throw InputError({file, ln, 1}, key, "expected a positive number, found " + v.dump());
        }
        return v.get<double>();
      };
      CalibrationPoint p;
      p.where = file + ":" + std::to_string(ln);
      p.kind = need("kind").is_string() ? need("kind").get<std::string>() : "";
      p.seconds = num("seconds");
      if (p.kind == "collective") {
        p.op = need("op").get<std::string>();
        if (p.op != "all_reduce" && p.op != "all_gather" && p.op != "reduce_scatter" && p.op != "all_to_all" &&
            p.op != "send_recv") {
          throw InputError({file, ln, 1}, "op", "expected all_reduce, all_gather, reduce_scatter, all_to_all or send_recv, found " + p.op);
        }
        p.n = static_cast<int64_t>(num("n"));
        p.bytes = num("bytes");
        p.nodes = j.contains("nodes_spanned") ? j.at("nodes_spanned").get<int64_t>() : 1;
      } else if (p.kind == "gemm") {
        p.op = need("dtype").get<std::string>();
        p.flop = 2.0 * num("m") * num("n") * num("k");
        const double mn = std::min({num("m"), num("n"), num("k")});
        p.n = static_cast<int64_t>(mn);
      } else {
        throw InputError({file, ln, 1}, "kind", "expected \"collective\" or \"gemm\"");
      }
      pts.push_back(p);
    }
  }
  return pts;
}

CalibrationFit Calibrate(const SystemSpec& base, const std::vector<CalibrationPoint>& points) {
  CalibrationFit fit;
  fit.system = base;
  std::vector<std::array<double, 3>> coll;
  std::vector<size_t> coll_idx;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (p.kind == "collective" && p.nodes == 1 && p.n >= 2 && p.bytes >= (1 << 20)) {
      coll.push_back({Steps(p.op, p.n), p.bytes * BusFactor(p.op, p.n), p.seconds});
      coll_idx.push_back(i);
    }
  }
  Eigen::Vector2d cx(0, 0);
  if (!coll.empty()) {
    if (coll.size() < 3) throw InputError({"<measurements>", 0, 0}, "MEASUREMENTS", "expected at least 3 collective points of >= 1 MiB");
    cx = FitRelative(coll);
    fit.scaleup_latency_s = cx(0);
    fit.scaleup_busbw = 1.0 / cx(1);
    fit.system.scaleup_latency = cx(0);
    fit.system.scaleup_busbw_efficiency = std::min(1.0, fit.scaleup_busbw / base.scaleup_bandwidth);
  }
  Eigen::Vector2d g[2] = {{0, 0}, {0, 0}};
  const char* dtypes[2] = {"bf16", "fp8"};
  for (int d = 0; d < 2; ++d) {
    std::vector<std::array<double, 3>> rows;
    for (const auto& p : points) {
      if (p.kind == "gemm" && p.op == dtypes[d] && p.n >= 2048) rows.push_back({1.0, p.flop, p.seconds});
    }
    if (rows.size() >= 3) g[d] = FitRelative(rows);
  }
  if (g[0](1) > 0) {
    fit.bf16_rate = 1.0 / g[0](1);
    const double mamf = base.gpu.bf16_flops * base.gpu.matmul_efficiency_bf16;
    fit.system.compute_efficiency = std::min(1.0, base.compute_efficiency * fit.bf16_rate / mamf);
  }
  if (g[1](1) > 0) fit.fp8_rate = 1.0 / g[1](1);
  if (coll.empty() && fit.bf16_rate == 0) {
    throw InputError({"<measurements>", 0, 0}, "MEASUREMENTS",
                     "expected scale-up collective points (>= 1 MiB) or bf16 GEMM points (min(m,n,k) >= 2048)");
  }
  double ss = 0;
  int nfit = 0;
  for (const auto& p : points) {
    CalibrationResidual r;
    r.point = p;
    if (p.kind == "collective") {
      if (coll.empty()) continue;
      r.predicted = Steps(p.op, p.n) * cx(0) + p.bytes * BusFactor(p.op, p.n) * cx(1);
      r.fitted = p.nodes == 1 && p.bytes >= (1 << 20);
    } else {
      const int d = p.op == "fp8" ? 1 : 0;
      if (g[d](1) <= 0) continue;
      r.predicted = g[d](0) + p.flop * g[d](1);
      r.fitted = p.n >= 2048;
    }
    r.residual = r.predicted / p.seconds - 1.0;
    if (r.fitted) {
      ss += r.residual * r.residual;
      ++nfit;
    }
    fit.residuals.push_back(r);
  }
  fit.rms_residual = nfit ? std::sqrt(ss / nfit) : 0.0;
  return fit;
}

std::string CalibratedSystemYaml(const CalibrationFit& fit, const std::vector<std::string>& sources) {
  const SystemSpec& s = fit.system;
  std::ostringstream y;
  y.precision(6);
  y << "# " << s.display_name << ", calibrated by `meshplan calibrate` (least squares, Eigen) from:\n";
  for (const auto& f : sources) y << "#   " << f << "\n";
  y << "# fit: scale-up latency " << fit.scaleup_latency_s * 1e6 << " us/step, busbw " << fit.scaleup_busbw / 1e9
    << " GB/s, bf16 large-GEMM rate " << fit.bf16_rate / 1e12 << " TFLOP/s, fp8 " << fit.fp8_rate / 1e12
    << " TFLOP/s; RMS relative residual " << fit.rms_residual << "\n";
  y << "display_name: " << s.display_name << " (calibrated)\n";
  y << "gpu: " << s.gpu.name << "\n";
  y << "gpus_per_node: " << s.gpus_per_node << "\n";
  y << "scaleup_domain_gpus: " << s.scaleup_domain_gpus << "\n";
  y << "scaleup_gbps_per_gpu: " << s.scaleup_bandwidth / 1e9 << "\n";
  y << "scaleup_latency_us: " << s.scaleup_latency * 1e6 << "   # fitted\n";
  y << "nics_per_node: " << s.nics_per_node << "\n";
  y << "nic_gbit: " << s.nic_bandwidth * 8 / 1e9 << "\n";
  y << "scaleout_latency_us: " << s.scaleout_latency * 1e6 << "   # base (no multi-node measurements)\n";
  y << "scaleup_busbw_efficiency: " << s.scaleup_busbw_efficiency << "   # fitted busbw / scaleup_gbps_per_gpu\n";
  y << "scaleout_busbw_efficiency: " << s.scaleout_busbw_efficiency << "   # base\n";
  y << "compute_efficiency: " << s.compute_efficiency
    << "   # base x measured bf16 large-GEMM rate / (peak x matmul_efficiency_bf16)\n";
  return y.str();
}

}  // namespace meshplan
