// Comma-separated list options (planner/cli/list_option.hpp): CLI11's delimiter read "8,,16" as
// 8,16 and "8," as 8; these options refuse an empty item, naming the option, what it expects
// and what it found.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/list_option.hpp"

using meshplan::cli::AddListOption;
using meshplan::cli::FirstEmptyItem;

namespace {

// Parses `args` (after the program name) with one --x list option; returns the error message
// ("" when the parse succeeded) and fills `out`.
template <class T>
std::string Parse(std::vector<std::string> args, std::vector<T>& out, const CLI::Validator& check = CLI::Validator()) {
  CLI::App app;
  AddListOption(&app, "--x", out, "test list", "a comma-separated list of things", check);
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("FirstEmptyItem finds the first empty item of a comma-separated value") {
  CHECK(FirstEmptyItem("8") == 0);
  CHECK(FirstEmptyItem("8,16,32") == 0);
  CHECK(FirstEmptyItem("8,,16") == 2);
  CHECK(FirstEmptyItem("8,") == 2);
  CHECK(FirstEmptyItem(",8") == 1);
  CHECK(FirstEmptyItem("") == 1);
  CHECK(FirstEmptyItem("8,16,,") == 3);
}

TEST_CASE("list options keep every item and refuse empty ones") {
  std::vector<long long> v;
  CHECK(Parse({"--x", "8,16", "--x", "32"}, v) == "");
  CHECK(v == std::vector<long long>{8, 16, 32});
  CHECK(Parse({"--x=64"}, v) == "");
  CHECK(v == std::vector<long long>{64});
  CHECK(Parse({"--x", "8,,16"}, v) ==
        "--x: expected a comma-separated list of things with no empty item, found '8,,16' (item 2 of 3 is empty)");
  CHECK(Parse({"--x", "8,"}, v) ==
        "--x: expected a comma-separated list of things with no empty item, found '8,' (item 2 of 2 is empty)");
  CHECK(Parse({"--x", "8,16", "--x", ",32"}, v) ==
        "--x: expected a comma-separated list of things with no empty item, found ',32' (item 1 of 2 is empty)");
  CHECK(Parse({"--x", "8,x"}, v) == "--x: expected a comma-separated list of things, found '8,x'");
  // An item check reports with CLI11's own message (main.cpp rewrites IsMember's).
  std::vector<std::string> s;
  CHECK(Parse({"--x", "a,b"}, s, CLI::IsMember({"a", "b"})) == "");
  CHECK(s == std::vector<std::string>{"a", "b"});
  CHECK(Parse({"--x", "a,c"}, s, CLI::IsMember({"a", "b"})) == "--x: c not in {a,b}");
}
