#include "importer/node_importers.h"

namespace graphc::importer {

const ImporterTable& importer_table() {
  static const ImporterTable table = [] {
    ImporterTable t{};
    register_elementwise_importers(t);
    register_data_movement_importers(t);
    register_reduction_importers(t);
    register_normalization_importers(t);
    register_contraction_importers(t);
    register_pool_resize_importers(t);
    register_attention_importers(t);
    register_recurrent_importers(t);
    register_control_flow_importers(t);
    register_signal_importers(t);
    return t;
  }();
  return table;
}

}  // namespace graphc::importer
