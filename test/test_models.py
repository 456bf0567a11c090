# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Model kinds are detected from a file's own signature; anything else fails with one message."""

import pytest

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL
from dense_perception.core.model.specs import MODEL_SPECS, ModelSignatureError
from dense_perception.core.model.detection import detect_model_spec
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.settings.table import Settings


def test_specs_follow_the_model_cards():
    da3, tips = MODEL_SPECS["da3"], MODEL_SPECS["tipsv2"]
    assert da3.input_shape == (1, 3, 896, 504) and da3.output_shapes == ((1, 1, 896, 504),)
    assert da3.mean == (0.485, 0.456, 0.406) and da3.std == (0.229, 0.224, 0.225)
    assert not da3.metric_depth
    assert tips.input_shape == (1, 3, 448, 448)
    assert tips.output_shapes == ((1, 1, 448, 448), (1, 3, 448, 448), (1, 150, 256, 256))
    assert tips.mean == (0.0, 0.0, 0.0) and tips.std == (1.0, 1.0, 1.0) and tips.metric_depth
    assert [o.kind for o in tips.outputs] == ["depth", "normals", "segmentation_logits"]


@pytest.mark.parametrize("path,kind", [(DA3_TEST_MODEL, "da3"), (TIPS_TEST_MODEL, "tipsv2")])
def test_detected_from_file(path, kind):
    pipeline = load_pipeline(path, Settings(backend="cpu"), log=lambda _: None)
    assert pipeline.spec.kind == kind


def test_unknown_signature_lists_both_supported_ones(maker, tmp_path):
    path = str(tmp_path / "other.tflite")
    maker.write_signature_model(path, [(1, 3, 256, 256)], [(1, 1, 256, 256)])
    with pytest.raises(ModelSignatureError) as err:
        load_pipeline(path, Settings(backend="cpu"), log=lambda _: None)
    text = str(err.value)
    assert "input [1,3,256,256] -> outputs [1,1,256,256]" in text  # 256 is no multiple of 14
    assert "da3 (Depth Anything 3 Small): input [1,3,896,504] -> outputs [1,1,896,504]" in text
    assert ("tipsv2 (TIPSv2-B14-DPT): input [1,3,448,448] -> outputs [1,1,448,448], "
            "[1,3,448,448], [1,150,256,256]") in text
    assert "\n" not in text


def test_forced_model_type_must_match():
    with pytest.raises(ModelSignatureError, match="forced to 'da3'"):
        load_pipeline(TIPS_TEST_MODEL, Settings(model_type="da3", backend="cpu"),
                      log=lambda _: None)
    assert load_pipeline(TIPS_TEST_MODEL, Settings(model_type="tipsv2", backend="cpu"),
                         log=lambda _: None).spec.kind == "tipsv2"
    with pytest.raises(ModelSignatureError, match="model_type 'midas' is unknown"):
        detect_model_spec([(1, 3, 448, 448)], [], "midas")


def test_da3_exported_at_another_aspect_is_recognised(maker, tmp_path):
    """export-da3 writes DA3 at the camera's aspect: [1,3,H,W] -> [1,1,H,W] depth and its
    confidence, named so, multiples of 14 (the shapes alone: only when model_type says da3)."""
    spec = detect_model_spec([(1, 3, 504, 672)], [(1, 1, 504, 672)] * 2,
                             output_names=("depth", "confidence"))
    assert spec.kind == "da3" and (spec.input_width, spec.input_height) == (672, 504)
    assert spec.mean == MODEL_SPECS["da3"].mean and not spec.metric_depth
    assert "'depth', 'confidence'" in spec.evidence
    spec = detect_model_spec([(1, 3, 504, 672)], [(1, 1, 504, 672)], "da3")
    assert spec.kind == "da3" and "set, not detected" in spec.evidence
    with pytest.raises(ModelSignatureError):
        detect_model_spec([(1, 3, 504, 670)], [(1, 1, 504, 670)])  # 670 is no multiple of 14
    with pytest.raises(ModelSignatureError):
        detect_model_spec([(1, 3, 504, 672)], [(1, 1, 252, 336)])  # output at another size
