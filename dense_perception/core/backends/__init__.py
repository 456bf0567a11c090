"""The inference backends behind one Runner protocol: XNNPACK and CompiledModel on the CPU, the GPU
in a worker process, the NPU plugins, and LiteRT's native log."""
