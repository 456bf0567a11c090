# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A rerun recording read back with the rerun SDK (the ``rerun`` extra), as the tests of
``process --rerun`` look at it: chunks by entity, a component's values in frame order, an
image cell as a numpy array."""


def read_recording(path):
    """{entity path: [(static, record batch)]} of a recording, as the SDK reads it back."""
    from rerun.chunk import RrdReader
    found = {}
    for chunk in RrdReader(path).stream():
        found.setdefault(chunk.entity_path, []).append((chunk.is_static,
                                                        chunk.to_record_batch()))
    return found


def column(entities, entity, name):
    """(frames, values) of component column ``name`` of ``entity``'s per-frame chunks, in frame
    order."""
    rows = []
    for static, batch in entities[entity]:
        if not static and name in batch.schema.names:
            rows += zip(batch.column("frame").to_pylist(), batch.column(name))
    rows.sort(key=lambda r: r[0])
    return [f for f, _ in rows], [v for _, v in rows]


def image(value, fmt, dtype):
    """An image buffer cell as a numpy array (its format cell gives the size)."""
    size = fmt.as_py()[0]
    data = value.values[0].values.to_numpy(zero_copy_only=False).view(dtype)
    return data.reshape(size["height"], size["width"])
