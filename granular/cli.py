"""The ``granular`` command: run scenes, render runs, inspect multipliers, plot, export.

    granular scenes [NAME]
    granular run SCENE [--set NAME=VALUE ...] [--duration T] [--dt DT] [--every K] [--out RUN.h5]
                       [--render OUT.mp4]
    granular run --from RUN.h5 --duration T [--out RUN.h5]
    granular sweep SCENE [--set NAME=V1,V2,... ...] [--seeds K] [--duration T] [--out DIR]
                         [--workers N | --scheduler tcp://HOST:8786] [--force]
    granular render RUN.h5 OUT.mp4|OUT.gif|OUT.png [--forces] [--frame K] [--every K] [--fps F]
                    [--fit scene|bodies]
    granular inspect RUN.h5 [--frame K] [--top N]
    granular plot RUN.h5 energy|multipliers|contacts OUT.png
    granular plot SWEEP_DIR summary --x PARAMETER --y FIGURE [OUT.png]
    granular export RUN.h5 DIR --vtk

Scenes are Python files in a scenes directory. ``SCENE`` is a file's name without
``.py`` or a path to a file. The directories searched, first match wins: those
listed in ``GRANULAR_SCENES`` (separated by ``os.pathsep``) when it is set;
otherwise ``./scenes`` in the current directory, then the ``scenes/`` directory of
the repository that holds the installed ``granular`` package (an editable install:
``pip install -e .``). A scene module has a docstring whose first line describes
it, a ``build()`` returning a system, and optionally ``DEFAULTS = dict(duration=...,
dt=..., record_every=...)``; other keys of ``DEFAULTS`` (``scheme``, ``solver``)
are passed to `granular.Simulation`. Files whose name starts with ``_`` are not
scenes.

Exit status: 0 success; 1 the simulation or a scene failed, including a step whose
state or energies are not finite (a blow-up; the message gives its time), or a run
of a sweep failed (its summary is still written); 2 a
usage error (bad option, unknown scene, frame out of range, unsupported
extension); 3 a missing or unreadable run file, or an output that cannot be
written; 130 interrupted; 141 the reader of the output went away (``granular scenes |
head -1``: the command stops quietly, like a Unix tool killed by SIGPIPE). Errors are one line on stderr; ``--debug`` (before the
command) shows the traceback instead. A run that fails or is interrupted saves the
frames before it to ``RUN.partial.h5`` (named in the message) and leaves ``RUN.h5``
as it was. Files get the usual permissions (``0666 & ~umask``).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

# Scene discovery and the run loop live in their own modules; imported here under
# their former names (granular.cli.resolve_scene, ...).
from . import scenes
from .runs import NonFiniteStateError, check_finite, concatenate, failure_reason, run_simulation  # noqa: F401
from .runs import active as active_mask, active_counts, dissipation_text
from .runs import ProgressBar  # noqa: F401  (tqdm; granular.cli.ProgressBar is its former home)
from .scenes import (find_scenes, load_scene, resolve_scene, scene_description,  # noqa: F401
                     scene_directories)

USAGE, FAILURE, FILE_ERROR, INTERRUPTED = 2, 1, 3, 130
#: The output's reader closed the pipe: the status of a process killed by SIGPIPE.
BROKEN_PIPE = 141
RUN_SUFFIXES = (".h5", ".hdf5")


class CommandError(Exception):
    """A user-facing failure: a one-line message and an exit status."""

    def __init__(self, message: str, status: int = USAGE):
        super().__init__(message)
        self.status = status


# -- running --------------------------------------------------------------------------
def command_run(args) -> int:
    if (args.scene is None) == (args.restart is None):
        raise CommandError("give a SCENE to run, or --from RUN.h5 to continue a run (not both)", USAGE)
    if args.render:
        from .render.output import output_kind

        output_kind(args.render)
    job = _continued_run(args) if args.restart else _new_run(args)
    _check_run_suffix(job.out)
    n_steps = int(round(job.duration / job.simulation.dt))
    bar = ProgressBar(n_steps, enabled=not args.quiet)
    start = time.perf_counter()
    try:   # overflow and NaN are reported by check_finite in one line, not as numpy warnings
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            trajectory, error = run_simulation(job.simulation, n_steps, job.record_every, bar, debug=args.debug)
    finally:
        bar.finish()
    seconds = time.perf_counter() - start
    if trajectory is not None and job.previous is not None:     # one trajectory: the old frames, then the new
        state = getattr(trajectory, "warm_state", None)
        trajectory = concatenate([job.previous, trajectory])
        if state is not None:
            trajectory.warm_state = state
    _save_and_report(args, job, trajectory, error, seconds)
    if args.render:
        _render(trajectory, args.render, forces=False, frame=None, every=1, fps=args.fps, quiet=args.quiet,
                title=job.name)
    return 0


class _Job:
    """What ``granular run`` runs: the simulation, for how long, where it goes, and for
    a continued run the frames it continues (``previous``)."""

    def __init__(self, name, path, module, parameters, settings, simulation, duration, record_every, out,
                 previous=None):
        self.name, self.path, self.module, self.parameters = name, path, module, parameters
        self.settings, self.simulation, self.duration, self.record_every = settings, simulation, duration, record_every
        self.out, self.previous = out, previous


def _new_run(args) -> _Job:
    path = resolve_scene(args.scene)
    name = path.stem
    module = load_scene(path)
    parameters = scenes.parameters_for(module, name, args.set)
    settings = scenes.run_settings(module, args.duration, args.dt, args.every)
    system = scenes.build_system(module, name, parameters)
    simulation = scenes.make_simulation(system, settings)
    out = Path(args.out) if args.out else Path("runs") / f"{name}.h5"
    return _Job(name, path, module, parameters, settings, simulation, settings.duration, settings.record_every, out)


def _continued_run(args) -> _Job:
    """``granular run --from RUN.h5 --duration T``: the run's scene rebuilt from the name
    and parameters it stores (`Simulation.from_trajectory`: a scene of the scenes
    directories, never a file the run names), at its last frame's state; the new
    frames are appended and the whole run written to --out (default RUN.h5 itself)."""
    from .simulation import Simulation

    if args.duration is None:
        raise CommandError("--from needs --duration T: how much longer to run (s)", USAGE)
    fixed = [option for option, value in (("--set", args.set), ("--dt", args.dt), ("--every", args.every)) if value]
    if fixed:
        raise CommandError(f"{', '.join(fixed)} cannot change a continued run: it keeps the stored scene "
                           "parameters, dt and recording", USAGE)
    previous = _load(args.restart)
    meta = previous.meta
    simulation = Simulation.from_trajectory(previous)
    name = str(meta["scene"])
    path = resolve_scene(name)
    module = load_scene(path)
    settings = scenes.RunSettings(duration=float(meta.get("duration", 0.0)) + args.duration, dt=simulation.dt,
                                  record_every=int(meta.get("record_every", 1)),
                                  options=dict(meta.get("simulation_options", {})))
    if scenes.scene_sha256(path) != meta.get("scene_sha256"):
        sys.stderr.write(f"granular run: warning: scene file {path} changed since {args.restart} was made; "
                         "the continuation uses it as it is now\n")
    out = Path(args.out) if args.out else Path(args.restart)
    return _Job(name, path, module, dict(meta["parameters"]), settings, simulation, args.duration,
                settings.record_every, out, previous)


def _save_and_report(args, job, trajectory, error, seconds) -> None:
    """Save the run (``RUN.partial.h5`` if it failed) and print its summary; raise the
    `CommandError` of a failure or an interrupt once the frames are saved."""
    from .runs import save_run

    out, simulation = job.out, job.simulation
    saved_to = out if error is None else partial_path(out)     # a partial run never replaces a complete one
    figures, summary_error = {}, None
    if trajectory is not None:
        # provenance first: a scene's summary() reads the run's parameters from the meta
        trajectory.meta.update(scenes.provenance(job.name, job.path, job.parameters, job.settings))
        try:     # a failed run's frames have figures too (the packing fraction a jam reached)
            figures = scenes.summarize(job.module, job.name, trajectory)
        except scenes.SceneError as failure:
            summary_error = str(failure)
        trajectory.meta.update(summary=figures, wall_time=seconds)
        if error is not None:
            trajectory.meta["failure"] = failure_reason(error)
        try:
            save_run(trajectory, saved_to)
        except OSError as failure:
            raise CommandError(f"cannot write {saved_to}: {failure.strerror or failure}", FILE_ERROR) from failure
    system = simulation.system
    bodies = getattr(system, "n", None)
    what = f"{bodies} spheres" if bodies is not None else f"{system.dimension} coordinates"
    steps = simulation.steps_taken - (0 if job.previous is None else _steps_at(job.previous, simulation))
    continued = "" if job.previous is None else f" continuing {args.restart} from t = {job.previous.t[-1]:.6g} s"
    print(f"{job.name}: {what}, {steps} steps of {simulation.dt:g} s in {seconds:.3g} s "
          f"({steps / max(seconds, 1e-9):.3g} steps/s){continued}")
    if trajectory is not None:
        print(f"  t = {trajectory.t[-1]:.6g} s, {len(trajectory)} frames, "
              f"{int(active_counts(trajectory)[-1])} active contacts, "
              f"kinetic energy {trajectory.kinetic_energy[-1]:.4g} J, {dissipation_text(trajectory)}")
        print(f"  saved {saved_to}")
        if figures or summary_error:
            print(f"  summary: {scenes.format_figures(figures) if figures else summary_error}")
    if error is not None:
        saved = (f"; the {len(trajectory)} frames before it are in {saved_to} ({out} is left as it was)"
                 if trajectory is not None else f" ({out} is left as it was)")
        if isinstance(error, KeyboardInterrupt):
            raise CommandError(f"interrupted at t = {simulation.t:.6g} s{saved}", INTERRUPTED)
        raise CommandError(f"simulation failed: {failure_reason(error)}{saved}", FAILURE)


def _steps_at(trajectory, simulation) -> int:
    """The step count of the last frame of ``trajectory`` in ``simulation``'s time."""
    return int(round((float(trajectory.t[-1]) - simulation.t0) / simulation.dt))


