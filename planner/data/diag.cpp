#include "meshplan/diag.hpp"

namespace meshplan {

std::string FormatLoc(const SourceLoc& loc) {
  std::string s = loc.file.empty() ? "<command line>" : loc.file;
  if (loc.line > 0) {
    s += ":" + std::to_string(loc.line);
    if (loc.column > 0) s += ":" + std::to_string(loc.column);
  }
  return s;
}

static std::string Compose(const SourceLoc& loc, const std::string& field, const std::string& message) {
  std::string s = FormatLoc(loc) + ": error: ";
  if (!field.empty()) s += field + ": ";
  return s + message;
}

InputError::InputError(SourceLoc loc, std::string field, std::string message)
    : std::runtime_error(Compose(loc, field, message)),
      loc_(std::move(loc)), field_(std::move(field)), message_(std::move(message)) {}

}  // namespace meshplan
