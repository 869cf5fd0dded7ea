#pragma once
/// \file data.hpp
/// The model presets (models/) and hardware database (hwdb/) compiled into the binary
/// by cmake/embed_data.cmake, so that meshplan runs from any directory.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meshplan::data {

/// One embedded file: path relative to the repository root ("hwdb/gpus/h100-sxm.yaml").
struct EmbeddedFile {
  const char* path;
  const char* content;
};

/// Every embedded file, sorted by path.
std::span<const EmbeddedFile> EmbeddedFiles();

/// The content of the embedded file at `path`, or nullopt.
std::optional<std::string_view> FindEmbedded(std::string_view path);

/// Names (file stem, no extension) of embedded files directly under `dir`
/// ("models", "hwdb/systems"), sorted.
std::vector<std::string> ListEmbedded(std::string_view dir);

/// Reads a file from disk, without a leading UTF-8 byte-order mark (StripUtf8Bom). Throws
/// InputError (naming the path) if it cannot be read.
std::string ReadFileOrThrow(const std::string& path);

/// Removes a leading UTF-8 byte-order mark (EF BB BF), which some editors and spreadsheet
/// programs write at the start of a file, so that the first line reads as typed and its
/// columns count from its first visible character.
void StripUtf8Bom(std::string& text);

}  // namespace meshplan::data
