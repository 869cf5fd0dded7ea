// meshplan command line: CLI11 only; every decision is made by the library.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <regex>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/serve.hpp"
#include "data/yaml_util.hpp"
#include "meshplan/diag.hpp"

namespace {

// "0.900000" -> "0.9", "1" -> "1" (CLI11 prints the bounds of a real range with %f).
std::string Trimmed(std::string v) {
  if (v.find('.') == std::string::npos) return v;
  while (!v.empty() && v.back() == '0') v.pop_back();
  if (!v.empty() && v.back() == '.') v.pop_back();
  return v;
}

// What an option of the given CLI11 type name takes ("INT", "FLOAT", ...).
std::string Kind(const CLI::App& app, const std::string& name) {
  std::string type;
  bool list = false;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (const CLI::Option* opt = sub->get_option_no_throw(name)) {
      type = opt->get_type_name();
      list = opt->get_items_expected_max() > 1;
    }
  }
  if (list && type.find("INT") != std::string::npos) return "a comma-separated list of integers";
  if (type.find("INT") != std::string::npos) return "an integer";
  if (type.find("FLOAT") != std::string::npos) return "a number";
  return "a value of type " + (type.empty() ? std::string("TEXT") : type);
}

// CLI11's own parse errors name the option but not always what it expected and what it found:
// "Could not convert: --gpus = abc", "--top: Value x not in range 1 to 1000", "--format: xml
// not in {table,yaml,json}". Says both; other messages are kept as they are.
std::string ParseErrorMessage(const CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what();
  std::smatch m;
  static const std::regex conversion("^Could not convert: (\\S+) = (.*)$");
  static const std::regex range("^(\\S+): Value (.*) not in range (\\S+) to (\\S+)$");
  static const std::regex member("^(\\S+): (.*) not in \\{(.*)\\}$");
  if (std::regex_match(what, m, conversion)) {
    return m.str(1) + ": expected " + Kind(app, m.str(1)) + ", found '" + m.str(2) + "'";
  }
  if (std::regex_match(what, m, range)) {
    return m.str(1) + ": expected " + Kind(app, m.str(1)) + " in [" + Trimmed(m.str(3)) + ", " + Trimmed(m.str(4)) +
           "], found '" + m.str(2) + "'";
  }
  if (std::regex_match(what, m, member)) {
    std::string choices = m.str(3);
    for (size_t i = choices.find(','); i != std::string::npos; i = choices.find(',', i + 2)) choices.replace(i, 1, ", ");
    return m.str(1) + ": expected one of " + choices + "; found '" + m.str(2) + "'";
  }
  return what;
}

// CLI11 reads integers with strtoll in base 0, so "--gpus 016" was 14 GPUs (octal) and
// "--gpus 0x8" was 8; and strtoll clamps a number too large for 64 bits to the limit:
// "--gpus 99999999999999999999" went on as 9223372036854775807 and was reported so. Every
// integer option of every subcommand takes decimal digits only (an optional sign, leading
// zeros read as decimal: 016 is 16) and refuses anything else, quoting it as typed.
void RefuseIntegerOverflow(CLI::App& app) {
  const CLI::Validator in_range(
      [](std::string& text) -> std::string {
        size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
        if (i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos) {
          // 0x.., 0b.., 0o..: numbers to CLI11, not to us; anything else is CLI11's to refuse.
          const bool prefixed = text.size() > i + 2 && text[i] == '0' && std::strchr("xXbBoO", text[i + 1]) != nullptr;
          return prefixed ? "expected an integer, found '" + text + "' (decimal digits only)" : "";
        }
        errno = 0;
        char* end = nullptr;
        std::strtoll(text.c_str(), &end, 10);
        if (errno == ERANGE) return "expected an integer, found '" + text + "' (out of range)";
        // Leading zeros dropped so that CLI11's base-0 conversion reads the number as decimal.
        const size_t first = text.find_first_not_of('0', i);
        text = text.substr(0, i) + (first == std::string::npos ? "0" : text.substr(first));
        return "";
      },
      "");
  // Real numbers likewise: strtod reads hexadecimal floats (--headroom 0x1p-3 was 12.5%).
  const CLI::Validator decimal_real(
      [](const std::string& text) -> std::string {
        const size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
        const bool hex = text.size() > i + 1 && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X');
        return hex ? "expected a number, found '" + text + "' (decimal only)" : "";
      },
      "");
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    for (CLI::Option* opt : sub->get_options()) {
      if (opt->get_items_expected_max() != 1) continue;
      // "INT", or "INT:..." with a validator's description (--top's range).
      if (opt->get_type_name().compare(0, 3, "INT") == 0) opt->transform(in_range);
      if (opt->get_type_name().compare(0, 5, "FLOAT") == 0) opt->transform(decimal_real);
    }
  }
}

