"""Running a simulation for the command line and for sweeps, keeping the frames on failure.

`run_simulation` advances a `Simulation` in chunks of `Simulation.run`, checks every
step for a non-finite state or energy (`NonFiniteStateError`, a blow-up) and, when a
step raises, returns the frames computed before it with the error, so that
``granular run`` can save them to ``RUN.partial.h5`` and a sweep can record the
failure and go on. `Trajectory.concatenate` joins the chunks into one trajectory.
"""

from __future__ import annotations


import numpy as np

from ..errors import GranularError, NonFiniteStateError, TrajectoryFileError
from ..records.files import atomic_path
from ..records.stated_end import open_for_reading
from ..records.streaming import FrameWriter
from ..tolerances import ENERGY_ROUNDOFF
from ..records.trajectory import Trajectory
from ..records.warm_state import RESTART_GROUP, read_value, write_value


def check_finite(result, step: int) -> None:
    """Raise `NonFiniteStateError` unless positions, velocities, radii and energies
    of a `StepResult` are all finite."""
    arrays = (
        result.positions,
        result.velocities,
        result.radii,
        (result.kinetic_energy, result.potential_energy, result.dissipated_energy),
    )
    if not all(np.all(np.isfinite(a)) for a in arrays if a is not None):
        raise NonFiniteStateError(float(result.t), step)


