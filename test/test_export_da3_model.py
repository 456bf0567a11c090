# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception export-da3``: DA3-Small re-exported at a camera's aspect, the whole path
(torch environment; see support/export_env.py): signature, fidelity against the official
PyTorch model, the node's pipeline running the file with ``fit: crop`` on a camera of that
aspect with zero crop, and fp16 arithmetic where the CPU has it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from support.export_env import needs_torch, output_names_in_order

from dense_perception.export import common as C
from dense_perception.export import export_da3 as E
from dense_perception.export import fidelity as F
from dense_perception.export import sizes as S

# (width, height, camera frame size of that aspect, fp16 weights): DA3's own resolution (long
# side 504, upper_bound_resize), the default of export-da3
ASPECTS = [
    pytest.param((504, 280, (1280, 720), True), id="504x280-16:9-fp16"),
    pytest.param((504, 378, (640, 480), False), id="504x378-4:3-fp32"),
]


# ---- the export itself (torch environment) ----------------------------------------------------
@pytest.fixture(scope="module", params=ASPECTS)
def exported(request, tmp_path_factory):
    width, height, camera, fp16 = request.param
    out = tmp_path_factory.mktemp("export") / S.default_out(width, height, False, fp16)
    result = E.export_da3(width, height, out, seed=0, fp16=fp16)
    return result, width, height, camera, fp16


@pytest.mark.export
@needs_torch
def test_export_signature_fidelity_and_report(exported, capsys):
    from dense_perception.core.backends.runner import check_model_file

    result, width, height, _, fp16 = exported
    signature = check_model_file(str(result.path))
    assert signature.input_shapes == [(1, 3, height, width)]
    assert signature.output_shapes == [(1, 1, height, width)] * 2
    assert output_names_in_order(result.path) == ["depth", "confidence"]

    report = json.loads(result.report_path.read_text())
    assert report["input_shape"] == [1, 3, height, width]
    assert report["output_shape"] == [1, 1, height, width]
    assert report["outputs"] == {"depth": [1, 1, height, width],
                                 "confidence": [1, 1, height, width]}
    assert report["size_bytes"] == result.path.stat().st_size
    assert report["weights_dtype"] == ("fp16" if fp16 else "fp32")
    assert (report["ops"]["fp16_tensors"] > 0) == fp16
    fid = report["fidelity"]
    with capsys.disabled():  # make test-export shows the figures
        print(f"\nfidelity of {result.path.name} vs {fid['reference']} (corr, min over "
              f"{len(fid['inputs'])} inputs): " + "; ".join(
                  f"{key} depth {fid[key]['corr_min']:.6f} (max diff "
                  f"{fid[key]['max_abs_diff']:.2g}) confidence "
                  f"{fid[key]['confidence']['corr_min']:.6f} (max diff "
                  f"{fid[key]['confidence']['max_abs_diff']:.2g})"
                  for key in ("litert_fp32", "litert_fp16", "fp32_vs_fp16"))
              + f"; {report['ops']['total']} ops, {report['size_mb']:.1f} MB, time "
              + ", ".join(f"{k} {v:.0f} s" for k, v in report["timing_s"].items()))
    assert f"at {width}x{height}" in fid["reference"] and "depth_conf" in fid["reference"]
    # Without --gpu-clean the rewrites are exact: LiteRT is the official model at this size.
    for key in ("litert_fp32", "litert_fp16", "litert_fp32_vs_rewritten", "fp32_vs_fp16"):
        assert fid[key]["corr_min"] >= 0.9999, (key, fid[key])
        assert fid[key]["confidence"]["corr_min"] >= 0.9999, (key, fid[key]["confidence"])
    # The CPU rewrites are exact: the rewritten graph is the official model.
    assert fid["torch_rewritten"]["max_abs_diff"] < 1e-5
    assert fid["torch_rewritten"]["confidence"]["max_abs_diff"] < 1e-5
    # An independent check of the confidence output: LiteRT's own run of the written file
    # against the official model's depth_conf on a fresh input.
    from ai_edge_litert.interpreter import Interpreter

    import torch

    from dense_perception.export import official

    net = official.build_official_da3(0)
    official.randomise_constant_init(net, 0)
    x = F.fidelity_inputs(width, height, seed=11)["scene"]
    with torch.no_grad():
        ref = net(torch.from_numpy(x)[:, None])
    interp = Interpreter(model_path=str(result.path))
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    depth, conf = (interp.get_tensor(d["index"]) for d in interp.get_output_details())
    assert F.compare(ref["depth"].numpy(), depth)["corr"] >= 0.9999
    assert F.compare(ref["depth_conf"].numpy(), conf)["corr"] >= 0.9999
    assert conf.min() >= 1.0  # DA3's own values (exp + 1), not rescaled
    ops = report["ops"]
    assert ops["gpu_unfriendly"]["GATHER"] == ops["gpu_unfriendly"]["GATHER_ND"] == 0
    assert ops["gpu_unfriendly"]["SELECT_V2"] == ops["gpu_unfriendly"]["BROADCAST_TO"] == 0


