# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``process --ray``: a fleet's inputs on Ray actors, each loading the model once.

Ray is optional (``pip install '.[fleet]'``) and imported only when ``--ray`` is given.

- ``--ray`` alone starts a local Ray instance (``ray.init()``, all cores); ``--ray auto`` or
  ``--ray ray://head:10001`` joins an existing cluster (every node must reach the inputs and
  ``--out`` by the same paths, e.g. a shared file system, and have this package's
  requirements installed; this package's own code is shipped with the job). A Ray instance the
  caller already started (``ray.is_initialized()``) is used as it is.
- ``--workers N`` actors with ``--threads-per-worker T`` CPUs each (``num_cpus=T`` and T LiteRT
  threads); N x T must fit the cluster's CPUs and T one node's. Default N: CPUs // T. With
  T = 1 a worker runs each frame's stages one after another (the in-process path overlaps
  inference with finishing and writing on a second thread, which would take a second core);
  with T >= 2 it overlaps them.
- Each actor gets the run's plan (``run.run_plan.RunPlan``, a frozen dataclass, pickled: the
  model's kind, each part's configuration, the trajectory and the calibration read once on
  the driver), builds a ``ModelSession`` (model loaded once) and runs ``jobs.run_one`` for
  whole inputs, the in-process path's function, so outputs are the same message for message.
- Inputs go out longest first, one per free actor. An actor that dies mid-input (killed, out
  of memory, node lost) is restarted by Ray (``max_restarts``) and the input is retried once,
  on whichever actor is free; the row records ``retries``. The retry writes its own
  ``.partial-<run>-1`` folder (the dead attempt may still be running on a node cut off from
  the cluster): whichever attempt renames its output into place first wins. The dead
  attempt's half-written folder never looks complete; the next run removes it.
- Ctrl-C kills the actors; finished outputs stay as they are (they were renamed into place).
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from ..console import CliError, warn
from .jobs import job_row, with_attempt
from ..run.run_plan import RunPlan

POLL_S = 0.25  # how often the driver asks the actors how many frames they did (progress bar)


def _worker_class(ray: Any) -> Any:
    """The actor class (built here so that importing this module does not import Ray)."""

    @ray.remote(max_restarts=-1, max_task_retries=0, max_concurrency=2)
    class FleetWorker:
        """Loads the model once; processes whole inputs; answers progress queries meanwhile
        (max_concurrency=2: ``state`` runs while ``process`` does)."""

        def __init__(self, plan: RunPlan) -> None:
            from dense_perception.offline.run.session import ModelSession
            # One CPU granted: no overlap thread, so N workers x 1 thread really use N cores.
            self.session = ModelSession(plan, overlap=plan.settings.num_threads > 1)
            self.session.pipeline()
            self.frames = 0

        def state(self) -> tuple[int, int]:
            """(process id, frames done by this actor so far)."""
            return os.getpid(), self.frames

        def process(self, job: dict[str, Any]) -> dict[str, Any]:
            from dense_perception.offline.fleet.jobs import run_one
            return run_one(self.session, job, self._count)

        def _count(self, n: int = 1) -> None:
            self.frames += n

    return FleetWorker


def _connect(ray: Any, address: str, verbose: bool) -> bool:
    """Join or start Ray; True when this call started it (and must shut it down). The
    workers' own output (LiteRT's log, per-frame warnings) reaches this terminal only with
    --verbose: their results, errors included, come back in the fleet summary."""
    if ray.is_initialized():
        return False
    import dense_perception
    package = Path(dense_perception.__file__).resolve().parent
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "include_dashboard": False,
                              "log_to_driver": verbose}
    if address:
        # Ship this package's code with the job, so every node runs the driver's version.
        kwargs["runtime_env"] = {"py_modules": [str(package)]}
        ray.init(address=address, **kwargs)
    else:
        # Local workers are started by a raylet this process starts: they inherit PYTHONPATH.
        path = os.environ.get("PYTHONPATH", "")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(package.parent), path) if p)
        ray.init(**kwargs)
    return True


