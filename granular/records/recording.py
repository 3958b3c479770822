"""What a run records: its frames (`Frame`), where they go (`Recorder`: a list in
memory or a run file written as they come, with checkpoints of the warm state), and
the summary of the steps that missed a solver tolerance (`missed_summary`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..constraints import Contacts
from .trajectory import Trajectory

if TYPE_CHECKING:
    from ..simulation import Simulation


@dataclass(frozen=True)
class Frame:
    """A recorded frame: a StepResult's fields plus the cumulative dissipation."""

    t: float
    positions: np.ndarray
    velocities: np.ndarray
    radii: np.ndarray | None
    kinetic_energy: float
    potential_energy: float
    cumulative_dissipation: float
    contacts: Contacts
    angular_velocities: np.ndarray | None = None
    orientations: np.ndarray | None = None
    ids: np.ndarray | None = None  # the spheres' ids (N,) in a world with inlets or outlets
    flow: np.ndarray | None = None  # their counters (granular.spheres.flows.FlowCounters.as_row)
    wall_work: float | None = None  # cumulative work of the moving walls (J), when some move
    closure_energy: float | None = None  # cumulative energy of the gap closure (J), when it acts


#: Steps listed one by one in a run file's summary of missed tolerances (the file's
#: meta is one HDF5 attribute, which must stay small); the count and the worst step
#: are kept whatever their number.
LISTED_MISSED_STEPS = 100


def missed_summary(missed_steps: list) -> dict:
    """``{"count", "worst", "first"}`` of ``(t, residual, missed)`` records: how many
    steps kept a best answer short of its tolerance, the one that missed most and the
    first `LISTED_MISSED_STEPS` of them."""
    worst = max(missed_steps, key=lambda step: step[2])
    return {
        "count": len(missed_steps),
        "worst": list(worst),
        "first": [list(step) for step in missed_steps[:LISTED_MISSED_STEPS]],
    }


class Recorder:
    """Where `Simulation.run` puts its frames: a list, or a `granular.records.streaming.FrameWriter`
    (then only the last frame stays in memory), with the checkpoints of ``checkpoint_every``."""

    def __init__(self, simulation: Simulation, writer, record_every: int, checkpoint_every: float | None):
        self.simulation, self.writer = simulation, writer
        self.record_every, self.checkpoint_every = record_every, checkpoint_every
        self.frames, self.last = [], None
        self.checkpoint_t = simulation.t

    def add(self, frame: Frame) -> None:
        self.last = frame
        if self.writer is None:
            self.frames.append(frame)
            return
        simulation = self.simulation
        self.writer.append(frame, *simulation.wall_poses(frame.t))
        every = self.checkpoint_every
        # the warm state is the simulation's, so a checkpoint goes with a frame of its current time
        if every is not None and frame.t == simulation.t and frame.t - self.checkpoint_t >= every * (1 - 1e-9):
            self.writer.write_warm_state(simulation.warm_state())
            self.checkpoint_t = frame.t

    def finish(self, own: bool, read_back: bool, fast: Trajectory | None = None) -> Trajectory | None:
        """The run's trajectory: the frames in memory; else, for a file the run opened,
        the warm state written, the file closed and read back (or None)."""
        simulation = self.simulation
        if self.writer is None:
            return fast if fast is not None else simulation.trajectory_of(self.frames, self.record_every)
        if fast is not None:
            self.writer.extend(fast)  # its first frame, already written, is skipped
            self.writer.update_meta({"violation": fast.meta["violation"]})
        if not own:
            return None
        self.writer.update_meta(simulation.run_meta(self.record_every))  # the masses at the end
        if self.writer.last_t == simulation.t:
            self.writer.write_warm_state(simulation.warm_state())
        self.writer.close()
        return Trajectory.load(self.writer.path) if read_back else None
