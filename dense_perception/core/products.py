"""What the pipeline can produce, and how each product becomes a message (ROS-free).

One table serves the node (publishers, ``publish_*`` switches), the offline command (bag
topics, ``--outputs`` groups) and the tools, and one function turns a frame's products into
messages for any message library: rclpy's (``ros/messages.py``) or rosbags'
(``offline/inputs/bag_io.py``) supply a :class:`MessageBuilder`.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Protocol

import numpy as np

from . import postprocess as post
from .compressed import (Compressed, CompressionConfig, compressed_depth, jpeg,
                         png_mono)
from .geometry.intrinsics import Intrinsics
from .frame_data import Products, Request
from .timing import StageTimer

# Product key -> (topic relative to the node's namespace, message type, image encoding).
OUTPUTS: dict[str, tuple[str, str, str]] = {
    "depth": ("depth/image", "sensor_msgs/msg/Image", "32FC1"),
    "depth_info": ("depth/camera_info", "sensor_msgs/msg/CameraInfo", ""),
    "depth_colored": ("depth/colored", "sensor_msgs/msg/Image", "bgr8"),
    "depth_confidence": ("depth/confidence", "sensor_msgs/msg/Image", "32FC1"),
    "normals": ("normals/image", "sensor_msgs/msg/Image", "32FC3"),
    "normals_colored": ("normals/colored", "sensor_msgs/msg/Image", "rgb8"),
    "labels": ("segmentation/labels", "sensor_msgs/msg/Image", "mono8"),
    "labels_colored": ("segmentation/colored", "sensor_msgs/msg/Image", "rgb8"),
    "labels_confidence": ("segmentation/confidence", "sensor_msgs/msg/Image", "mono8"),
    "classes": ("segmentation/classes", "std_msgs/msg/String", ""),
    "points": ("points", "sensor_msgs/msg/PointCloud2", ""),
    # image_transport's compressed topics beside the raw ones (core.compressed's formats)
    "depth_compressed": ("depth/image/compressedDepth", "sensor_msgs/msg/CompressedImage", ""),
    "depth_colored_compressed": ("depth/colored/compressed", "sensor_msgs/msg/CompressedImage", ""),
    "normals_colored_compressed": ("normals/colored/compressed",
                                   "sensor_msgs/msg/CompressedImage", ""),
    "labels_compressed": ("segmentation/labels/compressed", "sensor_msgs/msg/CompressedImage", ""),
    "labels_colored_compressed": ("segmentation/colored/compressed",
                                  "sensor_msgs/msg/CompressedImage", ""),
}
# Compressed product key -> (the raw product it compresses, its codec in core.compressed).
# depth/confidence (32FC1 values of the model's own) has no lossless image_transport format.
COMPRESSED: dict[str, tuple[str, str]] = {
    "depth_compressed": ("depth", "compressedDepth"),
    "depth_colored_compressed": ("depth_colored", "jpeg"),
    "normals_colored_compressed": ("normals_colored", "jpeg"),
    "labels_compressed": ("labels", "png"),
    "labels_colored_compressed": ("labels_colored", "jpeg"),
}
# Products that become Image messages with a fixed encoding (depth may also be 16UC1).
IMAGE_OUTPUTS = {key: enc for key, (_, _, enc) in OUTPUTS.items() if enc and key != "depth"}


@dataclass(frozen=True)
class OutputGroup:
    """Products switched on and off together: one ``publish_*`` parameter, one ``--outputs`` name."""

    name: str                    # the --outputs name
    products: tuple[str, ...]    # keys of OUTPUTS
    model_output: str            # the model output kind they need
    switch: str                  # the node's parameter


OUTPUT_GROUPS: dict[str, OutputGroup] = {g.name: g for g in (
    OutputGroup("depth", ("depth", "depth_info", "depth_colored", "depth_compressed",
                          "depth_colored_compressed"), "depth", "publish_depth"),
    # DA3 files with a confidence output only (export-da3); switched with the depth.
    OutputGroup("depth_confidence", ("depth_confidence",), "depth_confidence", "publish_depth"),
    OutputGroup("normals", ("normals", "normals_colored", "normals_colored_compressed"),
                "normals", "publish_normals"),
    OutputGroup("seg", ("labels", "labels_colored", "labels_confidence", "classes",
                        "labels_compressed", "labels_colored_compressed"),
                "segmentation_logits", "publish_segmentation"),
    OutputGroup("points", ("points",), "depth", "publish_points"),
)}
GROUP_OF_PRODUCT = {key: group for group in OUTPUT_GROUPS.values() for key in group.products}


def available_groups(spec: Any) -> list[str]:
    """The output groups this model can give (``spec`` is a ModelSpec)."""
    return [g.name for g in OUTPUT_GROUPS.values() if spec.output_index(g.model_output) is not None]


def request_for(products: Iterable[str], points_rgb: bool = True) -> Request:
    """What the pipeline must compute for these product keys (the only Request builder); a
    compressed topic needs the raw product it compresses."""
    wanted = set(products)
    wanted |= {COMPRESSED[key][0] for key in wanted if key in COMPRESSED}
    return Request(depth=bool(wanted & {"depth", "depth_info"}),
                   depth_colored="depth_colored" in wanted,
                   normals="normals" in wanted, normals_colored="normals_colored" in wanted,
                   labels="labels" in wanted, labels_colored="labels_colored" in wanted,
                   points="points" in wanted, points_rgb="points" in wanted and points_rgb,
                   labels_confidence="labels_confidence" in wanted,
                   depth_confidence="depth_confidence" in wanted)


class MessageBuilder(Protocol):
    """Builds one message library's messages from numpy products."""

    def array_to_image(self, image: np.ndarray, encoding: str, header: Any) -> Any: ...
    def intrinsics_to_camera_info(self, k: Intrinsics, header: Any) -> Any: ...
    def points_to_cloud(self, points: np.ndarray, header: Any) -> Any: ...
    def string(self, text: str) -> Any: ...
    def compressed_image(self, fmt: str, data: np.ndarray, header: Any) -> Any: ...


