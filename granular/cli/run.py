"""``granular run``: run a scene, or continue a run file, and save the trajectory.

The run itself is `granular.runs.run_simulation` (chunks, finiteness checks, the
frames kept on failure); this module turns the arguments into a `_Job`, joins a
continued run to its previous frames (`Trajectory.concatenate`), saves the run (to
``RUN.partial.h5`` if it failed) and prints its summary.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from .. import scenes
from ..runs import ProgressBar, active_counts, dissipation_text, failure_reason, run_simulation
from .arguments import add_command, add_quiet, add_run_settings, add_scene_argument, positive_float
from .common import FAILURE, FILE_ERROR, INTERRUPTED, USAGE, CommandError, check_run_suffix, load_run_file
from .render import render_run

#: The line of 'granular --help', and the text of 'granular run --help'.
HELP = "run a scene and save the trajectory (HDF5)"
DESCRIPTION = """Run a scene's build() with Simulation.run and save the trajectory. Defaults come from the scene's
DEFAULTS."""


def add_parser(commands) -> None:
    parser = add_command(commands, "run", command_run, HELP, DESCRIPTION)
    add_scene_argument(parser, nargs="?")
    parser.add_argument("--from", dest="restart", metavar="RUN.h5",
                        help="continue this run from its last frame for --duration more seconds (its scene is "
                             "found by name in the scenes directories); the whole run is written to --out, "
                             "by default RUN.h5 itself")
    add_run_settings(parser)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="set a scene parameter (repeatable; 'granular scenes SCENE' lists them)")
    parser.add_argument("--out", metavar="RUN.h5", help="trajectory file (default runs/SCENE.h5); a failed or "
                                                        "interrupted run is saved to RUN.partial.h5 instead")
    parser.add_argument("--render", metavar="OUT", help="also render the run to OUT (.mp4, .gif or .png)")
    parser.add_argument("--fps", type=positive_float, default=25.0, help="frames per second of --render (25)")
    add_quiet(parser)


def command_run(args) -> int:
    from ..trajectory import Trajectory

    if (args.scene is None) == (args.restart is None):
        raise CommandError("give a SCENE to run, or --from RUN.h5 to continue a run (not both)", USAGE)
    if args.render:
        from ..render.output import output_kind

        output_kind(args.render)     # an unsupported extension is refused before the run, not after
    job = _continued_run(args) if args.restart else _new_run(args)
    check_run_suffix(job.out)
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
        trajectory = Trajectory.concatenate([job.previous, trajectory])
        if state is not None:
            trajectory.warm_state = state
    _save_and_report(args, job, trajectory, error, seconds)
    if args.render:
        render_run(trajectory, args.render, forces=False, frame=None, every=1, fps=args.fps, quiet=args.quiet,
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
    path = scenes.resolve_scene(args.scene)
    name = path.stem
    module = scenes.load_scene(path)
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
    from ..simulation import Simulation

    if args.duration is None:
        raise CommandError("--from needs --duration T: how much longer to run (s)", USAGE)
    fixed = [option for option, value in (("--set", args.set), ("--dt", args.dt), ("--every", args.every)) if value]
    if fixed:
        raise CommandError(f"{', '.join(fixed)} cannot change a continued run: it keeps the stored scene "
                           "parameters, dt and recording", USAGE)
    previous = load_run_file(args.restart)
    meta = previous.meta
    simulation = Simulation.from_trajectory(previous)
    name = str(meta["scene"])
    path = scenes.resolve_scene(name)
    module = scenes.load_scene(path)
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
    from ..runs import save_run

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