// --help shows every option's default: CLI11 captures each option's initial value
// (always_capture_default, set before the subcommands are made); where that value is not what
// the option means when it is left out (a "not given" sentinel, 0 for "the recipe's", an empty
// list or path), or where the description already says the default, the captured one is cleared
// and the description keeps saying it.
void ShowDefaults(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    for (CLI::Option* opt : sub->get_options()) {
      const std::string d = opt->get_default_str();
      const std::string& text = opt->get_description();
      const bool said = text.find("default") != std::string::npos;
      const bool meaningless = d.empty() || d == "[]" || d == "0" || d == "false" || d.find("4611686018427387904") != std::string::npos;
      if (opt->get_required() || said || meaningless || opt->get_type_size() == 0) opt->default_str("");
    }
  }
}

// When no command was recognised: "unknown command 'plna'; expected one of plan, check, ...
// (did you mean 'plan'?)", or "expected a command" when none was given; "" when one was (the
// parse error is then the command's). CLI11 leaves an unknown word among the remaining
// arguments and reports only "A subcommand is required".
// Whether argv names plan, check or explain as its command and --format json (or
// --format=json) after it: what the parsed options would say where the parse failed.
bool JsonRequested(int argc, char** argv) {
  int command = 0;
  for (int i = 1; i < argc && command == 0; ++i) {
    const std::string_view a = argv[i];
    if (a == "plan" || a == "check" || a == "explain") command = i;
    else if (a.empty() || a[0] != '-') return false;  // another command
  }
  if (command == 0) return false;
  for (int i = command + 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--format=json" || (a == "--format" && i + 1 < argc && std::string_view(argv[i + 1]) == "json")) {
      return true;
    }
  }
  return false;
}

std::string CommandError(const CLI::App& app) {
  if (!app.get_subcommands().empty()) return "";
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  const std::vector<std::string> rest = app.remaining();
  if (rest.empty()) return "expected a command, one of " + list + " (meshplan --help)";
  const std::string& word = rest.front();
  if (!word.empty() && word[0] == '-') {
    return "unknown option '" + word + "' before the command; expected a command, one of " + list + " (meshplan --help)";
  }
  const std::string hint = meshplan::yamlutil::DidYouMean(word, names);
  return "unknown command '" + word + "'; expected one of " + list +
         (hint.empty() ? std::string(" (meshplan --help)") : "; did you mean '" + hint + "'?");
}

}  // namespace

int main(int argc, char** argv) {
  // Line-buffered stdout: a warning or error on stderr lands after the lines printed before it
  // when both streams go to one pipe or file (block buffering put stderr's first).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"meshplan: parallelism planner and mesh-size solver for LLM training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "meshplan 0.1.0");
  app.option_defaults()->always_capture_default();
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
  meshplan::cli::ServeCommandOptions serve;
  meshplan::cli::AddServeCommand(app, serve);
  RefuseIntegerOverflow(app);
  ShowDefaults(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (const std::string command = CommandError(app); !command.empty()) {
      std::cerr << "meshplan: error: " << command << "\n";
      return 2;
    }
    const std::string message = ParseErrorMessage(app, e);
    std::cerr << "meshplan: error: " << message << "\n" << "Run 'meshplan --help' for usage.\n";
    // A command line that asked plan, check or explain for JSON gets the error as JSON on stdout
    // too, as every later failure does (the parse stopped, so its options are read from argv).
    if (JsonRequested(argc, argv)) {
      // The option the message starts with ("--top: expected ...", "--gpus is required").
      const std::string field = message.rfind("--", 0) == 0 ? message.substr(0, message.find_first_of(": ")) : "";
      std::cout << meshplan::JsonText(meshplan::ErrorJson("input", message, 2, {}, field));
    }
    return 2;
  }
  // --format json (plan, check, explain): a failure prints its JSON on stdout too (the message
  // stays on stderr).
  const bool json = (app.got_subcommand("plan") && plan.format == "json") ||
                    (app.got_subcommand("check") && check.format == "json") ||
                    (app.got_subcommand("explain") && explain.format == "json");
  try {
    if (app.got_subcommand("plan")) return meshplan::cli::RunPlan(plan);
    if (app.got_subcommand("calibrate")) return meshplan::cli::RunCalibrate(calibrate);
    if (app.got_subcommand("list")) return meshplan::cli::RunList(list);
    if (app.got_subcommand("check")) return meshplan::cli::RunCheck(check);
    if (app.got_subcommand("explain")) return meshplan::cli::RunExplain(explain);
    if (app.got_subcommand("validate")) return meshplan::cli::RunValidate(validate);
    if (app.got_subcommand("serve")) return meshplan::cli::RunServe(serve);
  } catch (const meshplan::InputError& e) {
    // What was printed before the error comes first when both streams go to one pipe or file.
    std::cout << std::flush;
    std::fflush(stdout);
    std::cerr << e.what() << "\n";
    if (json) {
      std::cout << meshplan::JsonText(meshplan::ErrorJson("input", e.message(), 2, e.loc(), e.field()));
    }
    return 2;
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::fflush(stdout);
    std::cerr << "meshplan: internal error: " << e.what() << "\n";
    if (json) std::cout << meshplan::JsonText(meshplan::ErrorJson("internal", e.what(), 3));
    return 3;
  }
  return 0;
}
