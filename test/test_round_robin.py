# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""NewestSlots with several cameras: one newest-wins slot per camera, taken in turn."""

from dense_perception.core.scheduling.newest_slots import NewestSlots


def test_newest_wins_per_key_and_keys_take_turns():
    slots = NewestSlots(lambda item: item[0])
    for item in [("a", 1), ("a", 2), ("b", 1), ("a", 3)]:  # a's 1 and 2 are replaced
        slots.put(item)
    assert slots.dropped == 2 and slots.dropped_by_key == {"a": 2}
    assert [slots.take(0.0), slots.take(0.0), slots.take(0.0)] == [("a", 3), ("b", 1), None]


def test_a_fast_key_cannot_starve_a_slow_one():
    """Per model slot, 'fast' sends 4 frames and 'slow' 1: both always wait, so the takes
    alternate (one shared newest-wins slot would hold slow's frame 1 time in 5)."""
    slots = NewestSlots(lambda item: item[0])
    taken = []
    for round_ in range(10):
        for i in range(4):
            slots.put(("fast", round_ * 4 + i))
        slots.put(("slow", round_))
        taken.append(slots.take(0.0))
    assert [key for key, _ in taken] == ["fast", "slow"] * 5
    assert taken[1] == ("slow", 1) and taken[0] == ("fast", 3)  # each the newest of its key
