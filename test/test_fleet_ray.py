# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process --ray`` on a real local Ray cluster (2 CPUs): four small bags (MCAP
and sqlite3), one damaged, give outputs identical message for message to processing each bag
alone; the damaged one is reported and the others complete; a second run skips the finished
ones; a worker killed mid-bag (os.kill on the actor's process) leaves nothing that looks complete
and its bag is retried once, in a folder of its own. Run by ``make test-fleet`` in .venv-fleet
(Ray installed); skipped where Ray is not installed."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.common import REPO, TIPS_TEST_MODEL

ray = pytest.importorskip("ray")
pytest.importorskip("rosbags")

from support.bag_maker import fleet_output_name, raw_messages, write_bag, write_fleet_bags  # noqa: E402

from dense_perception.offline import cli  # noqa: E402

OPTIONS = ["--model", TIPS_TEST_MODEL, "--backend", "cpu", "--outputs", "depth,seg"]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster with 2 CPUs; the command uses it as it is (ray.is_initialized())."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()


def process(*argv, **kwargs):
    return cli.main(["process"] + [str(a) for a in argv] + OPTIONS, **kwargs)


def by_name(out):
    summary = json.loads((out / "fleet_summary.json").read_text())
    return summary, {r["input"].rsplit("/", 1)[-1]: r for r in summary["inputs"]}


@pytest.mark.timeout(240)
def test_ray_fleet_matches_single_runs_reports_the_damaged_bag_and_resumes(tmp_path, cluster):
    bags = write_fleet_bags(tmp_path / "bags")
    out = tmp_path / "out"
    assert process(tmp_path / "bags" / "*", "--out", out, "--ray", "--workers", "2",
                   "--threads-per-worker", "1") == 2
    summary, rows = by_name(out)
    assert summary["workers"] == 2 and summary["threads_per_worker"] == 1
    assert rows["d.mcap"]["status"] == "failed" and "cannot read bag" in rows["d.mcap"]["error"]
    workers = set()
    for name, frames in bags["good"].items():
        row = rows[name]
        assert row["status"] == "done" and row["frames"] == frames, row
        workers.add(row["worker"])
        alone = tmp_path / f"alone_{name}"  # in this process, without Ray
        assert cli.main(["process", str(tmp_path / "bags" / name), "--out", str(alone),
                         "--threads", "1"] + OPTIONS) == 0
        assert raw_messages(row["output"]) == raw_messages(alone)
    assert str(os.getpid()) not in " ".join(workers)  # the bags ran in the actors' processes

    assert process(tmp_path / "bags" / "*", "--out", out, "--ray") == 2
    _, rows = by_name(out)
    assert [rows[n]["status"] for n in ("a", "b", "c.mcap", "d.mcap")] == \
        ["skipped", "skipped", "skipped", "failed"]


@pytest.mark.timeout(240)
def test_killed_worker_leaves_nothing_complete_and_the_bag_is_retried(tmp_path, cluster):
    write_bag(tmp_path / "long", "mcap", frames=120, extra=False)
    write_bag(tmp_path / "short", "sqlite3", frames=2)
    out = tmp_path / "out"
    long = out / fleet_output_name(tmp_path / "long")
    killed, partials = [], {}  # partials: attempt -> its temporary folder

    def watch(state):
        if state["input"].endswith("long"):
            partials[state["attempt"]] = state["partial"]
        if state["input"].endswith("long") and state["attempt"] == 0 and not killed \
                and state["actor_frames"] >= 3:
            os.kill(state["pid"], signal.SIGKILL)
            killed.append(state["pid"])
            assert not long.exists()  # only the hidden .partial, no summary.json
            assert not (Path(state["partial"]) / "summary.json").exists()

    assert process(tmp_path / "long", tmp_path / "short", "--out", out, "--ray", "--workers",
                   "2", fleet_watch=watch) == 0
    assert killed
    summary, rows = by_name(out)
    assert rows["long"]["status"] == "done" and rows["long"]["retries"] == 1
    assert rows["long"]["frames"] == 120 and rows["short"]["retries"] == 0
    assert str(killed[0]) not in rows["long"]["worker"]
    # The retry never wrote into the killed attempt's folder (that attempt might have been
    # alive, on a node cut off from the cluster): its own was renamed into place.
    assert set(partials) == {0, 1} and partials[0] != partials[1]
    assert Path(partials[0]).is_dir() and not Path(partials[1]).exists()
    assert not (Path(partials[0]) / "summary.json").exists()
    depth = [m for m in raw_messages(long) if m[0] == "/cam/depth/image"]
    assert len(depth) == 120
    # The next run removes what the killed attempt left (and redoes nothing).
    assert process(tmp_path / "long", tmp_path / "short", "--out", out, "--ray") == 0
    assert [r["status"] for r in by_name(out)[0]["inputs"]] == ["skipped", "skipped"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [long.name, fleet_output_name(tmp_path / "short"), "fleet_summary.csv",
         "fleet_summary.json"])


def test_workers_times_threads_must_fit_the_cluster(tmp_path, cluster, capsys):
    write_bag(tmp_path / "a", "mcap", frames=1)
    assert process(tmp_path / "a", "--out", tmp_path / "o", "--ray", "--workers", "2",
                   "--threads-per-worker", "2") == 2
    err = capsys.readouterr().err
    assert "--workers 2 x --threads-per-worker 2 = 4 CPUs, but the Ray cluster has 2" in err
    # '--ray PATH': PATH is an input, not a cluster address
    assert process("--ray", tmp_path / "a", "--out", tmp_path / "o",
                   "--threads-per-worker", "3") == 2
    assert "more than the 2 CPUs of the largest Ray node" in capsys.readouterr().err


@pytest.mark.timeout(240)
def test_ctrl_c_stops_the_ray_run_and_keeps_finished_outputs(tmp_path):
    """The command starts its own local Ray instance here (no cluster fixture) and stops it."""
    write_bag(tmp_path / "long", "mcap", frames=600, extra=False)
    write_bag(tmp_path / "short", "sqlite3", frames=2)
    out = tmp_path / "out"
    long, short = (fleet_output_name(tmp_path / n) for n in ("long", "short"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dense_perception", "process", str(tmp_path / "long"),
         str(tmp_path / "short"), "--out", str(out), "--ray", "--workers", "2", *OPTIONS],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ((out / short).exists() and any(out.glob(f".{long}.partial-*"))):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    _, rows = by_name(out)
    assert rows["short"]["status"] == "done" and rows["long"]["status"] == "interrupted"
    assert json.loads((out / short / "summary.json").read_text())["frames"] == 2
    assert not (out / long).exists()
