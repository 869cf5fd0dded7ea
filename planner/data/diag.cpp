#include "meshplan/diag.hpp"

namespace meshplan {

std::string FormatLoc(const SourceLoc& loc) {
  std::string s;
  if (loc.file.empty()) {
    s = "<command line>";
  } else {
    s.append(loc.file);
  }
  if (loc.line > 0) {
    s.append(":").append(std::to_string(loc.line));
    if (loc.column > 0) s.append(":").append(std::to_string(loc.column));
  }
  return s;
}

static std::string Compose(const SourceLoc& loc, const std::string& field, const std::string& message) {
  std::string s = FormatLoc(loc);
  s.append(": error: ");
  if (!field.empty()) {
    s.append(field);
    s.append(": ");
  }
  s.append(message);
  return s;
}

InputError::InputError(SourceLoc loc, std::string field, std::string message)
    : std::runtime_error(Compose(loc, field, message)),
      loc_(std::move(loc)), field_(std::move(field)), message_(std::move(message)) {}

}  // namespace meshplan
