"""The models: the known kinds and their descriptions, detection from a file's signature, any
single-image depth network, and what a .tflite file and its tensors hold."""
