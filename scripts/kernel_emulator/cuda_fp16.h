// Empty: the host emulator (shim.h) defines the CUDA half types.
