# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The inputs of ``dense-perception process``, one class per kind: a bag, a video, a folder of
images or one image. Each opens itself (errors here leave nothing behind, and come before the
model loads), yields the frame loop's events, says what it holds, and makes the output target
that matches it (a bag for a bag, a folder of files for the rest).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

from ...core.camera_track import CameraTrack, TrackSetup
from ...core.compressed import CompressionConfig
from ...core.motion.trajectory import Trajectory
from ...core.products import COMPRESSED
from ...core.scale.metric_scale import ScaleConfig
from ...core.settings.table import Settings
from ...core.timing import StageTimer
from .bag_cameras import bag_cameras, bag_events, camera_track, missing_camera_info
from .bag_motion import open_motion
from .camera_yaml import calibrated_frames, check_calibration_size
from ..console import CliError, warn
from .events import BagTarget, Copy, FolderTarget, Frame, Target
from .poses import colour_frames, posed_frames
from ..options.process_options import ProcessOptions
from .reference_depth import reference_stream


class Session(Protocol):
    """What an input reads of the run: its plan, made once per run
    (:class:`~dense_perception.offline.run.run_plan.RunPlan`): its settings and options, the
    output keys, the scale settings, the calibration file and the trajectory."""

    settings: Settings
    options: ProcessOptions
    keys: tuple[str, ...]
    depth_format: str                   # npy or png16 depth files
    compression: CompressionConfig
    scale: ScaleConfig | None           # None: the metric scale is not estimated
    trajectory: Trajectory | None       # --poses
    camera_info: Any                    # --camera-info-yaml: a CameraInfo, or None


BAG_COMPRESSED = ("off", "add", "only")  # --compressed: image_transport's topics in the bag
BAG_COMPRESSIONS = ("zstd", "none")  # --bag-compression: an output MCAP's chunks


class OfflineInput:
    """One opened input: its events, their count, a description, and its output target."""

    total: int | None = None      # frames it holds (None: not known, e.g. some videos)
    description = ""              # "24 frames of /camera/image", for the progress line

    def __init__(self, session: Session, path: Path, timer: StageTimer,
                 track: TrackSetup) -> None:
        self.session, self.path, self.timer = session, path, timer
        self.track = CameraTrack(track)  # its camera's scale filter and motion state
        self.summary: dict[str, Any] = {}  # what summary.json says about the input
        self._cleanup: list[Callable[[], None]] = [self.track.close]

    def events(self) -> Iterable[Frame | Copy]:
        """The frame loop's events, in order."""
        raise NotImplementedError

    def target(self, out_path: Path, summary: dict[str, Any]) -> Target:
        """Where the frames go: a folder of files (images and videos)."""
        from .file_io import FolderSink
        return FolderTarget(FolderSink(out_path, self.session.keys, self.session.depth_format),
                            summary)

    def track_of(self) -> Callable[[Frame], CameraTrack]:
        """Each frame's camera track: the input's one camera's."""
        return lambda frame: self.track

    def close(self) -> None:
        for close in reversed(self._cleanup):
            close()


class _FileInput(OfflineInput):
    """Images and videos: a calibration file (--camera-info-yaml) stands for a CameraInfo."""

    def calibrated(self, events: Iterator[Frame]) -> Iterator[Frame]:
        """The frames with their poses (--poses) and calibration (--camera-info-yaml), made
        when the input opens: a trajectory that does not fit it fails there."""
        session = self.session
        if session.trajectory is not None:  # a sequence with known motion (inputs/poses.py)
            notes: list[str] = []  # frames without a pose, said before any frame
            events = posed_frames(events, session.trajectory, self.total, self.frame_times(),
                                  self.summary.setdefault("motion", {}), self.name_stamps(),
                                  notes)
            if notes:
                self.summary["warnings"] = notes
            self.summary["poses"] = session.trajectory.path
        if session.camera_info is None:
            return events
        self.summary["camera_info_yaml"] = str(session.options.camera_info_yaml)
        return calibrated_frames(events, session.camera_info, session.options.camera_info_yaml)

    def frame_times(self) -> list[float] | None:
        """Each frame's time (s) for matching a trajectory's stamps, where the input has one."""
        fps, total = self.summary.get("video_fps"), self.total
        return [i / fps for i in range(total)] if fps and total else None

    def name_stamps(self) -> list[float] | None:
        """The stamps (s) that name the frames, where every name is one: the trajectory is
        matched to them by stamp, never by line order."""
        return None

    def check_size(self, size: tuple[int, int]) -> None:
        """Refuse a calibration file made for another image size (width, height)."""
        if self.session.camera_info is not None:
            check_calibration_size(self.session.camera_info,
                                   self.session.options.camera_info_yaml, size)


