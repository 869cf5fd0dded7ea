#pragma once
// Sub-commands of the meshplan CLI. Each Add* declares its options on the CLI11 app; each
// Run* returns the process exit status: 0 success, 1 no layout satisfies the request,
// 2 unusable input (thrown as InputError and printed by main).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace meshplan::cli {

struct PlanOptions {
  std::string model;
  std::string system;
  std::string hwdb;
  long long gpus = 0;
  long long seq_len = 0;
  long long global_batch = 0;
  std::string precision = "bf16";
  std::string framework = "automodel";
  std::string automodel_version = "0.5";
  std::vector<std::string> strategies;
  int top = 5;
  std::string format = "table";
  std::string out;
  bool force = false;
  double headroom = 0.10;
  long long max_micro_batch = 16;
};

struct ListOptions {
  std::string what;
  std::string hwdb;
};

void AddPlanCommand(CLI::App& app, PlanOptions& o);
int RunPlan(const PlanOptions& o);
void AddListCommand(CLI::App& app, ListOptions& o);
int RunList(const ListOptions& o);

}  // namespace meshplan::cli
