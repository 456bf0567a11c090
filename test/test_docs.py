"""The README and docs/ document every parameter and topic the node really has (no drift), the
README stays one screen of orientation, and every link in them leads somewhere."""

import re

import pytest

from support.common import REPO
from dense_perception.core.products import OUTPUTS
from dense_perception.core.parameters import PARAMS
from tools.gen_docs import render

pytestmark = pytest.mark.timeout(60)
README = (REPO / "README.md").read_text()
DOCS = REPO / "docs"
SUBJECTS = ("install-on-a-robot", "raspberry-pi-5", "gpu", "npu", "cameras", "metric-depth",
            "offline-and-fleet", "export", "performance", "diagnostics-and-failure-behaviour",
            "parameters", "topics", "nav2")


def test_every_parameter_is_in_the_generated_parameters_doc():
    text = (DOCS / "parameters.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \|", text, re.M))
    names = {p.name for p in PARAMS}
    assert names <= documented, f"undocumented parameters: {sorted(names - documented)}"


def test_parameters_doc_is_what_make_docs_writes():
    """Fails when the settings table changed and `make docs` was not run."""
    assert (DOCS / "parameters.md").read_text() == render(), "docs/parameters.md is stale: make docs"


def test_every_topic_is_in_the_readme():
    topics = {topic for topic, _, _ in OUTPUTS.values()}
    topics |= {"image", "camera_info", "image/compressed", "/diagnostics"}
    assert len(topics) > 10
    for topic in topics:
        assert f"`{topic}`" in README, f"topic {topic} is not documented"


def test_quick_start_has_exactly_the_two_commands():
    block = README.split("## Quick start", 1)[1].split("```", 2)[1]
    assert [line for line in block.splitlines() if line.strip()] == ["make demo", "make test"]


def test_readme_is_one_screen_of_orientation_and_docs_hold_each_subject():
    assert len(README.splitlines()) <= 250
    robot = README.split("## Running on a robot", 1)[1].split("```bash", 1)[1].split("```")[0]
    assert len([line for line in robot.splitlines() if line.strip()]) <= 10
    for subject in SUBJECTS:
        assert (DOCS / f"{subject}.md").is_file(), subject
        assert f"docs/{subject}.md" in README, f"the README does not link docs/{subject}.md"


def _anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    heads = re.findall(r"^#{1,6} (.+)$", path.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_every_relative_link_in_the_readme_and_docs_resolves():
    broken = []
    for page in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists() or (anchor and dest.suffix == ".md"
                                     and anchor not in _anchors(dest)):
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, broken
