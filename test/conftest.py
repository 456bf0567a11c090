"""Shared fixtures: the bundled test models and their reference functions."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO / "models"
DA3_TEST_MODEL = str(MODELS_DIR / "test_da3_small.tflite")
TIPS_TEST_MODEL = str(MODELS_DIR / "test_tipsv2_b14_dpt.tflite")


def load_test_model_maker():
    """Import models/make_test_models.py (it lives beside the models, not in the package)."""
    spec = importlib.util.spec_from_file_location("make_test_models",
                                                  MODELS_DIR / "make_test_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def maker():
    return load_test_model_maker()
