"""Parameter sweeps: one scene over a grid of parameters and seeds, on Dask's distributed scheduler.

    granular sweep granular_gas_cooling --set restitution=0.5,0.7,0.9 --set n=500 --seeds 4 \\
        --duration 2 --out sweeps/gas/

`plan_sweep` turns the ``--set`` values (``name=v1,v2,...``; one value = fixed) and
``--seeds K`` (the scene's ``seed`` parameter set to 0..K-1) into the product of
the values: one run per combination. `connect` opens a `distributed.Client` on a
new `distributed.LocalCluster` (one single-threaded worker process per core) or
on an existing cluster (``--scheduler tcp://host:8786``). `run_sweep` submits one
task per run (`run_task`), each carrying the scene's source text so that workers
need granular installed but neither the scene file nor a disk shared with the
client: a task returns its run file's bytes, which the client writes. Then it
writes the summary table (`write_summary`): ``summary.csv``, and
``summary.parquet`` when pyarrow imports, with ``sweep.json`` naming the scene, its
parameters and figures. `aggregate` and `plot_summary` read them back for
``granular plot SWEEP_DIR summary --x PARAMETER --y FIGURE``.

Run files are normal run files (`granular.Trajectory`, HDF5) whose meta holds the
scene, its parameters, the run settings (`granular.scenes.provenance`), the
scene's summary figures and the wall time, named by `run_file_name` from the
varying parameters and a hash of all of them and of the run settings. A run that
fails (a jam, a blow-up, a scene that raises) is a row whose status is
``failed: <one-line reason>``; the frames before the failure, if any, go to
``NAME.partial.h5``. The other runs go on.

Fault tolerance: a worker that dies mid-run has its task rerun elsewhere by the
scheduler (up to ``distributed.scheduler.allowed-failures`` deaths, 3 by default;
``retries`` reruns a task that raised). Nothing is written until the client has a
task's complete result, and the client writes each file under a temporary name
renamed into place (`granular.records.files.atomic_path`), so no half-written file is
ever named ``NAME.h5`` and the summary lists only complete files. Running the same
sweep into the same directory resumes it: a run whose file exists, loads, and
holds the same parameters and settings, made by the same scene file (SHA-256), is
not run again (its row is read from the file), unless ``force``. Failed runs are
run again.

Columns of the summary: the scene's parameters (``seed`` among them), the figures
of the scene's ``summary(trajectory)`` (empty where a run has none), ``status``,
``wall_time`` (s, build + run + summary on the worker) and ``file`` (relative to
the sweep directory; empty when a failed run left no frames).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import itertools
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import scenes
from ..errors import SweepError, TrajectoryFileError
from ..records.files import atomic_path
from ..render.plots import save_figure
from .runs import failure_reason, run_simulation
from ..records.trajectory import Trajectory

SUMMARY_CSV = "summary.csv"
SUMMARY_PARQUET = "summary.parquet"
STATUS_OK = "ok"
#: Columns after the parameters and figures.
TRAILING_COLUMNS = ("status", "wall_time", "file")


# -- planning ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs: the scene (``name``, ``path``, ``source`` text, ``sha256``),
    its declared parameters (name -> default), the run settings, one parameter dict
    per run (in the order of the product), and the names of the parameters that vary."""

    name: str
    path: Path
    source: str
    sha256: str
    declared: dict
    settings: scenes.RunSettings
    runs: list
    varying: list = field(default_factory=list)


def plan_sweep(scene: str, assignments=(), seeds: int | None = None, duration=None, dt=None, every=None) -> SweepPlan:
    """The runs of ``granular sweep SCENE --set ... --seeds K``: the product of the
    values of each parameter (``--set name=v1,v2``; one value = fixed; unset = the
    default), with ``seed`` = 0..K-1 when ``seeds`` is given. ``duration`` (s), ``dt``
    (s) and ``every`` (steps) override the scene's ``DEFAULTS``."""
    path = scenes.resolve_scene(scene)
    try:
        content = path.read_bytes()  # hashed as bytes, as granular.scenes.scene_sha256 does
        source = content.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise scenes.SceneError(f"cannot read scene file {path}: {error}") from error
    module = scenes.load_scene_source(source, path)
    name = path.stem
    declared = scenes.declared_parameters(module, name)
    values = scenes.parse_settings(name, declared, list(assignments), several=True)
    if seeds is not None:
        if "seed" not in declared:
            raise scenes.ParameterError(
                f"scene {name!r} has no 'seed' parameter, so --seeds cannot vary it; "
                f"its parameters: {', '.join(declared) or 'none'}"
            )
        if "seed" in values:
            raise scenes.ParameterError("--seeds K and --set seed=... both choose the seeds: give one of them")
        values["seed"] = list(range(seeds))
    names = [n for n in declared if n in values]  # the scene's order, so names are stable
    runs = [
        {**declared, **dict(zip(names, combination))} for combination in itertools.product(*(values[n] for n in names))
    ]
    settings = scenes.run_settings(module, duration, dt, every)
    return SweepPlan(
        name=name,
        path=path,
        source=source,
        sha256=hashlib.sha256(content).hexdigest(),
        declared=declared,
        settings=settings,
        runs=runs,
        varying=[n for n in names if len(values[n]) > 1],
    )


