# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` over many inputs in this process (no Ray): one output per input,
identical message for message to processing each input alone; a damaged bag fails alone; the
fleet summary lists every input; a second run skips what is finished, and only an output of
that very input (path, size, modification time); Ctrl-C leaves every finished output complete.
The same over Ray: test_fleet_ray.py (make test-fleet)."""

import csv
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support.common import REPO, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from support.bag_maker import (fleet_output_name, raw_messages, wait_for_flushed_messages,  # noqa: E402
                       write_bag, write_fleet_bags)

from dense_perception.offline import cli  # noqa: E402

OPTIONS = ["--model", TIPS_TEST_MODEL, "--backend", "cpu", "--threads", "1",
           "--outputs", "depth,seg"]


def parsed(*argv):
    """(settings, options) of ``process ARGV``, as cli.py makes them."""
    from dense_perception.offline.options.process_options import ProcessOptions
    from dense_perception.offline.options.settings_args import settings_from_args
    args = cli.build_parser().parse_args(["process", *argv])
    return settings_from_args(args), ProcessOptions.from_args(args)


def process(*argv, **kwargs):
    return cli.main(["process"] + [str(a) for a in argv] + OPTIONS, **kwargs)


def rows(out):
    summary = json.loads((out / "fleet_summary.json").read_text())
    with open(out / "fleet_summary.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [r["input"] for r in table] == [r["input"] for r in summary["inputs"]]
    return {r["input"].rsplit("/", 1)[-1]: r for r in summary["inputs"]}, table


@pytest.mark.timeout(120)
def test_many_bags_in_process_match_single_runs_and_resume(tmp_path, capsys):
    bags = write_fleet_bags(tmp_path / "bags")
    out = tmp_path / "bags" / "out"  # inside the glob: not an input
    code = process(tmp_path / "bags" / "*", "--out", out)
    assert code == 2  # one input failed
    stdout = capsys.readouterr().out
    by_name, table = rows(out)
    assert set(by_name) == {"a", "b", "c.mcap", "d.mcap"} and len(table) == 4
    assert by_name["d.mcap"]["status"] == "failed"
    error = by_name["d.mcap"]["error"]
    assert "cannot read bag" in error and "\n" not in error
    assert "d.mcap: failed: cannot read bag" in stdout
    for name, frames in bags["good"].items():
        row = by_name[name]
        assert row["status"] == "done" and row["frames"] == frames and row["retries"] == 0
        alone = tmp_path / f"alone_{name}"
        assert process(tmp_path / "bags" / name, "--out", alone) == 0
        assert row["output"] == str(out / fleet_output_name(tmp_path / "bags" / name))
        assert raw_messages(row["output"]) == raw_messages(alone)
    outputs = {n: fleet_output_name(tmp_path / "bags" / n) for n in ("a", "b", "c.mcap")}
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*outputs.values(), "fleet_summary.csv", "fleet_summary.json"])
    capsys.readouterr()

    # The same inputs from a list file: the finished ones are skipped, the damaged one retried.
    listing = tmp_path / "bags" / "list.txt"
    listing.write_text("# the fleet\na\nb  # sqlite3\nc.mcap\nd.mcap\n")
    before = {n: (out / n / "summary.json").stat().st_mtime_ns for n in outputs.values()}
    assert process("--inputs-from", listing, "--out", out) == 2
    by_name, _ = rows(out)
    assert [by_name[n]["status"] for n in ("a", "b", "c.mcap", "d.mcap")] == \
        ["skipped", "skipped", "skipped", "failed"]
    assert by_name["a"]["frames"] == bags["good"]["a"]
    assert {n: (out / n / "summary.json").stat().st_mtime_ns for n in before} == before
    # Other options are another job: the outputs are redone (depth only now).
    assert cli.main([str(a) for a in ["process", "@" + str(listing), "--out", out, "--model",
                                      TIPS_TEST_MODEL, "--backend", "cpu", "--outputs",
                                      "depth"]]) == 2
    by_name, _ = rows(out)
    assert by_name["a"]["status"] == "done"
    topics = {t for t, *_ in raw_messages(out / outputs["a"])}
    assert "/cam/depth/image" in topics and "/cam/segmentation/labels" not in topics


def test_fleet_option_errors(tmp_path, capsys):
    write_bag(tmp_path / "a", "mcap", frames=1)
    write_bag(tmp_path / "b", "mcap", frames=1)
    for argv, needle in [([tmp_path / "a", tmp_path / "b"], "many inputs need --out DIR"),
                         ([tmp_path / "a", tmp_path / "b", "--out", tmp_path / "o", "--workers",
                           "2"], "--workers and --threads-per-worker need --ray"),
                         ([tmp_path / "x*", "--out", tmp_path / "o"], "matches no file"),
                         (["@" + str(tmp_path / "none.txt"), "--out", tmp_path / "o"],
                          "cannot read the input list")]:
        assert process(*argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err


@pytest.mark.timeout(120)
def test_ctrl_c_stops_the_run_and_keeps_finished_outputs(tmp_path):
    write_bag(tmp_path / "bags" / "a", "mcap", frames=2)
    write_bag(tmp_path / "bags" / "b", "sqlite3", frames=2)
    write_bag(tmp_path / "bags" / "c", "mcap", frames=400, extra=False)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dense_perception", "process", str(tmp_path / "bags" / "a"),
         str(tmp_path / "bags" / "b"), str(tmp_path / "bags" / "c"), "--out", str(out),
         *OPTIONS, "--bag-compression", "none"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # a and b are renamed into place before c starts
    c = fleet_output_name(tmp_path / "bags" / "c")
    wait_for_flushed_messages(out, proc, pattern=f".{c}.partial-*-0/*.mcap")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "\r" not in stderr and "it/s" not in stderr and "frame/s" not in stderr  # no bar
    assert "[1/3] a: 2 frames" in stdout and "[2/3] b: 2 frames" in stdout
    by_name, _ = rows(out)
    assert by_name["a"]["status"] == "done" and by_name["b"]["status"] == "done"
    assert by_name["c"]["status"] == "interrupted"
    for name in ("a", "b"):
        assert json.loads(Path(by_name[name]["output"], "summary.json").read_text())[
            "frames"] == 2
    assert not (out / c).exists()  # nothing that looks complete
    partial, = out.glob(f".{c}.partial-*-0")
    summary = json.loads((partial / "summary.json").read_text())
    assert summary["interrupted"] is True and 0 < summary["frames"] < 400


@pytest.mark.timeout(60)
def test_ctrl_c_between_an_output_and_its_report_counts_it_done(tmp_path, monkeypatch):
    """Ctrl-C after a worker renamed its finished output into place but before its row came
    back (on Ray, the driver may be told later): the summary says done, from the output."""
    from dense_perception.offline.fleet import run as fleet
    write_bag(tmp_path / "bags" / "a", "mcap", frames=2)
    write_bag(tmp_path / "bags" / "b", "sqlite3", frames=2)
    real_run_one = fleet.run_one

    def finish_then_ctrl_c(*args, **kwargs):
        real_run_one(*args, **kwargs)
        raise KeyboardInterrupt  # the row of "a" never reaches the caller

    monkeypatch.setattr(fleet, "run_one", finish_then_ctrl_c)
    out = tmp_path / "out"
    assert process(tmp_path / "bags" / "a", tmp_path / "bags" / "b", "--out", out) == 130
    by_name, table = rows(out)
    assert by_name["a"]["status"] == "done" and by_name["a"]["frames"] == 2
    assert by_name["b"]["status"] == "interrupted"
    assert not (out / fleet_output_name(tmp_path / "bags" / "b")).exists()
    assert [r["status"] for r in table] == ["done", "interrupted"]


@pytest.mark.timeout(120)
def test_one_progress_bar_over_all_frames_on_a_terminal(tmp_path):
    import fcntl
    import os
    import pty
    import struct
    import termios
    write_bag(tmp_path / "a", "mcap", frames=3)
    write_bag(tmp_path / "b", "sqlite3", frames=2)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # 120 columns
    proc = subprocess.Popen(
        [sys.executable, "-m", "dense_perception", "process", str(tmp_path / "a"),
         str(tmp_path / "b"), "--out", str(tmp_path / "out"), *OPTIONS], cwd=REPO,
        stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    text = b"".join(chunks).decode(errors="replace")
    assert "5/5" in text and "frame/s" in text, text  # one bar: 3 + 2 frames of both bags
    assert "/3 " not in text and "/2 " not in text  # no bar per bag
    assert "[1/2] a: 3 frames" in text and "[2/2] b: 2 frames" in text


def depth_frames(output):
    """Depth images in an output bag: one per input frame."""
    return sum(topic == "/cam/depth/image" for topic, *_ in raw_messages(output))


@pytest.mark.timeout(120)
def test_an_input_is_never_skipped_because_of_another_inputs_output(tmp_path):
    """Run 1 on A/rec and B/rec, then run 2 on 0/rec A/rec B/rec: 0/rec gets its own output
    (not skipped for A's output of the same name) and A's and B's stay apart. Then bags recorded again at
    the same paths are processed again: B with more frames, A the same bytes at a later time."""
    frames = {"0": 1, "A": 2, "B": 3}  # a frame count per bag tells the outputs apart
    recs = {folder: write_bag(tmp_path / folder / "rec", "mcap", frames=n)
            for folder, n in frames.items()}
    out = tmp_path / "out"

    def run(*folders):
        assert process(*(recs[f] for f in folders), "--out", out) == 0
        table = json.loads((out / "fleet_summary.json").read_text())["inputs"]
        assert [row["input"] for row in table] == [str(recs[f]) for f in folders]
        for folder, row in zip(folders, table):
            assert row["frames"] == frames[folder], (folder, row)
            summary = json.loads(Path(row["output"], "summary.json").read_text())
            assert summary["input"] == str(recs[folder])
            assert depth_frames(row["output"]) == frames[folder]
            assert row["output"] == str(out / fleet_output_name(recs[folder]))
        return [row["status"] for row in table]

    assert run("A", "B") == ["done", "done"]
    # What killed runs of an older version and of this one leave: removed by the next run.
    leftovers = [".rec.partial", f".{fleet_output_name(recs['A'])}.partial-0123456789ab-1",
                 f".{fleet_output_name(recs['B'])}.old-0123456789ab-0"]
    for name in leftovers:
        (out / name).mkdir()
        (out / name / "metadata.yaml").write_text("half\n")
    (out / "notes").mkdir()  # not ours: kept
    assert run("0", "A", "B") == ["done", "skipped", "skipped"]
    assert not any((out / name).exists() for name in leftovers) and (out / "notes").is_dir()

    shutil.rmtree(recs["B"])
    write_bag(recs["B"], "mcap", frames=4)
    frames["B"] = 4
    size = sum(p.stat().st_size for p in recs["A"].iterdir())
    shutil.rmtree(recs["A"])
    write_bag(recs["A"], "mcap", frames=2)
    assert sum(p.stat().st_size for p in recs["A"].iterdir()) == size  # only the time differs
    assert run("0", "A", "B") == ["skipped", "done", "done"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [fleet_output_name(r) for r in recs.values()]
        + ["fleet_summary.csv", "fleet_summary.json", "notes"])


@pytest.mark.timeout(60)
def test_two_attempts_never_share_a_folder_and_the_first_rename_wins(tmp_path):
    """A retried input (Ray: its worker seemed dead) may finish twice: each attempt writes its
    own folder, the first to rename it into place wins (replacing an older run's output), the
    second leaves that output as it is and removes its own copy."""
    from dense_perception.offline.fleet import jobs, plan
    from dense_perception.offline.run.run_plan import make_plan
    from dense_perception.offline.run.session import ModelSession
    bag, out = write_bag(tmp_path / "a", "mcap", frames=2), tmp_path / "out"
    settings, options = parsed(str(bag), "--out", str(out), *map(str, OPTIONS))
    session = ModelSession(make_plan(settings, options))
    key = plan.job_key(settings, options, session.plan.model_path, list(session.plan.groups))
    final = out / fleet_output_name(bag)

    older, = plan.make_jobs([bag], out, key, "000000000001")
    assert jobs.run_one(session, older)["status"] == "done"
    older_inode = final.stat().st_ino
    job, = plan.make_jobs([bag], out, key, "000000000002")
    first, second = jobs.with_attempt(job, 0), jobs.with_attempt(job, 1)
    assert len({older["partial"], first["partial"], second["partial"]}) == 3
    rows = [jobs.run_one(session, first)]
    inode = final.stat().st_ino
    assert inode != older_inode  # the older run's output was replaced
    rows.append(jobs.run_one(session, second))
    assert [r["status"] for r in rows] == ["done", "done"]
    assert final.stat().st_ino == inode  # the first attempt's output stayed
    assert sorted(p.name for p in out.iterdir()) == [final.name]  # no partial, nothing aside
    assert depth_frames(final) == 2


@pytest.mark.timeout(60)
def test_reuse_key_has_every_setting_that_changes_outputs(tmp_path):
    """Every offline setting of the table marked ``affects_output`` changes the reuse key when
    set to another value (so a new setting cannot be forgotten), the precisions among them
    (a re-run in fp32 to get away from an fp16 overflow is redone), under its setting's name;
    one marked otherwise (e.g. --threads) does not. So does each of the command's own options
    that changes what an output holds; the rest (e.g. --force) do not."""
    from support.setting_values import flag_words, other_value

    from dense_perception.core.settings.table import PARAMS
    from dense_perception.offline.fleet import plan
    model = tmp_path / "m.tflite"
    model.write_bytes(b"not a model: the key hashes the bytes")

    def key(*words, model=model):
        settings, options = parsed("in", "--model", str(model), *words)
        return plan.job_key(settings, options, str(model), ["depth"])

    base = key()
    marked = [s for s in PARAMS if s.offline and s.name != "model_path"]
    assert {"gpu_precision", "cpu_precision", "backend"} <= \
        {s.name for s in marked if s.affects_output}
    for spec in marked:
        value = other_value(spec)
        changed = key(*flag_words(spec, value))
        if spec.affects_output:
            assert changed["options"][spec.name] != base["options"][spec.name], \
                f"{spec.offline} is not in the reuse key"
        else:
            assert changed == base, f"{spec.offline} redoes outputs it cannot change"
    command = {"--max-frames": ("3", "max_frames"), "--topic": ("/cam/image", "topics"),
               "--camera-info-topic": ("/cam/info", "camera_info_topics"),
               "--out-namespace": ("/ns", "out_namespace"),
               "--bag-format": ("sqlite3", "bag_format"), "--copy": ("none", "copy"),
               "--compressed": ("add", "compressed"),
               "--reference-depth-topic": ("/ref", "reference_depth_topic")}
    for flag, (value, name) in command.items():
        assert key(flag, value)["options"][name] != base["options"][name], flag
    assert key("--force", "--verbose") == base
    # The model file is keyed by its bytes: the same bytes elsewhere are the same job.
    copy = tmp_path / "copy.tflite"
    copy.write_bytes(model.read_bytes())
    assert key(model=copy) == base
    # So is a calibration file.
    calibration = tmp_path / "camera.yaml"
    calibration.write_text("image_width: 4\n")
    assert key("--camera-info-yaml", str(calibration))["camera_info_sha256"]


@pytest.mark.timeout(120)
def test_an_output_folder_inside_an_input_is_not_part_of_it(tmp_path):
    """``process nest/p1 nest/p2 --out nest/p1/dense``: what the first run writes inside p1 is
    not p1, so the second run skips both inputs as complete."""
    p1 = write_bag(tmp_path / "nest" / "p1", "mcap", frames=1)
    p2 = write_bag(tmp_path / "nest" / "p2", "mcap", frames=1)
    out = p1 / "dense"
    statuses = []
    for _ in range(2):
        assert process(p1, p2, "--out", out) == 0
        by_name, _ = rows(out)
        statuses.append([by_name[n]["status"] for n in ("p1", "p2")])
    assert statuses == [["done", "done"], ["skipped", "skipped"]]
