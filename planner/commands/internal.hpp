#pragma once
// Helpers shared by the commands (planner/commands/); private to the folder.
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "meshplan/commands.hpp"
#include "meshplan/diag.hpp"
#include "meshplan/framework.hpp"

namespace meshplan::commands {

/// What the commands say, and which keys they name, per framework: its descriptor's words
/// (FrameworkOps: name, title, version flag, recipe keys).
inline const FrameworkOps& WordsOf(Framework framework) { return FrameworkOf(framework); }
/// The frameworks whose descriptor sets `option`, as a message names them: "--framework
/// megatron-bridge" (or, with `as_layout`, "a Megatron-Bridge"), joined by " or ".
std::string FrameworksWith(bool FrameworkOps::*option, bool as_layout = false);

/// Throws InputError on the command line's `flag` with `message`.
[[noreturn]] void FlagError(const std::string& flag, const std::string& message);
/// `v` when in [1, max]; else throws InputError on `flag`, the message after `prefix` (a
/// sweep's "point 12: ").
int64_t CheckedCount(long long v, const std::string& flag, long long max, const std::string& prefix = "");
/// The request's framework's unfitted_note: "" where its step-time constants are fitted to the system.
std::string UnfittedNote(const PlanRequest& req);
/// Every rule `ctx` fails, with its message and source.
std::vector<RuleFailure> RuleFailures(const RuleContext& ctx);
/// Two outputs of one run that are one file: the later would replace the earlier (with --force)
/// or stop the run half-written (without). Throws InputError on the later one. Compared by the
/// weakly canonical path of the directory and the file name ("./a.yaml", "d/../a.yaml" and
/// "link-to-this-dir/a.yaml" are a.yaml), after the symbolic links at the file itself, which
/// WriteFileAtomically writes through.
void RefuseSameOutputs(const std::vector<std::pair<std::string, const char*>>& targets);
/// "--seq-len 8192 replaces the recipe's 4096" when the recipe sets the value (`recipe_sets`)
/// and `used` differs from its `recipe`; else "".
std::string ReplacesNote(const char* flag, const std::string& used, bool recipe_sets, const std::string& recipe);

}  // namespace meshplan::commands
