# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Model files are checked before they run: dtypes and quantisation, dynamic sizes, the depth
output's aspect, and what ``auto`` takes as evidence of DA3 or TIPSv2.

The files (support/model_files.py) compute 2 + 0.5 r + 0.25 g + 0.125 b of their float input.
The truth of a quantised file is the file's own output for the codes TFLite's quantisation
formula gives, dequantised by the formula written out here, run by LiteRT itself.
"""

import json

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL, run_cli
from support.model_files import (WEIGHTS, BIAS, dequantise, quantise, run_file,
                                 write_io_model)
from dense_perception.core.backends.runner import ModelLoadError
from dense_perception.core.model.depth_network import same_aspect
from dense_perception.core.model.detection import detect_model_spec
from dense_perception.core.model.evidence import evidence_for
from dense_perception.core.model.specs import MODEL_SPECS, ModelSignatureError
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.settings.table import Settings
from dense_perception.core.model.tflite_file import TfliteSignature, read_signature

H, W = 48, 64
DEPTH = dict(model_type="depth", backend="cpu", num_threads=1)
# dtype -> (input scale, input zero point, output scale, output zero point)
QUANTISED = {
    "uint8": (1 / 255, 0, 0.02, 10),        # an output with scale 0.02, zero point 10
    "int8": (1 / 255, -128, 0.02, -128),   # depth 2..2.9 -> codes -28..+15: negatives too
    "int16": (1 / 32768, 0, 1 / 4096, 0),
}


def quiet(_):
    pass


def frame(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (H, W, 3), dtype=np.uint8)


def law(rgb: np.ndarray) -> np.ndarray:
    return BIAS + (rgb.astype(np.float64) / 255.0) @ np.asarray(WEIGHTS)


def quantised_file(tmp_path, dtype: str):
    s_in, z_in, s_out, z_out = QUANTISED[dtype]
    return write_io_model(tmp_path / f"{dtype}.tflite", H, W, input_dtype=dtype,
                          input_quant=([s_in], [z_in]), output_dtype=dtype,
                          output_quant=([s_out], [z_out]))


def file_truth(path, dtype: str, rgb: np.ndarray) -> np.ndarray:
    """The file's own output for ``rgb`` (RGB/255 quantised by the formula), dequantised."""
    s_in, z_in, s_out, z_out = QUANTISED[dtype]
    codes = quantise(rgb[None] / 255.0, s_in, z_in, dtype)
    raw = run_file(path, codes)[0]
    assert raw.dtype == np.dtype(dtype)
    return dequantise(raw, s_out, z_out)[0, :, :, 0]


# ---- dtypes and quantisation ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", sorted(QUANTISED))
def test_quantised_inputs_and_outputs_use_the_files_scale_and_zero_point(tmp_path, dtype):
    path = quantised_file(tmp_path, dtype)
    rgb = frame()
    truth = file_truth(path, dtype, rgb)
    # The truth is the law within the file's own rounding (input and output steps).
    s_in, _, s_out, _ = QUANTISED[dtype]
    assert np.abs(truth - law(rgb)).max() <= s_out / 2 + 0.875 * s_in + 1e-9
    pipe = load_pipeline(str(path), Settings(**DEPTH), log=quiet)
    depth = pipe.process(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), "bgr8").depth
    assert depth.dtype == np.float32 and np.isfinite(depth).all()
    # The same codes, but where float32 puts an input a hair across a rounding boundary
    # (int16's fine steps): one output step, at a few pixels.
    off = np.abs(depth - truth) > 1e-6 * truth
    assert off.mean() < 0.01 and np.abs(depth - truth).max() <= s_out * 1.0001
    assert "scale and zero point" in pipe.runner.description


def test_float16_inputs_and_outputs_are_cast(tmp_path):
    path = write_io_model(tmp_path / "f16.tflite", H, W, input_dtype="float16",
                          output_dtype="float16")
    rgb = frame(1)
    truth = run_file(path, (rgb[None] / 255.0).astype(np.float16))[0][0, :, :, 0]
    depth = load_pipeline(str(path), Settings(**DEPTH), log=quiet).process(rgb, "rgb8").depth
    np.testing.assert_allclose(depth, truth.astype(np.float64), rtol=1e-3)
    np.testing.assert_allclose(depth, law(rgb), rtol=2e-3)


