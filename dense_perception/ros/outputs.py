# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node's output publishers: which exist, who listens, and publishing a frame's products."""

from __future__ import annotations

from typing import Any, Collection

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile

from ..core.compressed import CompressionConfig
from ..core.product_table import skipped
from ..core.products import OUTPUT_GROUPS, OUTPUTS, classes_message, product_messages
from ..core.timing import RateMeter, StageTimer
from . import messages
from .compat import GraphWatch, overridable
from .messages import MESSAGE_CLASSES
from .parameters import StartupError

PUBLISHER_QOS = QoSProfile(depth=5)  # system default: reliable, volatile (REP 2003)
SKIP_LOG_PERIOD = 5.0  # s: one WARN per added product and reason at most this often


def prefixed(prefix: str, topic: str) -> str:
    """``topic`` under a camera's ``prefix`` (relative, so remappable); as is for no prefix."""
    return f"{prefix}/{topic}" if prefix else topic


def payload_bytes(msg: Any) -> int:
    """A message's size on the wire, near enough: its ``data`` plus its other fields' few
    hundred bytes at most (headers, CameraInfo's matrices), counted as 0 beside the data."""
    data = getattr(msg, "data", None)
    return len(data) if data is not None and not isinstance(data, str) else 0


class Outputs:
    """One publisher per product this model gives and its ``publish_*`` switch allows.

    The latched ``segmentation/classes`` list is published once and does not count as a
    listener: only the per-frame outputs make the node subscribe to the camera.
    """

    def __init__(self, node: Node, spec: Any, switched_on: Collection[str], watch: GraphWatch,
                 prefix: str = "") -> None:
        """``switched_on``: the output groups (``OutputGroup.name``) whose ``publish_*`` is on;
        ``prefix``: a camera's name; its outputs go under it (``front/depth/image``)."""
        self._node = node
        products = [key for group in OUTPUT_GROUPS.values()
                    if spec.output_index(group.model_output) is not None
                    and group.name in switched_on
                    for key in group.products]
        self.pubs: dict[str, Any] = {
            key: node.create_publisher(MESSAGE_CLASSES[OUTPUTS[key][1]],
                                       prefixed(prefix, OUTPUTS[key][0]),
                                       **overridable(PUBLISHER_QOS), **watch.publisher_kwargs())
            for key in products if key != "classes"}
        self.prefix = prefix
        self.bandwidth: dict[str, RateMeter] = {key: RateMeter() for key in self.pubs}
        self._classes_pub = None
        if not self.pubs:
            raise StartupError("every output is switched off (publish_* parameters) or not "
                               "provided by this model; enable at least one")
        if "classes" in products:
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self._classes_pub = node.create_publisher(MESSAGE_CLASSES[OUTPUTS["classes"][1]],
                                                      prefixed(prefix, OUTPUTS["classes"][0]),
                                                      latched)
            self._classes_pub.publish(classes_message(messages))

    def listened(self) -> list[str]:
        """The product keys that have at least one subscriber now."""
        return [key for key, pub in self.pubs.items() if pub.get_subscription_count() > 0]

    def publish(self, products: Any, header: Any, depth_encoding: str,
                compression: CompressionConfig = CompressionConfig(),
                timer: StageTimer | None = None) -> None:
        """Publish this frame's products to the outputs that have subscribers (compressed
        ones are encoded only then, timed as stage ``compress`` on ``timer``). An added
        product the frame left out (a bad value, a compute step that raised) is not among
        them (:meth:`skipped_warnings` says why); the frame's other products go out."""
        for key, msg in product_messages(products, self.listened(), header, messages,
                                         depth_encoding, compression, timer):
            self.pubs[key].publish(msg)
            self.bandwidth[key].tick(amount=payload_bytes(msg))

    def skipped_warnings(self, products: Any) -> list[tuple[str, str]]:
        """(throttle key, WARN text) for each added product this frame left out: the key names
        the camera, the product and the kind of reason, to be said at most every
        :data:`SKIP_LOG_PERIOD` s."""
        said = []
        for key, skip in skipped(products).items():
            topic = prefixed(self.prefix, OUTPUTS[key][0]) if key in OUTPUTS else key
            said.append((f"skipped:{self.prefix}:{key}:{skip.kind}",
                         f"product '{key}' ({topic}) skipped: {skip.text} (this frame's other "
                         f"products are published; said at most every {SKIP_LOG_PERIOD:g} s)"))
        return said

    def bandwidth_rates(self) -> dict[str, float]:
        """Bytes per second now published on each topic (relative name) that has published."""
        return {prefixed(self.prefix, OUTPUTS[key][0]): meter.rate()
                for key, meter in self.bandwidth.items() if meter.total}

    def close(self) -> None:
        for pub in [*self.pubs.values(), self._classes_pub]:
            if pub is not None:
                self._node.destroy_publisher(pub)
        self.pubs = {}
