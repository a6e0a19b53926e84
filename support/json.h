// The one JSON writer of graphc: every JSON document graphc prints or writes
// (inspect --json, run --json, conformance --json, the profile and times
// exports) is built as a nlohmann::ordered_json (Debian's nlohmann-json3-dev;
// keys stay in the order they were added) and serialized by dump_json.
// Names in models and engines are untrusted bytes: bytes that are not valid
// UTF-8 become U+FFFD, control characters are escaped, so the output is
// always valid JSON. Non-finite numbers (JSON has no inf/NaN) become null.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace graphc {

using Json = nlohmann::ordered_json;

// The schema version every top-level JSON document carries as its first key,
// "schema_version". Keys are only ever added within a version; a rename,
// removal or change of meaning raises it (docs/inspect-json.md).
inline constexpr int kJsonSchemaVersion = 1;

// {"schema_version": kJsonSchemaVersion}: the start of every document.
Json json_document();

// Serializes `doc` (indent < 0: one line; else pretty-printed with `indent`
// spaces) followed by a newline. Never throws on bad UTF-8 (see above).
std::string dump_json(const Json& doc, int indent = 2);

// `bytes` as valid UTF-8: what dump_json would write for it (invalid bytes
// become U+FFFD), unescaped. For other text formats (Graphviz labels).
std::string valid_utf8(const std::string& bytes);

}  // namespace graphc
