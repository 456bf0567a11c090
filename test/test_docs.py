# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The README and docs/ document every parameter and topic the node really has (no drift), the
README stays one screen of orientation, and every link in them leads somewhere."""

import re

import pytest

from support.common import REPO
from dense_perception.core.products import OUTPUTS
from dense_perception.core.settings.table import PARAMS
from tools.generate.gen_config import CONFIG_FILES, render_config
from tools.generate.gen_docs import (FOXGLOVE, LAYOUT_FOLDERS, first_sentence, render,
                                     render_foxglove, render_layout)

pytestmark = [pytest.mark.repository, pytest.mark.timeout(60)]
README = (REPO / "README.md").read_text()
DOCS = REPO / "docs"
SUBJECTS = ("install-on-a-robot", "raspberry-pi-5", "gpu", "npu", "cameras", "metric-depth",
            "offline-and-fleet", "export", "performance", "diagnostics-and-failure-behaviour",
            "parameters", "topics", "nav2", "accuracy", "watching-over-wifi", "several-cameras",
            "layout", "robot-bag-in-metres")


def test_every_parameter_is_in_the_generated_parameters_doc():
    text = (DOCS / "parameters.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \|", text, re.M))
    names = {p.name for p in PARAMS}
    assert names <= documented, f"undocumented parameters: {sorted(names - documented)}"


def test_parameters_doc_is_what_make_docs_writes():
    """Fails when the settings table changed and `make docs` was not run."""
    assert (DOCS / "parameters.md").read_text() == render(), "docs/parameters.md is stale: make docs"


def test_layout_doc_is_what_make_docs_writes():
    """docs/layout.md comes from the modules' docstrings: a new or renamed module shows up."""
    assert (DOCS / "layout.md").read_text() == render_layout(), "docs/layout.md is stale: make docs"


@pytest.mark.parametrize("config", CONFIG_FILES, ids=lambda c: c.name)
def test_parameter_files_are_what_make_docs_writes(config):
    """config/*.yaml's comments are the table's descriptions: a new or changed setting shows up."""
    assert (REPO / "config" / config.name).read_text() == render_config(config), \
        f"config/{config.name} is stale: make docs"


def test_foxglove_layout_is_what_make_docs_writes():
    """config/dense_perception.foxglove.json is core/foxglove_layout.py's layout for the node,
    the one the offline bags' layouts are written by."""
    assert FOXGLOVE.read_text() == render_foxglove(), f"{FOXGLOVE.name} is stale: make docs"


def test_every_module_says_what_it_holds():
    """Each module of the layout page has a docstring whose first sentence describes it."""
    silent = [str(p.relative_to(REPO)) for folder in LAYOUT_FOLDERS
              for p in sorted((REPO / folder).rglob("*.py")) if len(first_sentence(p)) < 12]
    assert not silent, f"modules without a docstring: {silent}"


def test_no_page_repeats_its_title_as_its_first_heading():
    repeated = []
    for page in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        heads = re.findall(r"^(#{1,6}) (.+)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.S),
                           re.M)
        if len(heads) >= 2 and heads[0][1].strip().lower() == heads[1][1].strip().lower():
            repeated.append(page.name)
    assert not repeated, repeated


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


def _command_lines(prefix):
    """Every command line starting with ``prefix`` in a code block of the README or docs/
    (backslash continuations joined, trailing comments dropped): (page, line)."""
    found = []
    for page in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        for block in re.findall(r"```[a-z]*\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"(^|\s)#.*$", "", line).strip()
                for start in (prefix, f".venv/bin/{prefix}"):
                    if line.startswith(start + " "):
                        found.append((page.name, line[len(start):].strip()))
    return found


def test_every_offline_command_in_the_docs_parses_with_the_real_command_line():
    """Each `dense-perception ...` line of the README and docs/ goes through the command's own
    parser (its flags come from the settings table: a renamed or removed flag fails here)."""
    import shlex
    from dense_perception.offline.cli import build_parser
    commands = _command_lines("dense-perception")
    assert len(commands) >= 10
    for page, line in commands:
        argv = shlex.split(re.split(r" (?:\|\||&&|\|) ", line)[0])  # the command, not the shell's
        if argv[0] in ("--help", "-h", "--version") or "--help" in argv:
            continue
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"{page}: dense-perception {line}: the parser refuses it")


def test_every_process_flag_is_named_in_the_offline_page():
    """Each flag of ``dense-perception process`` (the settings table's and the command's own)
    is named in docs/offline-and-fleet.md: a new flag cannot go undocumented there. A flag with
    a ``--no-`` form counts when either form is named."""
    import argparse
    from dense_perception.offline.cli import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    page = (REPO / "docs" / "offline-and-fleet.md").read_text()
    named = set(re.findall(r"--[a-z][a-z0-9-]*", page))
    flags = [[o for o in a.option_strings if o.startswith("--")]
             for a in sub.choices["process"]._actions if a.help != argparse.SUPPRESS]
    flags = [f for f in flags if f and f != ["--help"]]
    assert len(flags) >= 60
    missing = [f[0] for f in flags if not named.intersection(f)]
    assert not missing, f"docs/offline-and-fleet.md names none of: {', '.join(missing)}"


def test_every_make_target_and_launch_argument_in_the_docs_exists():
    targets = set(re.findall(r"^([a-z0-9][a-z0-9-]*):", (REPO / "Makefile").read_text(), re.M))
    for page, line in _command_lines("make"):
        target = line.split()[0]
        assert target in targets, f"{page}: make {target}: no such target"
    declared = set(re.findall(r'DeclareLaunchArgument\(\s*"([a-z_]+)"',
                              (REPO / "launch" / "depth.launch.py").read_text()))
    launches = _command_lines("ros2 launch dense_perception depth.launch.py")
    assert launches
    for page, line in launches:
        for name in re.findall(r"(?:^|\s)([a-z_]+):=", line):
            assert name in declared, f"{page}: launch argument {name} is not declared"


def test_models_readme_names_every_backend_the_node_has():
    """models/README.md says which backends the node has: all of them (npu included)."""
    from dense_perception.core.backends.runner_base import BACKENDS
    text = (REPO / "models" / "README.md").read_text()
    said = re.search(r"The node's backends are ([^.]*)", text)
    assert said, "models/README.md does not say which backends the node has"
    assert set(re.findall(r"`(\w+)`", said.group(1))) == set(BACKENDS)
    assert "only `gpu`/`cpu`/`auto`" not in text
