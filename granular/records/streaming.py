"""Writing a run's frames to its HDF5 file as they are made, and stopping a run on a signal.

`FrameWriter` appends each recorded frame to the file of `granular.records.trajectory`'s
layout (so `Trajectory.load` reads it) and flushes the file after each frame, so
memory stays flat in the number of frames and a process that dies (``kill -9``,
out of memory, a node lost) leaves a file holding every frame up to its last
flush. The differences from a file written at once by `Trajectory.save`:

- every per-frame dataset is chunked and resizable along its first axis
  (``maxshape=(None, ...)``); a per-frame array (positions, velocities, ...) has
  one frame per chunk, gzip-compressed (each chunk is written once); the
  scalars per frame (``t``, energies, ``contacts/offsets``) and the contact rows
  are uncompressed, since their partly filled chunks are written again at each flush;
- the 2-D contact fields (``normal``, ``tangential_impulse``, ``rolling_impulse``)
  are resizable along their width too, and always have ``contacts/widths/<field>``;
- the root attribute ``frames`` is the number of complete frames, written after a
  frame's data and before the flush: a reader takes that many frames and ignores
  rows a later, unflushed frame may have added; ``complete`` is False until the
  writer is closed (True: the run ended, stopped or failed cleanly);
- ``/walls/forces`` is not written: `Trajectory` computes it from the contacts (the
  same numbers); ``/walls/displacements`` is, when a wall moves;
- the scheme's warm state (`Simulation.warm_state`) is written to the group
  `granular.records.warm_state.RESTART_GROUP` at checkpoints and when the writer closes, with
  the time of the frame it belongs to.

The file stays in HDF5's default (earliest) format: its superblock has no "open
for writing" flag, so a file whose writer was killed opens without ``h5clear``.
Between flushes HDF5 keeps the new metadata in its cache, so what is on disk is the
file as of the last flush. A kill during a flush itself (a small fraction of the time
between frames) most often leaves the new metadata on disk and the superblock's end of
allocation stale (``benchmarks/killed_writers.py`` counts how often):
`granular.records.stated_end` reads such a file whole. A kill between two metadata
writes of a flush can leave the frame being flushed in some datasets and not in
others: the reader drops that frame (`granular.records.trajectory_format.frames_on_disk`).
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import numpy as np

from .recording import Frame
from .trajectory_format import FORMAT, VERSION, by_id, jsonable
from .warm_state import RESTART_GROUP, write_value
from ..errors import TrajectoryFileError

#: Rows per chunk of the contact datasets (1-D fields; 2-D fields hold about as many values).
CONTACT_CHUNK_ROWS = 1024
#: Entries per chunk of the per-frame scalars (t, energies, offsets, widths).
SCALAR_CHUNK = 256
_CONTACT_FIELDS = ("i", "j", "wall", "gap", "normal", "impulse", "tangential_impulse", "rolling_impulse")
#: Ids per chunk of a per-sphere dataset of a run whose spheres come and go.
ID_CHUNK = 256
_PER_FRAME = ("positions", "velocities", "radii", "angular_velocities", "orientations")
_ENERGIES = (("kinetic", "kinetic_energy"), ("potential", "potential_energy"), ("dissipated", "cumulative_dissipation"))


class FrameWriter:
    """Append frames to a run file as they are recorded, flushing after each.

    Parameters
    ----------
    path : str or Path
        The run file (``.h5``/``.hdf5``), created or replaced when the writer opens.
    system : dict
        The system's description (`describe()`), stored as the root attribute ``system``.
    meta : dict
        The run's meta (``dt``, ``scheme``, ``record_every``, provenance, ...), stored
        as the root attribute ``meta``; `update_meta` merges more into it.

    A frame (`append`) has the fields of `granular.records.recording.Frame`: ``t`` (s),
    ``positions`` and ``velocities`` (N, 3) or (d,), ``radii`` (N,) or None,
    the three energies (J), ``contacts`` (`Contacts`), ``angular_velocities``
    (N, 3) and ``orientations`` (N, 4) or None; with it, ``wall_displacement`` (W, 3)
    (m) or None. Which optional arrays exist is fixed by the first frame.
    """

    def __init__(self, path, system: dict, meta: dict):
        import h5py

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._h5 = h5py.File(self.path, "w")
        self.meta = dict(meta)
        self._h5.attrs["format"] = FORMAT
        self._h5.attrs["version"] = VERSION
        self._h5.attrs["system"] = json.dumps(system)
        self._h5.attrs["meta"] = json.dumps(jsonable(self.meta))
        self._h5.attrs["frames"] = 0
        self._h5.attrs["complete"] = False
        self.frames = 0  # frames written
        self.rows = 0  # contact rows written
        self.last_t = None  # time of the last frame written (s)
        self._datasets = {}
        self._h5.flush()

    # -- frames -----------------------------------------------------------------------
    def append(self, frame, wall_displacement=None, wall_rotation=None) -> None:
        """Write one frame and flush; a frame at the time of the last one written (the
        first frame of a run continuing the previous one) is skipped."""
        if self.last_t is not None and float(frame.t) == self.last_t:
            return
        h5, k = self._h5, self.frames
        if k == 0:
            self._create(frame, wall_displacement, wall_rotation)
        self._grow("t", k, float(frame.t))
        flow = getattr(frame, "flow", None)
        for name in _PER_FRAME:
            if name in h5:
                value = np.asarray(getattr(frame, name), float)
                if flow is not None:  # spheres in the columns of their ids (granular.records.trajectory)
                    value = by_id(value, frame.ids, int(flow[0]))
                self._grow(name, k, value)
        for group_name, attribute in _ENERGIES:
            self._grow(f"energy/{group_name}", k, float(getattr(frame, attribute)))
        for name in ("wall_work", "closure_energy"):
            if f"energy/{name}" in h5:
                self._grow(f"energy/{name}", k, float(getattr(frame, name)))
        if "flow" in h5:
            self._grow("flow", k, np.asarray(flow, float))
        if "walls/displacements" in h5:
            self._grow("walls/displacements", k, np.asarray(wall_displacement, float))
        if "walls/rotations" in h5:
            self._grow("walls/rotations", k, np.asarray(wall_rotation, float))
        self._append_contacts(frame.contacts)
        self.frames, self.last_t = k + 1, float(frame.t)
        h5.attrs["frames"] = self.frames
        h5.flush()

    def extend(self, trajectory) -> None:
        """Write the frames of a `Trajectory` (the earlier part of a continued run)."""
        displacements, rotations = trajectory.wall_displacements, trajectory.wall_rotations
        for k in range(len(trajectory)):
            ids = trajectory.present(k) if trajectory.varying else None

            def at(name, k=k, ids=ids):
                value = getattr(trajectory, name)
                return None if value is None else value[k] if ids is None else value[k][ids]

            frame = Frame(
                float(trajectory.t[k]),
                at("positions"),
                at("velocities"),
                at("radii"),
                float(trajectory.kinetic_energy[k]),
                float(trajectory.potential_energy[k]),
                float(trajectory.dissipated_energy[k]),
                trajectory.contacts[k],
                at("angular_velocities"),
                at("orientations"),
                ids=ids,
                flow=None if trajectory.flow is None else trajectory.flow[k],
                wall_work=None if trajectory.wall_work is None else float(trajectory.wall_work[k]),
                closure_energy=None if trajectory.closure_energy is None else float(trajectory.closure_energy[k]),
            )
            self.append(
                frame, None if displacements is None else displacements[k], None if rotations is None else rotations[k]
            )

    def _create(self, frame, wall_displacement, wall_rotation=None) -> None:
        h5 = self._h5
        h5.create_dataset("t", shape=(0,), maxshape=(None,), chunks=(SCALAR_CHUNK,), dtype=float)
        flow = getattr(frame, "flow", None)
        for name in _PER_FRAME:
            value = getattr(frame, name, None)
            if value is None:
                continue
            shape = np.shape(value)
            if flow is None:
                h5.create_dataset(
                    name,
                    shape=(0,) + shape,
                    maxshape=(None,) + shape,
                    chunks=(1,) + shape,
                    dtype=float,
                    compression="gzip",
                    compression_opts=4,
                    shuffle=True,
                )
            else:  # a column per id, more as spheres are inserted; NaN where a sphere is absent
                h5.create_dataset(
                    name,
                    shape=(0, 0) + shape[1:],
                    maxshape=(None, None) + shape[1:],
                    chunks=(1, ID_CHUNK) + shape[1:],
                    dtype=float,
                    fillvalue=np.nan,
                    compression="gzip",
                    compression_opts=4,
                    shuffle=True,
                )
        for group_name, _ in _ENERGIES:
            h5.create_dataset(f"energy/{group_name}", shape=(0,), maxshape=(None,), chunks=(SCALAR_CHUNK,), dtype=float)
        for name in ("wall_work", "closure_energy"):
            if getattr(frame, name, None) is not None:
                h5.create_dataset(f"energy/{name}", shape=(0,), maxshape=(None,), chunks=(SCALAR_CHUNK,), dtype=float)
        if flow is not None:
            h5.create_dataset(
                "flow", shape=(0, len(flow)), maxshape=(None, len(flow)), chunks=(SCALAR_CHUNK, len(flow)), dtype=float
            )
        if wall_displacement is not None:
            shape = np.shape(wall_displacement)
            h5.create_dataset(
                "walls/displacements",
                shape=(0,) + shape,
                maxshape=(None,) + shape,
                chunks=(max(1, SCALAR_CHUNK // max(1, int(np.prod(shape)))),) + shape,
                dtype=float,
            )
        if wall_rotation is not None:
            shape = np.shape(wall_rotation)
            h5.create_dataset(
                "walls/rotations",
                shape=(0,) + shape,
                maxshape=(None,) + shape,
                chunks=(max(1, SCALAR_CHUNK // max(1, int(np.prod(shape)))),) + shape,
                dtype=float,
            )
        offsets = h5.create_dataset(
            "contacts/offsets", shape=(1,), maxshape=(None,), chunks=(SCALAR_CHUNK,), dtype=np.int64
        )
        offsets[0] = 0
        for name in _CONTACT_FIELDS:
            value = np.asarray(getattr(frame.contacts, name))
            if value.ndim == 1:
                h5.create_dataset(
                    f"contacts/{name}", shape=(0,), maxshape=(None,), chunks=(CONTACT_CHUNK_ROWS,), dtype=value.dtype
                )
            else:
                h5.create_dataset(
                    f"contacts/{name}",
                    shape=(0, value.shape[1]),
                    maxshape=(None, None),
                    chunks=(CONTACT_CHUNK_ROWS // 4, 4),
                    dtype=value.dtype,
                )
                h5.create_dataset(
                    f"contacts/widths/{name}", shape=(0,), maxshape=(None,), chunks=(SCALAR_CHUNK,), dtype=np.int64
                )

    def _dataset(self, name: str):
        """The open dataset ``name`` (kept, rather than looked up at every frame)."""
        if name not in self._datasets:
            self._datasets[name] = self._h5[name]
        return self._datasets[name]

    def _grow(self, name: str, k: int, value) -> None:
        dataset = self._dataset(name)
        dataset.resize(k + 1, axis=0)
        value = np.asarray(value)
        if dataset.ndim >= 2 and value.ndim >= 1 and value.shape[0] > dataset.shape[1]:
            dataset.resize(value.shape[0], axis=1)  # more ids (granular.spheres.flows)
        _write_block(dataset, k, np.asarray(value)[None])

    def _append_contacts(self, contacts) -> None:
        start = self.rows
        m = len(contacts)
        for name in _CONTACT_FIELDS:
            dataset = self._dataset(f"contacts/{name}")
            value = np.asarray(getattr(contacts, name))
            if value.ndim != dataset.ndim or (value.ndim == 2 and value.shape[0] != m):
                raise TrajectoryFileError(
                    f"contacts/{name} of frame {self.frames} has shape {value.shape}; "
                    f"the run's first frame had {dataset.ndim} axes"
                )
            dataset.resize(start + m, axis=0)
            if value.ndim == 2:
                if value.shape[1] > dataset.shape[1]:
                    dataset.resize(value.shape[1], axis=1)
                if m and value.shape[1]:
                    _write_block(dataset, start, value)
                self._grow(f"contacts/widths/{name}", self.frames, int(value.shape[1]))
            elif m:
                _write_block(dataset, start, value)
        self.rows = start + m
        self._grow("contacts/offsets", self.frames + 1, self.rows)

    # -- meta, checkpoints, closing -----------------------------------------------------
    def update_meta(self, meta: dict) -> None:
        """Merge ``meta`` into the stored meta and flush."""
        self.meta.update(meta)
        self._h5.attrs["meta"] = json.dumps(jsonable(self.meta))
        self._h5.flush()

    def write_warm_state(self, state: dict) -> None:
        """Store ``state`` (`Simulation.warm_state`, taken at the time of the last frame
        written) in the restart group, replacing the previous one, and flush."""

        h5 = self._h5
        if RESTART_GROUP in h5:
            del h5[RESTART_GROUP]
        group = h5.create_group(RESTART_GROUP)
        for name, value in state["values"].items():
            write_value(group, name, value)
        group.attrs["scheme"] = str(state["scheme"])
        group.attrs["t"] = float(state["t"])  # last: a group without "t" is ignored by readers
        h5.flush()

    def close(self) -> None:
        """Mark the file complete and close it (idempotent)."""
        if self._h5 is None:
            return
        self._h5.attrs["complete"] = True
        self._datasets = {}
        self._h5.close()
        self._h5 = None

    @property
    def closed(self) -> bool:
        return self._h5 is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _write_block(dataset, row: int, block: np.ndarray) -> None:
    """Write ``block`` into ``dataset`` at rows ``row:row + len(block)`` from column 0,
    through h5py's low-level calls: ``dataset[k] = value`` builds a selection that the
    dataset keeps for each new index, so memory would grow with the frames written."""
    from h5py import h5s

    block = np.ascontiguousarray(block, dtype=dataset.dtype)
    space = dataset.id.get_space()
    space.select_hyperslab((row,) + (0,) * (block.ndim - 1), block.shape)
    dataset.id.write(h5s.create_simple(block.shape), space, block)


def frames_written(path) -> int:
    """Frames the writer of the run file at ``path`` has flushed so far (its ``frames``
    attribute), read as a second process must while the writer holds the file open:
    without HDF5's file locking. 0 while the file is not there or not readable yet (a
    flush under way). For a monitor of a run (a scheduler's hook, a progress page)."""
    import h5py

    try:
        with h5py.File(path, "r", locking=False) as h5:
            return int(h5.attrs.get("frames", 0))
    except (OSError, KeyError):
        return 0


def update_meta(path, meta: dict) -> None:
    """Merge ``meta`` into the meta attribute of the run file at ``path`` (a closed file)."""
    import h5py

    with h5py.File(path, "a") as h5:
        stored = json.loads(h5.attrs["meta"])
        stored.update(meta)
        h5.attrs["meta"] = json.dumps(jsonable(stored))


# -- stopping on a signal ---------------------------------------------------------------------
#: The signals that stop a run at the end of its current step: Ctrl-C, and what a
#: batch scheduler (Slurm, PBS, SGE) sends before it kills a job.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Catches `STOP_SIGNALS` while active (``with StopRequest() as stop:``): the first
    signal sets ``stop.signal`` (its number), which a run checks after each step; a
    second one raises `KeyboardInterrupt` at once (a step that takes too long can
    still be abandoned). Outside the main thread (a Dask worker) it installs
    nothing: signals are delivered to the main thread only."""

    def __init__(self):
        self.signal = None
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for number in STOP_SIGNALS:
                try:
                    self._previous[number] = signal.signal(number, self._handle)
                except (ValueError, OSError):  # not allowed here (an embedded interpreter)
                    pass
        return self

    def _handle(self, number, frame):
        if self.signal is not None:
            raise KeyboardInterrupt
        self.signal = number

    def __exit__(self, *exc):
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous = {}
        return False