def _settings_record(settings: scenes.RunSettings) -> dict:
    return dict(
        duration=settings.duration, dt=settings.dt, record_every=settings.record_every, options=dict(settings.options)
    )


def run_file_name(plan: SweepPlan, parameters: dict) -> str:
    """``SCENE-name=value-...-HASH.h5``: the varying parameters, readable, then 10 hex
    digits of a hash of all the parameters and the run settings (so that two sweeps
    that differ in a fixed value or in ``--dt`` never share a file)."""
    readable = "-".join(f"{n}={_slug(parameters[n])}" for n in plan.varying)
    record = json.dumps(dict(scene=plan.name, parameters=parameters, **_settings_record(plan.settings)), sort_keys=True)
    digest = hashlib.sha256(record.encode("utf-8")).hexdigest()[:10]
    return "-".join(part for part in (plan.name, readable, digest) if part) + ".h5"


def _slug(value) -> str:
    text = repr(value) if isinstance(value, float) else str(value)
    return "".join(c if c.isalnum() or c in ".+_" else "_" for c in text)


def partial_name(file_name: str) -> str:
    """Where a failed run's frames go: ``NAME.partial.h5``."""
    return file_name[: -len(".h5")] + ".partial.h5"


# -- one run, on a worker ------------------------------------------------------------------
def run_task(
    source: str, scene_path: str, scene: str, parameters: dict, settings: scenes.RunSettings, provenance: dict
) -> dict:
    """Build and run one scene on a worker; returns a dict with ``status`` (``ok`` or
    ``failed: reason``), ``figures`` (the scene's summary), ``wall_time`` (s) and
    ``data``: the run file's bytes (HDF5), or None when a failure left no frames.

    Every failure of the scene or the simulation is caught and reported in the
    result, so Dask's retries are kept for a worker that dies.
    """
    import numpy as np

    start = time.perf_counter()
    trajectory, error = None, None
    try:
        module = scenes.load_scene_source(source, scene_path)
        simulation = scenes.make_simulation(scenes.build_system(module, scene, parameters), settings)
        n_steps = simulation.count_steps(settings.duration)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # check_finite reports them
            trajectory, error = run_simulation(simulation, n_steps, settings.record_every)
    except Exception as failure:  # a scene that fails to import or build: this run's row says why
        error = failure
    figures = {}
    if trajectory is not None:
        trajectory.meta.update(provenance)  # before summary(): it may read the parameters
        try:
            figures = scenes.summarize(module, scene, trajectory)
        except scenes.SceneError as failure:
            error = error or failure
    seconds = time.perf_counter() - start
    expected = trajectory is not None and error is not None and isinstance(error, scenes.expected_errors(module))
    status = STATUS_OK if error is None or expected else f"failed: {failure_reason(error)}"
    data = None
    if trajectory is not None:
        trajectory.meta.update(summary=figures, wall_time=seconds)
        if error is not None:
            trajectory.meta["ended" if expected else "failure"] = failure_reason(error)
        data = _file_bytes(trajectory)
    return dict(status=status, figures=figures, wall_time=seconds, data=data)


def _file_bytes(trajectory) -> bytes:
    """The run file's bytes: h5py writes files, so through a temporary file of the worker's own."""
    with tempfile.TemporaryDirectory(prefix="granular-sweep-") as directory:
        path = Path(directory) / "run.h5"
        trajectory.save(path)
        return path.read_bytes()


