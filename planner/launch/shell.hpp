#pragma once
// Bash quoting for the launch scripts (planner/launch/ and the frameworks' launch.cpp).

#include <cctype>
#include <string>

namespace meshplan::launch {

/// `s` single-quoted for bash ('it'\''s').
inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) {
    if (ch == '\'') q += "'\\''";
    else q += ch;
  }
  return q + "'";
}

/// `s` with every character outside [A-Za-z0-9._-] replaced by '_' (safe inside "${V:?...}").
inline std::string ShellWord(const std::string& s) {
  std::string w;
  for (char ch : s) w += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-') ? ch : '_';
  return w;
}

}  // namespace meshplan::launch