@pytest.mark.parametrize("kwargs,words", [
    (dict(input_dtype="uint8", input_quant=([1 / 255, 1 / 255, 1 / 255], [0, 0, 0], 3)),
     "input 0 'image' is uint8 with per-channel quantisation (3 scales along dimension 3)"),
    (dict(input_dtype="uint8"), "input 0 'image' is uint8 without a scale and zero point"),
    (dict(output_dtype="int32"), "output 0 'depth' is int32, which is not read here"),
    (dict(input_dtype="uint8", input_quant=([0.0], [0])),
     "with scale 0 and zero point 0, which do not describe uint8 codes"),
])
def test_unreadable_dtypes_are_refused_in_one_line(tmp_path, kwargs, words):
    path = write_io_model(tmp_path / "m.tflite", H, W, **kwargs)
    with pytest.raises(ModelLoadError) as err:
        load_pipeline(str(path), Settings(**DEPTH), log=quiet)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_quantised_files_stay_off_the_gpu_and_npu(tmp_path):
    """The GPU/NPU workers are fed float32: refused in one line there; 'auto' runs the CPU and
    says why (no GPU needed: decided from the file before any backend starts)."""
    path = quantised_file(tmp_path, "uint8")
    for backend in ("gpu", "npu"):
        with pytest.raises(ModelLoadError) as err:
            load_pipeline(str(path), Settings(model_type="depth", backend=backend), log=quiet)
        text = str(err.value)
        assert f"backend {backend} cannot run" in text and "input 0 is uint8" in text
        assert "float32 only" in text and "\n" not in text
    pipe = load_pipeline(str(path), Settings(model_type="depth", backend="auto",
                                             num_threads=1), log=quiet)
    assert pipe.runner.backend == "cpu"
    assert pipe.runner.fallback_note.startswith("GPU not used: input 0 is uint8")
    rgb = frame(2)
    np.testing.assert_allclose(pipe.process(rgb, "rgb8").depth,
                               file_truth(path, "uint8", rgb), rtol=1e-6)


def test_process_writes_the_dequantised_depth_and_info_the_true_dtypes(tmp_path, capsys):
    path = quantised_file(tmp_path, "uint8")
    rgb = frame(3)
    folder = tmp_path / "in"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    out = tmp_path / "out"
    code, _, stderr = run_cli(["process", folder, "--model", path, "--model-type", "depth",
                               "--backend", "cpu", "--outputs", "depth", "--out", out], capsys)
    assert code == 0, stderr
    np.testing.assert_allclose(np.load(out / "depth" / "a.npy"), file_truth(path, "uint8", rgb),
                               rtol=1e-6)
    code, stdout, stderr = run_cli(["info", path, "--model-type", "depth", "--backends", "cpu",
                                    "--runs", "1"], capsys)
    assert code == 0, stderr
    assert f"[1,{H},{W},3] uint8 (scale 0.00392157, zero point 0) NHWC RGB" in stdout
    assert f"depth [1,{H},{W},1] uint8 (scale 0.02, zero point 10): relative depth" in stdout
    code, stdout, _ = run_cli(["info", path, "--model-type", "depth", "--backends", "",
                               "--json"], capsys)
    tensors = json.loads(stdout)["tensors"]
    assert tensors["inputs"][0]["dtype"] == "uint8" and tensors["outputs"][0]["dtype"] == "uint8"
    assert tensors["outputs"][0]["scale"] == pytest.approx(0.02)
    assert tensors["outputs"][0]["zero_point"] == 10


