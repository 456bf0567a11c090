# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Flicker and metres on a real RGB-D sequence with a camera trajectory: the sequence table of
docs/accuracy.md (``make eval-real``), or your own sequence::

    .venv/bin/python -m tools.eval.sequence --sequence path/to/frames --trajectory traj.tum \\
        --camera-info-yaml camera.yaml [--depth-unit 0.001] [--model m.tflite ...] \\
        [--pose-noise SEED] [--max-scale-error 1]

A sequence is a folder of ``<stem>.color.<ext>`` frames with ``<stem>.depth.png`` measured depth
beside them (uint16, ``--depth-unit`` metres per step, 0 invalid; the 7-Scenes and many RGB-D
datasets' layout) and a TUM trajectory, one line per frame in order (camera-to-world of the
optical frame). Every frame is inferred once and finished through the project's pipeline in
each configuration (rows); each is compared with the measured depth:

* TAE: each published frame's depth moved by the true motion into the next published frame,
  mean AbsRel against that frame's depth (Video Depth Anything's ``eval_tae.py``);
* scale error: per frame, median(published / measured) - 1 (the largest and the median);
* AbsRel: mean |d - t| / t per frame, averaged; frames in metres: how many were published.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.core.motion.camera_motion import CameraMotion, MotionConfig
from dense_perception.core.motion.pose import motion
from dense_perception.core.motion.trajectory import read_tum
from dense_perception.core.motion.warp import tae
from dense_perception.core.pipeline import DensePipeline
from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
from dense_perception.offline.inputs.camera_yaml import load_camera_info_yaml

ROWS = ("per frame", "one scale", "aligned over time", "motion scale")


@dataclass
class Sequence:
    """Frames (colour paths), measured depth paths, poses and the camera's intrinsics."""

    colour: list[Path]
    depth: list[Path]
    poses: list[np.ndarray]
    stamps: list[float]
    k: Intrinsics
    depth_unit: float = 0.001

    def truth(self, i: int) -> np.ndarray:
        raw = cv2.imread(str(self.depth[i]), cv2.IMREAD_UNCHANGED).astype(np.float32)
        return np.where(raw > 0, raw * np.float32(self.depth_unit), np.nan)


def read_sequence(folder: Path, trajectory: Path, camera_yaml: Path,
                  depth_unit: float = 0.001) -> Sequence:
    """The sequence in ``folder``; ValueError when its parts do not fit together."""
    colour = sorted((p for p in folder.iterdir() if re.search(r"\.colou?r\.\w+$", p.name)),
                    key=lambda p: p.name)
    depth = [p.with_name(p.name.split(".")[0] + ".depth.png") for p in colour]
    missing = [p.name for p in depth if not p.is_file()]
    if not colour or missing:
        raise ValueError(f"{folder}: needs <stem>.color.<ext> frames with <stem>.depth.png "
                         f"beside them ({len(colour)} frames, missing {missing[:3]})")
    traj = read_tum(trajectory)
    matched = traj.for_frames(len(colour))
    info = load_camera_info_yaml(str(camera_yaml), False)
    kk = np.asarray(info.k, dtype=np.float64).reshape(3, 3)
    k = Intrinsics(kk[0, 0], kk[1, 1], kk[0, 2], kk[1, 2], int(info.width), int(info.height))
    return Sequence(colour, depth, [m[1] for m in matched], [m[0] for m in matched], k,
                    depth_unit)


def _best(truth: np.ndarray, depth: np.ndarray) -> float:
    return float(np.nanmedian(truth / depth))


def best_scale_absrel(depth: np.ndarray, truth: np.ndarray) -> float:
    """AbsRel of ``depth`` at its best single scale (median of truth / depth), over the pixels
    both have."""
    return float(np.nanmean(np.abs(depth * _best(truth, depth) - truth) / truth))


def finish_frames(pipe: DensePipeline, seq: Sequence, poses: list[np.ndarray],
                  scaler: DepthScaler | None, cam: CameraMotion
                  ) -> tuple[dict[int, np.ndarray], dict[int, float | None]]:
    """Every frame of ``seq`` inferred and finished by ``pipe`` as ``process`` does, fed
    ``poses``: the depth of the frames published in metres, and each one's claimed error."""
    outputs, sigmas = {}, {}
    for i, path in enumerate(seq.colour):
        raw = pipe.infer(cv2.imread(str(path), cv2.IMREAD_COLOR), "bgr8", camera=seq.k)
        products = pipe.finish(raw, None, scaler, seq.stamps[i], pose=poses[i], motion=cam)
        if products.depth is not None and products.depth_metric:
            outputs[i] = products.depth
            sigmas[i] = None if products.scale is None else products.scale.sigma
    return outputs, sigmas


