#pragma once
/// \file diag.hpp
/// Errors about user input. Library code never prints or exits: it throws InputError,
/// and the CLI turns it into a compiler-style message and exit status 2.

#include <stdexcept>
#include <string>

namespace meshplan {

/// A place in an input file. line and column are 1-based; 0 means unknown
/// (for example a key that is missing: then the position of its parent map is used).
struct SourceLoc {
  std::string file;  ///< path as the user gave it, or "<embedded>/models/x.json"
  int line = 0;
  int column = 0;
  /// `file` is a path meshplan was asked to write (--out, --report, --emit-launch), not an
  /// input: `plan --format json` names it under "output" instead of "file".
  bool output = false;
};

/// Formats "file:line:col" (or "file" alone when line is 0).
std::string FormatLoc(const SourceLoc& loc);

/// Bad input: names where (file, line, column), which field, what was expected and what
/// was found. what() is the full one-line message:
///   "models/x.json:3:5: error: num_attention_heads: expected a positive integer, found -4"
class InputError : public std::runtime_error {
 public:
  InputError(SourceLoc loc, std::string field, std::string message);
  const SourceLoc& loc() const { return loc_; }
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  SourceLoc loc_;
  std::string field_;
  std::string message_;
};

}  // namespace meshplan
