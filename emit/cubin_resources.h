// Per-kernel resources read from a CUBIN (ELF) without a GPU or the CUDA
// tools: registers (EIATTR_REGCOUNT) and the stack frame (EIATTR_FRAME_SIZE,
// non-zero when registers spill to local memory or an array lives there), from
// the .nv.info section ptxas writes. What `ptxas -v` prints, for code that
// NVRTC compiled (NVRTC hands back the CUBIN, not ptxas's report).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace graphc::emit {

struct CubinKernelResources {
  std::string name;        // the function's symbol (entry or internal subroutine)
  int registers = -1;      // -1: not recorded (subroutines)
  int64_t frame_bytes = 0; // local-memory stack frame per thread
};

// Every function of the CUBIN that has a register count or a frame size.
Expected<std::vector<CubinKernelResources>> cubin_kernel_resources(const std::vector<uint8_t>& cubin);

}  // namespace graphc::emit
