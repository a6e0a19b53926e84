// Friendlier messages for command lines CLI11 rejects: an unknown flag gets
// the nearest known flag of that command (edit distance), or the command it
// belongs to; trtexec-style flags without a command get the command to use.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace graphc::cli {

// Levenshtein distance, ignoring ASCII case.
size_t edit_distance(std::string_view a, std::string_view b);

// The name in `known` nearest to `word`, or "" when none is close enough
// (at most 2 edits, or a third of the word's length for long words).
std::string nearest_name(std::string_view word, const std::vector<std::string>& known);

// For a command line CLI11 refused: a message naming the first unknown flag
// and what was probably meant, or "" when the command line has no unknown
// flag (the caller then prints CLI11's own message).
std::string unknown_flag_message(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace graphc::cli
