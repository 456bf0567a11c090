# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Writing an output bag for the offline ``process`` command: a new rosbag2 folder (MCAP, its
chunks zstd-compressed unless asked otherwise, or sqlite3) written with ``rosbags``' Writer, and
the sinks that put each frame's products on the node's topics (``bag_io`` builds the messages).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosbags.interfaces import Qos
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

from ...core.compressed import CompressionConfig
from ...core.products import classes_message, product_messages
from . import bag_io
from .bag_io import (BAG_FORMATS, LATCHED_QOS, OUTPUT_TOPICS, TYPESTORE, BagError, one_line,
                     output_topic_names)


class BagOutput:
    """A new rosbag2 folder (MCAP or sqlite3); always close() it, also after errors or Ctrl-C."""

    def __init__(self, path: str | Path, fmt: str = "mcap", compression: str = "none") -> None:
        """``compression``: zstd compresses an MCAP's chunks (lossless; MCAP readers decode
        them, as rosbag2's ``zstd_fast`` preset writes them); sqlite3 is never compressed."""
        if fmt not in BAG_FORMATS:
            raise BagError(f"bag format '{fmt}' is unknown; use one of: {', '.join(BAG_FORMATS)}")
        self.path = Path(path)
        plugin = StoragePlugin.MCAP if fmt == "mcap" else StoragePlugin.SQLITE3
        try:
            self._writer = Writer(self.path, version=9, storage_plugin=plugin)
            if fmt == "mcap" and compression == "zstd":
                self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
            self._writer.open()
        except Exception as exc:  # noqa: BLE001
            raise BagError(f"cannot create bag '{self.path}': {one_line(exc)}") from None
        self._by_topic: dict[str, Any] = {}
        self.counts: dict[str, int] = {}
        self.closed = False

    def add(self, topic: str, msgtype: str, qos: list[Qos] | None = None) -> Any:
        conn = next((c for c in self._writer.connections if c.topic == topic  # a copied one
                     and c.msgtype == msgtype), None) or self._writer.add_connection(
            topic, msgtype, typestore=TYPESTORE, offered_qos_profiles=qos or [])
        self._by_topic[topic], self.counts[topic] = conn, self.counts.get(topic, 0)
        return conn

    def copy_connection(self, conn: Any) -> Any | None:
        """A connection like input ``conn`` (its definition, hash and QoS), or None when the bag
        carries no definition for a type this typestore does not know either."""
        msgdef = conn.msgdef.data if conn.msgdef is not None else ""
        qos = list(getattr(conn.ext, "offered_qos_profiles", []) or [])
        kwargs: dict[str, Any] = {"offered_qos_profiles": qos}
        if msgdef and conn.digest:
            kwargs.update(msgdef=msgdef, rihs01=conn.digest)
        elif conn.msgtype in TYPESTORE.types:
            kwargs.update(typestore=TYPESTORE)
        else:
            return None
        fmt = getattr(conn.ext, "serialization_format", "cdr")
        for existing in self._writer.connections:  # several input connections, same topic
            if existing.topic == conn.topic and existing.msgtype == conn.msgtype:
                return existing
        out = self._writer.add_connection(conn.topic, conn.msgtype, serialization_format=fmt,
                                          **kwargs)
        self.counts.setdefault(conn.topic, 0)
        return out

    def write_raw(self, conn: Any, log_time: int, data: bytes | memoryview) -> None:
        self._writer.write(conn, log_time, data)
        self.counts[conn.topic] = self.counts.get(conn.topic, 0) + 1

    def write(self, topic: str, msg: Any, log_time: int) -> None:
        conn = self._by_topic[topic]
        self.write_raw(conn, log_time, TYPESTORE.serialize_cdr(msg, conn.msgtype))

    def close(self) -> None:
        """Finish the storage file and write metadata.yaml (idempotent)."""
        if not self.closed:
            self.closed = True
            self._writer.close()


class BagSink:
    """Writes each frame's products to a BagOutput with the node's topics, types and headers."""

    def __init__(self, out: BagOutput, namespace: str, keys: list[str],
                 depth_encoding: str = "32FC1",
                 compression: CompressionConfig = CompressionConfig()) -> None:
        """``compression``: the compressed topics' encoder settings (those among ``keys``)."""
        self.out, self.namespace = out, namespace
        self.compression = compression
        self.topics = {k: v for k, v in output_topic_names(namespace).items() if k in keys}
        self.depth_encoding = depth_encoding
        self._classes_written = False
        for key, topic in self.topics.items():
            out.add(topic, OUTPUT_TOPICS[key][1], [LATCHED_QOS] if key == "classes" else None)

    def write(self, products: Any, header: Any, log_time: int) -> None:
        topics, write = self.topics, self.out.write
        if "classes" in topics and not self._classes_written:
            write(topics["classes"], classes_message(bag_io), log_time)
            self._classes_written = True
        for key, msg in product_messages(products, topics, header, bag_io,
                                         self.depth_encoding, self.compression):
            write(topics[key], msg, log_time)


class CameraSinks:
    """Several cameras' BagSinks (``--topic`` repeated): each frame goes to its camera's."""

    def __init__(self, sinks: dict[str, BagSink]) -> None:
        self.sinks = sinks

    def write_frame(self, camera: str, products: Any, header: Any, log_time: int) -> None:
        self.sinks[camera].write(products, header, log_time)
