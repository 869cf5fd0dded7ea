#pragma once
/// \file api.hpp
/// The commands (commands.hpp) behind a JSON request: what `meshplan serve`'s HTTP API
/// (planner/serve/) and the Python module (python/) both call, so that the page, the module and
/// the CLI give the same answer to the same request. A request is a JSON object whose keys are
/// the CLI's options without their dashes, '-' written '_' ("seq_len" for --seq-len); an answer
/// is the JSON the CLI prints with --format json. Field names in errors are spelled the same
/// way ("seq_len", not "--seq-len"). docs/serve.md lists every key.

#include <string>

namespace meshplan::api {

/// What a front end may let a request do.
struct Limits {
  /// Read `model`, `system` and `hwdb` as paths of this machine too. Off for the HTTP server (a
  /// request names presets, or pastes a config.json as `model_config`); on for the Python module.
  bool allow_paths = false;
  /// Largest `max_seconds` of a search (seconds, per sweep point and per validate request); a
  /// request asking more is refused (400). 0 = no cap (the CLI's default of 300 s applies).
  double max_seconds = 0;
  /// Largest `gpus` x sweep points, and the most rows of a validate CSV; 0 = no cap.
  int64_t max_sweep_points = 0;
};

/// One answer: an HTTP status and its JSON (or, for plan with "format": "yaml", YAML) text.
/// 200: the command ran (a plan with no layout is still 200: its JSON carries "error" as the
/// CLI's does, kind no_valid_layout / no_layout_fits); 400: unusable input, body
/// ErrorJson("input", ...) with file / line / column / field; 422: a search stopped at its time
/// or work limit, body the partial plan with "error" of kind "search_stopped"; 500: an internal
/// error, body ErrorJson("internal", ...).
struct Answer {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

/// Runs `command` ("plan", "check", "explain", "validate", "models", "systems", "gpus") on the
/// JSON object `request` (text; "" or "{}" for the lists). Catches every exception: never throws.
Answer Call(const std::string& command, const std::string& request, const Limits& limits);

/// The commands Call knows, in the order docs/serve.md lists them.
inline constexpr const char* kCommands[] = {"plan", "check", "explain", "validate", "models", "systems", "gpus"};

}  // namespace meshplan::api