def partial_path(out: Path) -> Path:
    """Where an interrupted or failed run is saved: ``RUN.partial.h5`` next to ``RUN.h5``."""
    return out.with_name(f"{out.stem}.partial{out.suffix}")


def _check_run_suffix(path: Path) -> None:
    if path.suffix.lower() not in RUN_SUFFIXES:
        raise CommandError(f"run files are HDF5: {path} must end in {' or '.join(RUN_SUFFIXES)}", USAGE)


def _load(path: str):
    from .errors import TrajectoryFileError

    from .runs import load_run

    try:
        trajectory = load_run(path)       # NaN frames, missing radii: one refusal for every command
    except TrajectoryFileError as error:
        raise CommandError(str(error), FILE_ERROR) from error
    return trajectory


def _frame(trajectory, frame: int | None) -> int:
    from .errors import InvalidInputError
    from .render.geometry import check_frame

    try:
        return check_frame(trajectory, -1 if frame is None else frame)
    except InvalidInputError as error:
        raise CommandError(str(error), USAGE) from error


def _render(trajectory, out, forces, frame, every, fps, quiet, title=None, **options) -> None:
    from .render import render
    from .render.output import output_kind

    kind = output_kind(out)
    if frame is not None:
        frame = _frame(trajectory, frame)
    start = time.perf_counter()
    if kind == "video":
        count = len(trajectory) if frame is not None else len(range(0, len(trajectory), every))
        bar = ProgressBar(1 if frame is not None else count, enabled=not quiet, label="frames")
        try:
            render(trajectory, out, frame=frame, forces=forces, every=every, fps=fps, title=title,
                   progress=lambda done, total: bar.update(done), **options)
        finally:
            bar.finish()
    else:
        render(trajectory, out, frame=frame, forces=forces, title=title, **options)
    print(f"wrote {out} ({Path(out).stat().st_size / 1024:.0f} kB) in {time.perf_counter() - start:.1f} s")