# -- the cluster ----------------------------------------------------------------------------
@contextlib.contextmanager
def connect(workers: int | None = None, scheduler: str | None = None):
    """A `distributed.Client`: on the cluster whose scheduler is at ``scheduler``
    (``tcp://host:8786``), else on a new `distributed.LocalCluster` of ``workers``
    single-threaded worker processes (default: one per core, ``os.cpu_count()``),
    closed on exit. Processes, not threads: a step holds the GIL in much of its
    Python code, and a process that dies takes only its own run with it."""
    import logging

    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=10)
        except (OSError, TimeoutError, ValueError) as error:
            raise SweepError(f"cannot connect to a Dask scheduler at {scheduler}: {error}") from error
        with client:
            yield client
        return
    workers = workers or os.cpu_count() or 1
    # dashboard on a free port: 8787 may be another cluster's; logs only for errors, so
    # that a worker restarted after a crash does not bury the progress line
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def dashboard_link(client) -> str | None:
    """The address of the Dask dashboard, or None when it is not served (bokeh missing)."""
    try:
        services = client.scheduler_info().get("services", {})
    except Exception:  # an old or foreign scheduler: the link is only informative
        services = {}
    return client.dashboard_link if "dashboard" in services else None


# -- running a sweep ------------------------------------------------------------------------
@dataclass
class SweepResult:
    """Rows of the summary (in the plan's order), the runs made and skipped, the files written."""

    rows: list
    ran: int = 0
    skipped: int = 0
    summary_files: list = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(1 for row in self.rows if row["status"] != STATUS_OK)


def finished_row(plan: SweepPlan, parameters: dict, path: Path) -> dict | None:
    """The summary row of a run already in ``path``, or None if it must be run: the
    file is missing or does not load, or it holds other parameters or settings, or
    was made by another version of the scene file (its SHA-256), or records a failure."""
    if not path.is_file():
        return None
    try:
        meta = Trajectory.load(path).meta
    except (TrajectoryFileError, OSError):
        return None
    stored = dict(
        duration=meta.get("duration"),
        dt=meta.get("dt"),
        record_every=meta.get("record_every"),
        options=meta.get("simulation_options"),
    )
    if (
        meta.get("scene") != plan.name
        or meta.get("scene_sha256") != plan.sha256
        or meta.get("parameters") != parameters
        or stored != _settings_record(plan.settings)
        or "failure" in meta
    ):
        return None
    return _row(parameters, meta.get("summary", {}), STATUS_OK, meta.get("wall_time", float("nan")), path.name)


def _row(parameters: dict, figures: dict, status: str, wall_time: float, file: str) -> dict:
    return dict(parameters=dict(parameters), figures=dict(figures), status=status, wall_time=wall_time, file=file)


