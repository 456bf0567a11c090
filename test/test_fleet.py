"""``dense-perception process`` over many inputs in this process (no Ray): one output per input,
identical message for message to processing each input alone; a damaged bag fails alone; the
fleet summary lists every input; a second run skips what is finished; Ctrl-C leaves every
finished output complete. The same over Ray: test_fleet_ray.py (make test-fleet)."""

import csv
import json
import signal
import subprocess
import sys

import pytest

from conftest import REPO, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from bag_maker import (raw_messages, wait_for_flushed_messages, write_fleet_bags,  # noqa: E402
                       write_bag)

from dense_perception.offline import cli  # noqa: E402

OPTIONS = ["--model", TIPS_TEST_MODEL, "--backend", "cpu", "--threads", "1",
           "--outputs", "depth,seg"]


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
        assert raw_messages(out / row["output"].rsplit("/", 1)[-1]) == raw_messages(alone)
    assert sorted(p.name for p in out.iterdir()) == ["a", "b", "c", "fleet_summary.csv",
                                                     "fleet_summary.json"]
    capsys.readouterr()

    # The same inputs from a list file: the finished ones are skipped, the damaged one retried.
    listing = tmp_path / "bags" / "list.txt"
    listing.write_text("# the fleet\na\nb  # sqlite3\nc.mcap\nd.mcap\n")
    before = {n: (out / n / "summary.json").stat().st_mtime_ns for n in ("a", "b", "c")}
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
    topics = {t for t, *_ in raw_messages(out / "a")}
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
         *OPTIONS], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # a and b are renamed into place before c starts
    wait_for_flushed_messages(out / ".c.partial", proc)
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
        assert json.loads((out / name / "summary.json").read_text())["frames"] == 2
    assert not (out / "c").exists()  # nothing that looks complete
    partial = json.loads((out / ".c.partial" / "summary.json").read_text())
    assert partial["interrupted"] is True and 0 < partial["frames"] < 400


@pytest.mark.timeout(60)
def test_ctrl_c_between_an_output_and_its_report_counts_it_done(tmp_path, monkeypatch):
    """Ctrl-C after a worker renamed its finished output into place but before its row came
    back (on Ray, the driver may be told later): the summary says done, from the output."""
    from dense_perception.offline import fleet
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
    assert by_name["b"]["status"] == "interrupted" and not (out / "b").exists()
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
