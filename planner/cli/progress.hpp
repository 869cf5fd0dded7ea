#pragma once
// A one-line progress indicator for long CLI loops (sweeps, validate). It writes to stderr
// only when stderr is a terminal, redrawing one line with '\r', and clears it when done;
// when stderr is a file or a pipe it prints nothing, so logs and tests stay clean.
#include <unistd.h>

#include <cstdio>
#include <string>

namespace meshplan::cli {

class Progress {
 public:
  /// `what`: a short noun ("sweep", "validate"); `total`: number of steps (0 = unknown).
  Progress(const char* what, long total) : what_(what), total_(total), on_(isatty(STDERR_FILENO) == 1) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { Clear(); }

  /// Shows "what: step/total label" (label cut to fit an 80-column terminal).
  void Step(long step, const std::string& label) {
    if (!on_) return;
    std::string text = std::string(what_) + ": " + std::to_string(step);
    if (total_ > 0) text += "/" + std::to_string(total_);
    text += " " + label;
    if (text.size() > 79) text.resize(79);
    std::fprintf(stderr, "\r%-79s", text.c_str());
    std::fflush(stderr);
    shown_ = true;
  }

  /// Erases the line (before printing results on the same terminal).
  void Clear() {
    if (!on_ || !shown_) return;
    std::fprintf(stderr, "\r%-79s\r", "");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  const char* what_;
  long total_;
  bool on_;
  bool shown_ = false;
};

}  // namespace meshplan::cli
