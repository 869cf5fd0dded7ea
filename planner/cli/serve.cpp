// `meshplan serve [--port N] [--host ADDR]`: the planner page and its JSON API
// (planner/serve/server.cpp) until interrupted.
#include <iostream>

#include "cli/serve.hpp"
#include "serve/server.hpp"

namespace meshplan::cli {

void AddServeCommand(CLI::App& app, ServeCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("serve", "serve the planner page and its JSON API over HTTP");
  cmd->add_option("--port", o.port, "TCP port (0: any free one, printed)")->check(CLI::Range(0, 65535));
  cmd->add_option("--host", o.host, "address to listen on (default 127.0.0.1: this machine only)");
  cmd->add_option("--max-seconds", o.max_seconds, "longest search a request may ask (seconds, default 60)")
      ->check(CLI::Range(0.001, 1e6));
  cmd->add_option("--max-body-kb", o.max_body_kb, "largest request body (KiB, default 4096)")->check(CLI::Range(1LL, 1LL << 20));
}

int RunServe(const ServeCommandOptions& o) {
  serve::ServeOptions s;
  s.host = o.host;
  s.port = o.port;
  s.max_seconds = o.max_seconds;
  s.max_body_bytes = static_cast<size_t>(o.max_body_kb) * 1024;
  serve::Server server(s);
  const int port = server.Bind();
  std::cout << "meshplan serve: listening on http://" << (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host)
            << ":" << port << "/ (Ctrl-C stops)" << std::endl;
  return server.Listen() ? 0 : 3;
}

}  // namespace meshplan::cli
