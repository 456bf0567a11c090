"""``dense-perception export-da3``: DA3-Small re-exported at a camera's aspect.

The size rule and argument handling need no torch and run everywhere. The ``export`` tests
build the official DA3-Small architecture (``depth-anything-3``) with random weights (fixed
seed), convert it with litert-torch and check the whole path: signature, fidelity against the
official PyTorch model, and the node's pipeline running the file with ``fit: crop`` on a camera
of that aspect with zero crop. They need the torch environment::

    .venv-bench/bin/python -m pytest -q -m export test/test_export_da3.py   # make test-export

and are skipped (with the reason) in any interpreter without torch / depth_anything_3.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dense_perception.export import common as C
from dense_perception.export import export_da3 as E
from dense_perception.export import fidelity as F
from dense_perception.export import sizes as S

REPO = Path(__file__).resolve().parents[1]
MISSING = [m for m in ("torch", "litert_torch", "depth_anything_3", "safetensors")
           if importlib.util.find_spec(m) is None]
needs_torch = pytest.mark.skipif(
    bool(MISSING), reason=f"{', '.join(MISSING)} not importable in {sys.executable}; run "
    "`make test-export` (the .venv-bench torch environment)")

# (width, height, camera frame size of that aspect, fp16 weights)
ASPECTS = [
    pytest.param((896, 504, (1280, 720), True), id="896x504-16:9-fp16"),
    pytest.param((672, 504, (640, 480), False), id="672x504-4:3-fp32"),
]


# ---- size rule and arguments (no torch) -------------------------------------------------------
@pytest.mark.parametrize("aspect, long_side, expected", [
    (16 / 9, 896, (896, 504)),
    (4 / 3, 896, (896, 672)),
    (4 / 3, 672, (672, 504)),
    (9 / 16, 896, (504, 896)),
    (1.0, 518, (518, 518)),
    (1280 / 800, 896, (896, 560)),   # 16:10
    (20.0, 896, (896, 42)),          # 896/20 = 44.8 -> 42 (3 patches) is closer than 56
    (1000.0, 896, (896, 14)),        # never below one patch
])
def test_size_rule(aspect, long_side, expected):
    w, h = S.size_for_aspect(aspect, long_side)
    assert (w, h) == expected
    assert w % 14 == 0 and h % 14 == 0 and max(w, h) == long_side


def test_size_rule_picks_the_closest_aspect():
    for aspect in np.linspace(0.3, 3.0, 55):
        w, h = S.size_for_aspect(float(aspect), 896)
        err = abs(np.log(w / h / aspect))
        short = min(w, h)
        for other in (short - 14, short + 14):
            if 14 <= other <= 896:
                ow, oh = (896, other) if aspect >= 1 else (other, 896)
                assert err <= abs(np.log(ow / oh / aspect)) + 1e-12


def test_long_side_must_be_a_multiple_of_14():
    with pytest.raises(C.ExportError, match="multiple of 14"):
        S.size_for_aspect(16 / 9, 900)


@pytest.mark.parametrize("text, expected", [("896x504", (896, 504)), ("672X504", (672, 504))])
def test_parse_size(text, expected):
    assert S.parse_size(text) == expected


@pytest.mark.parametrize("text", ["900x504", "896", "0x0", "896x500"])
def test_parse_size_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        S.parse_size(text)


@pytest.mark.parametrize("text, expected", [("16:9", 16 / 9), ("4/3", 4 / 3), ("1.5", 1.5)])
def test_parse_aspect(text, expected):
    assert S.parse_aspect(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["16:0", "abc", "-1", "0"])
def test_parse_aspect_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        S.parse_aspect(text)


def camera_info_yaml(path: Path, width: int, height: int) -> Path:
    path.write_text(f"image_width: {width}\nimage_height: {height}\ncamera_name: cam\n"
                    "camera_matrix:\n  rows: 3\n  cols: 3\n"
                    "  data: [500, 0, 320, 0, 500, 240, 0, 0, 1]\n"
                    "distortion_model: plumb_bob\n")
    return path


def parse(argv):
    parser = argparse.ArgumentParser()
    E.add_export_da3_arguments(parser)
    return parser.parse_args(argv)


def test_camera_info_yaml_gives_the_size(tmp_path):
    args = parse(["--random-weights", "--camera-info-yaml",
                  str(camera_info_yaml(tmp_path / "cam.yaml", 1280, 720))])
    assert S.resolve_size(args) == (896, 504)
    args = parse(["--random-weights", "--long-side", "672", "--camera-info-yaml",
                  str(camera_info_yaml(tmp_path / "cam43.yaml", 640, 480))])
    assert S.resolve_size(args) == (672, 504)


def test_camera_info_yaml_without_size_is_an_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("camera_name: cam\n")
    with pytest.raises(C.ExportError, match="image_width"):
        S.read_camera_info_size(bad)


def test_weights_and_size_are_required():
    with pytest.raises(SystemExit):
        parse(["--size", "896x504"])
    with pytest.raises(SystemExit):
        parse(["--random-weights"])
    with pytest.raises(SystemExit):
        parse(["--random-weights", "--size", "896x504", "--aspect", "16:9"])


def test_argv_round_trip(tmp_path):
    argv = ["--random-weights", "--seed", "3", "--aspect", "4:3", "--long-side", "672",
            "--gpu-clean", "--fp16", "--out", str(tmp_path / "m.tflite")]
    args = parse(argv)
    again = parse(E.argv_from_args(args))
    assert vars(again) == vars(args)


def test_subcommand_registers_on_subparsers():
    parser = argparse.ArgumentParser(prog="dense-perception")
    sub = parser.add_subparsers(dest="command", required=True)
    E.add_export_da3_parser(sub)
    args = parser.parse_args(["export-da3", "--random-weights", "--size", "896x504"])
    assert args.func is E.run_export_da3 and args.size == (896, 504)


def test_default_out_name():
    assert S.default_out(896, 504, False, False) == "da3_small_896x504.tflite"
    assert S.default_out(672, 504, True, True) == "da3_small_672x504_gpu_fp16.tflite"
    assert S.default_out(644, 364, False, False, int8=True) == "da3_small_644x364_int8.tflite"


def test_int8_weights_option():
    args = parse(["--random-weights", "--size", "644x364", "--int8"])
    assert args.int8 and not args.fp16
    assert vars(parse(E.argv_from_args(args))) == vars(args)
    with pytest.raises(SystemExit):
        parse(["--random-weights", "--size", "644x364", "--int8", "--fp16"])


# ---- the export itself (torch environment) ----------------------------------------------------
@pytest.fixture(scope="module", params=ASPECTS)
def exported(request, tmp_path_factory):
    width, height, camera, fp16 = request.param
    out = tmp_path_factory.mktemp("export") / S.default_out(width, height, False, fp16)
    result = E.export_da3(width, height, out, seed=0, fp16=fp16)
    return result, width, height, camera, fp16


@pytest.mark.export
@needs_torch
def test_export_signature_fidelity_and_report(exported):
    from dense_perception.core.runner import check_model_file

    result, width, height, _, fp16 = exported
    signature = check_model_file(str(result.path))
    assert signature.input_shapes == [(1, 3, height, width)]
    assert signature.output_shapes == [(1, 1, height, width)]

    report = json.loads(result.report_path.read_text())
    assert report["input_shape"] == [1, 3, height, width]
    assert report["output_shape"] == [1, 1, height, width]
    assert report["size_bytes"] == result.path.stat().st_size
    assert report["weights_dtype"] == ("fp16" if fp16 else "fp32")
    assert (report["ops"]["fp16_tensors"] > 0) == fp16
    fid = report["fidelity"]
    for key in ("litert_fp32", "litert_fp16", "litert_fp32_vs_rewritten", "fp32_vs_fp16"):
        assert fid[key]["corr_min"] >= 0.999, (key, fid[key])
    # The CPU rewrites are exact: the rewritten graph is the official model.
    assert fid["torch_rewritten"]["max_abs_diff"] < 1e-5
    ops = report["ops"]
    assert ops["gpu_unfriendly"]["GATHER"] == ops["gpu_unfriendly"]["GATHER_ND"] == 0
    assert ops["gpu_unfriendly"]["SELECT_V2"] == ops["gpu_unfriendly"]["BROADCAST_TO"] == 0


@pytest.mark.export
@needs_torch
def test_pipeline_runs_the_export_with_zero_crop(exported):
    import cv2

    from dense_perception.core.pipeline import PipelineConfig, Request, load_pipeline
    from dense_perception.export import graph, official

    result, width, height, (cam_w, cam_h), _ = exported
    pipe = load_pipeline(str(result.path), backend="cpu",
                         config=PipelineConfig(fit="crop", depth_scale_source="fixed"),
                         log=lambda _: None)  # points need metric depth: the scale is asserted
    assert pipe.spec.kind == "da3"
    assert (pipe.spec.input_width, pipe.spec.input_height) == (width, height)
    plan = pipe.plan_for(cam_w, cam_h)
    assert (plan.crop_x, plan.crop_y, plan.crop_width, plan.crop_height) == (0, 0, cam_w, cam_h)
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


@pytest.mark.export
@needs_torch
def test_checkpoint_in_hugging_face_layout_is_loaded(tmp_path):
    """config.json + model.safetensors with the API wrapper's ``model.`` key prefix."""
    import torch
    from safetensors.torch import save_file

    from dense_perception.export import graph, official

    source = official.build_official_da3(7)
    official.randomise_constant_init(source, 7)
    folder = tmp_path / "DA3-SMALL"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_name": "da3-small"}))
    save_file({f"model.{k}": v.clone().contiguous() for k, v in source.state_dict().items()},
              str(folder / "model.safetensors"))

    model, reference, weights = graph.build_export_model(140, 112, checkpoint=str(folder),
                                                         seed=0)
    assert "model.safetensors" in weights
    for name, value in source.state_dict().items():
        assert torch.equal(reference.net.state_dict()[name], value), name
    x = F.fidelity_inputs(140, 112)["noise"]
    ref = F.torch_outputs(graph.OfficialDepth(source).eval(), [x])[0]
    assert np.array_equal(F.torch_outputs(model, [x])[0], ref)

    (folder / "config.json").write_text(json.dumps({"model_name": "da3-large"}))
    with pytest.raises(C.ExportError, match="da3-large"):
        graph.build_export_model(140, 112, checkpoint=str(folder))