def evaluate(base: DensePipeline, seq: Sequence, min_baseline: float = 0.1,
             poses: list[np.ndarray] | None = None, rows: tuple[str, ...] = ROWS,
             max_scale_error: float = ScaleConfig.max_scale_error) -> dict:
    """Figures per row (see the module docstring), with ``fit: stretch`` and the input's
    resolution whatever ``base`` has. ``poses``: what the product is fed (e.g. odometry-like
    poses, :func:`tools.eval.pose_noise.odometry_like`); the figures use the true ones."""
    fed = seq.poses if poses is None else poses
    # The whole frame on the camera's grid, as the done-means command publishes it.
    config = replace(base.config, fit="stretch", output_resolution="input")
    plain = DensePipeline(base.runner, base.spec, replace(config, depth_scale_source="none"))
    pipes = {"fixed": DensePipeline(base.runner, base.spec,
                                    replace(config, depth_scale_source="fixed")),
             "motion": DensePipeline(base.runner, base.spec,
                                     replace(config, depth_scale_source="motion"))}
    relative, truths = [], []
    for i, path in enumerate(seq.colour):
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        relative.append(plain.process(image, "bgr8", seq.k).depth)
        truths.append(seq.truth(i))
    one = float(np.nanmedian(np.concatenate([(t / d).ravel() for t, d in zip(truths, relative)])))
    outputs: dict[str, dict[int, np.ndarray]] = {
        "per frame": {i: d * np.float32(_best(t, d)) for i, (t, d) in
                      enumerate(zip(truths, relative))},
        "one scale": {i: d * np.float32(one) for i, d in enumerate(relative)}}
    # The pipeline's own finish, fed each frame's inference again (one scale asserted: the
    # alignment alone; the motion scale: what --depth-scale-source motion publishes).
    aligned = DensePipeline(base.runner, base.spec,
                            replace(pipes["fixed"].config, relative_depth_scale=one))
    runs = {"aligned over time": (aligned, None),
            "motion scale": (pipes["motion"], DepthScaler(ScaleConfig(
                "motion", max_scale_error=max_scale_error)))}
    sigmas: dict[str, dict[int, float | None]] = {}
    for row, (pipe, scaler) in runs.items():
        if row not in rows:
            continue
        outputs[row], sigmas[row] = finish_frames(
            pipe, seq, fed, scaler, CameraMotion(MotionConfig(min_baseline=min_baseline)))
    return {row: figures(outputs[row], truths, relative, seq, sigmas.get(row)) for row in rows}


def figures(published: dict[int, np.ndarray], truths: list[np.ndarray],
            relative: list[np.ndarray], seq: Sequence,
            sigmas: dict[int, float | None] | None = None) -> dict:
    """TAE over consecutive published frames, scale errors, AbsRel (and the best-scale AbsRel
    of the same frames), frames in metres; with ``sigmas`` (each published frame's relative
    standard error), the share of frames whose error is within 2 sigma, and the errors and
    sigmas per frame."""
    idx = sorted(published)
    flicker = [tae(published[i], published[i + 1], seq.k, motion(seq.poses[i], seq.poses[i + 1]))
               for i in idx if i + 1 in published]
    errors = [float(np.nanmedian(published[i] / truths[i])) - 1 for i in idx]
    absrel = [float(np.nanmean(np.abs(published[i] - truths[i]) / truths[i])) for i in idx]
    best = [best_scale_absrel(relative[i], truths[i]) for i in idx]
    within = None
    if sigmas is not None and idx:
        within = float(np.mean([sigmas.get(i) is not None and
                                abs(np.log1p(e)) <= 2.0 * sigmas[i] for i, e in zip(idx, errors)]))
    return {"frames": len(idx), "total": len(truths), "within_2_sigma": within,
            "per_frame": {i: (e, None if sigmas is None else sigmas.get(i))
                          for i, e in zip(idx, errors)},
            "tae": float(np.mean(flicker)) if flicker else None,
            "max_error": max(map(abs, errors)) if errors else None,
            "median_error": float(np.median(np.abs(errors))) if errors else None,
            "absrel": float(np.mean(absrel)) if absrel else None,
            "best_absrel": float(np.mean(best)) if best else None}


