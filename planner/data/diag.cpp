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
  // Control characters (newlines, terminal escapes from binary input) are shown as \xNN so
  // that the message stays one harmless line.
  std::string out;
  out.reserve(s.size());
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out.append("\\x");
      out.push_back(kHex[ch >> 4]);
      out.push_back(kHex[ch & 15]);
    } else {
      out.push_back(static_cast<char>(ch));
    }
  }
  return out;
}

InputError::InputError(SourceLoc loc, std::string field, std::string message)
    : std::runtime_error(Compose(loc, field, message)),
      loc_(std::move(loc)), field_(std::move(field)), message_(std::move(message)) {}

}  // namespace meshplan