def classes_message(build: MessageBuilder) -> Any:
    """The ``segmentation/classes`` message: the JSON list of the 150 ADE20K class names."""
    return build.string(json.dumps(list(post.ade20k_class_names())))


def product_messages(products: Products, keys: Iterable[str], header: Any, build: MessageBuilder,
                     depth_encoding: str = "32FC1",
                     compression: CompressionConfig = CompressionConfig(),
                     timer: StageTimer | None = None) -> Iterator[tuple[str, Any]]:
    """(product key, message) for each of ``keys`` that this frame produced, with ``header``.

    ``depth_info`` is the rectified pinhole camera of the published grid (D zero, K = P).
    ``classes`` is not per frame: see
    :func:`classes_message`. Compressed keys are encoded with ``compression`` only when
    asked for, each timed as stage ``compress`` on ``timer``.
    """
    wanted = set(keys)
    yield from _raw_messages(products, wanted, header, build, depth_encoding)
    for key in (k for k in COMPRESSED if k in wanted):
        payload = compress_product(products, key, depth_encoding, compression, timer)
        if payload is not None:
            yield key, build.compressed_image(payload.format, payload.data, header)


def compress_product(products: Products, key: str, depth_encoding: str,
                     config: CompressionConfig,
                     timer: StageTimer | None = None) -> Compressed | None:
    """Compressed product ``key``'s payload from its raw product (None when this frame has
    none), timed as stage ``compress`` on ``timer``."""
    raw_key, codec = COMPRESSED[key]
    image = getattr(products, raw_key)
    if image is None:
        return None
    with timer.stage("compress") if timer is not None else nullcontext():
        if codec == "compressedDepth":
            if depth_encoding == "16UC1":
                return compressed_depth(post.depth_to_millimetres(image), "16UC1", config)
            return compressed_depth(image, "32FC1", config)
        encoding = IMAGE_OUTPUTS[raw_key]
        return jpeg(image, encoding, config) if codec == "jpeg" else png_mono(image, encoding,
                                                                             config)


def _raw_messages(products: Products, wanted: set[str], header: Any, build: MessageBuilder,
                  depth_encoding: str) -> Iterator[tuple[str, Any]]:
    if products.depth is not None and "depth" in wanted:
        if depth_encoding == "16UC1":
            yield "depth", build.array_to_image(post.depth_to_millimetres(products.depth),
                                                "16UC1", header)
        else:
            yield "depth", build.array_to_image(products.depth, "32FC1", header)
    if products.intrinsics is not None and "depth_info" in wanted:
        yield "depth_info", build.intrinsics_to_camera_info(
            products.intrinsics, header)
    for key, encoding in IMAGE_OUTPUTS.items():
        image = getattr(products, key)
        if image is not None and key in wanted:
            yield key, build.array_to_image(image, encoding, header)
    if products.points is not None and "points" in wanted:
        yield "points", build.points_to_cloud(products.points, header)
