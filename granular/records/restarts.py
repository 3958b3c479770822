"""Continuing a run from one of its recorded frames: the state, the scheme's warm
state and rotation, and the spheres present when inlets and outlets changed them
(`granular.simulation.Simulation.from_trajectory`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from ..spheres.flows import FlowCounters

if TYPE_CHECKING:
    from ..simulation import Simulation


def continue_from(simulation: Simulation, trajectory, k: int) -> None:
    """Set the state of frame ``k`` of ``trajectory`` (`granular.simulation.Simulation.from_trajectory`)."""
    steps = (float(trajectory.t[k]) - simulation.t0) / simulation.dt
    if not (steps >= 0 and abs(steps - round(steps)) <= 1e-6 * max(1.0, steps)):
        raise InvalidInputError(
            f"frame {k} is at t = {trajectory.t[k]:.9g} s, not a whole number of steps "
            f"of {simulation.dt:g} s after the scene's start t = {simulation.t0:g} s"
        )
    if simulation.has_flows:
        _set_spheres(simulation, trajectory, k)
    elif getattr(trajectory, "flow", None) is not None:
        raise InvalidInputError("this run had inlets or outlets; the rebuilt world has none")
    shape = simulation.system.state_shape
    positions, velocities = (
        frame_arrays(trajectory, k, "positions"),
        frame_arrays(trajectory, k, "velocities"),
    )
    if positions.shape != tuple(shape) or velocities.shape != tuple(shape):
        raise InvalidInputError(
            f"frame {k} holds a state of shape {positions.shape}; the rebuilt scene's "
            f"is {tuple(shape)} (the scene changed since the run)"
        )
    simulation.steps_taken = int(round(steps))
    # a fresh start of the scheme at the frame (nothing carried), then what it carried there
    simulation.scheme.state = simulation.scheme.init(simulation.t, positions.reshape(-1), velocities.reshape(-1))
    simulation.dissipated_energy = float(trajectory.dissipated_energy[k])
    work = getattr(trajectory, "wall_work", None)
    simulation.wall_work = 0.0 if work is None else float(work[k])
    closure = getattr(trajectory, "closure_energy", None)
    simulation.closure_energy = 0.0 if closure is None else float(closure[k])
    state = getattr(trajectory, "warm_state", None)  # only the last frame's state is stored
    if state and state.get("scheme") == simulation.scheme.name and state.get("t") == float(trajectory.t[k]):
        simulation.set_warm_state(state)
    else:
        _set_rotation(simulation, trajectory, k)


def _set_spheres(simulation: Simulation, trajectory, k: int) -> None:
    """Make the world's spheres those of frame ``k`` of a run with inlets or outlets:
    their ids, radii and masses, and the inlets' and outlets' counters."""
    if getattr(trajectory, "flow", None) is None:
        raise InvalidInputError("this world has inlets or outlets but the run stores no flow counters")
    system = simulation.system
    ids = trajectory.present(k)
    counters = FlowCounters.from_row(trajectory.flow[k], len(system.inlets), len(system.outlets))
    masses = trajectory.meta.get("masses")
    if masses is not None and len(masses) >= counters.ids_assigned:
        system.masses_by_id = np.asarray(masses, dtype=float)[: counters.ids_assigned].copy()
    system.set_spheres(ids, np.asarray(trajectory.radii[k], float)[ids], counters)


def frame_arrays(trajectory, k: int, name: str) -> np.ndarray:
    """``name`` of frame ``k``, of the spheres present in it (in the order of their ids)."""
    value = np.asarray(getattr(trajectory, name)[k], float)
    return value[trajectory.present(k)] if getattr(trajectory, "flow", None) is not None else value


def _set_rotation(simulation: Simulation, trajectory, k: int) -> None:
    """Angular velocities and orientations of frame ``k`` for a scheme that carries them."""
    scheme = simulation.scheme
    if simulation.angular_velocities() is None:
        return
    omega, orientations = trajectory.angular_velocities, trajectory.orientations
    if omega is not None and orientations is not None:
        scheme.set_rotation(
            frame_arrays(trajectory, k, "angular_velocities"),
            frame_arrays(trajectory, k, "orientations"),
        )
        return
    # a run without them: fine only if nothing turns (the scheme's initial rotation stays exact)
    if simulation.system.rotates or np.any(simulation.angular_velocities() != 0):
        raise InvalidInputError(
            "this run did not record angular velocities and orientations, so its turning spheres cannot be continued"
        )
