# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Run dense_perception on a camera stream.

    ros2 launch dense_perception depth.launch.py image:=/camera/image_raw backend:=cpu
    ros2 launch dense_perception depth.launch.py \
        config:=$(ros2 pkg prefix --share dense_perception)/config/tipsv2.yaml
    ros2 launch dense_perception depth.launch.py model:=/path/to/other_model.tflite
    ros2 launch dense_perception depth.launch.py model:=da3_small_gpu_fp16.tflite  # the card's
    ros2 launch dense_perception depth.launch.py namespace:=robot1 rviz:=true \
        fixed_frame:=camera_color_optical_frame

    ros2 launch dense_perception depth.launch.py use_lifecycle:=true   # a managed node
    ros2 launch dense_perception depth.launch.py cameras:=[front,rear]  # two cameras, one model

The recommended DA3 model (``config/depth.yaml``'s ``model_path``) is
``da3_small_504x280_fp16.tflite``: DA3-Small at DA3's own resolution (long side 504) with its
confidence output, made by ``dense-perception export-da3 --checkpoint DA3-SMALL --aspect 16:9
--fp16`` (see models/README.md; use your camera's aspect). The model card's
``da3_small_gpu_fp16.tflite`` still works (``model:=``).

Parameters come from the ``config`` YAML; the ``model``, ``backend``, ``input_qos``,
``camera_info_qos`` and ``use_lifecycle`` arguments override its values only when they are
given. ``rviz:=true`` also
starts RViz in the node's namespace (the config's topics are relative), with ``fixed_frame``
(the images' ``header.frame_id``) as its fixed frame. With use_lifecycle:=true the node starts
unconfigured: configure and activate it with a lifecycle manager (e.g. nav2_lifecycle_manager)
or ``ros2 lifecycle set /dense_perception configure``.

``cameras:=[front,rear]`` runs one model for several cameras: camera ``front`` is read from
``/front/image_raw`` and ``/front/camera_info`` (the single camera's ``/camera/...`` defaults
with the camera's name in place of ``camera``) and its outputs are ``front/depth/image`` etc.
in the node's namespace; the ``image`` and ``camera_info`` arguments are then unused.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def camera_list(text: str) -> list[str]:
    """The ``cameras`` launch argument as names: ``[front,rear]`` or ``front,rear``."""
    return [name.strip().strip("'\"") for name in text.strip().strip("[]").split(",")
            if name.strip().strip("'\"")]


def _node(context):
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    overrides = {}
    if arg("backend"):
        overrides["backend"] = arg("backend")
    if arg("model"):
        overrides["model_path"] = arg("model")
    if arg("input_qos"):
        overrides["input_qos"] = arg("input_qos")
    if arg("camera_info_qos"):
        overrides["camera_info_qos"] = arg("camera_info_qos")
    if arg("use_lifecycle"):
        overrides["use_lifecycle"] = arg("use_lifecycle") == "true"
    cameras = camera_list(arg("cameras"))
    if arg("cameras"):
        overrides["cameras"] = cameras or [""]
    image = arg("image")
    remappings = [
        ("image", image),
        ("camera_info", arg("camera_info")),
        ("image/compressed", image + "/compressed"),
        ("reference_depth", arg("reference_depth")),
        ("odometry", arg("odometry")),
    ]
    for camera in cameras:  # <camera>/image <- /<camera>/image_raw, as /camera/... for one
        remappings += [(f"{camera}/image", f"/{camera}/image_raw"),
                       (f"{camera}/camera_info", f"/{camera}/camera_info"),
                       (f"{camera}/image/compressed", f"/{camera}/image_raw/compressed")]
    actions = [Node(
        package="dense_perception",
        executable="dense_perception_node",
        name="dense_perception",
        namespace=arg("namespace"),
        parameters=[arg("config"), overrides],
        remappings=remappings,
        output="screen",
        emulate_tty=True,
    )]
    if arg("rviz").lower() in ("true", "1"):
        actions.append(Node(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            namespace=arg("namespace"),
            arguments=["-d", PathJoinSubstitution(
                [FindPackageShare("dense_perception"), "config", "dense_perception.rviz"]),
                "--fixed-frame", arg("fixed_frame")],
            output="screen",
        ))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            "model", default_value="",
            description="Model .tflite file (absolute, or a name in the package's models/ "
                        "folder); empty = the config's model_path (recommended DA3: "
                        "da3_small_504x280_fp16.tflite from export-da3, DA3's own 504)"),
        DeclareLaunchArgument(
            "backend", default_value="", choices=["", "auto", "gpu", "cpu", "npu"],
            description="auto (GPU if it works, else CPU), gpu, cpu (XNNPACK, e.g. on a "
                        "Raspberry Pi 5) or npu (docs/npu.md); empty = the config's backend"),
        DeclareLaunchArgument(
            "input_qos", default_value="", choices=["", "auto", "sensor_data", "reliable"],
            description="Camera subscription QoS: auto (match the camera's reliability), "
                        "sensor_data (best effort) or reliable; empty = the config's input_qos"),
        DeclareLaunchArgument(
            "camera_info_qos", default_value="",
            choices=["", "auto", "sensor_data", "reliable", "transient_local"],
            description="camera_info subscription QoS: auto (as input_qos, transient-local when "
                        "the camera latches its CameraInfo), transient_local, sensor_data or "
                        "reliable; empty = the config's camera_info_qos"),
        DeclareLaunchArgument(
            "use_lifecycle", default_value="", choices=["", "true", "false"],
            description="true: start a managed (lifecycle) node, unconfigured; empty = the "
                        "config's use_lifecycle"),
        DeclareLaunchArgument(
            "cameras", default_value="",
            description="Several cameras on one model, e.g. [front,rear]: camera front is read "
                        "from /front/image_raw and /front/camera_info and published under "
                        "front/; empty = the config's cameras (default: one camera on image)"),
        DeclareLaunchArgument(
            "image", default_value="/camera/image_raw",
            description="Camera image topic (its /compressed sibling is used when "
                        "input_compressed is true)"),
        DeclareLaunchArgument(
            "camera_info", default_value="/camera/camera_info",
            description="CameraInfo topic of the camera"),
        DeclareLaunchArgument(
            "reference_depth", default_value="reference_depth",
            description="Metric depth image registered to the camera (16UC1 mm or 32FC1 m), "
                        "used with depth_scale_source: reference_depth"),
        DeclareLaunchArgument(
            "odometry", default_value="/odom",
            description="nav_msgs/Odometry of the robot (REP 105 odom -> base_link): with the "
                        "camera's mounting (camera_in_base or TF) it gives the camera's motion "
                        "for temporal_alignment and depth_scale_source: motion"),
        DeclareLaunchArgument(
            "config",
            default_value=PathJoinSubstitution(
                [FindPackageShare("dense_perception"), "config", "depth.yaml"]),
            description="Parameters file (config/depth.yaml for DA3-Small, config/tipsv2.yaml "
                        "for TIPSv2-B14-DPT)"),
        DeclareLaunchArgument(
            "namespace", default_value="",
            description="Namespace of the node and its output topics"),
        DeclareLaunchArgument(
            "rviz", default_value="false", choices=["true", "false"],
            description="Also start RViz with config/dense_perception.rviz, in the node's "
                        "namespace"),
        DeclareLaunchArgument(
            "fixed_frame", default_value="camera_optical_frame",
            description="RViz fixed frame: the camera images' header.frame_id (e.g. "
                        "camera_color_optical_frame), or any frame TF links to it"),
        OpaqueFunction(function=_node),
    ])