def command_render(args) -> int:
    from .render.output import output_kind

    output_kind(args.out)
    trajectory = _load(args.run)
    options = dict(color_by=args.color_by, size=args.size, fit=args.fit)
    if args.force_scale is not None:
        options["force_scale"] = args.force_scale
    if Path(args.out).suffix.lower() != ".png":
        options["camera"] = args.camera
    elif args.camera != "fixed":
        raise CommandError(f"--camera {args.camera} needs an animation (.mp4 or .gif): a .png is one still "
                           "from a fixed camera", USAGE)
    _render(trajectory, args.out, forces=args.forces, frame=args.frame, every=args.every, fps=args.fps,
            quiet=args.quiet, title=args.title, **options)
    return 0


def wall_names(system: dict) -> list[str]:
    """A name for each plane a sphere run's contacts index (``Contacts.wall``), in the
    world's order (`SphereWorld.planes`: each wall's planes; a `Box` gives per axis its
    lower face, then its upper one unless it is the open top): "floor" for a plane
    facing +z, a box's faces by side ("box x-min", ...), else the index and normal."""
    names, axes = [], "xyz"
    for wall in system.get("walls", []) or []:
        if wall.get("type") == "box":
            for axis in range(3):
                names.append("floor" if axis == 2 else f"box {axes[axis]}-min")
                if not (wall.get("open_top") and axis == 2):
                    names.append("box top" if axis == 2 else f"box {axes[axis]}-max")
        elif wall.get("type") == "plane":
            normal = np.asarray(wall.get("normal", (np.nan,) * 3), float)
            shown = ", ".join(f"{_plain(v):.3g}" for v in normal)
            names.append("floor" if np.allclose(normal, (0, 0, 1)) else f"plane {len(names)} (normal {shown})")
        else:
            names.append(f"wall {len(names)}")
    return names


