// The JSON of an error, as `plan --format json` and any other front end give it.
#include "meshplan/commands.hpp"

namespace meshplan {

nlohmann::json ErrorJson(const std::string& kind, const std::string& message, int exit_status, const SourceLoc& loc,
                         const std::string& field) {
  auto or_null = [](auto v, bool known) { return known ? nlohmann::json(v) : nlohmann::json(nullptr); };
  const bool file = !loc.file.empty() && loc.file != "<command line>";
  return {{"error",
           {{"kind", kind},
            {"message", message},
            {"exit_status", exit_status},
            {"file", or_null(loc.file, file && !loc.output)},
            {"output", or_null(loc.file, file && loc.output)},
            {"line", or_null(loc.line, loc.line > 0)},
            {"column", or_null(loc.column, loc.column > 0)},
            {"field", or_null(field, !field.empty())}}}};
}

std::string JsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace meshplan
