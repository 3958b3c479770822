"""``granular run``: run a scene, or continue a run file, and save the trajectory.

The run itself is `granular.app.runs.stream_simulation`: each recorded frame is written
to ``RUN.partial.h5`` as it is made (`granular.records.streaming`), after the frames of the
run it continues, if any; the file becomes ``RUN.h5`` (renamed, atomically) when the
run completes, or ends the way its scene expects (`granular.scenes.expected_errors`),
and stays ``RUN.partial.h5`` when it fails, is stopped (SIGINT, SIGTERM: exit
status 128 + the signal's number) or is killed. This module turns the arguments
into a `_Job` and prints the summary.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .. import scenes
from ..app.runs import (
    dissipation_text,
    failure_reason,
    plural,
    restart_frame,
    stream_simulation,
)
from ..progress import ProgressBar
from ..simulation import Simulation, signal_name
from .arguments import add_command, add_quiet, add_run_settings, add_scene_argument, positive_float
from .common import FAILURE, FILE_ERROR, INTERRUPTED, USAGE, CommandError, check_run_suffix, load_run_file
from .render import render_run
from ..errors import InvalidInputError, RunInterrupted, TimeStepWarning
from ..render.output import output_kind
from ..records.active_contacts import active_counts
from ..records.streaming import update_meta
from ..records.trajectory import Trajectory
from ..schemes.maury import checked_sweep_aim

#: The line of 'granular --help', and the text of 'granular run --help'.
HELP = "run a scene and save the trajectory (HDF5)"
DESCRIPTION = """Run a scene's build() with Simulation.run and save the trajectory. Defaults come from the scene's
DEFAULTS."""


def add_parser(commands) -> None:
    parser = add_command(commands, "run", command_run, HELP, DESCRIPTION)
    add_scene_argument(parser, nargs="?")
    parser.add_argument(
        "--from",
        dest="restart",
        metavar="RUN.h5",
        help="continue this run for --duration more seconds, from its last checkpoint if it has "
        "one before its last frame, else from its last frame; its scene is found by name in "
        "the scenes directories, or given by --scene FILE (or SCENE); the whole run is "
        "written to --out, by default RUN.h5 itself",
    )
    parser.add_argument(
        "--scene",
        dest="scene_file",
        metavar="FILE.py",
        help="with --from: the scene file that made the run (a scene of your own)",
    )
    add_run_settings(parser)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a scene parameter (repeatable; 'granular scenes SCENE' lists them)",
    )
    parser.add_argument(
        "--out",
        metavar="RUN.h5",
        help="trajectory file (default runs/SCENE.h5); frames are "
        "written to RUN.partial.h5 as they are made, which "
        "becomes RUN.h5 when the run completes",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=positive_float,
        metavar="S",
        help="also write the scheme's state every S simulated seconds, so that a run killed "
        "later continues (--from) from there as if never stopped",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first step whose contact solver misses its tolerance (by default the "
        "step keeps the solver's best answer, the run file records it and one warning is "
        "printed)",
    )
    parser.add_argument(
        "--sweep-aim",
        type=float,
        metavar="X",
        help="the fraction of their tolerance, in (0, 1], that the Coulomb sweeps ask of the loaded contacts in "
        "root mean square, every contact being within the tolerance (default 1/8; 1 accepts any answer "
        "within the tolerance)",
    )
    parser.add_argument("--render", metavar="OUT", help="also render the run to OUT (.mp4, .gif or .png)")
    parser.add_argument("--fps", type=positive_float, default=25.0, help="frames per second of --render (25)")
    add_quiet(parser)


def _set_sweep_aim(job: _Job, aim: float) -> None:
    """The Coulomb sweeps' aim of the job's scheme (`MauryScheme`'s ``sweep_aim``), and in
    the options the run file stores from its first frame (``simulation_options``), so
    that a run continued with ``--from`` keeps it; `CommandError` for a scheme without
    sweeps or an aim outside (0, 1]."""
    scheme = job.simulation.scheme
    if not hasattr(scheme, "sweep_aim"):
        raise CommandError(f"--sweep-aim: the scheme {scheme.name!r} has no Coulomb sweeps", USAGE)
    try:
        scheme.sweep_aim = checked_sweep_aim(aim)
    except InvalidInputError as error:
        raise CommandError(f"--sweep-aim: {error}", USAGE) from None
    job.simulation.options["sweep_aim"] = job.settings.options["sweep_aim"] = scheme.sweep_aim


def command_run(args) -> int:
    scene_for_restart = args.scene_file or (args.scene if args.restart else None)
    if args.scene_file and not args.restart:
        raise CommandError("--scene FILE goes with --from RUN.h5; to run a scene file, give it as SCENE", USAGE)
    if args.scene_file and args.scene:
        raise CommandError("give the scene once: SCENE or --scene FILE", USAGE)
    if args.scene is None and args.restart is None:
        raise CommandError("give a SCENE to run, or --from RUN.h5 to continue a run", USAGE)
    if args.render:
        output_kind(args.render)  # an unsupported extension is refused before the run, not after
    job = _continued_run(args, scene_for_restart) if args.restart else _new_run(args)
    if args.strict and hasattr(job.simulation.scheme, "strict"):
        job.simulation.scheme.strict = True  # schemes without the option always stop on a missed tolerance
    if args.sweep_aim is not None:
        _set_sweep_aim(job, args.sweep_aim)
    check_run_suffix(job.out)
    try:
        n_steps = job.simulation.count_steps(job.duration)
    except InvalidInputError as error:
        raise CommandError(str(error), USAGE) from error
    writing = partial_path(job.out)
    if args.restart and writing.resolve() == Path(args.restart).resolve():
        writing = partial_path(writing)  # never write over the run being continued
    bar = ProgressBar(n_steps, enabled=not args.quiet)
    meta = scenes.provenance(job.name, job.path, job.parameters, job.settings)
    warned = []
    start = time.perf_counter()
    try:  # overflow and NaN are reported by check_finite in one line, not as numpy warnings
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("always", TimeStepWarning)
            warnings.showwarning = _time_step_warning_printer(warnings.showwarning, warned, bar)
            frames, error = stream_simulation(
                job.simulation,
                n_steps,
                job.record_every,
                writing,
                meta,
                previous=job.previous,
                bar=bar,
                debug=args.debug,
                checkpoint_every=args.checkpoint_every,
            )
    finally:
        bar.finish()
    seconds = time.perf_counter() - start
    trajectory = Trajectory.load(writing) if frames else None
    expected = error is not None and isinstance(error, scenes.expected_errors(job.module))
    _finish_and_report(args, job, trajectory, error, expected, seconds, writing, warned)
    if args.render and trajectory is not None:
        render_run(
            trajectory, args.render, forces=False, frame=None, every=1, fps=args.fps, quiet=args.quiet, title=job.name
        )
    return 0


def _time_step_warning_printer(show, warned: list, bar):
    """A `warnings.showwarning` printing a `TimeStepWarning` as one line on stderr with
    the suggested ``--dt`` (kept in ``warned``), other warnings as ``show`` does."""

    def printer(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, TimeStepWarning):
            warned.append(message)
            text = f"granular run: warning: {message} (--dt {message.suggested_dt:.2g})"
            bar.write(text)
        else:
            show(message, category, filename, lineno, file, line)

    return printer


class _Job:
    """What ``granular run`` runs: the simulation, for how long, where it goes, and for
    a continued run the frames it continues (``previous``)."""

    def __init__(
        self, name, path, module, parameters, settings, simulation, duration, record_every, out, previous=None
    ):
        self.name, self.path, self.module, self.parameters = name, path, module, parameters
        self.settings, self.simulation, self.duration, self.record_every = settings, simulation, duration, record_every
        self.out, self.previous = out, previous


def _new_run(args) -> _Job:
    path = scenes.resolve_scene(args.scene)
    name = path.stem
    module = scenes.load_scene(path)
    parameters = scenes.parameters_for(module, name, args.set)
    settings = scenes.run_settings(module, args.duration, args.dt, args.every)
    system = scenes.build_system(module, name, parameters)
    simulation = scenes.make_simulation(system, settings)
    out = Path(args.out) if args.out else Path("runs") / f"{name}.h5"
    return _Job(name, path, module, parameters, settings, simulation, settings.duration, settings.record_every, out)


def _continued_run(args, scene_file) -> _Job:
    """``granular run --from RUN.h5 --duration T``: the run's scene rebuilt from the name
    and parameters it stores (`Simulation.from_trajectory`: a scene of the scenes
    directories, or the file ``--scene`` names; never a file the run names), at the
    state of its checkpoint (`granular.app.runs.restart_frame`); the new frames follow
    the earlier ones and the whole run is written to --out (default RUN.h5 itself)."""
    if args.duration is None:
        raise CommandError("--from needs --duration T: how much longer to run (s)", USAGE)
    fixed = [option for option, value in (("--set", args.set), ("--dt", args.dt), ("--every", args.every)) if value]
    if fixed:
        raise CommandError(
            f"{', '.join(fixed)} cannot change a continued run: it keeps the stored scene parameters, dt and recording",
            USAGE,
        )
    previous = load_run_file(args.restart)
    meta = previous.meta
    if scene_file is not None:
        path = scenes.resolve_scene(scene_file)
    elif "scene" not in meta:
        raise CommandError(
            f"{args.restart} does not say which scene made it (a run made in Python): give "
            "--scene FILE.py whose build() makes its system, or continue it in Python with "
            "Simulation.from_trajectory(granular.app.runs.load_run(RUN), world=...)",
            USAGE,
        )
    else:
        try:
            path = scenes.resolve_scene(str(meta["scene"]))
        except scenes.UnknownSceneError as error:
            raise CommandError(
                f"{error}; the run was made from {meta.get('scene_file', 'an unknown file')}: "
                "give --scene FILE.py to continue it with a scene file you trust",
                USAGE,
            ) from None
    k = restart_frame(previous)
    simulation = Simulation.from_trajectory(previous, frame=k, scene_file=path)
    if k != len(previous) - 1:
        sys.stderr.write(
            f"granular run: continuing from the checkpoint at t = {previous.t[k]:.6g} s; the "
            f"{len(previous) - 1 - k} frames after it are computed again\n"
        )
        previous = previous.first_frames(k + 1)
    name = str(meta.get("scene", path.stem))
    module = scenes.load_scene(path)
    parameters = dict(meta.get("parameters") or scenes.declared_parameters(module, name))
    done = float(previous.t[-1]) - simulation.t0
    settings = scenes.RunSettings(
        duration=done + args.duration,
        dt=simulation.dt,
        record_every=int(meta.get("record_every", 1)),
        options=dict(meta.get("simulation_options", {})),
    )
    if "scene_sha256" in meta and scenes.scene_sha256(path) != meta.get("scene_sha256"):
        sys.stderr.write(
            f"granular run: warning: scene file {path} changed since {args.restart} was made; "
            "the continuation uses it as it is now\n"
        )
    out = Path(args.out) if args.out else Path(args.restart)
    return _Job(
        name, path, module, parameters, settings, simulation, args.duration, settings.record_every, out, previous
    )


def _finish_and_report(args, job, trajectory, error, expected, seconds, writing, warned) -> None:
    """Add the summary to the streamed file, rename it to --out if the run completed
    (or ended the way its scene expects), print the summary; raise the `CommandError`
    of a failure or an interrupt once the frames are saved."""
    out, simulation = job.out, job.simulation
    complete = error is None or expected
    figures, summary_error = {}, None
    if trajectory is not None:
        trajectory.meta.update(scenes.provenance(job.name, job.path, job.parameters, job.settings))
        try:  # a failed run's frames have figures too (the packing fraction a jam reached)
            figures = scenes.summarize(job.module, job.name, trajectory)
        except scenes.SceneError as failure:
            summary_error = str(failure)
        extra = dict(summary=figures, wall_time=seconds)
        if error is not None:
            extra["ended" if expected else "failure"] = failure_reason(error)
        try:
            update_meta(writing, extra)
            if complete:
                os.replace(writing, out)
        except OSError as failure:
            raise CommandError(
                f"cannot write {out if complete else writing}: {failure.strerror or failure}", FILE_ERROR
            ) from failure
    saved_to = out if complete else writing
    system = simulation.system
    bodies = getattr(system, "n", None)
    what = plural(bodies, "sphere") if bodies is not None else plural(system.dimension, "coordinate")
    steps = simulation.steps_taken - (0 if job.previous is None else _steps_at(job.previous, simulation))
    continued = "" if job.previous is None else f" continuing {args.restart} from t = {job.previous.t[-1]:.6g} s"
    print(
        f"{job.name}: {what}, {plural(steps, 'step')} of {simulation.dt:g} s in {seconds:.3g} s "
        f"({steps / max(seconds, 1e-9):.3g} steps/s){continued}"
    )
    if trajectory is not None:
        print(
            f"  t = {trajectory.t[-1]:.6g} s, {plural(len(trajectory), 'frame')}, "
            f"{plural(int(active_counts(trajectory)[-1]), 'active contact')}, "
            f"kinetic energy {trajectory.kinetic_energy[-1]:.4g} J, {dissipation_text(trajectory)}"
        )
        if expected:
            print(f"  ended as the scene expects: {failure_reason(error)}")
        print(f"  saved {saved_to}")
        if figures or summary_error:
            print(f"  summary: {scenes.format_figures(figures) if figures else summary_error}")
    for warning in warned:
        print(
            f"  time step: a sphere travelled {warning.travel:.3g} radii in a step; suggested --dt "
            f"{warning.suggested_dt:.2g} (or smaller)"
        )
    if error is not None and not expected:
        saved = (
            f"; the {plural(len(trajectory), 'frame')} before it are in {saved_to} ({out} is left as it was)"
            if trajectory is not None
            else f" ({out} is left as it was)"
        )
        if isinstance(error, RunInterrupted):
            raise CommandError(
                f"stopped by {signal_name(error.signal)} at t = {error.t:.6g} s{saved}", 128 + int(error.signal)
            )
        if isinstance(error, KeyboardInterrupt):
            raise CommandError(f"interrupted at t = {simulation.t:.6g} s{saved}", INTERRUPTED)
        raise CommandError(f"simulation failed: {failure_reason(error)}{saved}", FAILURE)


def _steps_at(trajectory, simulation) -> int:
    """The step count of the last frame of ``trajectory`` in ``simulation``'s time."""
    return int(round((float(trajectory.t[-1]) - simulation.t0) / simulation.dt))


def partial_path(out: Path) -> Path:
    """Where an interrupted or failed run is saved: ``RUN.partial.h5`` next to ``RUN.h5``."""
    return out.with_name(f"{out.stem}.partial{out.suffix}")
