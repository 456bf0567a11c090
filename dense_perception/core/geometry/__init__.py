"""Cameras and geometry: CameraInfo camera models, which CameraInfo a frame uses, fitting frames to
the model and back, rectification, point clouds."""
