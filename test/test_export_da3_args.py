# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception export-da3``'s size rule and argument handling: no torch needed, they
run everywhere (the export itself: test_export_da3_model.py, test_export_da3_graph.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from dense_perception.export import common as C
from dense_perception.export import export_da3 as E
from dense_perception.export import sizes as S


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

