"""dense_perception: dense depth, normals and segmentation from a camera stream with LiteRT.

The modules below ``node`` and ``messages`` form a ROS-free core (fit, preprocess, runner,
postprocess, pointcloud, timing, pipeline) that can be used without rclpy.
"""

__version__ = "0.1.0"
