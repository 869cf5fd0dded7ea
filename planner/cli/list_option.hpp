#pragma once
// Comma-separated list options (--strategy, --sweep-gpus, --sweep-seq). CLI11's own delimiter
// drops empty items: "8,,16" read as 8,16 and "8," as 8. These options take each value whole,
// refuse an empty item and only then split and convert it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace meshplan::cli {

/// 1-based index of the first empty item of `value` split on ',' ("8,,16" -> 2, "8," -> 2,
/// "" -> 1), or 0 when every item has text.
inline size_t FirstEmptyItem(const std::string& value) {
  size_t item = 1;
  for (size_t start = 0;; ++item) {
    const size_t comma = value.find(',', start);
    if ((comma == std::string::npos ? value.size() : comma) == start) return item;
    if (comma == std::string::npos) return 0;
    start = comma + 1;
  }
}

/// Adds the option `name` taking A,B,... into `out` (several values, or the option given again,
/// append). `expected` says what the list holds ("a comma-separated list of integers"). An empty
/// item or an item that is not a T is a CLI::ValidationError "NAME: expected EXPECTED ..., found
/// 'VALUE' ..."; `item_check`, when given, checks each item with CLI11's message (IsMember's
/// "zero3 not in {...}").
template <class T>
CLI::Option* AddListOption(CLI::App* cmd, const std::string& name, std::vector<T>& out, const std::string& description,
                           const std::string& expected, const CLI::Validator& item_check = CLI::Validator()) {
  auto read = [&out, name, expected, item_check](const std::vector<std::string>& values) {
    out.clear();
    for (const std::string& value : values) {
      const std::vector<std::string> items = CLI::detail::split(value, ',');
      if (const size_t empty = FirstEmptyItem(value)) {
        const size_t count = static_cast<size_t>(std::count(value.begin(), value.end(), ',')) + 1;
        throw CLI::ValidationError(name, "expected " + expected + " with no empty item, found '" + value + "' (item " +
                                             std::to_string(empty) + " of " + std::to_string(count) + " is empty)");
      }
      for (std::string item : items) {
        const std::string problem = item_check(item);  // a default Validator accepts everything
        if (!problem.empty()) throw CLI::ValidationError(name, problem);
        T v{};
        if (!CLI::detail::lexical_cast(item, v)) {
          throw CLI::ValidationError(name, "expected " + expected + ", found '" + value + "'");
        }
        out.push_back(v);
      }
    }
  };
  return cmd->add_option_function<std::vector<std::string>>(name, read, description)->type_name("LIST");
}

}  // namespace meshplan::cli
