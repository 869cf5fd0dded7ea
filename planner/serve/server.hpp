#pragma once
// `meshplan serve`: the HTTP front end (cpp-httplib) of the API (include/meshplan/api.hpp) and
// its page (planner/serve/page.html, embedded). docs/serve.md lists the endpoints.
#include <cstddef>
#include <memory>
#include <string>

#include "meshplan/api.hpp"

namespace meshplan::serve {

/// What `meshplan serve` is asked.
struct ServeOptions {
  std::string host = "127.0.0.1";  ///< --host: the address to bind (loopback by default)
  int port = 8080;                 ///< --port: 0 = any free port
  size_t max_body_bytes = 4u << 20;  ///< --max-body-kb: a larger request body is refused (413)
  /// --max-seconds: the longest search a request may ask (seconds); its default when it asks none.
  double max_seconds = 60;
  int64_t max_sweep_points = 64;   ///< sweep points of one request; validate CSV lines
};

/// The page served at "/": one HTML file with its script and style, nothing fetched elsewhere.
const std::string& PageHtml();

/// A server bound to its address, answering until Stop(). Requests are answered by api::Call;
/// every error (a handler's exception included) becomes a JSON error answer, never a crash.
class Server {
 public:
  explicit Server(const ServeOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  /// Binds options.host:options.port; returns the port bound. Throws InputError on --host /
  /// --port when the address cannot be bound.
  int Bind();
  /// Answers requests until Stop() (blocks). Returns false if it could not listen.
  bool Listen();
  /// Stops Listen() (from any thread).
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace meshplan::serve
