// STUB: to be implemented
#include "importer/node_importers.h"

namespace graphc::importer {

void register_contraction_importers(ImporterTable& table) { (void)table; }

}  // namespace graphc::importer