@pytest.mark.export
@needs_torch
def test_pipeline_runs_the_export_with_zero_crop(exported):
    import cv2

    from dense_perception.core.pipeline import load_pipeline
    from dense_perception.core.frame_data import Request
    from dense_perception.core.settings.table import Settings
    from dense_perception.export import graph, official

    result, width, height, (cam_w, cam_h), _ = exported
    pipe = load_pipeline(str(result.path),
                         # every pixel a point: stride 1, no confidence filter (the node's
                         # defaults, 2 and 0.1, would keep a quarter less a tenth)
                         Settings(backend="cpu", fit="crop", depth_scale_source="fixed",
                                  points_stride=1, points_min_confidence=0.0),
                         log=lambda _: None)  # points need metric depth: the scale is asserted
    assert pipe.spec.kind == "da3"
    assert (pipe.spec.input_width, pipe.spec.input_height) == (width, height)
    plan = pipe.plan_for(cam_w, cam_h)
    # DA3's size rule rounds the short side to whole patches: 640x480 -> 504x378 exactly (no
    # crop); 1280x720 -> 504x280 (aspect 1.8), so fit: crop drops 9 of 720 rows.
    crop_h = round(cam_w * height / width)
    assert (plan.crop_x, plan.crop_width) == (0, cam_w)
    assert (plan.crop_y, plan.crop_height) == ((cam_h - crop_h) // 2, crop_h)
    assert crop_h >= 0.98 * cam_h
    assert not plan.turned

    rgb = cv2.resize(_scene_rgb(1280, 720), (cam_w, cam_h), interpolation=cv2.INTER_AREA)
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    products = pipe.process(bgr, "bgr8", request=Request(depth=True, points=True))
    assert products.depth.shape == (height, width)
    assert np.isfinite(products.depth).all()
    assert len(products.points) == width * height

    # The node's preprocessing is what the exporter assumed: same depth as the official
    # PyTorch model on the fitted frame (RGB, /255, ImageNet mean/std, NCHW).
    net = official.build_official_da3(0)
    official.randomise_constant_init(net, 0)
    reference = F.torch_outputs(graph.OfficialDepth(net).eval(),
                                [F.normalise_rgb(plan.fit_image(rgb))])[0][0, 0]
    assert F.compare(reference, products.depth)["corr"] >= 0.999


def _scene_rgb(width: int, height: int):
    x = F.fidelity_inputs(width, height, seed=5)["scene"][0].transpose(1, 2, 0)
    rgb = (x * np.array(C.IMAGENET_STD) + np.array(C.IMAGENET_MEAN)) * 255.0
    return np.clip(np.rint(rgb), 0, 255).astype(np.uint8)


def _x86_fp16_arithmetic() -> bool:
    try:
        return "avx512_fp16" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


@pytest.mark.export
@needs_torch
@pytest.mark.timeout(300)
@pytest.mark.skipif(not _x86_fp16_arithmetic(), reason="XNNPACK fp16 arithmetic on x86 needs "
                    "AVX512-FP16 (aarch64: test_arm64_fp16.py, make test-arm64)")
def test_fp16_arithmetic_agrees_with_fp32_at_da3_resolution(exported):
    """cpu_precision fp16's XNNPACK flags on the 504 export (depth and confidence) against
    fp32 arithmetic, natively on an AVX512-FP16 CPU: the fp16 check make test-arm64 can only
    emulate at 70x56."""
    from dense_perception.core.backends.cpu_precision import FP16_XNNPACK_FLAGS, smooth_test_input
    from dense_perception.core.backends.runner_base import CompiledModelRunner, InterpreterRunner

    result, width, height, _, _ = exported
    fp32 = InterpreterRunner(str(result.path), 2)
    fp16 = CompiledModelRunner(str(result.path), "cpu", 2,
                               cpu_options={"xnnpack_flags": FP16_XNNPACK_FLAGS})
    inputs = dict(F.fidelity_inputs(width, height, seed=3),
                  smooth=smooth_test_input((1, 3, height, width)))
    for name, x in inputs.items():
        fp32.input_buffer()[...] = x
        ref = [np.array(o, copy=True) for o in fp32.run()]
        fp16.input_buffer()[...] = x
        half = [np.array(o, copy=True) for o in fp16.run()]
        assert len(ref) == len(half) == 2
        for a, b in zip(ref, half):
            assert F.compare(a, b)["corr"] >= 0.999, name
        assert any(np.abs(a - b).max() > 0 for a, b in zip(ref, half)), "fp16 did not run"

