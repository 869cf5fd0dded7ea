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
  // Control characters (newlines, terminal escapes from binary input) and bytes that are not
  // part of a well-formed UTF-8 sequence are shown as \xNN, so that the message stays one
  // harmless, valid UTF-8 line.
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto escape = [&](unsigned char ch) {
    out.append("\\x");
    out.push_back(kHex[ch >> 4]);
    out.push_back(kHex[ch & 15]);
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch < 0x80) {
      if (ch < 0x20 || ch == 0x7f) {
        escape(ch);
      } else {
        out.push_back(static_cast<char>(ch));
      }
      ++i;
      continue;
    }
    // Lead byte of a 2-4 byte sequence (no overlongs, no surrogates, at most U+10FFFF).
    const size_t len = ch >= 0xc2 && ch <= 0xdf ? 2 : ch >= 0xe0 && ch <= 0xef ? 3 : ch >= 0xf0 && ch <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len >= 3) {
      const unsigned char b1 = static_cast<unsigned char>(s[i + 1]);
      if ((ch == 0xe0 && b1 < 0xa0) || (ch == 0xed && b1 >= 0xa0) || (ch == 0xf0 && b1 < 0x90) ||
          (ch == 0xf4 && b1 >= 0x90)) {
        ok = false;
      }
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      escape(ch);
      ++i;
    }
  }
  return out;
}

InputError::InputError(SourceLoc loc, std::string field, std::string message)
    : std::runtime_error(Compose(loc, field, message)),
      loc_(std::move(loc)), field_(std::move(field)), message_(std::move(message)) {}

}  // namespace meshplan
