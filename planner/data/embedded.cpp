#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "meshplan/data.hpp"
#include "meshplan/diag.hpp"

namespace meshplan::data {

std::optional<std::string_view> FindEmbedded(std::string_view path) {
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    if (path == f.path) return std::string_view(f.content);
  }
  return std::nullopt;
}

std::vector<std::string> ListEmbedded(std::string_view dir) {
  std::vector<std::string> names;
  std::string prefix = std::string(dir) + "/";
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    std::string_view p = f.path;
    if (p.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = p.substr(prefix.size());
    if (rest.find('/') != std::string_view::npos) continue;
    names.emplace_back(rest.substr(0, rest.rfind('.')));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFileOrThrow(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError({path, 0, 0}, "file", "is a directory; expected a file");
  }
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw InputError({path, 0, 0}, "file", "is not a regular file (a FIFO, device or socket); expected a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;  // set by the failed open (POSIX filebuf)
    const bool exists = std::filesystem::exists(path, ec);
    throw InputError({path, 0, 0}, "file",
                     std::string("cannot open file for reading: ") +
                         (!exists ? "no such file" : err != 0 ? std::strerror(err) : "permission denied or unreadable"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError({path, 0, 0}, "file", "read error");
  std::string text = ss.str();
  StripUtf8Bom(text);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw InputError({path, 0, 0}, "file", "expected text, found an empty file (nothing but whitespace)");
  }
  return text;
}

void StripUtf8Bom(std::string& text) {
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
}

}  // namespace meshplan::data
