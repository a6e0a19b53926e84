// `graphc --version`: graphc's version and commit, the engine format it
// writes, the CUDA/NVRTC it was built with, and the CUDA driver, cuBLASLt and
// cuDNN it finds at run time (loaded as an engine would load them).
#pragma once

#include <string>

namespace graphc::cli {

std::string version_text();

}  // namespace graphc::cli