def _contact_label(system: dict, i: int, j: int, wall: int, walls: list[str]) -> str:
    if system.get("kind") != "spheres":
        return f"constraint {i}"
    if wall >= 0:
        return f"{i} - {walls[wall] if wall < len(walls) else f'wall {wall}'}"
    return f"{i} - {j}"


def _plain(value) -> float:
    """``value`` as a float with -0.0 made 0.0, so that tables never print "-0"."""
    return float(value) + 0.0


def command_inspect(args) -> int:
    trajectory = _load(args.run)
    k = _frame(trajectory, args.frame)
    system, meta = trajectory.system, trajectory.meta
    dt = float(meta.get("dt", float("nan")))
    n = trajectory.positions.shape[1] if trajectory.positions.ndim == 3 else trajectory.positions.shape[-1]
    bodies = f"{n} spheres" if system.get("kind") == "spheres" else f"{system.get('kind', 'system')}, {n} coordinates"
    print(f"{args.run}: {bodies}, {len(trajectory)} frames from t = {trajectory.t[0]:.6g} s "
          f"to {trajectory.t[-1]:.6g} s (dt = {dt:g} s, recorded every {meta.get('record_every', '?')} steps, "
          f"scheme {meta.get('scheme', '?')}, solver {meta.get('solver', '?')})")
    contacts = trajectory.contacts[k]
    impulse = np.asarray(contacts.impulse, float)
    active = active_mask(trajectory, k)          # solver noise (below the tolerance) is no contact
    print(f"frame {k} at t = {trajectory.t[k]:.6g} s: {len(contacts)} constraints considered, "
          f"{int(active.sum())} active")
    print(f"  impulses: total {impulse.sum():.6g} N s, largest {impulse.max(initial=0.0):.6g} N s "
          f"(mean forces over the step: total {impulse.sum() / dt:.6g} N)")
    kinetic, potential = _plain(trajectory.kinetic_energy[k]), _plain(trajectory.potential_energy[k])
    print(f"  energy: kinetic {kinetic:.6g} J, potential {potential:.6g} J, total {kinetic + potential:.6g} J, "
          f"{dissipation_text(trajectory, k, digits=6, since=' since the start')}")
    if not active.any():
        print("  no active contacts in this frame")
        return 0
    # the table lists the active contacts (positive impulse), not every constraint
    # row the step considered: "... 1052 more" counted rows that carry nothing
    ordered = contacts.take(np.flatnonzero(active)).sorted_by_impulse()
    top = min(args.top, len(ordered))
    walls = wall_names(system)
    width = max([16] + [len(_contact_label(system, int(ordered.i[r]), int(ordered.j[r]), int(ordered.wall[r]),
                                           walls)) for r in range(top)])
    # friction and rolling-resistance columns (norms of the impulses along the
    # tangent basis) only when the frame's active contacts carry some
    friction = np.linalg.norm(np.asarray(ordered.tangential_impulse, float).reshape(len(ordered), -1), axis=1)
    rolling = np.linalg.norm(np.asarray(ordered.rolling_impulse, float).reshape(len(ordered), -1), axis=1)
    extra = [(title, values) for title, values in
             ((f"{'friction (N s)':>14}", friction), (f"{'rolling (N m s)':>15}", rolling)) if np.any(values > 0.0)]
    print()
    print(f"{'rank':>4}  {'active contact':<{width}} {'impulse (N s)':>14} {'force (N)':>12} "
          + "".join(f"{title} " for title, _ in extra) + f"{'gap (m)':>12}  normal")
    for r in range(top):
        normal = np.asarray(ordered.normal[r], float).reshape(-1)
        shown = "(" + ", ".join(f"{v:.3g}" for v in normal[:6]) + (", ...)" if normal.size > 6 else ")")
        label = _contact_label(system, int(ordered.i[r]), int(ordered.j[r]), int(ordered.wall[r]), walls)
        columns = "".join(f"{values[r]:>{len(title)}.6g} " for title, values in extra)
        print(f"{r + 1:>4}  {label:<{width}} {ordered.impulse[r]:>14.6g} {ordered.impulse[r] / dt:>12.6g} "
              f"{columns}{ordered.gap[r]:>12.4g}  {shown}")
    if top < len(ordered):
        print(f"  ... {len(ordered) - top} more active contacts (--top N shows more)")
    return 0


