#pragma once
/// \file term_signals.hpp
/// Holding SIGINT, SIGTERM and SIGHUP back while a temporary file is created and recorded (or
/// removed), so that a run killed in between leaves none. Private to planner/.

#include <csignal>

namespace meshplan {

/// Blocks SIGINT / SIGTERM / SIGHUP for the calling thread from construction until Release()
/// or destruction (a pending signal is delivered then). Throws nothing.
class TermSignalsHeld {
 public:
  TermSignalsHeld() {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &prev_);
  }
  ~TermSignalsHeld() { Release(); }
  void Release() {
    if (held_) sigprocmask(SIG_SETMASK, &prev_, nullptr);
    held_ = false;
  }
  TermSignalsHeld(const TermSignalsHeld&) = delete;
  TermSignalsHeld& operator=(const TermSignalsHeld&) = delete;

 private:
  sigset_t prev_;
  bool held_ = true;
};

}  // namespace meshplan
