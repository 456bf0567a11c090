# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""ROS 2 bags in and out for the offline ``process`` command, with no ROS install needed.

Everything goes through the maintained ``rosbags`` library: rosbag2 folders (MCAP or sqlite3)
and bare ``.mcap`` / ``.db3`` files are read with its ``Reader`` (written with its ``Writer``:
``bag_write.py``), messages (de)serialised with its typestore, in the node's layouts
(``conversions.py``).

Output topics live in the namespace of the input image topic, with the node's names and types:
``/camera/image_raw`` (or compressed) gives ``/camera/depth/image``, ... (:data:`OUTPUT_TOPICS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness, QosReliability,
                                QosTime)
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from ...core.geometry.camera_info_choice import CameraInfoHistory, stamp_ns
from ...core.conversions import (BadImageError, camera_info_fields, cloud_fields,
                                compressed_to_array, image_fields, image_to_array)
from ...core.products import OUTPUTS
from ...core.geometry.intrinsics import Intrinsics

IMAGE = "sensor_msgs/msg/Image"
COMPRESSED_IMAGE = "sensor_msgs/msg/CompressedImage"
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
POINT_CLOUD2 = "sensor_msgs/msg/PointCloud2"
STRING = "std_msgs/msg/String"
IMAGE_TYPES = (IMAGE, COMPRESSED_IMAGE)
BAG_FORMATS = ("mcap", "sqlite3")
BAG_SUFFIXES = (".mcap", ".db3")

# Output key -> (topic relative to the image topic's namespace, message type): the node's.
OUTPUT_TOPICS: dict[str, tuple[str, str]] = {key: (topic, msgtype)
                                             for key, (topic, msgtype, _) in OUTPUTS.items()}


def _typestore():
    for name in ("ROS2_KILTED", "ROS2_JAZZY", "LATEST"):
        store = getattr(Stores, name, None)
        if store is not None:
            return get_typestore(store)
    raise RuntimeError("rosbags has no ROS 2 typestore")  # pragma: no cover


TYPESTORE = _typestore()
_T = TYPESTORE.types
Header = _T["std_msgs/msg/Header"]
Time = _T["builtin_interfaces/msg/Time"]
ImageMsg = _T[IMAGE]
CompressedImageMsg = _T[COMPRESSED_IMAGE]
CameraInfoMsg = _T[CAMERA_INFO]
PointCloud2Msg = _T[POINT_CLOUD2]
PointField = _T["sensor_msgs/msg/PointField"]
RegionOfInterest = _T["sensor_msgs/msg/RegionOfInterest"]
StringMsg = _T[STRING]

# The node publishes segmentation/classes latched (transient local, depth 1).
_ZERO = QosTime(0, 0)
LATCHED_QOS = Qos(QosHistory.KEEP_LAST, 1, QosReliability.RELIABLE,
                  QosDurability.TRANSIENT_LOCAL, _ZERO, _ZERO, QosLiveliness.AUTOMATIC, _ZERO,
                  False)


class BagError(RuntimeError):
    """A bag cannot be read or written as asked; the message says why (one line)."""


def one_line(exc: BaseException | str, limit: int = 300) -> str:
    """An exception's text on one line, shortened."""
    text = " ".join(str(exc).split()) or (type(exc).__name__ if isinstance(exc, BaseException)
                                          else "")
    return text if len(text) <= limit else text[:limit] + "..."


# ---- rosbags messages from the shared layouts (this module is a products.MessageBuilder) -------------------------
def message_to_frame(msgtype: str, msg: Any) -> tuple[np.ndarray, str]:
    """(frame, encoding) from a deserialised Image or CompressedImage."""
    if msgtype == COMPRESSED_IMAGE:
        return compressed_to_array(msg)
    return image_to_array(msg), msg.encoding


def array_to_image(image: np.ndarray, encoding: str, header: Any) -> Any:
    """An Image holding ``image`` (H x W [x C])."""
    return ImageMsg(header=header, **image_fields(image, encoding))


def intrinsics_to_camera_info(k: Intrinsics, header: Any) -> Any:
    """CameraInfo for the published grid (see ``conversions.camera_info_fields``)."""
    fields = {name: np.asarray(value, np.float64) if name in ("d", "k", "r", "p") else value
              for name, value in camera_info_fields(k).items()}
    return CameraInfoMsg(
        header=header, binning_x=0, binning_y=0,
        roi=RegionOfInterest(x_offset=0, y_offset=0, height=0, width=0, do_rectify=False),
        **fields)


def string(text: str) -> Any:
    """A std_msgs/String."""
    return StringMsg(data=text)


def compressed_image(fmt: str, data: np.ndarray, header: Any) -> Any:
    """A sensor_msgs/CompressedImage (``data``: the flat uint8 payload)."""
    return CompressedImageMsg(header=header, format=fmt, data=np.asarray(data, np.uint8))


def points_to_cloud(points: np.ndarray, header: Any) -> Any:
    """A PointCloud2 from a structured float32 array (organised if 2-D, else 1 x N)."""
    fields = cloud_fields(points)
    fields["fields"] = [PointField(name=name, offset=offset, datatype=PointField.FLOAT32, count=1)
                        for name, offset in fields["fields"]]
    return PointCloud2Msg(header=header, **fields)


def namespace_of(image_topic: str) -> str:
    """The namespace an image topic lives in: ``/camera/image_raw[/compressed]`` -> ``/camera``."""
    name = "/" + image_topic.strip("/")
    if name.endswith("/compressed"):
        name = name[:-len("/compressed")]
    return name.rsplit("/", 1)[0]


def join_topic(namespace: str, name: str) -> str:
    """``namespace`` + ``name`` with exactly one slash between them (root namespace = '')."""
    namespace = namespace.strip("/")
    return f"/{namespace}/{name}" if namespace else f"/{name}"


def output_topic_names(namespace: str) -> dict[str, str]:
    """Output key -> full topic name in ``namespace``."""
    return {key: join_topic(namespace, rel) for key, (rel, _) in OUTPUT_TOPICS.items()}


def is_bag(path: Path) -> bool:
    """A rosbag2 folder (with metadata.yaml) or a bare .mcap / .db3 file."""
    if path.is_dir():
        return (path / "metadata.yaml").is_file()
    return path.suffix.lower() in BAG_SUFFIXES


@dataclass(frozen=True)
class TopicInfo:
    topic: str
    msgtype: str
    count: int


class BagReader:
    """An open input bag; every failure of the ``rosbags`` reader becomes a one-line BagError."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._reader = Reader(self.path)
            self._reader.open()
        except Exception as exc:  # noqa: BLE001 - rosbags raises many kinds on a damaged bag
            raise BagError(self._damaged(exc)) from None
        self.connections = list(self._reader.connections)
        self.start_ns = int(self._reader.start_time)  # the first message's log time

    def _damaged(self, exc: BaseException) -> str:
        hint = ""
        if self.path.suffix == ".mcap" or any(self.path.glob("*.mcap")):
            hint = (" (a recording that was not closed, e.g. a killed recorder, can often be "
                    "repaired with 'ros2 bag reindex')")
        return f"cannot read bag '{self.path}': {one_line(exc)}{hint}"

    def topics(self) -> list[TopicInfo]:
        """Every topic with its type and message count, in name order."""
        counts: dict[tuple[str, str], int] = {}
        for conn in self.connections:
            key = (conn.topic, conn.msgtype)
            counts[key] = counts.get(key, 0) + int(conn.msgcount)
        return [TopicInfo(t, m, n) for (t, m), n in sorted(counts.items())]

    def image_topics(self) -> list[TopicInfo]:
        return [t for t in self.topics() if t.msgtype in IMAGE_TYPES]

    def describe_image_topics(self) -> str:
        topics = self.image_topics()
        if not topics:
            return "the bag has no sensor_msgs/Image or CompressedImage topic"
        return "its image topics: " + ", ".join(
            f"{t.topic} ({t.msgtype.rsplit('/', 1)[-1]}, {t.count} msgs)" for t in topics)

    def image_connections(self, topic: str | None) -> list[Any]:
        """The connections of the image topic to process (``None``: the only image topic)."""
        if topic is None:
            images = self.image_topics()
            if len(images) != 1:
                raise BagError(f"bag '{self.path}' has {len(images)} image topics; choose one "
                               f"with --topic ({self.describe_image_topics()})")
            topic = images[0].topic
        topic = "/" + topic.lstrip("/")
        conns = [c for c in self.connections if c.topic == topic]
        if not conns:
            raise BagError(f"topic '{topic}' is not in bag '{self.path}'; "
                           f"{self.describe_image_topics()}")
        wrong = sorted({c.msgtype for c in conns if c.msgtype not in IMAGE_TYPES})
        if wrong:
            raise BagError(f"topic '{topic}' has type {', '.join(wrong)}, not sensor_msgs/msg/"
                           f"Image or CompressedImage; {self.describe_image_topics()}")
        return conns

    def camera_info_connections(self, topic: str | None, image_topic: str
                                ) -> tuple[list[Any], str]:
        """CameraInfo connections for ``image_topic`` and a note on how they were chosen.

        ``topic`` None: ``<namespace>/camera_info`` if present (as image_transport pairs them),
        else the bag's only CameraInfo topic when the bag has only this one image topic, else
        none (the pinhole guess): a CameraInfo elsewhere may be another camera's.
        """
        infos = [t.topic for t in self.topics() if t.msgtype == CAMERA_INFO]
        if topic is not None:
            topic = "/" + topic.lstrip("/")
            conns = [c for c in self.connections if c.topic == topic]
            if not conns:
                listed = ", ".join(infos) if infos else "none"
                raise BagError(f"camera info topic '{topic}' is not in bag '{self.path}'; its "
                               f"CameraInfo topics: {listed}")
            wrong = sorted({c.msgtype for c in conns if c.msgtype != CAMERA_INFO})
            if wrong:
                raise BagError(f"topic '{topic}' has type {', '.join(wrong)}, not {CAMERA_INFO}")
            return conns, f"{topic} (as given)"
        conventional = join_topic(namespace_of(image_topic), "camera_info")
        if conventional in infos:
            return [c for c in self.connections if c.topic == conventional], conventional
        if len(infos) == 1 and len(self.image_topics()) == 1:
            return ([c for c in self.connections if c.topic == infos[0]],
                    f"{infos[0]} (the bag's only CameraInfo topic)")
        return [], f"none: {conventional} is not in the bag"

    def messages(self, connections: list[Any] | None = None
                 ) -> Iterator[tuple[Any, int, bytes]]:
        """(connection, log time ns, raw CDR) in log-time order; BagError if the bag is damaged."""
        index = 0
        try:
            for conn, stamp, data in self._reader.messages(connections or ()):
                index += 1
                yield conn, stamp, data
        except GeneratorExit:
            raise
        except Exception as exc:  # noqa: BLE001 - damaged chunks raise anything
            raise BagError(f"bag '{self.path}' is damaged after {index} messages: "
                           f"{one_line(exc)}") from None

    def decoded(self, connections: list[Any]) -> Iterator[tuple[Any | None, str]]:
        """Each message of ``connections`` in log-time order: (message, "") or (None, why)."""
        for conn, _, data in self.messages(connections):
            try:
                yield self.decode(conn, data), ""
            except BadImageError as exc:  # a reader beside the images counts it, goes on
                yield None, str(exc)

    def decode(self, conn: Any, data: bytes) -> Any:
        """One message deserialised; BadImageError (one line) when its bytes are not its type."""
        try:
            return TYPESTORE.deserialize_cdr(data, conn.msgtype)
        except Exception as exc:  # noqa: BLE001
            raise BadImageError(f"cannot deserialise {conn.msgtype} on {conn.topic}: "
                                f"{one_line(exc)}") from None

    def close(self) -> None:
        try:
            self._reader.close()
        except Exception:  # noqa: BLE001 - closing a damaged bag must not hide the first error
            pass


class CameraInfoIndex:
    """Every CameraInfo of a topic, read once up front (kept serialised until chosen), so a
    frame finds its own even when the CameraInfo was logged after the image. The choice is
    the node's (:mod:`~dense_perception.core.geometry.camera_info_choice`)."""

    def __init__(self, bag: BagReader, connections: list[Any]) -> None:
        self._history: CameraInfoHistory[tuple[Any, bytes]] = CameraInfoHistory()
        for conn, _, data in (bag.messages(connections) if connections else ()):
            try:
                msg = TYPESTORE.deserialize_cdr(data, conn.msgtype)
            except Exception:  # noqa: BLE001 - a bad CameraInfo is skipped like a missing one
                continue
            self._history.add(stamp_ns(msg.header.stamp), (conn, data))
        self.count = len(self._history)

    def lookup(self, header: Any, slop: float = 0.0) -> tuple[Any | None, str]:
        """(CameraInfo or None, how it was chosen) for an image with this header; ``slop``:
        ``camera_info_slop`` (s), as the node uses it."""
        hit, note = self._history.choose(stamp_ns(header.stamp), int(round(slop * 1e9)))
        if hit is None:
            return None, note
        conn, data = hit
        return TYPESTORE.deserialize_cdr(data, conn.msgtype), note
