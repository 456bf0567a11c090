# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One rule for "this setting does nothing here" (core/wiring/relevance.py), walked over the
whole settings table; ``dense-perception process`` refuses such a flag with exit 2 and one line
naming it; the shipped configs give their own model no ignored setting. (The node at start and
at runtime: test_node_ignored_settings.py, test_parameter_sweep.py.)"""

from itertools import product
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL, run_cli
from support.setting_values import other_value

from dense_perception.core.wiring.relevance import (SCOPE, Where, given_at_start,
                                                    ignored_settings, why_ignored)
from dense_perception.core.settings.table import PARAMS, PARAMS_BY_NAME, Settings

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[1]
NODE_KEY = "/**/dense_perception"
KINDS = {"da3": False, "tipsv2": True, "depth": False}  # model kind: metric depth


def test_every_row_of_the_table_declares_where_it_acts():
    """A new setting fails here until core/setting_relevance.SCOPE says where it acts."""
    missing = [p.name for p in PARAMS if p.name not in SCOPE]
    assert not missing, f"settings with no relevance rule in setting_relevance.SCOPE: {missing}"
    assert not set(SCOPE) - {p.name for p in PARAMS}, "rules for settings the table lacks"


def _runs():
    """Every model kind on every input, with and without a calibration file and compressed
    outputs, under settings that open each setting's conditions (a scale source, custom
    normalisation, a per-camera height, ...)."""
    wheres = [Where(kind, metric, inp, cal, comp) for (kind, metric), inp, cal, comp in product(
        KINDS.items(), ("topic", "bag", "video", "images", "image"), (False, True),
        (False, True))]
    sources = PARAMS_BY_NAME["depth_scale_source"].choices  # each source the table has
    variants = [{}, *({"depth_scale_source": source} for source in sources),
                {"input_normalization": "custom", "depth_scale_source": "ground_plane"},
                {"backend": "npu", "npu_vendor": "auto"}, {"backend": "cpu"}]
    return wheres, variants


@pytest.mark.parametrize("spec", PARAMS, ids=lambda p: p.name)
def test_each_setting_acts_somewhere_and_says_why_where_it_does_not(spec):
    """No rule makes a setting dead everywhere; where it does nothing, the reason names it."""
    wheres, variants = _runs()
    value = other_value(spec)
    acts = 0
    for variant, where in product(variants, wheres):
        settings = Settings.from_values({**variant, spec.name: value}) \
            if spec.name not in variant else Settings.from_values(variant)
        why = why_ignored(spec.name, settings, where)
        if why is None:
            acts += 1
        else:
            assert why.startswith(f"{spec.name} has no effect"), why
    assert acts, f"{spec.name} acts in no run"


@pytest.mark.parametrize("config,kind", [("depth.yaml", "da3"), ("tipsv2.yaml", "tipsv2"),
                                         ("two_cameras.yaml", "da3")])
def test_shipped_configs_give_their_model_no_ignored_setting(config, kind):
    """The config files list every setting (most at their defaults): none of them may warn
    for the model they are for (two_cameras.yaml is used over depth.yaml)."""
    values = yaml.safe_load((REPO / "config" / "depth.yaml").read_text())[NODE_KEY][
        "ros__parameters"] if config == "two_cameras.yaml" else {}
    values = {**values, **yaml.safe_load((REPO / "config" / config).read_text())[NODE_KEY][
        "ros__parameters"]}
    settings = Settings.from_values({p.name: values[p.name] for p in PARAMS if p.name in values})
    assert ignored_settings(settings, given_at_start(settings), Where(kind, KINDS[kind])) == []


def test_what_the_node_counts_as_given():
    """At start the node counts a setting as given when it is off its default: a YAML that
    lists one at its default (as config/*.yaml do) gives nothing; camera_heights [] or [0.0]
    (camera_height for every camera) is not a per-camera height."""
    assert given_at_start(Settings()) == []
    settings = Settings(camera_heights=[], input_mean=[0.5, 0.5, 0.5], camera_height=1.2)
    assert given_at_start(settings) == ["input_mean", "camera_height", "camera_heights"]
    assert ignored_settings(settings, ["camera_heights"], Where("da3", False)) == []


def test_the_issues_cases_name_the_setting_and_why():
    """Each case accepted and ignored before, with the reason the rule gives."""
    da3, tips = Where("da3", False), Where("tipsv2", True)
    cases = [
        (Settings(input_mean=[0.5] * 3), Where("depth", False), "input_mean",
         "input_normalization unit"),
        (Settings(camera_height=1.2), da3, "camera_height", "depth_scale_source none"),
        (Settings(relative_depth_scale=2.0), tips, "relative_depth_scale", "metric"),
        (Settings(depth_scale_source="fixed"), tips, "depth_scale_source", "metric"),
        (Settings(metric_depth_error=0.2), tips, "metric_depth_error",
         "depth_scale_source none"),
        (Settings(depth_output_kind="inverse_depth"), tips, "depth_output_kind", "tipsv2"),
        (Settings(input_normalization="imagenet"), tips, "input_normalization", "tipsv2"),
        (Settings(depth_output=0), tips, "depth_output", "tipsv2"),
        (Settings(cameras=["a", "b"], camera_heights=[1.2, 1.2], camera_height=0.5,
                  depth_scale_source="ground_plane"), da3, "camera_height",
         "camera_heights is set"),
    ]
    for settings, where, name, because in cases:
        (why,) = ignored_settings(settings, [name], where)
        assert why.startswith(f"{name} has no effect") and because in why, why


# ---- the offline command ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """An image folder and a short video of the same textured frame."""
    root = tmp_path_factory.mktemp("inputs")
    frame = cv2.GaussianBlur(np.random.default_rng(3).integers(0, 256, (72, 96, 3), np.uint8),
                             (0, 0), 3)
    (root / "images").mkdir()
    cv2.imwrite(str(root / "images" / "a.png"), frame)
    video = cv2.VideoWriter(str(root / "clip.avi"), cv2.VideoWriter_fourcc(*"MJPG"), 5.0,
                            (96, 72))
    for _ in range(3):
        video.write(frame)
    video.release()
    return root


def refused(argv, capsys, tmp_path):
    code, _, err = run_cli(["process", *argv, "--out", tmp_path / "out", "--backend", "cpu"],
                           capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert not (tmp_path / "out").exists()
    return lines[0]


SETTING_CASES = [  # (model, flags, the flag named, a word of the reason)
    (DA3_TEST_MODEL, ["--model-type", "depth", "--input-mean", ".5", ".5", ".5"],
     "--input-mean", "--input-normalization unit"),
    (DA3_TEST_MODEL, ["--camera-height", "1.2"], "--camera-height", "--depth-scale-source none"),
    (DA3_TEST_MODEL, ["--camera-height", "1.2", "--depth-scale-source", "none"],
     "--camera-height", "--depth-scale-source none"),
    (TIPS_TEST_MODEL, ["--relative-depth-scale", "2"], "--relative-depth-scale", "metric"),
    (TIPS_TEST_MODEL, ["--relative-depth-scale", "1.0"], "--relative-depth-scale", "metric"),
    (TIPS_TEST_MODEL, ["--depth-scale-source", "fixed"], "--depth-scale-source", "metric"),
    (DA3_TEST_MODEL, ["--metric-depth-error", "0.2", "--depth-scale-source", "ground_plane",
                      "--camera-height", "1"], "--metric-depth-error", "relative-depth model"),
    (TIPS_TEST_MODEL, ["--depth-output-kind", "inverse_depth"], "--depth-output-kind",
     "--model-type depth"),
    (TIPS_TEST_MODEL, ["--input-normalization", "imagenet"], "--input-normalization",
     "--model-type depth"),
    (TIPS_TEST_MODEL, ["--depth-output", "0"], "--depth-output", "--model-type depth"),
    (TIPS_TEST_MODEL, ["--camera-info-slop", "0.1"], "--camera-info-slop", "bag"),
    (TIPS_TEST_MODEL, ["--input-rectified"], "--input-rectified", "--camera-info-yaml"),
    (TIPS_TEST_MODEL, ["--gpu-precision", "fp32"], "--gpu-precision", "--backend cpu"),
    (TIPS_TEST_MODEL, ["--png-level", "9"], "--png-level", "--compressed"),
    (DA3_TEST_MODEL, ["--depth-scale-source", "ground_plane", "--camera-height", "1",
                      "--depth-scale-time-constant", "100"], "--depth-scale-time-constant",
     "unrelated photos"),
]


@pytest.mark.parametrize("model,flags,flag,because", SETTING_CASES,
                         ids=[" ".join(c[1]) for c in SETTING_CASES])
def test_process_refuses_a_setting_flag_that_does_nothing(inputs, tmp_path, capsys, model,
                                                         flags, flag, because):
    line = refused([inputs / "images", "--model", model, *flags], capsys, tmp_path)
    assert line.startswith(f"dense-perception: error: {flag} has no effect"), line
    assert because in line, line


BAG_FLAGS = [["--compressed", "add"], ["--compressed", "only"], ["--topic", "/camera/image"],
             ["--camera-info-topic", "/camera/camera_info"],
             ["--reference-depth-topic", "/depth"], ["--out-namespace", "/x"],
             ["--bag-format", "sqlite3"], ["--copy", "none"]]


@pytest.mark.parametrize("input_name", ["images", "clip.avi"])
@pytest.mark.parametrize("flags", BAG_FLAGS, ids=lambda f: " ".join(f))
def test_process_refuses_bag_flags_on_images_and_videos(inputs, tmp_path, capsys, input_name,
                                                        flags):
    line = refused([inputs / input_name, "--model", TIPS_TEST_MODEL, *flags], capsys, tmp_path)
    assert f"{flags[0]} has no effect on " in line and "bag input only" in line, line


def test_process_refuses_threads_per_worker_without_ray(inputs, tmp_path, capsys):
    line = refused([inputs / "images", "--model", TIPS_TEST_MODEL, "--threads-per-worker", "2"],
                   capsys, tmp_path)
    assert "--threads-per-worker has no effect without --ray" in line, line


def test_the_same_flags_where_they_act_are_taken(inputs, tmp_path, capsys):
    """Where the rule lets them act, the flags run: --input-rectified with a calibration file,
    and a flag on a video that the video's filter reads."""
    calibration = tmp_path / "camera.yaml"
    calibration.write_text(yaml.safe_dump({
        "image_width": 96, "image_height": 72, "camera_name": "c",
        "camera_matrix": {"rows": 3, "cols": 3, "data": [80.0, 0, 47.5, 0, 80.0, 35.5, 0, 0, 1]},
        "distortion_model": "plumb_bob",
        "distortion_coefficients": {"rows": 1, "cols": 5, "data": [0.0] * 5},
        "rectification_matrix": {"rows": 3, "cols": 3, "data": [1.0, 0, 0, 0, 1, 0, 0, 0, 1]},
        "projection_matrix": {"rows": 3, "cols": 4,
                              "data": [80.0, 0, 47.5, 0, 0, 80.0, 35.5, 0, 0, 0, 1, 0]}}))
    for n, argv in enumerate([
            [inputs / "images", "--model", TIPS_TEST_MODEL, "--input-rectified",
             "--camera-info-yaml", calibration],
            [inputs / "clip.avi", "--model", DA3_TEST_MODEL, "--model-type", "da3",
             "--depth-scale-source", "fixed", "--points-voxel-size", "0.01"]]):
        code, _, err = run_cli(["process", *argv, "--out", tmp_path / f"o{n}", "--backend",
                                "cpu", "--outputs", "depth"], capsys)
        assert code == 0, err