def run_simulation(simulation, n_steps: int, record_every: int, bar=None, chunk_steps: int = 20, debug: bool = False):
    """Run ``n_steps`` steps recording every ``record_every``-th; keep the frames on failure.

    The run is made of `Simulation.run` calls of about ``chunk_steps`` steps (a
    multiple of ``record_every``); if a step raises, or returns a non-finite state
    or energy (`NonFiniteStateError`), the frames of the completed chunks are
    returned with the error (and, for a `GranularError` such as a jam, those of the
    failing chunk up to its last successful step), so every frame returned is finite. ``bar``, if given,
    has ``update(steps_done, t, active_contacts)`` (`ProgressBar`). Returns
    ``(trajectory, error or None)``. Errors that are not a `GranularError` (a bug)
    are returned too, unless ``debug``; ``KeyboardInterrupt`` stops the run the
    same way.
    """

    chunk = max(1, chunk_steps // record_every) * record_every
    parts, done, error = [], 0, None
    while True:
        steps = min(chunk, n_steps - done)
        offset = done

        def progress(step, _, result, offset=offset):
            check_finite(result, offset + step)
            if bar is not None:
                bar.update(offset + step, result.t, int(np.count_nonzero(result.contacts.impulse > 0)))

        try:
            parts.append(simulation.run(steps=steps, record_every=record_every, progress=progress))
        except (Exception, KeyboardInterrupt) as failure:  # keep what was computed; --debug re-raises
            expected = (GranularError, NonFiniteStateError, KeyboardInterrupt)
            if debug and not isinstance(failure, expected):
                raise
            error = failure
            # a GranularError from a step (a jam) carries the chunk's frames up to the
            # last step that succeeded (Simulation.run); a blow-up found by check_finite
            # does not, so every frame kept is finite
            partial = getattr(failure, "trajectory", None)
            if partial is not None and len(partial) > 1:
                parts.append(partial)
            break
        done += steps
        if done >= n_steps:
            break
    if not parts:
        return None, error
    trajectory = Trajectory.concatenate(parts)
    if error is None:  # its last frame is the simulation's state: what a restart continues
        trajectory.warm_state = simulation.warm_state()
    return trajectory, error


def stream_simulation(
    simulation,
    n_steps: int,
    record_every: int,
    path,
    meta: dict,
    previous=None,
    bar=None,
    checkpoint_every: float | None = None,
    debug: bool = False,
):
    """Run ``n_steps`` steps writing each recorded frame to the run file ``path`` as it is
    made (`granular.records.streaming.FrameWriter`), after the frames of ``previous`` (the run
    it continues, whose last frame is the simulation's state); return ``(frames
    written, error or None)``.

    ``meta`` (the scene's provenance) is stored from the start, so that the file of a
    killed run says how to continue it. Every step is checked for a non-finite state
    or energy (`check_finite`) before its frame is written. When the run ends, fails
    or is stopped (`RunInterrupted`), the scheme's warm state at the last frame is
    written if that frame is the simulation's state, and the file is closed. Errors
    are returned as `run_simulation` does (a bug is raised with ``debug``).
    """

    error = None
    writer = FrameWriter(path, simulation.system.describe(), {**simulation.run_meta(record_every), **meta})
    try:
        if previous is not None:
            writer.extend(previous)

        def progress(step, _, result):
            check_finite(result, step)
            if bar is not None:
                bar.update(step, result.t, int(np.count_nonzero(result.contacts.impulse > 0)))

        try:
            simulation.run(
                steps=n_steps,
                record_every=record_every,
                progress=progress,
                out=writer,
                checkpoint_every=checkpoint_every,
            )
        except (Exception, KeyboardInterrupt) as failure:  # the frames are on disk; --debug re-raises
            if debug and not isinstance(failure, (GranularError, NonFiniteStateError, KeyboardInterrupt)):
                raise
            error = failure
        writer.update_meta(simulation.run_meta(record_every))
        if writer.last_t == simulation.t:
            writer.write_warm_state(simulation.warm_state())
    finally:
        writer.close()
    return writer.frames, error


def restart_frame(trajectory) -> int:
    """The frame a run continues from: the one its stored warm state belongs to (a
    checkpoint, `Simulation.run`'s ``checkpoint_every``), so that the continuation
    repeats the uninterrupted run to round-off; the last frame when there is no
    warm state (the first step then starts cold)."""
    state = getattr(trajectory, "warm_state", None)
    if state:
        matches = np.flatnonzero(np.asarray(trajectory.t) == state.get("t"))
        if matches.size:
            return int(matches[-1])
    return len(trajectory) - 1


def plural(count: int, noun: str) -> str:
    """``"1 sphere"``, ``"2 spheres"`` (nouns whose plural adds an s)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def concatenate(parts: list):
    """Former name of `Trajectory.concatenate` (tests/test_restart.py still calls it)."""

    return Trajectory.concatenate(parts)


def failure_reason(error: BaseException) -> str:
    """One line saying why a run failed: the message of a granular error or a blow-up,
    the exception's type and message for anything else (a bug)."""

    known = isinstance(error, (GranularError, NonFiniteStateError))
    text = str(error) if known else f"{type(error).__name__}: {error}"
    lines = text.strip().splitlines()
    return lines[0] if lines else type(error).__name__


def check_run_file(trajectory, path) -> None:
    """Refuse a loaded run file that cannot be drawn or read honestly.

    Every command that reads a run file calls this (`granular.cli.common.load_run_file`), so a
    damaged file is refused the same way everywhere (`TrajectoryFileError`, exit
    status 3) instead of giving a blank picture or a table of NaN: a sphere run
    must have its radii, one row per frame and sphere, and every position,
    velocity, radius, energy and impulse of every frame must be finite. The message
    names the first bad frame, and its time when that is finite.
    """

    frames = len(trajectory)
    positions = np.asarray(trajectory.positions)
    if trajectory.system.get("kind") == "spheres":
        radii = trajectory.radii
        expected = positions.shape[:2] if positions.ndim == 3 else None
        if radii is None or expected is None or np.shape(radii) != expected:
            found = "none" if radii is None else f"shape {np.shape(radii)}"
            raise TrajectoryFileError(
                f"{path} is a sphere run without per-frame radii (expected "
                f"{expected[0] if expected else frames} x N, found {found})"
            )
    bad = first_non_finite_frame(trajectory)
    if bad is not None:
        k, name = bad
        t = float(trajectory.t[k]) if np.isfinite(trajectory.t[k]) else None
        when = f" (t = {t:.6g} s)" if t is not None else ""
        raise TrajectoryFileError(
            f"{path}: frame {k}{when} has a non-finite {name} (NaN or inf); the file is damaged or the run blew up"
        )


def first_non_finite_frame(trajectory):
    """``(frame, what)`` of the first frame holding a NaN or inf, or None."""
    per_frame = [
        ("time", trajectory.t),
        ("position", trajectory.positions),
        ("velocity", trajectory.velocities),
        ("radius", trajectory.radii),
        ("kinetic energy", trajectory.kinetic_energy),
        ("potential energy", trajectory.potential_energy),
        ("dissipated energy", trajectory.dissipated_energy),
        ("angular velocity", trajectory.angular_velocities),
        ("orientation", trajectory.orientations),
    ]
    first = None
    # a run whose spheres come and go holds NaN in the columns of absent ids (granular.records.trajectory):
    # an absent sphere is NaN in its whole row, a present one finite
    present = None
    if getattr(trajectory, "varying", False):
        present = np.isfinite(np.asarray(trajectory.positions, float)[:, :, 0])
    per_sphere = {"position", "velocity", "radius", "angular velocity", "orientation"}
    for name, values in per_frame:
        if values is None:
            continue
        values = np.asarray(values, float)
        if present is not None and name in per_sphere:
            rows = values.reshape(values.shape[0], values.shape[1], -1)
            finite = np.where(present, np.isfinite(rows).all(axis=2), np.isnan(rows).all(axis=2)).all(axis=1)
        else:
            finite = (
                np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
                if values.size
                else np.ones(values.shape[0], bool)
            )
        bad = np.flatnonzero(~finite)
        if bad.size and (first is None or bad[0] < first[0]):
            first = (int(bad[0]), name)
    for k, contacts in enumerate(trajectory.contacts):
        if first is not None and k >= first[0]:
            break
        if not np.all(np.isfinite(np.asarray(contacts.impulse, float))):
            first = (k, "contact impulse")
    return first


def dissipation_text(trajectory, k: int = -1, digits: int = 4, since: str = "") -> str:
    """How to print the cumulative "dissipated" energy of frame ``k`` honestly.

    `StepResult.dissipated_energy` is ``KE(v) - KE(u^{n+1})``, the kinetic energy the
    contact impulses remove. It is not a dissipation when the impulses do work:
    spheres that grow push their neighbours apart (``growing_spheres`` printed
    "dissipated -0.01474 J"), and a contact bouncing under a force may take the
    force's work (`granular.records.results.StepResult`). So a negative total is printed
    as the energy the contacts supplied, attributed to growth when the radii
    changed; a negative total within round-off (`ENERGY_ROUNDOFF` of the energy
    scale per step taken) is printed as 0.
    """

    k = int(k) % len(trajectory)
    value = float(trajectory.dissipated_energy[k])
    scale = float(np.max(np.abs(trajectory.kinetic_energy[: k + 1]) + np.abs(trajectory.potential_energy[: k + 1])))
    dt = float(trajectory.meta.get("dt", 0.0)) or 1.0
    steps = max(1.0, (float(trajectory.t[k]) - float(trajectory.t[0])) / dt)
    if value >= -ENERGY_ROUNDOFF * scale * steps:
        return f"dissipated{since} {max(value, 0.0) + 0.0:.{digits}g} J"  # + 0.0: never "-0"
    radii = trajectory.radii
    grew = radii is not None and not np.array_equal(np.asarray(radii[0]), np.asarray(radii[k]))
    source = "growth (swelling spheres push their neighbours)" if grew else "contacts (impulses working with forces)"
    return f"energy supplied{since} by {source} {-value:.{digits}g} J"


# -- run files with the scheme's warm state ------------------------------------------------
def save_run(trajectory, path) -> None:
    """`Trajectory.save`, plus the ``warm_state`` the trajectory carries (if any) in
    the group `RESTART_GROUP`, all written under a temporary name and renamed at
    once: a restart from the file continues bit for bit (`Simulation.from_trajectory`).
    `Trajectory.load` ignores the group."""
    import h5py

    state = getattr(trajectory, "warm_state", None)
    with atomic_path(path) as temporary:
        trajectory.save(temporary)
        if state:
            with h5py.File(temporary, "a") as h5:
                group = h5.create_group(RESTART_GROUP)
                group.attrs["t"], group.attrs["scheme"] = float(state["t"]), str(state["scheme"])
                for name, value in state["values"].items():
                    write_value(group, name, value)


def load_run(path):
    """`Trajectory.load` with the checks of `check_run_file` and the stored warm state."""
    trajectory = Trajectory.load(path)
    check_run_file(trajectory, path)
    try:
        with open_for_reading(path) as h5:
            if RESTART_GROUP in h5:
                group = h5[RESTART_GROUP]
                trajectory.warm_state = {
                    "t": float(group.attrs["t"]),
                    "scheme": str(group.attrs["scheme"]),
                    "values": {name: read_value(group[name]) for name in group},
                }
    except (OSError, KeyError, ValueError) as error:
        raise TrajectoryFileError(f"cannot read the restart state of {path}: {error}") from None
    return trajectory
