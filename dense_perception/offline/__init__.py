"""The dense-perception command: the node's pipeline over images, videos and rosbag2, one input or
a Ray fleet, with no ROS install."""