class VideoInput(_FileInput):
    """Any file OpenCV reads as a video; frames stamped at its frame rate."""

    def __init__(self, session: Session, path: Path, timer: StageTimer,
                 track: TrackSetup) -> None:
        from .file_io import VideoReader
        super().__init__(session, path, timer, track)
        self.video = VideoReader(path)
        self._cleanup.append(self.video.close)
        self.total = self.video.frame_count
        self.check_size(self.video.size)
        self.summary["video_fps"] = self.video.fps
        self.description = f"{self.total or '?'} video frames"
        self._events = self.calibrated(self._frames())  # a misfit trajectory fails here

    def events(self) -> Iterator[Frame]:
        return self._events

    def _frames(self) -> Iterator[Frame]:
        frames = self.video.frames()
        index = 0
        while True:
            with self.timer.stage("read"):
                image = next(frames, None)
            if image is None:
                return
            yield Frame(index, f"frame_{index:06d}", image,
                        time=index / (self.video.fps or 30.0))
            index += 1


class ImagesInput(_FileInput):
    """One image file, or a folder of them in name order (photos, each 1 s after the last)."""

    def __init__(self, session: Session, path: Path, timer: StageTimer,
                 track: TrackSetup, single: bool) -> None:
        from . import bag_io
        from . import file_io
        super().__init__(session, path, timer, track)
        self.paths = [path] if single else colour_frames(file_io.list_images(path))
        if not self.paths:
            bags = sorted(p.name for p in path.iterdir() if p.suffix.lower() in bag_io.BAG_SUFFIXES)
            hint = (f"; for a bag without metadata.yaml pass the file itself, e.g. "
                    f"{path / bags[0]}") if bags else ""
            raise CliError(f"folder '{path}' has no image files "
                           f"({', '.join(file_io.IMAGE_SUFFIXES)}){hint}")
        if single or session.camera_info is not None:
            first = file_io.read_image(self.paths[0])  # an unreadable single image is an error
            self.check_size((first.shape[1], first.shape[0]))
        self.total = len(self.paths)
        self.description = f"{self.total} image{'s' if self.total != 1 else ''}"
        self._events = self.calibrated(self._frames())  # a misfit trajectory fails here

    def events(self) -> Iterator[Frame]:
        return self._events

    def name_stamps(self) -> list[float] | None:
        """The images' stamps where every name is one (``1305031102.175304.png``, as the TUM
        RGB-D sequences name their frames; ``file_io.name_stamps``)."""
        from .file_io import name_stamps
        stamps = name_stamps(self.paths)
        return None if stamps is None else [float(s) for s in stamps]

    def _frames(self) -> Iterator[Frame]:
        from .file_io import InputError, read_image
        stems = [p.stem for p in self.paths]
        dupes = {s for s in stems if stems.count(s) > 1}
        for index, path in enumerate(self.paths):
            stem = path.name.replace(".", "_") if path.stem in dupes else path.stem
            try:
                with self.timer.stage("read"):
                    image = read_image(path)
            except InputError as exc:
                yield Frame(index, stem, None, problem=str(exc))
                continue
            yield Frame(index, stem, image, time=float(index))


