#pragma once
// Reading a JSON request object (include/meshplan/api.hpp): typed getters that refuse a wrong
// type naming the key, and a final check that refuses keys nobody read (with "did you mean").
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace meshplan::api {

/// The keys of one request object. Every getter marks its key read; a key present with the
/// wrong type throws InputError (file "request", field = the key, expected vs found).
class Fields {
 public:
  /// Throws InputError when `j` is not an object.
  explicit Fields(const nlohmann::json& j);
  bool Has(const std::string& key) const;
  std::optional<std::string> Str(const std::string& key);
  std::optional<int64_t> Int(const std::string& key);
  std::optional<double> Real(const std::string& key);
  std::optional<bool> Bool(const std::string& key);
  /// A list of strings; a single string is a list of one.
  std::vector<std::string> StrList(const std::string& key);
  std::vector<int64_t> IntList(const std::string& key);
  /// A key's raw value (marked read); nullptr when absent.
  const nlohmann::json* Raw(const std::string& key);
  /// Throws InputError naming the first key not read, with the closest read-able key.
  void RefuseUnknown(const std::vector<std::string>& known) const;

 private:
  const nlohmann::json& j_;
  std::set<std::string> read_;
};

/// InputError on `key` of the request: "expected EXPECTED, found FOUND".
[[noreturn]] void RequestError(const std::string& key, const std::string& message);

/// A CLI option as a request key: "--seq-len" -> "seq_len"; other names unchanged.
std::string KeyOfFlag(const std::string& field);

}  // namespace meshplan::api
