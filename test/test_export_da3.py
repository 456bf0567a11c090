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

# (width, height, camera frame size of that aspect, fp16 weights): DA3's own resolution (long
# side 504, upper_bound_resize), the default of export-da3
ASPECTS = [
    pytest.param((504, 280, (1280, 720), True), id="504x280-16:9-fp16"),
    pytest.param((504, 378, (640, 480), False), id="504x378-4:3-fp32"),
]


# ---- size rule and arguments (no torch) -------------------------------------------------------
@pytest.mark.parametrize("aspect, long_side, expected", [
    (16 / 9, 504, (504, 280)),       # 283.5 -> 284 -> 280 (284 is 4 from 280, 10 from 294)
    (4 / 3, 504, (504, 378)),        # 378 = 27 x 14
    (9 / 16, 504, (280, 504)),       # portrait: the same rule on the width
    (1280 / 800, 504, (504, 322)),   # 16:10: 315 = 22.5 x 14, a tie: DA3 rounds up
    (16 / 9, 896, (896, 504)),       # the card's sizes at --long-side 896
    (4 / 3, 896, (896, 672)),
    (4 / 3, 672, (672, 504)),
    (9 / 16, 896, (504, 896)),
    (1.0, 518, (518, 518)),
    (1280 / 800, 896, (896, 560)),
    (20.0, 896, (896, 42)),          # 896/20 = 44.8 -> 45 -> 42 (3 patches) is closer than 56
    (1000.0, 896, (896, 14)),        # never below one patch
])
def test_size_rule(aspect, long_side, expected):
    w, h = S.size_for_aspect(aspect, long_side)
    assert (w, h) == expected
    assert w % 14 == 0 and h % 14 == 0 and max(w, h) == long_side


# DA3's upper_bound_resize by hand: scale the long side to 504, round to a pixel, then to the
# nearest multiple of 14 (ties up).
@pytest.mark.parametrize("camera, expected", [
    ((1280, 720), (504, 280)),   # 720 x 504/1280 = 283.5 -> 284 -> 280
    ((1920, 1080), (504, 280)),
    ((640, 480), (504, 378)),    # 378 exactly
    ((752, 480), (504, 322)),    # 321.7 -> 322 = 23 x 14
    ((848, 480), (504, 280)),    # 285.3 -> 285 -> 280 (5 below 285, 9 above)
    ((640, 400), (504, 322)),    # 315 -> tie between 308 and 322 -> 322
    ((720, 1280), (280, 504)),   # portrait
])
def test_size_rule_for_camera_sizes(camera, expected):
    assert S.size_for_image(*camera) == expected


def test_default_is_da3s_own_resolution(tmp_path):
    """Without --long-side the size is DA3's process_res 504, for --aspect and camera info."""
    assert C.DEFAULT_LONG_SIDE == 504
    assert S.resolve_size(parse(["--random-weights", "--aspect", "16:9"])) == (504, 280)
    assert S.resolve_size(parse(["--random-weights", "--aspect", "9:16"])) == (280, 504)
    assert S.resolve_size(parse(["--random-weights", "--aspect", "16:9", "--long-side",
                                 "896"])) == (896, 504)
    help_text = E.add_export_da3_arguments(argparse.ArgumentParser()).format_help()
    assert "default 504" in " ".join(help_text.split()) and "process_res" in help_text


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
    assert S.resolve_size(args) == (504, 280)
    args = parse(["--random-weights", "--long-side", "896", "--camera-info-yaml",
                  str(camera_info_yaml(tmp_path / "cam.yaml", 1280, 720))])
    assert S.resolve_size(args) == (896, 504)
    args = parse(["--random-weights", "--camera-info-yaml",
                  str(camera_info_yaml(tmp_path / "cam_portrait.yaml", 720, 1280))])
    assert S.resolve_size(args) == (280, 504)
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
            "--gpu-clean", "--fp16", "--no-confidence", "--out", str(tmp_path / "m.tflite")]
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
@pytest.mark.timeout(60)
@pytest.mark.parametrize("camera", [(1280, 720), (1920, 1080), (640, 480), (752, 480),
                                    (848, 480), (640, 400), (1280, 800), (720, 1280),
                                    (480, 640), (1000, 999), (504, 100)])
def test_size_rule_is_da3s_upper_bound_resize(camera):
    """The official InputProcessor's two size steps of ``upper_bound_resize`` (process_res 504:
    longest side to 504, then each side to the nearest multiple of 14) on a frame of that size
    give the model size export-da3 picks for the camera."""
    import ast

    import cv2
    from PIL import Image

    # The package's module imports torchvision, imageio, ... (not in .venv-bench) for steps the
    # size does not depend on: its two size methods are taken from its source and run as is.
    spec = importlib.util.find_spec("depth_anything_3")
    source = Path(list(spec.submodule_search_locations)[0]) / "utils" / "io" \
        / "input_processor.py"
    tree = ast.parse(source.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "InputProcessor")
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)
               and n.name in ("_resize_longest_side", "_make_divisible_by_resize")]
    official = type("Official", (), {})()
    namespace = {"cv2": cv2, "np": np, "Image": Image}
    for method in methods:  # the official code, unchanged
        exec(compile(ast.Module(body=[method], type_ignores=[]), str(source), "exec"), namespace)
        setattr(official, method.name, namespace[method.name].__get__(official))

    w, h = camera
    image = official._resize_longest_side(Image.new("RGB", (w, h)), 504)
    image = official._make_divisible_by_resize(image, 14)
    assert S.size_for_image(w, h) == image.size


def _output_names_in_order(path: Path) -> list[str]:
    """The SignatureDef names of the outputs in the order LiteRT returns them (by tensor)."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(path))
    by_index = {d["index"]: name for name, d in
                interp.get_signature_runner().get_output_details().items()}
    return [by_index[d["index"]] for d in interp.get_output_details()]


@pytest.mark.export
@needs_torch
def test_export_signature_fidelity_and_report(exported, capsys):
    from dense_perception.core.backends.runner import check_model_file

    result, width, height, _, fp16 = exported
    signature = check_model_file(str(result.path))
    assert signature.input_shapes == [(1, 3, height, width)]
    assert signature.output_shapes == [(1, 1, height, width)] * 2
    assert _output_names_in_order(result.path) == ["depth", "confidence"]

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
         "--size", "280x168", "--gpu-clean", "--fp16", "--no-confidence", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LiteRT fp32 vs rewritten (conversion)" in proc.stdout
    report = json.loads(Path(str(out) + ".report.json").read_text())
    assert report["outputs"] == {"depth": [1, 1, 168, 280]}  # --no-confidence: the card's
    assert _output_names_in_order(out) == ["depth"]
    ops = report["ops"]
    assert ops["max_tensor_rank"] <= 4
    assert all(v == 0 for v in ops["gpu_unfriendly"].values()), ops["gpu_unfriendly"]
    assert report["fidelity"]["litert_fp32_vs_rewritten"]["corr_min"] >= 0.999
    assert report["fidelity"]["fp32_vs_fp16"]["corr_min"] >= 0.999


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
