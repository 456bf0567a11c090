# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The cameras of a bag for ``dense-perception process``: one per ``--topic``, each with its own
CameraInfo, output namespace and track, and the frames they give.

Each image topic is paired with its own CameraInfo, as image_transport pairs them: the
``camera_info`` beside the image topic (``/front/image`` -> ``/front/camera_info``), or the
``--camera-info-topic`` given for it (repeated in the order of ``--topic``). A camera with none
gets the pinhole guess (``--fallback-hfov``), with a warning on stderr and in summary.json;
never another camera's calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ...core.camera_track import CameraTrack
from ...core.timing import StageTimer
from ..console import CliError
from .events import Copy, Frame
from ..options.process_options import ProcessOptions


@dataclass
class BagCamera:
    """One image topic of a bag (``--topic``, repeatable): its connections, CameraInfo, output
    namespace and its own track (scale filter and motion state)."""

    topic: str
    image_conns: list[Any]
    info_conns: list[Any]
    info_note: str
    namespace: str
    out_topics: dict[str, str]
    info_index: Any = None
    track: CameraTrack | None = None


def bag_cameras(bag: Any, options: ProcessOptions, keys: list[str]) -> list[BagCamera]:
    """The bag's cameras to process: one per ``--topic`` (the only image topic without one),
    each paired with its CameraInfo topic (``--camera-info-topic``, one per ``--topic`` in the
    same order, else ``camera_info`` beside the image topic)."""
    from . import bag_io
    topics = list(options.topics) or [None]
    info_topics = list(options.camera_info_topics) or [None] * len(topics)
    if len(info_topics) != len(topics):
        raise CliError(f"--camera-info-topic: give one per --topic, in the same order "
                       f"({len(topics)} --topic, {len(info_topics)} --camera-info-topic), or "
                       "none to use camera_info beside each image topic")
    if len(topics) > 1:
        given = [o for o, v in (("--out-namespace", options.out_namespace),
                                ("--reference-depth-topic", options.reference_depth_topic))
                 if v]
        if given:
            raise CliError(f"{given[0]} names one camera's topic; with several --topic each "
                           "camera writes its outputs beside its own image topic")
        if len(set(topics)) != len(topics):
            raise CliError("--topic: a topic is given twice")
    cameras = []
    for topic, info_topic in zip(topics, info_topics):
        image_conns = bag.image_connections(topic)
        image_topic = image_conns[0].topic
        info_conns, info_note = bag.camera_info_connections(info_topic, image_topic)
        namespace = options.out_namespace if options.out_namespace is not None \
            else bag_io.namespace_of(image_topic)
        out_topics = {k: v for k, v in bag_io.output_topic_names(namespace).items() if k in keys}
        cameras.append(BagCamera(image_topic, image_conns, info_conns, info_note, namespace,
                                 out_topics))
    spaces = [cam.namespace for cam in cameras]
    if len(set(spaces)) != len(spaces):
        raise CliError(f"--topic: two image topics share the namespace {spaces[0]!r}, so their "
                       "outputs would mix; process them one at a time with --out-namespace")
    return cameras


def missing_camera_info(cameras: list[BagCamera], keys: list[str], fallback_hfov: float
                        ) -> list[str]:
    """A warning for each camera whose outputs carry its geometry (points, depth/camera_info)
    but whose bag holds no CameraInfo for it."""
    if not ({"points", "depth_info"} & set(keys)):
        return []
    return [f"no CameraInfo for {cam.topic} (camera info topic: {cam.info_note}); its points "
            f"and depth/camera_info use a {fallback_hfov:g} deg pinhole guess (--fallback-hfov; "
            "name its CameraInfo with --camera-info-topic, one per --topic)"
            for cam in cameras if not cam.info_index.count]


def camera_track(cameras: list[BagCamera]) -> Callable[[Frame], CameraTrack]:
    """The track of the camera a bag frame came from."""
    by_topic = {cam.topic: cam.track for cam in cameras}
    return lambda frame: by_topic[frame.camera]


def bag_events(bag: Any, cameras: list[BagCamera], copy_conns: list[Any],
               timer: StageTimer, reference: Any = None, *,
               camera_info_slop: float = 0.0, poses: Any = None) -> Iterator[Frame | Copy]:
    """The bag's frames (each with its own camera's CameraInfo, by the node's rule, and with
    ``poses`` (``bag_motion.BagMotion``), its camera pose) and the messages to copy, in
    log-time order."""
    from .bag_io import message_to_frame
    from ...core.conversions import BadImageError
    camera_of = {c.id: cam for cam in cameras for c in cam.image_conns}
    copy_ids = {c.id for c in copy_conns}
    image_conns = [c for cam in cameras for c in cam.image_conns]
    wanted = list({c.id: c for c in list(image_conns) + list(copy_conns)}.values())
    index = 0
    for conn, log_time, data in bag.messages(wanted):
        if conn.id in copy_ids:
            yield Copy(conn, log_time, data)
        cam = camera_of.get(conn.id)
        if cam is None:
            continue
        stem = f"{index:06d}"
        try:
            with timer.stage("read"):
                msg = bag.decode(conn, data)
                image, encoding = message_to_frame(conn.msgtype, msg)
                # the node's rule, camera_info_slop included (core.camera_info_choice)
                info, note = cam.info_index.lookup(msg.header, camera_info_slop)
        except BadImageError as exc:
            yield Frame(index, stem, None, problem=str(exc), log_time=log_time,
                        camera=cam.topic)
        else:
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            yield Frame(index, stem, image, encoding, header=msg.header, log_time=log_time,
                        camera_info=info, camera_info_note=note, time=stamp,
                        reference=None if reference is None else reference.lookup(stamp),
                        camera=cam.topic,
                        pose=None if poses is None else poses.pose_for(cam.topic, msg.header))
        index += 1
