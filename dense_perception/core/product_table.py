"""The products table: every output declared once, as a :class:`Product` row (its key, topic,
message, image encoding, the files ``process`` writes, its ``--outputs`` group and so the model
outputs that make it, the compressed form it is, and its compute step).

Everything else follows from the rows: the node's publishers (``ros/outputs.py``), the bag
topics and the result folders of ``process`` (``offline/inputs/``), which products a
:class:`~.frame_data.Request` asks for and a :class:`~.frame_data.Products` holds, and the
views in :mod:`.products`. Adding an output is a row here plus its compute step: a built-in
product is computed in ``core/pipeline.py``; a row with ``compute`` is computed from a frame's
finished products by that function, and :func:`register` adds such a row while running (a
plugin, or a test). This module imports nothing of the package, so any core module may use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

IMAGE = "sensor_msgs/msg/Image"
COMPRESSED_IMAGE = "sensor_msgs/msg/CompressedImage"

# How ``process`` writes a product per frame (``offline/inputs/file_io.py``):
#   npy: float32 array; png: mono8/bgr8 as is; png_rgb: rgb8 view (turned to BGR for OpenCV);
#   ply: point cloud; depth: npy or 16-bit PNG (--depth-format); "": no file per frame.
FILE_FORMATS = ("npy", "png", "png_rgb", "ply", "depth", "")


@dataclass(frozen=True)
class Group:
    """Products switched on and off together: one ``publish_*`` parameter, one ``--outputs``
    name, made by the models with one output kind (``model_output``)."""

    name: str                    # the --outputs name
    model_output: str            # the model output kind they need (data/models.json)
    switch: str                  # the node's parameter


@dataclass(frozen=True)
class Product:
    """One output: a topic of the node, a topic of a ``process`` bag, and (``file``) files in
    a ``process`` result folder."""

    key: str                     # the product's name: its Products/Request name, its folder
    topic: str                   # relative to the node's namespace (or a camera's prefix)
    message: str                 # ROS message type
    group: str                   # its Group's name
    encoding: str = ""           # fixed image encoding (Image messages)
    file: str = ""               # how process writes it (FILE_FORMATS)
    compresses: tuple[str, str] | None = None  # (raw product key, core.compressed codec)
    computed: bool = True        # a per-frame array, computed only when asked for
    needs: tuple[str, ...] = ()  # the products its compute step reads (computed with it)
    # The compute step of a product added by a row alone: finished Products -> H x W array on
    # the published grid (None: not made this frame). Built-in rows: core/pipeline.py.
    compute: Callable[[Any], Any] | None = None


GROUPS: dict[str, Group] = {g.name: g for g in (
    Group("depth", "depth", "publish_depth"),
    # DA3 files with a confidence output only (export-da3); switched with the depth.
    Group("depth_confidence", "depth_confidence", "publish_depth"),
    Group("normals", "normals", "publish_normals"),
    Group("seg", "segmentation_logits", "publish_segmentation"),
    Group("points", "depth", "publish_points"),
)}

# The rows, in the order they are published and listed.
PRODUCTS: dict[str, Product] = {p.key: p for p in (
    Product("depth", "depth/image", IMAGE, "depth", "32FC1", "depth"),
    Product("depth_info", "depth/camera_info", "sensor_msgs/msg/CameraInfo", "depth",
            computed=False),
    Product("depth_colored", "depth/colored", IMAGE, "depth", "bgr8", "png"),
    Product("depth_confidence", "depth/confidence", IMAGE, "depth_confidence", "32FC1", "npy"),
    Product("normals", "normals/image", IMAGE, "normals", "32FC3", "npy"),
    Product("normals_colored", "normals/colored", IMAGE, "normals", "rgb8", "png_rgb"),
    Product("labels", "segmentation/labels", IMAGE, "seg", "mono8", "png"),
    Product("labels_colored", "segmentation/colored", IMAGE, "seg", "rgb8", "png_rgb"),
    Product("labels_confidence", "segmentation/confidence", IMAGE, "seg", "mono8", "png"),
    # not per frame: latched once by the node, classes.json once by process
    Product("classes", "segmentation/classes", "std_msgs/msg/String", "seg", computed=False),
    Product("points", "points", "sensor_msgs/msg/PointCloud2", "points", file="ply"),
    # image_transport's compressed topics beside the raw ones (core.compressed's formats);
    # depth/confidence (its own 32FC1 values) has no lossless image_transport format.
    Product("depth_compressed", "depth/image/compressedDepth", COMPRESSED_IMAGE, "depth",
            compresses=("depth", "compressedDepth"), computed=False),
    Product("depth_colored_compressed", "depth/colored/compressed", COMPRESSED_IMAGE, "depth",
            compresses=("depth_colored", "jpeg"), computed=False),
    Product("normals_colored_compressed", "normals/colored/compressed", COMPRESSED_IMAGE,
            "normals", compresses=("normals_colored", "jpeg"), computed=False),
    Product("labels_compressed", "segmentation/labels/compressed", COMPRESSED_IMAGE, "seg",
            compresses=("labels", "png"), computed=False),
    Product("labels_colored_compressed", "segmentation/colored/compressed", COMPRESSED_IMAGE,
            "seg", compresses=("labels_colored", "jpeg"), computed=False),
)}

_listeners: list[Callable[[], None]] = []


def on_change(rebuild: Callable[[], None]) -> None:
    """Call ``rebuild`` now and after each :func:`register` (the views built from the rows)."""
    _listeners.append(rebuild)
    rebuild()


def register(product: Product) -> None:
    """Add a row while running; every view of the table follows. The row needs a
    ``compute`` step (the pipeline computes only the built-in rows itself), a known group,
    a new key and a new topic."""
    if product.key in PRODUCTS or any(p.topic == product.topic for p in PRODUCTS.values()):
        raise ValueError(f"product '{product.key}' or topic '{product.topic}' exists already")
    if product.group not in GROUPS:
        raise ValueError(f"product '{product.key}': unknown group '{product.group}'")
    if product.file not in FILE_FORMATS:
        raise ValueError(f"product '{product.key}': file must be one of {FILE_FORMATS}")
    if product.computed and product.compute is None:
        raise ValueError(f"product '{product.key}' needs its compute step")
    PRODUCTS[product.key] = product
    for rebuild in _listeners:
        rebuild()


def unregister(key: str) -> None:
    """Remove a row :func:`register` added (the built-in rows stay)."""
    if PRODUCTS.get(key) is None or PRODUCTS[key].compute is None:
        raise ValueError(f"product '{key}' was not registered")
    del PRODUCTS[key]
    for rebuild in _listeners:
        rebuild()


def added_products() -> tuple[Product, ...]:
    """The rows with a compute step of their own (computed after the built-in products)."""
    return tuple(p for p in PRODUCTS.values() if p.compute is not None)