class BagInput(OfflineInput):
    """A ROS 2 bag: one or more image topics, each with its own CameraInfo (never another
    camera's) and its own metric-scale filter; the input topics are copied per --copy."""

    def __init__(self, session: Session, path: Path, timer: StageTimer,
                 track: TrackSetup) -> None:
        from . import bag_io
        super().__init__(session, path, timer, track)
        options, settings, keys = session.options, session.settings, session.keys
        if session.camera_info is not None:
            raise CliError("--camera-info-yaml is for image folders and videos; a bag's "
                           "CameraInfo comes from the bag (--camera-info-topic)")
        self.bag = bag_io.BagReader(path)
        self._cleanup.append(self.bag.close)
        self.cameras = cameras = bag_cameras(self.bag, options, keys)
        self.motion = open_motion(path, self.bag, options, settings, cameras)  # --odometry-topic
        if self.motion is not None:
            self._cleanup.append(self.motion.close)
            self.summary["motion"] = self.motion.tally  # counted as the frames go
        image_conns = [c for cam in cameras for c in cam.image_conns]
        info_conns = [c for cam in cameras for c in cam.info_conns]
        out_topics = {k: v for cam in cameras for k, v in cam.out_topics.items()} \
            if len(cameras) == 1 else {f"{cam.topic} {k}": v for cam in cameras
                                       for k, v in cam.out_topics.items()}
        self.copy_conns = _copy_connections(self.bag, options.copy, image_conns, info_conns)
        clash = sorted({c.topic for c in self.copy_conns}
                       & {t for cam in cameras for t in cam.out_topics.values()})
        if clash:
            raise CliError(f"output topic {clash[0]} is already in the input bag; choose "
                           f"another --out-namespace or --copy camera/none")
        self.total = sum(int(c.msgcount) for c in image_conns)
        with timer.stage("camera_info_index"):
            for cam in cameras:
                cam.info_index = bag_io.CameraInfoIndex(self.bag, cam.info_conns)
        # never another camera's calibration: the guess, said on stderr and in the summary
        self.summary["warnings"] = missing_camera_info(cameras, keys,
                                                       settings.fallback_hfov_deg)
        for text in self.summary["warnings"]:
            warn(text)
        self.reference = reference_stream(path, track.scale, options.reference_depth_topic,
                                          settings.reference_depth_slop)
        if self.reference is not None:
            self._cleanup.append(self.reference.close)
        # A track per camera: each filter and motion state follows one camera's stream, as in
        # the node (the flow never pairs two cameras' frames).
        cameras[0].track = self.track
        for cam in cameras[1:]:
            cam.track = CameraTrack(track)
            self._cleanup.append(cam.track.close)
        if len(cameras) == 1:
            self.summary.update(topic=cameras[0].topic, camera_info_topic=cameras[0].info_note,
                                camera_infos=cameras[0].info_index.count)
        else:
            self.summary.update(topic=[cam.topic for cam in cameras],
                                camera_info_topic=[cam.info_note for cam in cameras],
                                camera_infos=[cam.info_index.count for cam in cameras])
        self.summary.update(output_topics=out_topics, bag_format=options.bag_format,
                            bag_compression=options.bag_compression
                            if options.bag_format == "mcap" else "none",
                            copy=options.copy)
        self.description = f"{self.total} frames of {', '.join(c.topic for c in cameras)}"

    def events(self) -> Iterable[Frame | Copy]:
        return bag_events(self.bag, self.cameras, self.copy_conns, self.timer, self.reference,
                          camera_info_slop=self.session.settings.camera_info_slop,
                          poses=self.motion)

    def track_of(self) -> Callable[[Frame], CameraTrack]:
        """Each frame's camera track: the track of the topic it came from."""
        return camera_track(self.cameras)

    def target(self, out_path: Path, summary: dict[str, Any]) -> Target:
        """A new bag: the input topics first, then the outputs (the order tools list them in)."""
        from . import bag_write
        session = self.session
        bag_out = bag_write.BagOutput(out_path, session.options.bag_format,
                                      session.options.bag_compression)
        try:
            target = BagTarget(bag_out, self.copy_conns, summary)
            sinks = {cam.topic: bag_write.BagSink(
                bag_out, cam.namespace, bag_keys(session.keys, session.options.compressed),
                depth_encoding=session.settings.depth_encoding, compression=session.compression)
                for cam in self.cameras}
            target.sink = next(iter(sinks.values())) if len(sinks) == 1 \
                else bag_write.CameraSinks(sinks)
            from .bag_record import RunRecord
            target.record = RunRecord(bag_out, session.options.odometry_topic)
            if session.options.ply:  # the plan checked that the cloud is among the outputs
                target.ply = out_path / "points"
                target.ply.mkdir(parents=True, exist_ok=True)
            if self.motion is not None:
                target.record.mountings(self.motion.given_mountings(self.bag, self.cameras),
                                        self.bag.start_ns)
            return target
        except BaseException:
            bag_out.close()
            raise


def open_input(session: Session, path: Path, kind: str, timer: StageTimer,
               track: TrackSetup) -> OfflineInput:
    """The input at ``path`` of ``kind`` (``run.session.input_kind``), opened, its camera's
    track (each camera's, for a bag of several) set up by ``track``."""
    if kind == "bag":
        return BagInput(session, path, timer, track)
    if kind == "video":
        return VideoInput(session, path, timer, track)
    return ImagesInput(session, path, timer, track, single=kind == "image")


def bag_keys(keys: list[str], compressed: str) -> list[str]:
    """The output keys a bag gets under ``--compressed``: off drops the compressed topics, add
    keeps both, only drops each raw image that a compressed topic carries."""
    if compressed == "off":
        return [k for k in keys if k not in COMPRESSED]
    if compressed == "only":
        carried = {COMPRESSED[k][0] for k in keys if k in COMPRESSED}
        return [k for k in keys if k not in carried]
    return list(keys)


def _copy_connections(bag: Any, mode: str, image_conns: list[Any], info_conns: list[Any]
                      ) -> list[Any]:
    if mode == "none":
        return []
    if mode == "camera":
        return list(image_conns) + list(info_conns)
    return list(bag.connections)
