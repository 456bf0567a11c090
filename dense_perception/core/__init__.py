"""The ROS-free core: one frame's way (fit, preprocess, inference backends, post-processing, scale,
clouds), no ROS and no torch."""
