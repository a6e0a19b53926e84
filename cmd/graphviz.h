// Runs Graphviz's `dot` (an optional dependency: Debian's graphviz package,
// installed by scripts/setup.sh) to turn a dot graph into SVG.
#pragma once

#include <string>

#include "support/status.h"

namespace graphc::cli {

// The SVG `dot -Tsvg` makes of `dot_source`. `dot` is looked up on the PATH;
// when it is missing the error says how to install it; when it fails, its
// messages are in the error.
Expected<std::string> render_svg(const std::string& dot_source);

}  // namespace graphc::cli
