// What `graphc inspect FILE.engine` shows: the header (format versions,
// producer), code per architecture (PTX/CUBIN bytes over all modules), the
// I/O bindings, arena and weights bytes, and the kernel list in launch order.
// The JSON form is a stable schema (docs/inspect-json.md), written by
// support/json.h. Every text field of an engine is untrusted: in text,
// control characters and invalid UTF-8 are escaped as \xNN; in JSON, invalid
// UTF-8 becomes U+FFFD.
#pragma once

#include <cstdint>
#include <string>

#include "engine_format/engine_file.h"

namespace graphc::driver {

struct EngineReportInput {
  std::string path;         // as given on the command line
  uint64_t file_bytes = 0;  // size of the engine file
  engine::EngineHeader header;
  const engine::EngineContents* contents = nullptr;  // validated (parse_engine)
};

std::string engine_report_text(const EngineReportInput& in);
// One JSON document (with "schema_version"), newline-terminated.
std::string engine_report_json(const EngineReportInput& in);

// True when `bytes` starts with the engine magic (then `graphc inspect`
// treats the file as an engine, even one the reader refuses).
bool looks_like_engine(std::string_view bytes);

}  // namespace graphc::driver
