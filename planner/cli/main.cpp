// meshplan command line: CLI11 only; every decision is made by the library.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "meshplan/diag.hpp"

int main(int argc, char** argv) {
  CLI::App app{"meshplan: parallelism planner and mesh-size solver for LLM training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "meshplan 0.1.0");
  meshplan::cli::PlanOptions plan;
  meshplan::cli::AddPlanCommand(app, plan);
  meshplan::cli::CheckOptions check;
  meshplan::cli::AddCheckCommand(app, check);
  meshplan::cli::ExplainOptions explain;
  meshplan::cli::AddExplainCommand(app, explain);
  meshplan::cli::ListOptions list;
  meshplan::cli::AddListCommand(app, list);
  meshplan::cli::ValidateOptions validate;
  meshplan::cli::AddValidateCommand(app, validate);
  meshplan::cli::CalibrateOptions calibrate;
  meshplan::cli::AddCalibrateCommand(app, calibrate);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "meshplan: error: " << e.what() << "\n" << "Run 'meshplan --help' for usage.\n";
    return 2;
  }
  try {
    if (app.got_subcommand("plan")) return meshplan::cli::RunPlan(plan);
    if (app.got_subcommand("calibrate")) return meshplan::cli::RunCalibrate(calibrate);
    if (app.got_subcommand("list")) return meshplan::cli::RunList(list);
    if (app.got_subcommand("check")) return meshplan::cli::RunCheck(check);
    if (app.got_subcommand("explain")) return meshplan::cli::RunExplain(explain);
    if (app.got_subcommand("validate")) return meshplan::cli::RunValidate(validate);
  } catch (const meshplan::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "meshplan: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