def command_plot(args) -> int:
    from .render.plots import FIGURE_SUFFIXES

    if args.kind == "summary":
        return plot_sweep(args, FIGURE_SUFFIXES)
    if args.x or args.y:
        raise CommandError("--x and --y belong to 'granular plot SWEEP_DIR summary'", USAGE)
    if args.out is None:
        raise CommandError(f"give the figure to write: granular plot {args.run} {args.kind} OUT.png", USAGE)
    if Path(args.out).suffix.lower() not in FIGURE_SUFFIXES:
        raise CommandError(f"unsupported figure extension {Path(args.out).suffix or '(none)'!r} for {args.out}: "
                           f"use {', '.join(FIGURE_SUFFIXES)}", USAGE)
    trajectory = _load(args.run)
    from .render.plots import plot

    plot(trajectory, args.kind, args.out, title=Path(args.run).stem)
    print(f"wrote {args.out}")
    return 0


def plot_sweep(args, suffixes) -> int:
    """``granular plot SWEEP_DIR summary --x PARAMETER --y FIGURE [OUT]``."""
    from . import sweep

    if not args.x or not args.y:
        raise CommandError("a summary plot needs --x PARAMETER and --y FIGURE", USAGE)
    directory = Path(args.run)
    if not directory.is_dir():
        raise CommandError(f"{directory} is not a sweep directory (granular plot SWEEP_DIR summary ...)", USAGE)
    out = Path(args.out) if args.out else directory / f"summary_{'_'.join(args.y)}_vs_{args.x}.png"
    if out.suffix.lower() not in suffixes:
        raise CommandError(f"unsupported figure extension {out.suffix or '(none)'!r} for {out}: "
                           f"use {', '.join(suffixes)}", USAGE)
    description, rows = sweep.read_summary(directory)
    for y in args.y:
        for series in sweep.aggregate(description, rows, args.x, y):
            group = ", ".join(f"{k}={v}" for k, v in series.group.items())
            print(f"{y}{' (' + group + ')' if group else ''} against {args.x}:")
            for x, mean, std, count in zip(series.x, series.mean, series.std, series.count):
                print(f"  {args.x} = {x:<8g} {y} = {mean:.4g} +- {std:.2g} ({count} runs)")
    sweep.plot_summary(directory, args.x, args.y, out)
    print(f"wrote {out}")
    return 0


def command_export(args) -> int:
    if not args.vtk:
        raise CommandError("choose an export format: --vtk", USAGE)
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        raise CommandError(f"{directory} exists and is not a directory", USAGE)
    trajectory = _load(args.run)
    from .render.vtkfiles import export_vtk

    bar = ProgressBar(len(range(0, len(trajectory), args.every)), enabled=not args.quiet, label="frames")
    try:
        pvd = export_vtk(trajectory, directory, stem=Path(args.run).stem, every=args.every,
                         progress=lambda done, total: bar.update(done))
    finally:
        bar.finish()
    print(f"wrote {pvd} and its .vtp files")
    return 0


def command_sweep(args) -> int:
    """``granular sweep``: argument checks and printing; the work is `granular.sweep`."""
    from . import sweep

    if args.workers is not None and args.scheduler is not None:
        raise CommandError("--workers starts a local cluster and --scheduler uses an existing one: give one "
                           "of them", USAGE)
    plan = sweep.plan_sweep(args.scene, args.set, args.seeds, args.duration, args.dt, args.every)
    out = Path(args.out) if args.out else Path("sweeps") / plan.name
    if out.exists() and not out.is_dir():
        raise CommandError(f"--out {out} exists and is not a directory", USAGE)
    varying = ", ".join(plan.varying) or "nothing"
    print(f"{plan.name}: {len(plan.runs)} run{'' if len(plan.runs) == 1 else 's'} (varying {varying}) of {plan.settings.duration:g} s, "
          f"dt {plan.settings.dt:g} s, into {out}/")
    start = time.perf_counter()
    line = SweepProgress(enabled=not args.quiet)
    with sweep.connect(args.workers, args.scheduler) as client:
        workers = len(client.scheduler_info().get("workers", {}))
        link = sweep.dashboard_link(client)
        print(f"  {'scheduler ' + args.scheduler if args.scheduler else 'local cluster'}: {workers} workers; "
              f"dashboard {link or 'not served (install bokeh: pip install granular[cluster])'}")
        sys.stdout.flush()
        try:
            result = sweep.run_sweep(plan, out, client, force=args.force, progress=line.update)
        finally:
            line.finish()
    seconds = time.perf_counter() - start
    print(f"  {result.ran} run, {result.skipped} already done (skipped), {result.failed} failed, "
          f"in {seconds:.1f} s")
    for row in result.rows:
        if row["status"] != sweep.STATUS_OK:
            shown = ", ".join(f"{n}={row['parameters'][n]!r}" for n in plan.varying) or plan.name
            print(f"  {shown}: {row['status']}")
    print(f"  summary: {', '.join(str(p) for p in result.summary_files)}")
    return FAILURE if result.failed else 0


