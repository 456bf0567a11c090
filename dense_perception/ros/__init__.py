"""The ROS 2 node: parameters, camera subscriptions, publishers, diagnostics and the lifecycle
around the core."""
