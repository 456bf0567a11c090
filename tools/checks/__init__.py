"""Checks and one-off measurements: the GPU and NPU device checks, the Vulkan install, the node's
camera input and DDS delivery, and the offline command's argument walk."""
