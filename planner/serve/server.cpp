// `meshplan serve`'s HTTP server: cpp-httplib routes to api::Call (server.hpp).
#include "serve/server.hpp"

#include <httplib.h>

#include "meshplan/commands.hpp"
#include "meshplan/diag.hpp"

namespace meshplan::serve {

namespace {

void SetAnswer(httplib::Response& res, const api::Answer& a) {
  res.status = a.status;
  res.set_content(a.body, a.content_type.c_str());
}

// The JSON error of an HTTP-level refusal (no handler ran, or it threw).
void SetError(httplib::Response& res, int status, const std::string& kind, const std::string& message) {
  res.status = status;
  res.set_content(JsonText(ErrorJson(kind, message, status >= 500 ? 3 : 2)), "application/json");
}

// Answers every method but `allowed` on `path` with 405 and an Allow header (RFC 9110 15.5.6);
// OPTIONS gets 204 with the same header.
void RefuseOtherMethods(httplib::Server& http, const std::string& path, const std::string& allowed) {
  const auto refuse = [path, allowed](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Allow", allowed);
    SetError(res, 405, "http", req.method + " is not allowed on " + path + ": expected " + allowed + " (see docs/serve.md)");
  };
  if (allowed != "GET") http.Get(path, refuse);
  if (allowed != "POST") http.Post(path, refuse);
  http.Put(path, refuse);
  http.Patch(path, refuse);
  http.Delete(path, refuse);
  http.Options(path, [allowed](const httplib::Request&, httplib::Response& res) {
    res.status = 204;
    res.set_header("Allow", allowed + ", OPTIONS");
  });
}

}  // namespace

struct Server::Impl {
  ServeOptions options;
  httplib::Server http;
};

Server::Server(const ServeOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  httplib::Server& http = impl_->http;
  const api::Limits limits{false, options.max_seconds, options.max_sweep_points};
  http.set_payload_max_length(options.max_body_bytes);
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(PageHtml(), "text/html; charset=utf-8");
  });
  RefuseOtherMethods(http, "/", "GET");
  for (const char* list : {"models", "systems", "gpus"}) {
    http.Get(std::string("/api/") + list, [list, limits](const httplib::Request&, httplib::Response& res) {
      SetAnswer(res, api::Call(list, "", limits));
    });
    RefuseOtherMethods(http, std::string("/api/") + list, "GET");
  }
  for (const char* command : {"plan", "check", "explain", "validate"}) {
    http.Post(std::string("/api/") + command, [command, limits](const httplib::Request& req, httplib::Response& res) {
      SetAnswer(res, api::Call(command, req.body, limits));
    });
    RefuseOtherMethods(http, std::string("/api/") + command, "POST");
  }
  const size_t max_body = options.max_body_bytes;
  // Answers without a body (404, 413 from the payload limit, ...) get a JSON one.
  http.set_error_handler([max_body](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int s = res.status;
    const std::string message =
        s == 413 ? "request body larger than this server's limit of " + std::to_string(max_body) +
                       " bytes (meshplan serve --max-body-kb)"
        : s == 404 ? "no such endpoint: " + req.method + " " + req.path + " (see docs/serve.md)"
                   : "HTTP " + std::to_string(s) + " for " + req.method + " " + req.path;
    SetError(res, s, s >= 500 ? "internal" : "http", message);
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SetError(res, 500, "internal", what);
  });
}

Server::~Server() { Stop(); }

int Server::Bind() {
  const ServeOptions& o = impl_->options;
  if (o.port < 0 || o.port > 65535) {
    throw InputError({"<command line>", 0, 0}, "--port", "expected a port in [0, 65535], found " + std::to_string(o.port));
  }
  const int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) {
    throw InputError({"<command line>", 0, 0}, o.port == 0 ? "--host" : "--port",
                     "cannot listen on " + o.host + ":" + std::to_string(o.port) +
                         " (address in use, not this machine's, or not allowed)");
  }
  return port;
}

bool Server::Listen() { return impl_->http.listen_after_bind(); }

void Server::Stop() {
  if (impl_) impl_->http.stop();
}

}  // namespace meshplan::serve
