# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The files every ROS package has: the licence package.xml names, in full, and shipped with the
package; a CHANGELOG.rst in the format catkin_generate_changelog writes and
catkin_prepare_release reads, whose newest release is package.xml's version."""

import re
import xml.etree.ElementTree as ET

import pytest

from support.common import REPO

pytestmark = [pytest.mark.repository, pytest.mark.timeout(60)]
PACKAGE = ET.parse(REPO / "package.xml").getroot()


def test_the_licence_file_is_the_one_package_xml_names():
    assert PACKAGE.findtext("license") == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a pointer to it


def test_the_licence_ships_with_the_package():
    assert re.search(r"^include .*\bLICENSE\b", (REPO / "MANIFEST.in").read_text(), re.M)
    assert re.search(r'\(f"share/\{PACKAGE\}", \[[^]]*"LICENSE"', (REPO / "setup.py").read_text())


def test_the_changelog_is_in_the_ros_format_and_ends_at_this_version():
    lines = (REPO / "CHANGELOG.rst").read_text().splitlines()
    title = "Changelog for package " + PACKAGE.findtext("name")
    assert lines[:3] == ["^" * len(title), title, "^" * len(title)]
    headings = [(i, line) for i, line in enumerate(lines)
                if i + 1 < len(lines) and re.fullmatch(r"-+", lines[i + 1])]
    for i, heading in headings:
        assert len(lines[i + 1]) == len(heading), f"underline of {heading!r}"
        assert heading == "Forthcoming" or re.fullmatch(r"\d+\.\d+\.\d+ \(\d{4}-\d\d-\d\d\)",
                                                        heading), heading
        assert lines[i + 2].startswith("* "), f"bullets right under {heading}"
    releases = [h.split()[0] for _, h in headings if h != "Forthcoming"]
    assert releases and releases[0] == PACKAGE.findtext("version")
    assert all(h != "Forthcoming" for _, h in headings[1:]), "Forthcoming comes first"