# ---- dynamic sizes --------------------------------------------------------------------------
def test_a_dynamic_size_placeholder_is_refused_not_run_at_1x1(tmp_path, capsys):
    """TF's converter: stored [1,1,1,3], signature [1,-1,-1,3]."""
    path = write_io_model(tmp_path / "dyn.tflite", H, W, dynamic="placeholder")
    signature = read_signature(path)
    assert signature.input_shapes == [(1, 1, 1, 3)]
    assert signature.inputs[0].shape_signature == (1, -1, -1, 3)
    with pytest.raises(ModelLoadError, match=r"dynamic size \(\[1,-1,-1,3\], stored \[1,1,1,3\]"):
        load_pipeline(str(path), Settings(**DEPTH), log=quiet)
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), frame())
    code, _, stderr = run_cli(["process", image, "--model", path, "--model-type", "depth",
                               "--backend", "cpu", "--out", tmp_path / "out"], capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "dynamic size" in lines[0], stderr
    assert not (tmp_path / "out" / "depth").exists()
    code, stdout, stderr = run_cli(["info", path, "--backends", "cpu"], capsys)
    assert code == 2 and "float32 dynamic [1,-1,-1,3]" in stdout and "dynamic size" in stderr


@pytest.mark.parametrize("dynamic", ["sized", "batch"])
def test_a_dynamic_file_with_a_stored_size_runs_at_it(tmp_path, dynamic):
    """A real stored size (the file's own suggestion), or a dynamic batch of 1: runs right."""
    path = write_io_model(tmp_path / "d.tflite", H, W, dynamic=dynamic)
    pipe = load_pipeline(str(path), Settings(**DEPTH), log=quiet)
    assert (pipe.spec.input_width, pipe.spec.input_height) == (W, H)
    rgb = frame(4)
    np.testing.assert_allclose(pipe.process(rgb, "rgb8").depth, law(rgb), rtol=2e-5)


# ---- the depth output's aspect --------------------------------------------------------------
def test_a_depth_output_of_another_aspect_is_refused(maker, tmp_path, capsys):
    path = maker.write_signature_model(tmp_path / "t.tflite", [(1, H, W, 3)],
                                       [(1, H, W, 1), (1, W, H, 1)])
    with pytest.raises(ModelSignatureError) as err:
        load_pipeline(str(path), Settings(**DEPTH, depth_output=1), log=quiet)
    assert f"output 1 is {H}x{W}, not the input's {W}x{H} aspect" in str(err.value)
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), frame())
    code, _, stderr = run_cli(["process", image, "--model", path, "--model-type", "depth",
                               "--depth-output", "1", "--backend", "cpu"], capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "aspect" in lines[0], stderr


@pytest.mark.parametrize("plane,size,same", [
    ((24, 32), (48, 64), True),     # half
    ((56, 80), (447, 640), True),   # 447/8 = 55.9: rounded
    ((55, 80), (447, 640), True),   # floored
    ((64, 48), (48, 64), False),    # transposed
    ((48, 48), (48, 64), False),    # square from 4:3
    ((1, 1), (48, 64), False),      # a scalar is no depth map
])
def test_same_aspect_allows_rounding_only(plane, size, same):
    # Truth: some scale s puts each side within one pixel, h ~ H s and w ~ W s.
    (h, w), (big_h, big_w) = plane, size
    scales = np.linspace(0.01, 2.0, 200001)
    fits = bool(np.any((np.abs(h - big_h * scales) < 1) & (np.abs(w - big_w * scales) < 1)))
    assert fits == same or plane == (1, 1)
    assert same_aspect(plane, size) == same


# ---- model_type auto: evidence beyond the shapes --------------------------------------------
def test_a_generic_network_with_da3s_shapes_is_not_called_da3(maker, tmp_path, capsys):
    """NCHW [1,3,14k,14m] -> [1,1,14k,14m], 1 KB, output named depth: refused under auto with
    the hint; runs as model_type depth."""
    path = maker.write_depth_model(tmp_path / "g.tflite", 56, 84, "NCHW")
    with pytest.raises(ModelSignatureError) as err:
        load_pipeline(str(path), Settings(backend="cpu"), log=quiet)
    text = str(err.value)
    assert "its shapes fit da3 but nothing else in the file says it is" in text
    assert "--model-type depth (node: model_type: depth)" in text and "\n" not in text
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), np.zeros((56, 84, 3), np.uint8))
    code, _, stderr = run_cli(["process", image, "--model", path, "--backend", "cpu"], capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "--model-type depth" in lines[0], stderr
    assert load_pipeline(str(path), Settings(**DEPTH), log=quiet).spec.kind == "depth"
    # Two planes of DA3's shape without a name that says confidence: no evidence either.
    two = maker.write_signature_model(tmp_path / "two.tflite", [(1, 3, 56, 84)],
                                      [(1, 1, 56, 84)] * 2, output_names=["a", "b"])
    with pytest.raises(ModelSignatureError, match="nothing else in the file says it is"):
        load_pipeline(str(two), Settings(backend="cpu"), log=quiet)
    # The card's shapes in a 1 KB file that does not name DA3: not the card's file.
    card = maker.write_signature_model(tmp_path / "card.tflite", [(1, 3, 896, 504)],
                                       [(1, 1, 896, 504)])
    with pytest.raises(ModelSignatureError, match="not the card's 55 MB file"):
        load_pipeline(str(card), Settings(backend="cpu"), log=quiet)


@pytest.mark.parametrize("path,kind,words", [
    (DA3_TEST_MODEL, "da3", "its description names it"),
    (TIPS_TEST_MODEL, "tipsv2", "its three outputs: depth, 3 normal planes and 150 ADE20K"),
])
def test_bundled_models_are_recognised_and_info_says_why(path, kind, words, capsys):
    code, stdout, stderr = run_cli(["info", path, "--backends", ""], capsys)
    assert code == 0, stderr
    assert f"kind       {kind}:" in stdout
    assert next(line for line in stdout.splitlines() if line.startswith("matched")) \
        .split(None, 1)[1].startswith(words)


def test_export_da3_files_are_recognised_by_their_names_or_report(maker, tmp_path):
    depth_only = maker.write_depth_model(tmp_path / "da3_small_84x56.tflite", 56, 84, "NCHW")
    size = depth_only.stat().st_size
    report = tmp_path / "da3_small_84x56.tflite.report.json"
    report.write_text(json.dumps({"model": "da3-small", "size_bytes": size + 1}))
    with pytest.raises(ModelSignatureError):  # a report for another file
        load_pipeline(str(depth_only), Settings(backend="cpu"), log=quiet)
    report.write_text(json.dumps({"model": "da3-small", "size_bytes": size}))
    spec = load_pipeline(str(depth_only), Settings(backend="cpu"), log=quiet).spec
    assert spec.kind == "da3" and "export-da3's report beside it" in spec.evidence
    assert spec.mean == MODEL_SPECS["da3"].mean and "55 MB" not in spec.source
    named = maker.write_signature_model(tmp_path / "c.tflite", [(1, 3, 56, 84)],
                                        [(1, 1, 56, 84)] * 2,
                                        output_names=["confidence", "depth"])
    spec = load_pipeline(str(named), Settings(backend="cpu"), log=quiet).spec
    assert spec.kind == "da3" and [o.kind for o in spec.outputs] == ["depth_confidence",
                                                                     "depth"]


@pytest.mark.parametrize("size,operators,claimed", [
    (55_100_000, 2000, True),    # the card: FP16, 55 MB
    (1_100, 1460, True),         # the card's 1460 nodes
    (1_100, 3, False),           # a stand-in that does not name DA3
    (110_000_000, 900, False),   # another network at the card's shapes
])
def test_the_cards_file_is_known_by_its_size_or_operators(size, operators, claimed):
    shapes = ([(1, 3, 896, 504)], [(1, 1, 896, 504)])
    file = TfliteSignature(*shapes, operator_count=operators, file_size=size,
                           output_names=("output_0",))
    evidence = evidence_for(MODEL_SPECS["da3"], *shapes, file.output_names, file)
    assert bool(evidence) == claimed
    if claimed:
        assert detect_model_spec(*shapes, file=file).kind == "da3"
    else:
        with pytest.raises(ModelSignatureError):
            detect_model_spec(*shapes, file=file)


# ---- the node: the same check, at start -------------------------------------------------------
@pytest.mark.ros
@pytest.mark.timeout(120)
def test_node_refuses_a_dynamic_file_at_start_in_one_line(tmp_path):
    pytest.importorskip("rclpy")
    from support.node_startup import startup_refusal
    path = write_io_model(tmp_path / "dyn.tflite", H, W, dynamic="placeholder")
    code, lines = startup_refusal(["-p", "backend:=cpu", "-p", f"model_path:={path}",
                                   "-p", "model_type:=depth"])
    assert code == 1 and len(lines) == 1 and "[FATAL]" in lines[0], lines
    assert "dynamic size ([1,-1,-1,3], stored [1,1,1,3]" in lines[0]
