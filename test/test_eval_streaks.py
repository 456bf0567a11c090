# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""docs/accuracy.md's section on what the temporal alignment does to the picture
(``tools/eval/streaks.py``): its measures against formulas written out here, its place in the
page, and one real stretch, where the aligned depth may not be rougher, flicker more or fit
the measured depth worse than the network's own frames."""

import numpy as np
import pytest

from tools.eval.stretches import FASTDEPTH, SFM, stretches
from tools.eval.sequence import best_scale_absrel
from tools.eval.streaks import HEADING, NEXT_HEADING, figures, published, roughness, splice

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(300)]


def test_roughness_is_the_fine_detail_of_log_depth():
    wall = np.full((48, 64), 2.0, np.float32)
    assert roughness(wall) == 0.0
    cracked = wall.copy()
    cracked[:, 30] *= np.float32(np.exp(0.1))  # a crack one pixel wide, 10 % off
    # The 5x5 median passes over a one-pixel line: the crack's 0.1, on one column of 64.
    assert roughness(cracked) == pytest.approx(0.1 / 64, rel=1e-3)
    blocky = wall.copy()
    blocky[:, 32:] *= np.float32(np.exp(0.1))  # a straight step: an edge the median keeps
    assert roughness(blocky) == 0.0


def test_best_scale_absrel_ignores_the_scale_and_the_missing():
    truth = np.full((4, 4), 2.0)
    truth[0, 0] = np.nan
    depth = np.full((4, 4), 5.0, np.float32)
    assert best_scale_absrel(depth, truth) == pytest.approx(0.0)
    depth[1, 1] = 5.5  # one pixel 10 % off of 15 seen (the median scale is the others')
    assert best_scale_absrel(depth, truth) == pytest.approx(0.1 / 15)


def test_the_section_replaces_its_own_or_goes_before_the_metric_networks():
    section = f"{HEADING}\n\nnew\n"
    page = f"# A\n\n{HEADING}\n\nold\n\n{NEXT_HEADING}: x\n\ny\n"
    assert splice(page, section) == f"# A\n\n{HEADING}\n\nnew\n\n{NEXT_HEADING}: x\n\ny\n"
    assert splice(f"# A\n\n{NEXT_HEADING}: x\n", section) == \
        f"# A\n\n{HEADING}\n\nnew\n\n{NEXT_HEADING}: x\n"
    assert splice("# A\n", section) == f"# A\n\n{HEADING}\n\nnew\n"


@pytest.mark.slow
@pytest.mark.skipif(not (SFM.is_dir() and FASTDEPTH.is_file()),
                    reason="../shared/real-scenes (7scenes-redkitchen-sfm, FastDepth) is absent")
def test_aligned_fastdepth_is_steadier_and_no_rougher_on_a_real_stretch():
    """FastDepth on 0-99 with good poses: the aligned frames flicker less than half as much,
    fit the measured depth at their best scale no worse, and have no more fine detail than
    the network's own frames (the forward warp's cracks and blocks made it 2.8x)."""
    from dataclasses import replace
    from dense_perception.core.pipeline import DensePipeline, load_pipeline
    from dense_perception.core.settings.table import Settings
    from tools.eval.sequence import read_sequence
    fast = load_pipeline(str(FASTDEPTH), Settings(model_type="depth", backend="cpu",
                                                  input_normalization="unit"),
                         log=lambda *_: None)
    base = DensePipeline(fast.runner, fast.spec, replace(fast.config, depth_scale_source="none"))
    folder = stretches()[0]
    seq = read_sequence(folder, folder / "trajectory.tum", folder / "camera.yaml")
    on, off = published(base, seq, True), published(base, seq, False)
    truths = {i: seq.truth(i) for i in sorted(set(on) & set(off))}
    assert len(truths) >= 50
    aligned, own = figures(on, seq, truths), figures(off, seq, truths)
    assert aligned["tae"] < own["tae"] / 2, (aligned, own)
    assert aligned["absrel"] <= own["absrel"], (aligned, own)
    assert aligned["roughness"] <= own["roughness"], (aligned, own)