class SweepProgress:
    """``runs: 5/12 done, 1 failed, 2 running`` on stderr: redrawn in place on a
    terminal, a plain line at each change otherwise. (A dozen lines of our own, not
    tqdm's bar: this line counts failed and running runs, and a log of a sweep is a
    line per change that scripts read; distributed.progress shows tasks.)"""

    def __init__(self, enabled: bool = True, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.shown = None

    def update(self, done: int, failed: int, running: int, total: int) -> None:
        line = f"runs: {done}/{total} done, {failed} failed, {running} running"
        if not self.enabled or line == self.shown:
            return
        self.stream.write(("\r" + line.ljust(60)) if self.tty else line + "\n")
        self.stream.flush()
        self.shown = line

    def finish(self) -> None:
        if self.enabled and self.tty and self.shown:
            self.stream.write("\n")
            self.stream.flush()


def command_scenes(args) -> int:
    if args.scene:
        return describe_scene(args.scene)
    scenes = find_scenes()
    if not scenes:
        where = ", ".join(str(d) for d in scene_directories()) or "(none)"
        raise CommandError(f"no scenes found (searched {where}; set GRANULAR_SCENES)", USAGE)
    width = max(len(name) for name in scenes)
    for name, path in sorted(scenes.items()):
        print(f"{name:<{width}}  {scene_description(path)}")
    return 0


def describe_scene(scene: str) -> int:
    """``granular scenes NAME``: the scene's description, parameters (default, type,
    help with units), run settings and whether it declares a summary."""
    path = resolve_scene(scene)
    module = load_scene(path)
    name = path.stem
    declared = scenes.declared_parameters(module, name)
    helps = scenes.parameter_help(module)
    settings = scenes.run_settings(module)
    print(f"{name}: {scene_description(path)}")
    print(f"  file: {path}")
    if declared:
        print(f"  parameters (granular run {name} --set NAME=VALUE):")
        width = max(len(p) for p in declared)
        values = {p: repr(v) for p, v in declared.items()}
        value_width = max(len(v) for v in values.values())
        for parameter, default in declared.items():
            kind = type(default).__name__
            print(f"    {parameter:<{width}}  {values[parameter]:<{value_width}}  {kind:<5}  "
                  f"{helps.get(parameter, '')}".rstrip())
    else:
        print("  parameters: none (no PARAMETERS)")
    options = "".join(f", {key} {value}" for key, value in settings.options.items())
    print(f"  run settings: duration {settings.duration:g} s, dt {settings.dt:g} s, "
          f"a frame every {settings.record_every} steps{options}")
    print(f"  summary: {'yes (printed by granular run, tabulated by granular sweep)' if scenes.has_summary(module) else 'none'}")
    return 0


# -- argument parsing ---------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``granular run: error: ... (see granular run --help)``.

    A value such as ``--dt -1e-3`` reaches the option's type check (and its one-line
    refusal): argparse takes an argument starting with '-' for a value only if it
    matches its negative-number pattern, which knows ``-1`` and ``-.5`` but not the
    exponent of ``-1e-3``, and then reported "expected one argument".
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message):
        self.exit(USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


#: A negative number as float() writes it: -1, -1.5, -.5, -1e-3, -1.5E+2, -inf.
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf(inity)?$", re.IGNORECASE)


def _positive_duration(text: str) -> float:
    """A simulated time, positive: a zero duration would save (and replace the run file
    with) a single frame, the initial state, which no one asks for on purpose."""
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive duration in seconds, got {text!r} (a run of "
                                         "zero duration would only save its initial frame)") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, e.g. 640x480, got {text!r}") from None
    if width < 16 or height < 16:
        raise argparse.ArgumentTypeError(f"size must be at least 16x16, got {text!r}")
    return width, height


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="granular", description="Nonsmooth mechanics: run scenes, render and inspect runs.",
                     epilog="Run 'granular COMMAND --help' for the options of a command.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"granular {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    scenes = commands.add_parser("scenes", help="list the scenes, or describe one and its parameters",
                                 description="List the scenes found in the scenes directories "
                                             "(GRANULAR_SCENES, ./scenes, the repository's scenes/); with a "
                                             "NAME, print that scene's parameters (default, type, help with "
                                             "units) and run settings.")
    scenes.add_argument("scene", metavar="NAME", nargs="?", help="a scene to describe")
    scenes.set_defaults(handler=command_scenes)

    run = commands.add_parser("run", help="run a scene and save the trajectory (HDF5)",
                              description="Run a scene's build() with Simulation.run and save the trajectory. "
                                          "Defaults come from the scene's DEFAULTS.")
    run.add_argument("scene", metavar="SCENE", nargs="?",
                     help="scene name (see 'granular scenes') or path to a .py file")
    run.add_argument("--from", dest="restart", metavar="RUN.h5",
                     help="continue this run from its last frame for --duration more seconds (its scene is "
                          "found by name in the scenes directories); the whole run is written to --out, "
                          "by default RUN.h5 itself")
    run.add_argument("--duration", type=_positive_duration, metavar="T", help="simulated time (s)")
    run.add_argument("--dt", type=_positive_float, metavar="DT", help="time step (s)")
    run.add_argument("--every", type=_positive_int, metavar="K", help="record a frame every K steps")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                     help="set a scene parameter (repeatable; 'granular scenes SCENE' lists them)")
    run.add_argument("--out", metavar="RUN.h5", help="trajectory file (default runs/SCENE.h5); a failed or "
                                                     "interrupted run is saved to RUN.partial.h5 instead")
    run.add_argument("--render", metavar="OUT", help="also render the run to OUT (.mp4, .gif or .png)")
    run.add_argument("--fps", type=_positive_float, default=25.0, help="frames per second of --render (25)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(handler=command_run)

    sweep = commands.add_parser("sweep", help="run a scene over a grid of parameters and seeds on Dask",
                                description="Run the product of the --set values (NAME=V1,V2,...; one value is "
                                            "fixed) and of --seeds on a Dask cluster: a local one with a worker "
                                            "process per core, or --scheduler's. Each run is a run file in OUT; "
                                            "OUT/summary.csv (and summary.parquet with pyarrow) has a row per "
                                            "run: parameters, the scene's summary figures, status, wall_time (s), "
                                            "file. Runs already in OUT are skipped unless --force. Exit status 1 "
                                            "if a run failed (the summary is still written).")
    sweep.add_argument("scene", metavar="SCENE", help="scene name (see 'granular scenes') or path to a .py file")
    sweep.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2,...",
                       help="values of a scene parameter (repeatable; 'granular scenes SCENE' lists them)")
    sweep.add_argument("--seeds", type=_positive_int, metavar="K", help="run seed = 0 .. K-1 of each combination")
    sweep.add_argument("--duration", type=_positive_duration, metavar="T", help="simulated time (s)")
    sweep.add_argument("--dt", type=_positive_float, metavar="DT", help="time step (s)")
    sweep.add_argument("--every", type=_positive_int, metavar="K", help="record a frame every K steps")
    sweep.add_argument("--out", metavar="DIR", help="directory of the run files and summary (sweeps/SCENE)")
    sweep.add_argument("--workers", type=_positive_int, metavar="N",
                       help="worker processes of the local cluster (default: one per core)")
    sweep.add_argument("--scheduler", metavar="ADDRESS",
                       help="use the existing Dask cluster whose scheduler is at ADDRESS (tcp://host:8786)")
    sweep.add_argument("--force", action="store_true", help="run again the runs already in DIR")
    sweep.add_argument("--quiet", action="store_true", help="no progress line")
    sweep.set_defaults(handler=command_sweep)

    render = commands.add_parser("render", help="render a run to MP4, GIF or PNG",
                                 description="Render a saved run. One picture per recorded frame; --every thins "
                                             "them; --fps only sets the playback speed.")
    render.add_argument("run", metavar="RUN.h5")
    render.add_argument("out", metavar="OUT", help="output file: .mp4, .gif or .png")
    render.add_argument("--forces", action="store_true", help="overlay the force network (impulses)")
    render.add_argument("--frame", type=int, metavar="K",
                        help="only frame K (negative counts from the end; a PNG shows the last by default)")
    render.add_argument("--every", type=_positive_int, default=1, metavar="K", help="draw every K-th frame")
    render.add_argument("--fps", type=_positive_float, default=25.0, help="frames per second (25)")
    render.add_argument("--color-by", choices=("speed", "id", "none"), default="speed",
                        help="sphere colour (speed)")
    render.add_argument("--camera", choices=("fixed", "orbit"), default="fixed",
                        help="camera motion of an animation (fixed; a .png is always fixed)")
    render.add_argument("--fit", choices=("scene", "bodies"), default="scene",
                        help="frame the bodies and the finite walls (scene), or the bodies alone (bodies: a rod "
                             "on a wide floor)")
    render.add_argument("--size", type=_size, default=(640, 480), metavar="WxH", help="pixels (640x480)")
    render.add_argument("--title", help="caption before the time")
    render.add_argument("--force-scale", type=_positive_float, metavar="IMPULSE",
                        help="impulse (N s) drawn at full width (default: 98th percentile)")
    render.add_argument("--quiet", action="store_true", help="no progress bar")
    render.set_defaults(handler=command_render)

    inspect = commands.add_parser("inspect", help="table of the contacts of a frame, largest multiplier first",
                                  description="Print a run's summary, one frame's totals and energies, and its "
                                              "contacts sorted by impulse (N s), largest first.")
    inspect.add_argument("run", metavar="RUN.h5")
    inspect.add_argument("--frame", type=int, metavar="K", help="frame (default the last; negative from the end)")
    inspect.add_argument("--top", type=_positive_int, default=10, metavar="N", help="contacts shown (10)")
    inspect.set_defaults(handler=command_inspect)

    plot = commands.add_parser("plot", help="a run's energy, multipliers or contacts against time; a sweep's "
                                            "figure against a parameter (matplotlib)",
                               description="energy: kinetic, potential, total, dissipated; multipliers: "
                                           "histogram and per-frame largest/sum; contacts: count per frame. "
                                           "summary (of a sweep directory): --y FIGURE against --x PARAMETER, "
                                           "the mean over seeds with their standard deviation as error bars, "
                                           "a curve per value of the other varying parameters.")
    plot.add_argument("run", metavar="RUN.h5|SWEEP_DIR")
    plot.add_argument("kind", choices=("energy", "multipliers", "contacts", "summary"))
    plot.add_argument("out", metavar="OUT.png", nargs="?",
                      help="figure (.png, .svg or .pdf); for summary, default SWEEP_DIR/summary_Y_vs_X.png")
    plot.add_argument("--x", metavar="PARAMETER", help="summary: the parameter on the x axis")
    plot.add_argument("--y", metavar="FIGURE", action="append",
                      help="summary: a figure of the scene's summary (or wall_time); repeatable")
    plot.set_defaults(handler=command_plot)

    export = commands.add_parser("export", help="export a run for ParaView (--vtk: .vtp per frame + .pvd)",
                                 description="Write DIR/STEM.pvd and one .vtp per frame and part: spheres with "
                                             "radius, velocity; contacts with impulse, force, gap. STEM is the "
                                             "run file's name. Exporting again to DIR replaces the series: the "
                                             "STEM_*.vtp files the new .pvd does not list are removed; other "
                                             "files in DIR are left alone.")
    export.add_argument("run", metavar="RUN.h5")
    export.add_argument("directory", metavar="DIR")
    export.add_argument("--vtk", action="store_true", help="VTK XML PolyData series (the only format)")
    export.add_argument("--every", type=_positive_int, default=1, metavar="K", help="every K-th frame")
    export.add_argument("--quiet", action="store_true", help="no progress bar")
    export.set_defaults(handler=command_export)
    from .packing_cli import add_parser as add_pack_parser
    add_pack_parser(commands)  # granular pack box|cylinder (granular.packing_cli)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``granular`` console script; returns the exit status."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse gives an optional positional (plot's OUT.png) nothing once options
        # follow the first positionals: 'plot DIR summary --x e --y tau OUT.png' puts it here
        if getattr(args, "command", None) == "plot" and args.out is None and len(extra) == 1 \
                and not extra[0].startswith("-"):
            args.out, extra = extra[0], []
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exit:          # --help, --version, or a one-line usage error
        return exit.code if isinstance(exit.code, int) else USAGE
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return USAGE
    try:
        return _handle(args)
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """The reader of our output went away (``granular scenes | head -1``): stop quietly,
    as Unix tools do, with the status of a process killed by SIGPIPE (128 + 13).

    stdout is pointed at /dev/null first, so that the interpreter's final flush of
    the unwritten output does not raise the error again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):    # a stdout without a descriptor (a test's capture)
        pass
    return BROKEN_PIPE


def _handle(args) -> int:
    """Run the command's handler; a failure becomes one line on stderr and its status."""
    prog = f"granular {args.command}"
    if args.debug:
        status = args.handler(args)
        sys.stdout.flush()
        return status
    from .errors import GranularError, InvalidInputError, SolverError, TrajectoryFileError

    try:
        status = args.handler(args)
        sys.stdout.flush()           # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        raise
    except CommandError as error:
        message, status = str(error), error.status
    except TrajectoryFileError as error:
        message, status = str(error), FILE_ERROR
    except InvalidInputError as error:
        message, status = str(error), USAGE
    except (SolverError, GranularError) as error:
        message, status = str(error), FAILURE
    except KeyboardInterrupt:
        message, status = "interrupted", INTERRUPTED
    except OSError as error:
        where = f" {error.filename}" if error.filename else ""
        message, status = f"cannot access{where}: {error.strerror or error}", FILE_ERROR
    sys.stderr.write(f"{prog}: error: {message.splitlines()[0] if message else 'failed'}\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
