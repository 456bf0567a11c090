# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The products table: every output declared once, as a :class:`Product` row (its key, topic,
message, image encoding, the files ``process`` writes, its ``--outputs`` group and so the model
outputs that make it, the compressed form it is, and its compute step).

Everything else follows from the rows: the node's publishers (``ros/outputs.py``), the bag
topics and the result folders of ``process`` (``offline/inputs/``), which products a
:class:`~.frame_data.Request` asks for and a :class:`~.frame_data.Products` holds, and the
views in :mod:`.products`. Adding an output is a row here plus its compute step: a built-in
product is computed in ``core/pipeline.py``; a row with ``compute`` is computed from a frame's
finished products by that function, and :func:`register` adds such a row while running (a
plugin, or a test): it refuses a row that cannot work, in one line, and the row's step is
checked on every frame (:func:`checked_step`), so that a bad value or a step that raises leaves
that product alone out of that frame, said in one line by the node and by ``process``. This
module imports nothing of the package, so any core module may use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable

IMAGE = "sensor_msgs/msg/Image"
COMPRESSED_IMAGE = "sensor_msgs/msg/CompressedImage"

# How ``process`` writes a product per frame (``offline/inputs/file_io.py``):
#   npy: float32 array; png: mono8/bgr8 as is; png_rgb: rgb8 view (turned to BGR for OpenCV);
#   ply: point cloud; depth: npy or 16-bit PNG (--depth-format); "": no file per frame.
FILE_FORMATS = ("npy", "png", "png_rgb", "ply", "depth", "")

# The image encodings a row may declare: sensor_msgs' names (image_encodings.hpp) that the
# message writer (core/conversions.py) writes, each with the array it holds (element type as
# numpy names it, channels).
ENCODINGS: dict[str, tuple[str, int]] = {
    "mono8": ("uint8", 1), "bgr8": ("uint8", 3), "rgb8": ("uint8", 3), "bgra8": ("uint8", 4),
    "rgba8": ("uint8", 4), "16UC1": ("uint16", 1), "32FC1": ("float32", 1),
    "32FC3": ("float32", 3)}
# The encodings each file form writes with their values unchanged (npy: any array; png:
# OpenCV's channel order, 8 or 16 bits; png_rgb: turned to BGR first; depth: float metres).
FILE_ENCODINGS: dict[str, tuple[str, ...]] = {
    "npy": tuple(ENCODINGS), "png": ("mono8", "bgr8", "bgra8", "16UC1"), "png_rgb": ("rgb8",),
    "depth": ("32FC1",), "ply": (), "": tuple(ENCODINGS)}
MESSAGES = (IMAGE, COMPRESSED_IMAGE, "sensor_msgs/msg/CameraInfo",
            "sensor_msgs/msg/PointCloud2", "std_msgs/msg/String")


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
    compute: Callable[..., Any] | None = None
    # The settings its compute step reads (names of the settings table): it is then called
    # compute(products, values), values {name: the setting's value in force}, so a runtime
    # change reaches it from the next frame on.
    settings: tuple[str, ...] = ()


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
_BUILT_IN = frozenset(PRODUCTS)  # the rows above: unregister leaves them

_listeners: list[Callable[[], None]] = []
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_SETTING = re.compile(r"[a-z][a-z0-9_]*")  # a settings table name: a ROS parameter's
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a ROS name token: no leading digit
# The Products.extra entry that holds a frame's skipped products ({key: Skip}); no key can
# be this name (keys are checked by register).
SKIPPED = "!skipped"


@dataclass(frozen=True)
class Skip:
    """Why an added row's product was left out of one frame."""

    kind: str   # what went wrong, the same from frame to frame: "encoding", "grid", "raised X"
    text: str   # one line that says it


def on_change(rebuild: Callable[[], None]) -> None:
    """Call ``rebuild`` now and after each :func:`register` (the views built from the rows)."""
    _listeners.append(rebuild)
    rebuild()


def normal_topic(topic: str) -> str:
    """``topic`` as the table holds it: relative to the node's namespace, so without leading
    or trailing slashes (``/depth/image/`` is ``depth/image``)."""
    return topic.strip("/")


def register(product: Product) -> None:
    """Add a row while running; every view of the table follows.

    ValueError (one line) unless the row can work: a new key (letters, digits, ``_``), a ROS
    topic name no other row has once its slashes are normalised (:func:`normal_topic`), a known
    group, known ``needs``, a ``compute`` step (the pipeline computes only the built-in rows
    itself), ``settings`` that are setting names (that they are in the settings table is
    checked where the settings are read: ``core/wiring/derived.py``), an image message with
    one of :data:`ENCODINGS`, and a ``file`` form that writes that encoding unchanged. The row
    is stored with its topic normalised and its compute step checked at run time: see
    :func:`checked_step`.
    """
    row = replace(product, topic=normal_topic(product.topic))
    problem = _problem(row, product.topic)
    if problem:
        raise ValueError(f"product '{product.key}': {problem}")
    if row.compute is not None:
        row = replace(row, compute=checked_step(row))
    PRODUCTS[row.key] = row
    for rebuild in _listeners:
        rebuild()


