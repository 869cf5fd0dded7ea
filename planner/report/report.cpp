// HTML report of a plan: table and inline SVG charts, no JavaScript, nothing fetched.
#include "meshplan/framework.hpp"
#include "meshplan/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "meshplan/recipe.hpp"
#include "recipe/format.hpp"

namespace meshplan {

namespace {

using recipe::Fixed;
using recipe::GiB;

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string Num(double v, int digits = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

struct Seg {
  const char* name;
  const char* color;
};

const Seg kMemSegs[] = {{"weights", "#4e79a7"},     {"gradients", "#f28e2b"}, {"optimizer", "#e15759"},
                        {"activations", "#76b7b2"}, {"buffers", "#edc948"},   {"headroom", "#d9d9d9"}};
const Seg kTimeSegs[] = {{"compute", "#4e79a7"}, {"TP comm", "#f28e2b"}, {"CP comm", "#e15759"},
                         {"DP comm", "#76b7b2"}, {"EP comm", "#59a14f"}, {"PP comm", "#edc948"},
                         {"bubble", "#b07aa1"},  {"optimizer", "#9c755f"}, {"host-bound", "#bab0ac"}};

template <size_t N>
std::string Legend(const Seg (&segs)[N], double x0, double y) {
  std::ostringstream s;
  double x = x0;
  for (const Seg& g : segs) {
    s << "<rect class=\"legend\" x=\"" << x << "\" y=\"" << y - 10 << "\" width=\"12\" height=\"12\" fill=\"" << g.color
      << "\"/><text x=\"" << x + 16 << "\" y=\"" << y << "\">" << g.name << "</text>";
    x += 24 + 7.5 * std::string(g.name).size();
  }
  return s.str();
}

// Horizontal stacked bars, one per recommended layout; values in the unit of `unit`.
template <size_t N>
std::string StackedBars(const std::string& title, const Seg (&segs)[N], const std::vector<std::vector<double>>& rows,
                        double full, const std::string& unit, double marker, const std::string& marker_label) {
  const double left = 70, width = 760, bar_h = 22, gap = 10, top = 50;
  const double h = top + rows.size() * (bar_h + gap) + 40;
  std::ostringstream s;
  s << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 40 << "\" height=\"" << h
    << "\" role=\"img\" aria-label=\"" << Esc(title) << "\">";
  s << "<text class=\"title\" x=\"0\" y=\"16\">" << Esc(title) << "</text>" << Legend(segs, 0, 38);
  const double scale = full > 0 ? width / full : 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = top + r * (bar_h + gap);
    s << "<text x=\"0\" y=\"" << y + 16 << "\">#" << r + 1 << "</text>";
    double x = left;
    for (size_t i = 0; i < N && i < rows[r].size(); ++i) {
      const double w = std::max(0.0, rows[r][i] * scale);
      if (w <= 0) continue;
      s << "<rect class=\"seg\" x=\"" << Num(x, 2) << "\" y=\"" << y << "\" width=\"" << Num(w, 2) << "\" height=\""
        << bar_h << "\" fill=\"" << segs[i].color << "\"><title>" << segs[i].name << ": " << Num(rows[r][i], 3) << " "
        << unit << "</title></rect>";
      x += w;
    }
  }
  const double axis_y = top + rows.size() * (bar_h + gap);
  s << "<line x1=\"" << left << "\" y1=\"" << axis_y << "\" x2=\"" << left + width << "\" y2=\"" << axis_y
    << "\" stroke=\"#333\"/>";
  for (int t = 0; t <= 4; ++t) {
    const double x = left + width * t / 4;
    s << "<text x=\"" << x << "\" y=\"" << axis_y + 16 << "\" text-anchor=\"middle\">" << Num(full * t / 4, full < 10 ? 2 : 0)
      << "</text>";
  }
  s << "<text x=\"" << left + width + 22 << "\" y=\"" << axis_y + 16 << "\">" << unit << "</text>";
  if (marker > 0) {
    const double x = left + marker * scale;
    s << "<line class=\"capacity\" x1=\"" << x << "\" y1=\"" << top - 4 << "\" x2=\"" << x << "\" y2=\"" << axis_y
      << "\" stroke=\"#000\" stroke-dasharray=\"4 3\"/><text x=\"" << x << "\" y=\"" << axis_y + 30
      << "\" text-anchor=\"middle\">" << Esc(marker_label) << "</text>";
  }
  s << "</svg>\n";
  return s.str();
}

std::string Scatter(const std::vector<Candidate>& all, const std::vector<Candidate>& top, double capacity_gib) {
  const double left = 70, bottom = 50, width = 760, height = 360, top_pad = 30;
  double xmax = capacity_gib, ymax = 1;
  for (const auto& c : all) ymax = std::max(ymax, c.cost.tokens_per_s_per_gpu);
  for (const auto& c : top) ymax = std::max(ymax, c.cost.tokens_per_s_per_gpu);
  ymax *= 1.08;
  auto X = [&](double gib) { return left + width * gib / xmax; };
  auto Y = [&](double tps) { return top_pad + height * (1 - tps / ymax); };
  std::ostringstream s;
  s << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 40 << "\" height=\""
    << top_pad + height + bottom << "\" role=\"img\" aria-label=\"fitting layouts\">";
  s << "<text class=\"title\" x=\"0\" y=\"16\">Fitting layouts: memory per GPU against tokens/s per GPU ("
    << all.size() << " plotted; recommended in red)</text>";
  s << "<rect class=\"plot\" x=\"" << left << "\" y=\"" << top_pad << "\" width=\"" << width << "\" height=\"" << height
    << "\" fill=\"#fafafa\" stroke=\"#333\"/>";
  for (int t = 0; t <= 5; ++t) {
    const double gx = xmax * t / 5, gy = ymax * t / 5;
    s << "<text x=\"" << X(gx) << "\" y=\"" << top_pad + height + 16 << "\" text-anchor=\"middle\">" << Num(gx, 0)
      << "</text>";
    s << "<text x=\"" << left - 6 << "\" y=\"" << Y(gy) + 4 << "\" text-anchor=\"end\">" << Num(gy, 0) << "</text>";
  }
  s << "<text x=\"" << left + width / 2 << "\" y=\"" << top_pad + height + 36
    << "\" text-anchor=\"middle\">predicted GiB per GPU (right edge: usable capacity)</text>";
  s << "<text x=\"12\" y=\"" << top_pad + height / 2 << "\" transform=\"rotate(-90 12 " << top_pad + height / 2
    << ")\" text-anchor=\"middle\">tokens/s/GPU</text>";
  for (const auto& c : all) {
    s << "<circle class=\"pt\" cx=\"" << Num(X(GiB(c.cost.memory.Total())), 2) << "\" cy=\""
      << Num(Y(c.cost.tokens_per_s_per_gpu), 2) << "\" r=\"3\" fill=\"#4e79a7\" fill-opacity=\"0.45\"><title>"
      << Esc(Describe(c.layout)) << "</title></circle>";
  }
  for (size_t i = 0; i < top.size(); ++i) {
    const auto& c = top[i];
    const double x = X(GiB(c.cost.memory.Total())), y = Y(c.cost.tokens_per_s_per_gpu);
    s << "<circle class=\"top\" cx=\"" << Num(x, 2) << "\" cy=\"" << Num(y, 2)
      << "\" r=\"6\" fill=\"#e15759\" stroke=\"#000\"><title>#" << i + 1 << " " << Esc(Describe(c.layout))
      << "</title></circle><text x=\"" << x + 8 << "\" y=\"" << y - 6 << "\">#" << i + 1 << "</text>";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace

std::string ReportHtml(const PlanResult& result, const std::vector<Candidate>& scatter, const PlanRequest& req) {
  std::ostringstream h;
  const double cap_gib = GiB(req.system.gpu.memory_bytes * (1 - req.setup.headroom));
  const double gpu_gib = GiB(req.system.gpu.memory_bytes);
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>meshplan: " << Esc(req.model.name)
    << " on " << req.setup.num_gpus << " GPUs</title>\n<style>body{font:14px sans-serif;margin:24px;color:#222}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
       "td.l,th.l{text-align:left}svg text{font:12px sans-serif}svg text.title{font-weight:bold}"
       "section{margin:24px 0}</style></head><body>\n";
  h << "<h1>meshplan plan: " << Esc(req.model.name) << " on " << req.setup.num_gpus << " &times; "
    << Esc(req.system.gpu.display_name) << " (" << Esc(req.system.name) << ")</h1>\n";
  h << "<p>seq_len " << req.setup.seq_len << ", global batch " << req.setup.global_batch << ", "
    << PrecisionName(req.setup.precision) << ", "
    << FrameworkOf(req.framework).product << "; searched "
    << result.enumerated << " layouts, " << result.valid << " valid, " << result.fitting << " fit in "
    << Num(cap_gib) << " GiB usable (" << Num(100 * req.setup.headroom, 0) << "% headroom kept free).</p>\n";
  if (const std::string w = GenericModelWarning(req.model); !w.empty()) {
    h << "<p><strong>warning:</strong> " << Esc(w) << "</p>\n";
  }
  // MFU against the BF16 dense peak; an FP8 or FP4 plan adds a column against its own peak.
  const Precision own_peak = PeakPrecision(req.system.gpu, req.setup.precision);
  const bool own_column = own_peak != Precision::kBf16;
  h << "<section><h2>Recommended layouts</h2><table><tr><th>#</th><th class=\"l\">layout</th><th>GiB/GPU</th>"
       "<th>headroom GiB</th><th>step s</th><th>tokens/s/GPU</th><th>TFLOP/s/GPU</th>"
       "<th title=\"model FLOP/s against the dense BF16 peak\">MFU %</th>";
  if (own_column) {
    h << "<th title=\"model FLOP/s against the dense " << recipe::PeakName(own_peak) << " peak\">MFU % of "
      << recipe::PeakName(own_peak) << "</th>";
  }
  h << "</tr>\n";
  for (size_t i = 0; i < result.top.size(); ++i) {
    const Candidate& c = result.top[i];
    h << "<tr><td>" << i + 1 << "</td><td class=\"l\">" << Esc(Describe(c.layout)) << "</td><td>"
      << Num(GiB(c.cost.memory.Total())) << "</td><td>" << Num(GiB(c.cost.capacity_bytes - c.cost.memory.Total()))
      << "</td><td>" << Num(c.cost.step_seconds, 3) << "</td><td>" << Num(c.cost.tokens_per_s_per_gpu, 0)
      << "</td><td>" << Num(c.cost.model_tflops_per_gpu, 0) << "</td><td>" << Num(100 * c.cost.mfu);
    if (own_column) h << "</td><td>" << Num(100 * c.cost.mfu_precision_peak);
    h << "</td></tr>\n";
  }
  h << "</table></section>\n";
  std::vector<std::vector<double>> mem, tim;
  double tmax = 0;
  for (const Candidate& c : result.top) {
    const MemoryBreakdown& m = c.cost.memory;
    mem.push_back({GiB(m.weights), GiB(m.gradients), GiB(m.optimizer), GiB(m.activations + m.logits),
                   GiB(m.buffers + m.workspace + m.overhead), std::max(0.0, GiB(c.cost.capacity_bytes - m.Total()))});
    const TimeBreakdown& t = c.cost.time;
    tim.push_back({t.compute, t.tp_comm, t.cp_comm, t.dp_comm, t.ep_comm, t.pp_comm, t.bubble, t.optimizer, t.host});
    tmax = std::max(tmax, t.Step());
  }
  h << "<section>"
    << StackedBars("Memory per GPU (most loaded rank), GiB", kMemSegs, mem, gpu_gib, "GiB", cap_gib,
                   "usable " + Num(cap_gib) + " GiB")
    << "</section>\n";
  h << "<section>" << StackedBars("Step time, s (exposed communication)", kTimeSegs, tim, tmax, "s", 0, "")
    << "</section>\n";
  h << "<section>" << Scatter(scatter, result.top, cap_gib) << "</section>\n";
  h << "<p>Predictions of meshplan's analytical model; see meshplan's docs/cost-model.md.</p>\n</body></html>\n";
  return h.str();
}

}  // namespace meshplan
