// STUB: to be implemented
#include "importer/node_importers.h"

namespace graphc::importer {

void register_pool_resize_importers(ImporterTable& table) { (void)table; }

const std::vector<OpAlias>& op_aliases() {
  static const std::vector<OpAlias> aliases;
  return aliases;
}

}  // namespace graphc::importer
