# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""CONTRIBUTING.md's recipes stay true to the code: the README links it, every file it names
exists, every make target it names is in the Makefile, and every name it gives (a function, a
class, a table, a constant) is still in the code."""

import re

import pytest

from support.common import REPO

pytestmark = [pytest.mark.repository, pytest.mark.timeout(60)]
PAGE = (REPO / "CONTRIBUTING.md").read_text()
CODE = "\n".join(p.read_text() for folder in ("dense_perception", "test", "tools", "models")
                 for p in (REPO / folder).rglob("*.py"))
SPANS = re.findall(r"`([^`\n]+)`", PAGE)


def test_the_readme_links_it():
    assert "](CONTRIBUTING.md)" in (REPO / "README.md").read_text()


def test_every_file_it_names_exists():
    paths = [s for s in SPANS
             if re.fullmatch(r"[\w./-]+\.(py|md|yaml|json|rst|txt)|[\w.-]+/[\w./-]*", s)]
    assert len(paths) > 20
    missing = [p for p in paths if not (REPO / p).exists()
               and not (REPO / "dense_perception" / p).exists()]
    assert missing == [], f"CONTRIBUTING.md names files that do not exist: {missing}"


def _make_targets() -> set[str]:
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z0-9][a-z0-9-]*):", makefile, re.M))
    extra = re.search(r"^PY_EXTRA := (.+)$", makefile, re.M)  # test-py310 and friends
    return targets | {f"test-py{v}" for v in extra.group(1).split()}


def test_every_make_target_it_names_exists():
    named = [s.split()[1] for s in SPANS if s.startswith("make ")]
    assert {"test", "docs"} <= set(named)
    unknown = set(named) - _make_targets()
    assert not unknown, f"CONTRIBUTING.md names make targets the Makefile lacks: {unknown}"


def test_every_name_it_gives_is_in_the_code():
    """A code name (with an underscore, a capital or a dot) must still be somewhere in the
    package, the tests, the tools or the model script."""
    names = [s for s in SPANS if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", s)
             and ("_" in s or "." in s or any(c.isupper() for c in s))
             and not re.search(r"\.(py|md|yaml|json|rst)$", s)]
    assert len(names) > 20
    gone = [n for n in names if any(not re.search(rf"\b{re.escape(part)}\b", CODE)
                                     for part in n.split("."))]
    assert gone == [], f"CONTRIBUTING.md names what the code no longer has: {gone}"


def test_it_states_the_commit_style():
    assert "at most 72 characters" in PAGE and "says why" in PAGE
