# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Message layouts from numpy: the array must be what its encoding says (REP 118's 32FC1 is
float32 metres; a float64 array written as 32FC1 would be read as twice as many wrong depths)."""

import numpy as np
import pytest

from dense_perception.core.conversions import image_fields

pytestmark = [pytest.mark.numerics, pytest.mark.timeout(30)]


@pytest.mark.parametrize("array, encoding", [
    (np.ones((4, 6), np.float64), "32FC1"),
    (np.ones((4, 6, 3), np.float32), "32FC1"),
    (np.ones((4, 6), np.float32), "16UC1"),
    (np.ones((4, 6), np.uint8), "bgr8"),
])
def test_an_array_that_is_not_its_encoding_is_refused(array, encoding):
    with pytest.raises(ValueError, match=encoding):
        image_fields(array, encoding)


@pytest.mark.parametrize("dtype, channels, encoding", [
    (np.float32, 1, "32FC1"), (np.uint16, 1, "16UC1"), (np.uint8, 3, "bgr8"),
    (np.float32, 3, "32FC3")])
def test_fields_hold_the_array_bytes_row_by_row(dtype, channels, encoding):
    shape = (5, 7) if channels == 1 else (5, 7, channels)
    array = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    fields = image_fields(array, encoding)
    row_bytes = 7 * channels * np.dtype(dtype).itemsize
    assert (fields["height"], fields["width"], fields["step"]) == (5, 7, row_bytes)
    assert bytes(fields["data"]) == array.tobytes()
