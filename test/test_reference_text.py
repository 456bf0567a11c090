# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Code, tests and docs read as reference: no dates, no "last run", no issue numbers and no
"the issue's ..." (a tracker the reader may not have). History goes in CHANGELOG.rst; an
upstream bug is linked by its URL."""

import re

import pytest

from support.common import REPO

pytestmark = [pytest.mark.repository, pytest.mark.timeout(60)]
FOLDERS = ("dense_perception", "tools", "test", "docs", "models", "config", "launch")
SUFFIXES = {".py", ".md", ".yaml", ".json", ".sh", ".rviz", ".txt", ".csv"}
DIARY = re.compile(r"\bissue ?#?\d|(?<![\w/&])#\d{2}\b|\blast run\b|\b20\d\d-\d\d-\d\d\b"
                   r"|\bthe issue'?s?\b", re.I)


def _files():
    yield REPO / "README.md"
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file():
                yield path


def test_the_pattern_finds_what_it_is_for():
    for text in ("(issue 31)", "issue #25 item 5", "see #33.", "last run 4.53x", "2026-12-04",
                 "the issue's set-up"):
        assert DIARY.search(text), text
    for text in ("https://github.com/ros2/rclpy/issues/1284", "colour #ff0000", "1e-9",
                 "[anchor](page.md#10-bit)"):
        assert not DIARY.search(text), text


def test_no_dates_last_runs_or_issue_numbers():
    found = []
    for path in _files():
        if path.resolve() == (REPO / "test" / "test_reference_text.py").resolve():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if DIARY.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert found == [], "history belongs in CHANGELOG.rst:\n" + "\n".join(found)