def _problem(row: Product, given_topic: str) -> str:
    """Why ``row`` cannot be added ("" when it can)."""
    if not _KEY.fullmatch(row.key):
        return "a key is letters, digits and '_', starting with a letter (it names a folder)"
    if row.key in PRODUCTS:
        return "this key exists already"
    problem = _topic_problem(row.topic)
    if problem:
        return f"topic '{given_topic}' is not a ROS topic name: {problem}"
    same = next((p.key for p in PRODUCTS.values() if p.topic == row.topic), None)
    if same is not None:
        return (f"topic '{given_topic}' exists already: it is {same}'s '{row.topic}' (topics "
                f"are relative to the node's namespace)")
    if row.group not in GROUPS:
        return f"unknown group '{row.group}'; one of {', '.join(GROUPS)}"
    unknown = [need for need in row.needs if need not in PRODUCTS]
    if unknown:
        return f"needs unknown product(s) {', '.join(unknown)}"
    if row.computed and row.compute is None:
        return "it needs its compute step"
    odd = [name for name in row.settings if not _SETTING.fullmatch(name)]
    if odd:
        return f"settings {odd} are not setting names (lower-case letters, digits and '_')"
    if row.settings and row.compute is None:
        return "only a compute step reads settings"
    if row.message not in MESSAGES:
        return f"message '{row.message}' is not one of {', '.join(MESSAGES)}"
    return _encoding_problem(row)


def _topic_problem(topic: str) -> str:
    """Why ``topic`` (relative, slashes normalised) is not a ROS topic name ("" when it is)."""
    if not topic:
        return "it is empty"
    for token in topic.split("/"):
        if not token:
            return "it has an empty part ('//')"
        if not _TOKEN.fullmatch(token):
            return (f"'{token}' is not letters, digits and '_' starting with a letter or '_' "
                    f"(no '~', '{{}}' substitution, '-', space or accent)")
    return ""


def _encoding_problem(row: Product) -> str:
    """Why ``row``'s message, encoding and file form do not go together ("" when they do)."""
    if row.compute is not None and row.message != IMAGE:
        return f"a computed row is an image ({IMAGE}), not {row.message}"
    if row.message != IMAGE:  # built in only: its message needs code of its own
        return f"a {row.message} row has no encoding or file form" \
            if row.encoding or row.file else ""
    if row.encoding not in ENCODINGS:
        return (f"encoding '{row.encoding}' is not one of {', '.join(ENCODINGS)} (sensor_msgs "
                f"image encodings the writers know)")
    if row.file not in FILE_FORMATS:
        return f"file must be one of {FILE_FORMATS}"
    if row.encoding not in FILE_ENCODINGS[row.file]:
        fits = [repr(form) for form, encodings in FILE_ENCODINGS.items()
                if row.encoding in encodings]
        return (f"file '{row.file}' cannot hold {row.encoding} unchanged; for it use one of "
                f"{', '.join(fits)}")
    return ""


def unregister(key: str) -> None:
    """Remove a row :func:`register` added (the built-in rows stay)."""
    if key in _BUILT_IN or key not in PRODUCTS:
        raise ValueError(f"product '{key}' was not registered"
                         + (" (a built-in row stays)" if key in _BUILT_IN else ""))
    del PRODUCTS[key]
    for rebuild in _listeners:
        rebuild()


def added_products() -> tuple[Product, ...]:
    """The rows with a compute step of their own (computed after the built-in products)."""
    return tuple(p for p in PRODUCTS.values() if p.compute is not None)


def checked_step(row: Product) -> Callable[[Any], Any]:
    """``row``'s compute step, run so that one bad frame leaves out that product alone.

    A step that raises, or returns an array whose element type and channels are not its
    encoding's or that is not on the published grid, gives None (nothing is published or
    written for it this frame) and records the reason in the frame's ``Products`` (see
    :func:`skipped`): the node logs it throttled, ``process`` once and counts it.
    """
    step = row.compute

    def checked(products: Any, values: dict[str, Any] | None = None) -> Any:
        try:
            value = step(products, {name: (values or {})[name] for name in row.settings}) \
                if row.settings else step(products)
        except Exception as exc:  # noqa: BLE001 - a plugin's fault, reported and skipped
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            return _skip(products, row.key, f"raised {type(exc).__name__}",
                         f"its compute step raised {type(exc).__name__}: {first}")
        if value is None:
            return None
        problem = value_problem(row.encoding, value, products.width, products.height)
        return value if problem is None else _skip(products, row.key, *problem)

    checked.__doc__ = f"{row.key}'s compute step, checked (product_table.checked_step)"
    return checked


def value_problem(encoding: str, value: Any, width: int,
                  height: int) -> tuple[str, str] | None:
    """(kind, text) when ``value`` is not a ``width`` x ``height`` image of ``encoding``
    (:data:`ENCODINGS`: its element type and channels, H x W for one channel, H x W x C for
    more, H x W x 1 too for one), else None."""
    dtype, channels = ENCODINGS[encoding]
    shape = getattr(value, "shape", None)
    got = str(getattr(value, "dtype", type(value).__name__))
    fits = shape is not None and (len(shape) == 2 and channels == 1 or
                                  len(shape) == 3 and shape[2] == channels)
    if got != dtype or not fits:
        return "encoding", (f"a {got} value of shape {shape} is not {encoding} ({dtype} x "
                            f"{channels} channel(s))")
    if tuple(shape[:2]) != (height, width):
        return "grid", (f"its {shape[1]}x{shape[0]} array is not on the published "
                        f"{width}x{height} grid")
    return None


def _skip(products: Any, key: str, kind: str, text: str) -> None:
    products.extra.setdefault(SKIPPED, {})[key] = Skip(kind, text)
    return None


def skipped(products: Any) -> dict[str, Skip]:
    """The added rows this frame's ``Products`` left out, and why (:func:`checked_step`)."""
    return products.extra.get(SKIPPED, {})
