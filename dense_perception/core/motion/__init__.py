# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The camera's own motion: poses and trajectories, depth aligned over time, metres from moving.

ROS-free; the node and ``dense-perception process`` call the same code.

**Poses** (:mod:`.pose`): a frame's pose is a 4x4 float64 ``world_from_camera`` of the camera's
*optical* frame (x right, y down, z forward; REP 103/105), the camera-to-world transform at the
image's stamp. The node builds it from odometry and the camera's mounting
(``odom_from_base(t) @ base_from_optical``); offline it comes from a TUM file
(:mod:`.trajectory`: ``read_tum``, then ``Trajectory.match`` to the frames).

**The API a caller uses** (one :class:`~.camera_motion.CameraMotion` per camera, held with the
camera's ``DepthScaler`` by its :class:`~dense_perception.core.camera_track.CameraTrack`)::

    from dense_perception.core.camera_track import CameraTrack, TrackSetup
    from dense_perception.core.wiring.derived import motion_config
    track = CameraTrack(TrackSetup(scale_config, motion_config(settings)))  # per camera
    ...
    products = track.finish(pipeline, raw, stamp,
                            pose=world_from_camera)     # 4x4, or None: motion unknown here
    products.motion        # MotionReport: aligned?, why not (reset reason), TAE, scale note
    motion_diagnostics(products.motion)   # {key: value} strings for /diagnostics

* ``pose=None`` (odometry gap, a stamp outside the odometry's range, no trajectory line): the
  frame is published as it is (per-frame depth), the temporal state resets and says why, and
  the motion scale makes no estimate for it (its scale filter holds the last scale as for any
  frame without an estimate).
* a track without a motion configuration: nothing of this package runs (the pipeline as
  before).
* ``depth_scale_source: motion``: the camera's ``DepthScaler`` is made as for the other
  sources; the pipeline hands it the estimate ``motion`` makes from the image motion and the
  metric camera motion (:mod:`.motion_scale`).
* ``temporal_alignment`` (setting, default on): the published depth is the current frame's
  fused with the previous output moved into the new view (:mod:`.temporal`); it acts only on
  frames with a pose.
* the motion scale's measurement (two flows, the clock offset, the scale map) runs off the
  frame path, in a worker thread per camera (:mod:`.keyframes`): the node's frames never wait
  for it (the newest frame wins the worker; a measurement lands on a later frame), offline
  each keyframe's measurement lands on the next keyframe, waited for there (the same output
  on any machine). A frame reads the landed measurement's scale map on its own depth: the
  measurement's metric points moved into it by the poses (:mod:`.scale_map`).
  ``track.close()`` stops the worker.
* ``motion.reset()``: forget the past (a new sequence, time going back).

**Flicker** (:func:`.warp.tae`): ``tae(depth_a, depth_b, k, a_to_b)``: frame a's depth moved by the
motion into frame b, mean AbsRel against frame b's depth (Video Depth Anything's
``eval_tae.py``); ``MotionReport.tae`` is this over the camera's last two outputs.
"""
