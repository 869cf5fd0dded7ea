#pragma once
// `meshplan serve` (planner/cli/serve.cpp): built into the binary only, not meshplan_core, as
// it links cpp-httplib.
#include <CLI/CLI.hpp>

#include <string>

namespace meshplan::cli {

/// `meshplan serve`'s options (serve::ServeOptions as typed on the command line).
struct ServeCommandOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  double max_seconds = 60;
  long long max_body_kb = 4096;
};
void AddServeCommand(CLI::App& app, ServeCommandOptions& o);
/// Binds (InputError when it cannot), prints the address, answers until killed.
int RunServe(const ServeCommandOptions& o);

}  // namespace meshplan::cli
