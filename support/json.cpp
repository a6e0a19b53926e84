#include "support/json.h"

#include <nlohmann/json.hpp>

namespace graphc {

Json json_document() {
  Json doc = Json::object();
  doc["schema_version"] = kJsonSchemaVersion;
  return doc;
}

std::string dump_json(const Json& doc, int indent) {
  // error_handler_t::replace: invalid UTF-8 becomes U+FFFD instead of a
  // type_error exception; ensure_ascii off keeps valid UTF-8 as is.
  return doc.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace) + "\n";
}

std::string valid_utf8(const std::string& bytes) {
  // A JSON string round trip: dump replaces invalid bytes, parse unescapes.
  return Json::parse(Json(bytes).dump(-1, ' ', false, Json::error_handler_t::replace))
      .get<std::string>();
}

}  // namespace graphc
