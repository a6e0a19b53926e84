// STUB: to be implemented
#include "importer/node_importers.h"

namespace graphc::importer {

void register_elementwise_importers(ImporterTable& table) { (void)table; }

}  // namespace graphc::importer