@pytest.mark.export
@needs_torch
def test_gpu_clean_rewrites_are_exact_except_align_corners():
    """Fused-QKV split, LayerScale fold and ConvTranspose-as-conv change nothing; only
    align_corners=False moves the output (see docs/landscape.md)."""
    import torch

    from dense_perception.export import graph, rewrites

    width, height = 280, 168
    cpu, official, _ = graph.build_export_model(width, height, seed=0)
    gpu, _, _ = graph.build_export_model(width, height, seed=0, gpu_clean=True)
    x = F.fidelity_inputs(width, height)["scene"]
    # gpu graph with the resizes switched back to align_corners=True = the exact rewrites only
    gpu.head.align_corners = True
    for module in gpu.head.scratch.modules():
        if hasattr(module, "align_corners"):
            module.align_corners = True
    ref = F.torch_outputs(official, [x])[0]
    assert np.abs(F.torch_outputs(gpu, [x])[0] - ref).max() < 1e-5
    assert np.array_equal(F.torch_outputs(cpu, [x])[0], ref)
    conv_t = official.net.head.resize_layers[0]
    zero_stuff = rewrites.ZeroStuffConvTranspose(conv_t, (12, 20))
    y = torch.randn(1, conv_t.in_channels, 12, 20)
    with torch.no_grad():
        assert torch.allclose(zero_stuff(y), conv_t(y), atol=1e-5)


@pytest.mark.export
@needs_torch
def test_command_line_gpu_clean_small(tmp_path):
    """``python -m dense_perception.export`` end to end: a GPU-clean graph (4D only, no
    TRANSPOSE_CONV / GATHER / BROADCAST_TO) that LiteRT runs like the rewritten PyTorch."""
    out = tmp_path / "gpu.tflite"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(
        [sys.executable, "-m", "dense_perception.export", "--random-weights",
         "--size", "280x168", "--gpu-clean", "--fp16", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LiteRT fp32 vs rewritten (conversion)" in proc.stdout
    report = json.loads(Path(str(out) + ".report.json").read_text())
    ops = report["ops"]
    assert ops["max_tensor_rank"] <= 4
    assert all(v == 0 for v in ops["gpu_unfriendly"].values()), ops["gpu_unfriendly"]
    assert report["fidelity"]["litert_fp32_vs_rewritten"]["corr_min"] >= 0.999
    assert report["fidelity"]["fp32_vs_fp16"]["corr_min"] >= 0.999
