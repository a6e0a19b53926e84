// Empty: the host emulator (shim.h) defines the CUDA bfloat16 types.