def size_workers(ray: Any, workers: int, threads: int, jobs: int) -> int:
    """N workers for ``--workers``/``--threads-per-worker`` on this cluster; CliError when
    N x T does not fit."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    node_cpus = max((int(n.get("Resources", {}).get("CPU", 0)) for n in nodes), default=0)
    total = int(ray.cluster_resources().get("CPU", 0))
    if threads > node_cpus:
        raise CliError(f"--threads-per-worker {threads} is more than the {node_cpus} CPUs of "
                       f"the largest Ray node")
    n = workers or max(1, total // threads)
    if n * threads > total:
        raise CliError(f"--workers {n} x --threads-per-worker {threads} = {n * threads} CPUs, "
                       f"but the Ray cluster has {total}; use fewer workers or threads")
    return max(1, min(n, jobs))


def run_on_ray(plan: RunPlan, jobs: list[dict[str, Any]],
               progress: Callable[[int], None],
               finished: Callable[[dict[str, Any], int], None],
               watch: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run ``jobs`` on Ray actors, calling ``finished(row, index)`` as each input ends;
    returns what the fleet summary says about the cluster. Each actor gets the run's ``plan``
    (its calibration and trajectory read once, here), with the threads Ray grants it."""
    options = plan.options
    try:
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError
    except ImportError:
        raise CliError("--ray needs Ray: pip install -r requirements/fleet.txt (or "
                       "pip install '.[fleet]')") from None
    owned = _connect(ray, options.ray, options.verbose)
    actors: list[Any] = []
    try:
        threads = options.threads_per_worker
        n = size_workers(ray, options.workers, threads, len(jobs)) if jobs else 0
        # A worker's LiteRT threads are the CPUs Ray grants it (--threads-per-worker).
        worker = _worker_class(ray).options(num_cpus=threads)
        started = time.monotonic()
        actors = [worker.remote(plan.with_threads(threads)) for _ in range(n)]
        try:  # every actor has loaded the model (a model that cannot load fails here, once)
            ray.get([a.state.remote() for a in actors])
        except RayActorError as exc:
            raise CliError(f"the Ray workers could not start: {_cause(exc)}") from None
        meta = {"ray": options.ray or "local", "workers": n, "threads_per_worker": threads,
                "cluster_cpus": int(ray.cluster_resources().get("CPU", 0)),
                "workers_ready_seconds": round(time.monotonic() - started, 3)}
        queue = deque(sorted(jobs, key=lambda j: -j["frames"]))  # longest first
        free = list(range(n))
        busy: dict[Any, tuple[int, dict[str, Any]]] = {}  # task ref -> (actor, job)
        seen = [0] * n  # frames each actor had reported
        while queue or busy:
            while queue and free:
                a, job = free.pop(0), queue.popleft()
                busy[actors[a].process.remote(job)] = (a, job)
            ready, _ = ray.wait(list(busy), num_returns=1, timeout=POLL_S)
            _poll(ray, actors, busy, seen, progress, watch, GetTimeoutError, RayActorError)
            for ref in ready:
                a, job = busy.pop(ref)
                free.append(a)
                try:
                    row = ray.get(ref)
                except RayActorError as exc:  # the worker died (killed, OOM, node lost)
                    if job["attempt"] == 0:
                        warn(f"worker died on {Path(job['input']).name}; retrying it once")
                        queue.appendleft(with_attempt(job, 1))  # a folder of its own
                        continue
                    row = job_row(job, "failed", error=f"worker died twice: {_first_line(exc)}")
                except RayTaskError as exc:  # a bug (run_one reports bad inputs itself)
                    row = job_row(job, "failed", error=_first_line(exc))
                finished(row, job["index"])
        return meta
    except KeyboardInterrupt:
        warn("stopping the Ray workers; finished outputs are complete, others are not")
        raise
    finally:
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if owned:
            ray.shutdown()


def _poll(ray: Any, actors: list[Any], busy: dict[Any, tuple[int, dict[str, Any]]],
          seen: list[int], progress: Callable[[int], None],
          watch: Callable[[dict[str, Any]], None] | None, timeout_error: type,
          actor_error: type) -> None:
    """Move the progress bar by the frames the busy actors did since the last poll."""
    for a, job in list(busy.values()):
        try:
            pid, frames = ray.get(actors[a].state.remote(), timeout=2.0)
        except (timeout_error, actor_error):  # restarting, or just died
            continue
        if frames < seen[a]:  # a restarted actor counts from 0 again
            seen[a] = 0
        if frames > seen[a]:
            progress(frames - seen[a])
            seen[a] = frames
        if watch is not None:
            watch({"input": job["input"], "partial": job["partial"], "final": job["final"],
                   "attempt": job["attempt"], "pid": pid, "actor_frames": frames})


def _first_line(exc: BaseException) -> str:
    from ..inputs.bag_io import one_line
    text = str(exc).strip().splitlines()
    return one_line(text[0] if text else type(exc).__name__)


def _cause(exc: BaseException) -> str:
    """The line of a Ray error that names the original exception (the last one that does)."""
    from ..inputs.bag_io import one_line
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    named = [line for line in lines if "Error:" in line or "Exception:" in line]
    return one_line((named or lines or [type(exc).__name__])[-1])