def run_sweep(plan: SweepPlan, out, client, force: bool = False, progress=None, retries: int = 2) -> SweepResult:
    """Run the plan's runs on ``client``'s cluster into the directory ``out`` and write
    the summary; see the module docstring. ``progress``, if given, is called as
    ``progress(done, failed, running, total)`` while the runs go on. The summary is
    written even when interrupted (with the runs finished by then)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SweepError(f"--out {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    names = [run_file_name(plan, parameters) for parameters in plan.runs]
    rows: list = [None] * len(plan.runs)
    if not force:
        for k, (parameters, name) in enumerate(zip(plan.runs, names)):
            rows[k] = finished_row(plan, parameters, out / name)
    skipped = sum(row is not None for row in rows)
    result = SweepResult(rows=[], skipped=skipped)
    todo = [k for k, row in enumerate(rows) if row is None]
    try:
        _run_on_cluster(plan, out, client, todo, names, rows, retries, progress, skipped)
    finally:  # an interrupted sweep still summarises what it finished
        result.rows = [row for row in rows if row is not None]
        result.ran = len(result.rows) - skipped
        result.summary_files = write_summary(plan, result.rows, out) + [write_description(plan, result.rows, out)]
    return result


def _run_on_cluster(plan, out, client, todo, names, rows, retries, progress, skipped) -> None:
    from distributed import as_completed

    provenance = dict(
        scene=plan.name,
        scene_file=str(plan.path.resolve()),
        scene_sha256=plan.sha256,
        duration=plan.settings.duration,
        simulation_options=dict(plan.settings.options),
    )
    futures = {}
    for k in todo:
        # pure=False: a rerun of the same parameters is a new task, never a cached result
        future = client.submit(
            run_task,
            plan.source,
            str(plan.path),
            plan.name,
            plan.runs[k],
            plan.settings,
            {**provenance, "parameters": dict(plan.runs[k])},
            retries=retries,
            pure=False,
        )
        futures[future] = k
    total, done, failed = len(plan.runs), skipped, 0
    report = _Reporter(client, futures, progress, total)
    report(done, failed, force=True)
    completed = as_completed(list(futures))
    while not completed.is_empty():
        batch = completed.next_batch(block=False)
        for future in batch:
            k = futures[future]
            rows[k] = {**_collect(out, names[k], future), "parameters": dict(plan.runs[k])}
            future.release()  # the run file's bytes leave the cluster's memory
            done += 1
            failed += rows[k]["status"] != STATUS_OK
        report(done, failed, force=bool(batch))
        if not batch:
            time.sleep(0.2)
    report(done, failed, force=True)


def _collect(out: Path, name: str, future) -> dict:
    """The row of a finished task, its file written (atomically) by the client."""
    try:
        outcome = future.result()
    except Exception as error:  # the task itself died (KilledWorker after repeated worker deaths)
        return dict(figures={}, status=f"failed: {failure_reason(error)}", wall_time=float("nan"), file="")
    ok = outcome["status"] == STATUS_OK
    file = name if ok else partial_name(name)
    if outcome["data"] is None:
        file = ""
    else:
        with atomic_path(out / file) as temporary:
            temporary.write_bytes(outcome["data"])
    if ok:  # the frames of an earlier failure of this run are out of date
        (out / partial_name(name)).unlink(missing_ok=True)
    return dict(figures=outcome["figures"], status=outcome["status"], wall_time=outcome["wall_time"], file=file)


class _Reporter:
    """Calls ``progress(done, failed, running, total)`` at most every 0.5 s (or when
    forced); ``running`` is the number of this sweep's tasks the workers are
    processing, from the scheduler."""

    def __init__(self, client, futures, progress, total):
        self.client, self.keys, self.progress, self.total = client, {f.key for f in futures}, progress, total
        self.last = -math.inf

    def __call__(self, done, failed, force=False):
        if self.progress is None or (not force and time.perf_counter() - self.last < 0.5):
            return
        self.last = time.perf_counter()
        try:
            processing = self.client.processing()
            assigned = sum(1 for keys in processing.values() for key in keys if key in self.keys)
            # a worker may hold a task or two queued behind the one it executes
            running = min(assigned, sum(self.client.nthreads().values()))
        except Exception:  # the count is informative; a scheduler that will not say it shows 0
            running = 0
        self.progress(done, failed, running, self.total)


# -- the summary table ----------------------------------------------------------------------
def summary_columns(plan: SweepPlan, rows: list) -> list:
    """Parameters (the scene's order), then figures (first seen first), then `TRAILING_COLUMNS`."""
    figures = []
    for row in rows:
        figures += [name for name in row["figures"] if name not in figures and name not in plan.declared]
    return list(plan.declared) + figures + list(TRAILING_COLUMNS)


def flat_rows(plan: SweepPlan, rows: list) -> list:
    """The rows as flat dicts keyed by `summary_columns` (None where a run has no value)."""
    columns = summary_columns(plan, rows)
    flat = []
    for row in rows:
        values = {
            **row["parameters"],
            **row["figures"],
            "status": row["status"],
            "wall_time": row["wall_time"],
            "file": row["file"],
        }
        flat.append({column: values.get(column) for column in columns})
    return flat


def write_summary(plan: SweepPlan, rows: list, out: Path) -> list:
    """Write ``summary.csv`` (and ``summary.parquet`` when pyarrow imports) atomically;
    returns the paths written. Floats are written with ``repr`` (all their digits)."""
    columns = summary_columns(plan, rows)
    table = flat_rows(plan, rows)
    written = []
    with atomic_path(out / SUMMARY_CSV) as temporary:
        with open(temporary, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            for row in table:
                writer.writerow(
                    {k: "" if v is None else (repr(v) if isinstance(v, float) else v) for k, v in row.items()}
                )
    written.append(out / SUMMARY_CSV)
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        return written
    with atomic_path(out / SUMMARY_PARQUET) as temporary:
        pyarrow.parquet.write_table(pyarrow.Table.from_pylist(table), temporary)
    written.append(out / SUMMARY_PARQUET)
    return written


# -- reading a sweep back: aggregation over seeds and the summary plot ----------------------
SWEEP_JSON = "sweep.json"


def write_description(plan: SweepPlan, rows: list, out: Path) -> Path:
    """``sweep.json``: the scene, its parameters, those that vary, and the figure names,
    so that `read_summary` tells parameter columns from figure columns."""
    columns = summary_columns(plan, rows)
    description = dict(
        scene=plan.name,
        parameters=list(plan.declared),
        varying=list(plan.varying),
        figures=[c for c in columns if c not in plan.declared and c not in TRAILING_COLUMNS],
        settings=_settings_record(plan.settings),
    )
    with atomic_path(out / SWEEP_JSON) as temporary:
        temporary.write_text(json.dumps(description, indent=1), encoding="utf-8")
    return out / SWEEP_JSON


def read_summary(directory) -> tuple[dict, list]:
    """``(description, rows)`` of the sweep in ``directory``: `SWEEP_JSON` and the rows
    of `SUMMARY_CSV` with numbers as numbers (int where integral in the file's text)."""
    directory = Path(directory)
    try:
        description = json.loads((directory / SWEEP_JSON).read_text(encoding="utf-8"))
        with open(directory / SUMMARY_CSV, newline="", encoding="utf-8") as handle:
            rows = [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(handle)]
    except FileNotFoundError as error:
        raise SweepError(
            f"{directory} is not a sweep directory: no {Path(error.filename).name} (made by 'granular sweep')"
        ) from error
    except (OSError, ValueError) as error:
        raise SweepError(f"cannot read the sweep in {directory}: {error}") from error
    return description, rows


def _number(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@dataclass
class Series:
    """One curve of a summary plot: the other varying parameters' values (``group``),
    then per x value the mean, the sample standard deviation over seeds (ddof = 1;
    NaN for a single seed) and the number of runs averaged."""

    group: dict
    x: list
    mean: list
    std: list
    count: list


def aggregate(description: dict, rows: list, x: str, y: str) -> list:
    """`Series` of figure ``y`` against parameter ``x``: the mean and spread over the
    runs that differ only in their seed, one series per combination of the other
    varying parameters. Only ``ok`` rows with a finite ``y`` count."""
    import numpy as np

    parameters, figures = description["parameters"], description["figures"] + ["wall_time"]
    if x not in parameters:
        raise SweepError(f"--x {x!r} is not a parameter of the sweep; its parameters: {', '.join(parameters)}")
    if y not in figures:
        raise SweepError(f"--y {y!r} is not a figure of the sweep; its figures: {', '.join(figures)}")
    others = [name for name in description["varying"] if name not in (x, "seed")]
    values: dict = {}
    for row in rows:
        value = row.get(y)
        if row.get("status") != STATUS_OK or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        key = tuple(row[name] for name in others)
        values.setdefault(key, {}).setdefault(row[x], []).append(float(value))
    series = []
    for key in sorted(values):
        points = values[key]
        xs = sorted(points)
        data = [np.asarray(points[v]) for v in xs]
        series.append(
            Series(
                group=dict(zip(others, key)),
                x=xs,
                mean=[float(d.mean()) for d in data],
                std=[float(d.std(ddof=1)) if d.size > 1 else float("nan") for d in data],
                count=[int(d.size) for d in data],
            )
        )
    return series


def plot_summary(directory, x: str, ys: list, out, dpi: int = 120) -> Path:
    """Figure(s) ``ys`` of the sweep in ``directory`` against parameter ``x``: the mean
    over seeds with the seeds' standard deviation as error bars, a curve per
    combination of the other varying parameters (`aggregate`). Written atomically."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    description, rows = read_summary(directory)
    curves = [(y, s) for y in ys for s in aggregate(description, rows, x, y)]
    if not curves:
        raise SweepError(f"no run of the sweep in {directory} finished ok with a value of {', '.join(ys)}")
    figure, axes = plt.subplots(figsize=(6.4, 4.5))
    for y, series in curves:
        group = ", ".join(f"{k}={v}" for k, v in series.group.items())
        label = ", ".join(part for part in (y if len(ys) > 1 else "", group) if part) or None
        axes.errorbar(
            series.x,
            series.mean,
            yerr=[0.0 if math.isnan(s) else s for s in series.std],
            marker="o",
            capsize=3,
            label=label,
        )
    seeds = max(c for _, s in curves for c in s.count)
    axes.set_xlabel(x)
    axes.set_ylabel(ys[0] if len(ys) == 1 else ", ".join(ys))
    axes.set_title(
        f"{description['scene']}: mean over {seeds} seed{'s' if seeds > 1 else ''}, error bars: standard deviation",
        fontsize=10,
    )
    if any(label for label in axes.get_legend_handles_labels()[1]):
        axes.legend(fontsize=8)
    figure.tight_layout()

    return save_figure(plt, figure, out, dpi)
