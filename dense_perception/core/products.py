# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the pipeline can produce, and how each product becomes a message (ROS-free).

One table serves the node (publishers, ``publish_*`` switches), the offline command (bag
topics, ``--outputs`` groups) and the tools, and one function turns a frame's products into
messages for any message library: rclpy's (``ros/messages.py``) or rosbags'
(``offline/inputs/bag_io.py``) supply a :class:`MessageBuilder`.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass, fields
from typing import Any, Iterable, Iterator, Protocol

import numpy as np

from . import postprocess as post
from .compressed import (Compressed, CompressionConfig, compressed_depth, jpeg,
                         png_mono)
from .geometry.intrinsics import Intrinsics
from .frame_data import Products, Request
from .product_table import GROUPS, PRODUCTS, added_products, on_change
from .timing import StageTimer

# Views of the products table (core/product_table.py, the one place a product is declared),
# rebuilt in place when a row is registered, so that a module holding one sees the new row.
# Product key -> (topic relative to the node's namespace, message type, image encoding).
OUTPUTS: dict[str, tuple[str, str, str]] = {}
# Compressed product key -> (the raw product it compresses, its codec in core.compressed).
COMPRESSED: dict[str, tuple[str, str]] = {}
# Products that become Image messages with a fixed encoding (depth may also be 16UC1).
IMAGE_OUTPUTS: dict[str, str] = {}


@dataclass(frozen=True)
class OutputGroup:
    """Products switched on and off together: one ``publish_*`` parameter, one ``--outputs`` name."""

    name: str                    # the --outputs name
    products: tuple[str, ...]    # keys of OUTPUTS
    model_output: str            # the model output kind they need
    switch: str                  # the node's parameter


OUTPUT_GROUPS: dict[str, OutputGroup] = {}
GROUP_OF_PRODUCT: dict[str, OutputGroup] = {}


def _rebuild() -> None:
    rows = PRODUCTS.values()
    for view in (OUTPUTS, COMPRESSED, IMAGE_OUTPUTS, OUTPUT_GROUPS, GROUP_OF_PRODUCT):
        view.clear()
    OUTPUTS.update({p.key: (p.topic, p.message, p.encoding) for p in rows})
    COMPRESSED.update({p.key: p.compresses for p in rows if p.compresses is not None})
    IMAGE_OUTPUTS.update({p.key: p.encoding for p in rows if p.encoding and p.key != "depth"})
    OUTPUT_GROUPS.update({g.name: OutputGroup(g.name, tuple(p.key for p in rows
                                                            if p.group == g.name),
                                              g.model_output, g.switch)
                          for g in GROUPS.values()})
    GROUP_OF_PRODUCT.update({key: group for group in OUTPUT_GROUPS.values()
                             for key in group.products})


on_change(_rebuild)


def available_groups(spec: Any) -> list[str]:
    """The output groups this model can give (``spec`` is a ModelSpec)."""
    return [g.name for g in OUTPUT_GROUPS.values() if spec.output_index(g.model_output) is not None]


def request_for(products: Iterable[str], points_rgb: bool = True) -> Request:
    """What the pipeline must compute for these product keys (the only Request builder); a
    compressed topic needs the raw product it compresses, an added row what it reads."""
    wanted = set(products)
    wanted |= {COMPRESSED[key][0] for key in wanted if key in COMPRESSED}
    added = {p.key for p in added_products() if p.key in wanted}
    wanted |= {need for key in added for need in PRODUCTS[key].needs}
    built_in = {f.name for f in fields(Request)} - {"extra", "points_rgb", "depth"}
    return Request(depth=bool(wanted & {"depth", "depth_info"}),
                   points_rgb="points" in wanted and points_rgb,
                   extra=frozenset(added), **{key: key in wanted for key in built_in})


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
    image = products.get(raw_key)
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
        image = products.get(key)
        if image is not None and key in wanted:
            yield key, build.array_to_image(image, encoding, header)
    if products.points is not None and "points" in wanted:
        yield "points", build.points_to_cloud(products.points, header)
