// The narrow-type device conversions against the host ones (narrow_conversion_emu.cpp).
#pragma once

namespace graphc::emu {

int run_narrow_conversions();  // 0 when every conversion agrees bit for bit

}  // namespace graphc::emu
