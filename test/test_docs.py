"""The README documents every parameter and topic the node really has (no drift)."""

import re

from conftest import REPO
from dense_perception.core.products import OUTPUTS
from dense_perception.core.parameters import PARAMS

README = (REPO / "README.md").read_text()


def test_every_parameter_is_in_the_readme_table():
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \|", README, re.M))
    names = {p.name for p in PARAMS}
    assert names <= documented, f"undocumented parameters: {sorted(names - documented)}"


def test_every_topic_is_in_the_readme():
    topics = {topic for topic, _, _ in OUTPUTS.values()}
    topics |= {"image", "camera_info", "image/compressed", "/diagnostics"}
    assert len(topics) > 10
    for topic in topics:
        assert f"`{topic}`" in README, f"topic {topic} is not documented"


def test_quick_start_has_exactly_the_two_commands():
    block = README.split("## Quick start", 1)[1].split("```", 2)[1]
    assert [line for line in block.splitlines() if line.strip()] == ["make demo", "make test"]