def render_table(results: dict) -> list[str]:
    """The markdown table of :func:`evaluate`'s figures."""
    lines = ["| row | TAE | scale error, largest (median) | AbsRel (each frame's best scale) "
             "| frames in metres |", "|---|---|---|---|---|"]
    for row, f in results.items():
        if not f["frames"]:
            lines.append(f"| {row} | - | - | - | 0 of {f['total']} |")
            continue
        tae_text = "-" if f["tae"] is None else f"{f['tae']:.4f}"
        lines.append(f"| {row} | {tae_text} | {f['max_error']:.1%} ({f['median_error']:.1%}) "
                     f"| {f['absrel']:.3f} ({f['best_absrel']:.3f}) "
                     f"| {f['frames']} of {f['total']} |")
    return lines


def sequence_section(base: DensePipeline, folder: Path) -> str:
    """docs/accuracy.md's sequence section for the shared 7-Scenes frames in ``folder``."""
    seq = read_sequence(folder, folder / "trajectory.tum", folder / "camera.yaml")
    lines = [
        "## A sequence: flicker and metres from moving", "",
        f"The {len(seq.colour)} consecutive 7-Scenes frames of `{folder.name}` (Microsoft "
        "Research 7-Scenes, Shotton et al., CVPR 2013; a hand-held Kinect v1, colour "
        "intrinsics 525, 525, 320, 240; poses from KinectFusion), through the pipeline with "
        "`--fit stretch --output-resolution input` (`tools/eval/sequence.py`). Rows: *per "
        "frame*: each frame's best scale (median of measured / predicted); *one scale*: the "
        "best single scale for all frames; *aligned over time*: that one scale asserted "
        "(`fixed`) with `temporal_alignment` and the true poses; *motion scale*: "
        "`--depth-scale-source motion` with the poses and `temporal_alignment` (the default), "
        "what `dense-perception process ... --poses trajectory.tum --depth-scale-source "
        "motion` publishes. TAE: each published frame moved by the true motion into the next, "
        "mean AbsRel against it; the measured depth gives about 0.005. AbsRel in brackets: "
        "the same frames with each frame's best scale.", "",
        *render_table(evaluate(base, seq)), "",
        "Your own sequence (colour frames with `.depth.png` beside them, a TUM trajectory):", "",
        "```bash",
        ".venv/bin/python -m tools.eval.sequence --sequence FRAMES --trajectory traj.tum \\",
        "  --camera-info-yaml camera.yaml [--depth-unit 0.001] [--model m.tflite]",
        "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from dense_perception.core.pipeline import load_pipeline
    from dense_perception.core.settings.table import Settings
    from tools.eval.real_scenes import PYDNET
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sequence", type=Path, required=True)
    p.add_argument("--trajectory", type=Path, required=True)
    p.add_argument("--camera-info-yaml", type=Path, required=True)
    p.add_argument("--depth-unit", type=float, default=0.001, help="metres per depth step")
    p.add_argument("--model", type=Path, default=PYDNET)
    p.add_argument("--model-type", default="depth")
    p.add_argument("--input-normalization", default="unit")
    p.add_argument("--fit", default="stretch")
    p.add_argument("--motion-scale-min-baseline", type=float, default=0.1)
    p.add_argument("--pose-noise", type=int, default=None, metavar="SEED",
                   help="feed odometry-like poses (tools/eval/pose_noise.py, this seed): each "
                        "20 ms late, steps 2 %% long, 1 mm and 0.1 deg of jitter a step")
    p.add_argument("--max-scale-error", type=float, default=ScaleConfig.max_scale_error)
    args = p.parse_args(argv)
    seq = read_sequence(args.sequence, args.trajectory, args.camera_info_yaml, args.depth_unit)
    poses = None
    if args.pose_noise is not None:
        from tools.eval.pose_noise import odometry_like
        poses = odometry_like(seq.poses, seq.stamps, args.pose_noise)
    base = load_pipeline(str(args.model), Settings(
        model_type=args.model_type, backend="cpu", output_resolution="input", fit=args.fit,
        input_normalization=args.input_normalization))
    print("\n".join(render_table(evaluate(base, seq, args.motion_scale_min_baseline, poses,
                                           max_scale_error=args.max_scale_error))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
