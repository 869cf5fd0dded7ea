// Typed reading of a JSON request object; see request.hpp.
#include "api/request.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "data/yaml_util.hpp"
#include "meshplan/diag.hpp"

namespace meshplan::api {

namespace {

// "a string", "an integer", ... for a value found.
std::string Found(const nlohmann::json& v) {
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  const char* kind = v.is_string() ? "a string" : v.is_boolean() ? "a boolean" : v.is_number() ? "a number"
                     : v.is_array() ? "a list" : v.is_object() ? "an object" : "null";
  return std::string(kind) + " " + text;
}

}  // namespace

void RequestError(const std::string& key, const std::string& message) {
  throw InputError({"request", 0, 0}, key, message);
}

std::string KeyOfFlag(const std::string& field) {
  if (field.size() < 3 || field.compare(0, 2, "--") != 0) return field;
  std::string key = field.substr(2);
  for (char& c : key) c = c == '-' ? '_' : c;
  return key;
}

Fields::Fields(const nlohmann::json& j) : j_(j) {
  if (!j.is_object()) RequestError("", "expected a JSON object of request keys, found " + Found(j));
}

bool Fields::Has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

const nlohmann::json* Fields::Raw(const std::string& key) {
  read_.insert(key);
  return Has(key) ? &j_.at(key) : nullptr;
}

std::optional<std::string> Fields::Str(const std::string& key) {
  const nlohmann::json* v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) RequestError(key, "expected a string, found " + Found(*v));
  return v->get<std::string>();
}

std::optional<int64_t> Fields::Int(const std::string& key) {
  const nlohmann::json* v = Raw(key);
  if (!v) return std::nullopt;
  // nlohmann's is_number_integer() holds for unsigned values too: one above INT64_MAX would wrap.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    RequestError(key, "expected an integer, found " + Found(*v) + " (out of range)");
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  // 8.0 is 8; 8.5 is not an integer.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  RequestError(key, "expected an integer, found " + Found(*v));
}

std::optional<double> Fields::Real(const std::string& key) {
  const nlohmann::json* v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) RequestError(key, "expected a number, found " + Found(*v));
  return v->get<double>();
}

std::optional<bool> Fields::Bool(const std::string& key) {
  const nlohmann::json* v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) RequestError(key, "expected true or false, found " + Found(*v));
  return v->get<bool>();
}

std::vector<std::string> Fields::StrList(const std::string& key) {
  const nlohmann::json* v = Raw(key);
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  std::vector<std::string> out;
  if (v->is_array()) {
    for (const nlohmann::json& e : *v) {
      if (!e.is_string()) RequestError(key, "expected a list of strings, found an element " + Found(e));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  RequestError(key, "expected a string or a list of strings, found " + Found(*v));
}

std::vector<int64_t> Fields::IntList(const std::string& key) {
  const nlohmann::json* v = Raw(key);
  if (!v) return {};
  if (!v->is_array()) RequestError(key, "expected a list of integers, found " + Found(*v));
  std::vector<int64_t> out;
  for (const nlohmann::json& e : *v) {
    if (!e.is_number_integer()) RequestError(key, "expected a list of integers, found an element " + Found(e));
    out.push_back(e.get<int64_t>());
  }
  return out;
}

void Fields::RefuseUnknown(const std::vector<std::string>& known) const {
  for (const auto& [key, value] : j_.items()) {
    if (read_.count(key) || std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string hint = yamlutil::DidYouMean(key, known);
    RequestError(key, "unknown request key" + (hint.empty() ? std::string() : "; did you mean '" + hint + "'?"));
  }
}

}  // namespace meshplan::api
