# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process --rerun FILE.rrd``: the run as a rerun recording, beside the
outputs it writes anyway (the optional ``rerun`` extra: ``pip install
'dense-perception[rerun]'``).

One recording, two timelines: ``frame`` (the frame's number) and ``stamp`` (a bag's header
stamps, a video's or a trajectory's times). Entities, on the published grid:

    world                             the odometry frame (REP 103: x forward, y left, z up) of
                                      a bag's --odometry-topic; a --poses trajectory's own world
    world/camera                      the camera's pose (world_from_camera of the optical frame,
                                      where the frame had one) and its pinhole (the published
                                      grid's intrinsics; rerun's pinhole looks along +z, x right,
                                      y down: the optical frame)
    world/camera/image/rgb            the frame as the model saw it, on the published grid (JPEG)
    world/camera/image/depth          float32 depth (metres where the frame is in metres; 0 where
                                      the model saw nothing)
    world/camera/image/segmentation   ADE20K ids, the class names and colours as annotations
    world/points                      the cloud in the world frame (a frame with a pose)
    world/camera/points               the cloud in the camera's optical frame (a frame without)
    scale/*                           the scale in use, its 2 sigma band, this frame's estimate,
                                      the claimed 2 sigma in % (as /diagnostics says it), and
                                      whether the frame came out in metres (1) or not (0)
    log/scale                         why a frame was withheld, in words (a text log)

A bag's several cameras (``--topic`` repeated) each get their own: ``world/camera_<its
namespace>`` for ``world/camera``, ``world/points_camera_<ns>`` and ``scale/camera_<ns>/*``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ...core.geometry.fit import Interp
from ...core.geometry.pointcloud import finite_points
from ...core.geometry.rectify import Rectifier
from ...core.postprocess import ade20k_class_names, ade20k_palette
from ...core.preprocess import pixel_format, to_rgb8
from ...core.scale.scale_tally import error_2sigma_pct, reason_kind
from ..console import CliError
from .events import Copy, Frame, Target

INSTALL = "pip install 'dense-perception[rerun]'"
JPEG_QUALITY = 90


def check_rerun_option(path: str | None, many: bool) -> None:
    """CliError (exit 2, one line) when ``--rerun FILE`` cannot be written: the SDK missing,
    several inputs, or the file already there."""
    if path is None:
        return
    try:
        import rerun  # noqa: F401 - only whether it imports
    except ImportError:
        raise CliError(f"--rerun needs the rerun SDK, which is not installed: {INSTALL}"
                       ) from None
    if many:
        raise CliError("--rerun records one input; give one input, or run one command per "
                       "input")
    if Path(path).exists():
        raise CliError(f"--rerun {path} exists; remove it or name another file")


def camera_entity(namespace: str) -> str:
    """A camera's entity name among several: ``camera_front`` for namespace ``/front``."""
    return "camera_" + namespace.strip("/").replace("/", "_")


class RerunRecording(Target):
    """Every frame ``inner`` writes, also logged to a rerun recording at ``path``."""

    def __init__(self, inner: Target, path: Path, *, world_is_odometry: bool,
                 cameras: dict[str, str] | None = None,
                 application_id: str = "dense_perception") -> None:
        """``cameras``: a bag's image topics with their namespaces; several get an entity
        each (:func:`camera_entity`)."""
        import rerun as rr
        self.inner, self.path = inner, Path(path)
        self.rr = rr
        self.frames = 0
        cameras = cameras or {}
        several = len(cameras) > 1
        self.camera_entities = {topic: camera_entity(namespace)
                                for topic, namespace in cameras.items() if several}
        self._rectifier = Rectifier(capacity=1)
        self._static_done: set[str] = set()
        self.rec = rr.RecordingStream(application_id)
        self.rec.save(str(self.path))
        if world_is_odometry:
            self.rec.log("world", rr.ViewCoordinates.FLU, static=True)  # REP 103

    def copy(self, item: Copy) -> None:
        self.inner.copy(item)

    def frame(self, frame: Frame, products: Any) -> None:
        self.inner.frame(frame, products)
        self._log(frame, products)
        self.frames += 1

    def close(self, summary: dict[str, Any]) -> None:
        try:
            self.rec.flush()
            self.rec.disconnect()
        finally:
            summary["rerun"] = {"path": str(self.path), "frames": self.frames}
            self.inner.close(summary)

    # ---- one frame ---------------------------------------------------------------------------
    def _log(self, frame: Frame, products: Any) -> None:
        rr, rec = self.rr, self.rec
        name = self.camera_entities.get(frame.camera, "camera")
        camera = f"world/{name}"
        self._static(products, camera)
        rec.set_time("frame", sequence=frame.index)
        if frame.header is not None:  # a bag's: frame.time is its header stamp
            rec.set_time("stamp", timestamp=frame.time)
        else:
            rec.set_time("stamp", duration=frame.time)
        pose = frame.pose
        if pose is not None:
            rec.log(camera, rr.Transform3D(translation=pose[:3, 3],
                                                   mat3x3=pose[:3, :3]))
        if products.intrinsics is not None:
            k = products.intrinsics
            rec.log(camera, rr.Pinhole(
                image_from_camera=[[k.fx, 0.0, k.cx], [0.0, k.fy, k.cy], [0.0, 0.0, 1.0]],
                resolution=[products.width, products.height]))
        colour = self._colour(frame, products)
        if colour is not None:
            ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(colour, cv2.COLOR_RGB2BGR),
                                    [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
            if ok:
                rec.log(f"{camera}/image/rgb",
                        rr.EncodedImage(contents=jpeg.tobytes(), media_type="image/jpeg"))
        if products.depth is not None:
            # rerun reads 0 as "no depth"; the pipeline's NaN is the same thing.
            rec.log(f"{camera}/image/depth",
                    rr.DepthImage(np.nan_to_num(products.depth, nan=0.0), meter=1.0))
        if products.labels is not None:
            rec.log(f"{camera}/image/segmentation", rr.SegmentationImage(products.labels))
        one = name == "camera"  # one camera: the plain names
        if products.points is not None and len(products.points):
            self._points(products.points, pose, f"{camera}/points" if pose is None else
                         "world/points" if one else f"world/points_{name}")
        self._scale(products.scale, "scale" if one else f"scale/{name}")

    def _static(self, products: Any, camera: str) -> None:
        """The segmentation's class names and colours, once per camera (static)."""
        if camera in self._static_done or products.labels is None:
            return
        palette = ade20k_palette()
        classes = [(i, name, tuple(int(c) for c in palette[i]))
                   for i, name in enumerate(ade20k_class_names())]
        self.rec.log(f"{camera}/image/segmentation", self.rr.AnnotationContext(classes),
                     static=True)
        self._static_done.add(camera)

    def _colour(self, frame: Frame, products: Any) -> np.ndarray | None:
        """The frame as RGB on the published grid: rectified where the pipeline rectified it,
        cropped and resized as the fit plan says (the published grid is never turned)."""
        if frame.image is None:
            return None
        image = to_rgb8(frame.image, pixel_format(frame.encoding))
        plan = products.plan
        if plan.raw_camera is not None:
            image = self._rectifier.full_frame(image, plan.raw_camera)
        if (products.width, products.height) == (plan.frame_width, plan.frame_height):
            return image  # output_resolution input: the frame's own grid
        return plan.unfit(plan.fit_image(image), "model", Interp.LINEAR)

    def _points(self, points: np.ndarray, pose: np.ndarray | None, entity: str) -> None:
        """The finite points at ``entity``: in the world frame with a ``pose``, else in the
        camera's."""
        xyz, colours = finite_points(points)
        if pose is not None:
            xyz = xyz @ pose[:3, :3].T.astype(np.float32) + pose[:3, 3].astype(np.float32)
        self.rec.log(entity, self.rr.Points3D(xyz, colors=colours))

    def _scale(self, report: Any, at: str) -> None:
        """The scale's time series and, for a frame not in metres, why (a text log)."""
        if report is None:
            return
        rr, rec = self.rr, self.rec
        rec.log(f"{at}/in_metres", rr.Scalars(1.0 if report.metric else 0.0))
        if report.estimate:
            rec.log(f"{at}/estimate", rr.Scalars(report.estimate))
        if report.scale:
            rec.log(f"{at}/in_use", rr.Scalars(report.scale))
            if report.sigma is not None:
                rec.log(f"{at}/error_2sigma_pct", rr.Scalars(error_2sigma_pct(report)))
                band = math.exp(2.0 * report.sigma)
                rec.log(f"{at}/upper_2sigma", rr.Scalars(report.scale * band))
                rec.log(f"{at}/lower_2sigma", rr.Scalars(report.scale / band))
        if not report.metric and report.reason:
            rec.log(f"log/{at}", rr.TextLog(f"{reason_kind(report.reason)}: {report.reason}",
                                            level=rr.TextLogLevel.WARN))
