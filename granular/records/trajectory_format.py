"""The trajectory file's format (HDF5): its tag and versions, the contact fields, and
the helpers that write, read and check its arrays (per-id columns, ragged contact
rows, the rotation of version-1 files), apart from the `granular.records.trajectory.Trajectory`
they make up."""

from __future__ import annotations

import numpy as np

from ..errors import TrajectoryFileError

FORMAT = "granular-trajectory"
#: File name endings of a trajectory file (HDF5); `Trajectory.save` refuses others.
SUFFIXES = (".h5", ".hdf5")
VERSION = 2
#: Versions `load` reads; files of version 1 have no rotational fields.
READABLE_VERSIONS = (1, 2)
CONTACT_FIELDS = ("i", "j", "wall", "gap", "normal", "impulse", "tangential_impulse", "rolling_impulse")
#: Contact fields that files of earlier versions may lack (then zeros of width 0).
OPTIONAL_CONTACT_FIELDS = ("rolling_impulse",)
#: The arrays of a trajectory with a row per frame (each None when not recorded), and
#: the run-file dataset that holds each, with an entry per frame along its first axis
#: (``contacts/offsets``, ``contacts/widths/<field>`` and the contact rows aside).
#: Cutting or joining frames cuts or joins each array alike; a reader takes these
#: datasets, and `frames_on_disk` checks the same ones.
FRAME_DATASETS = {
    "t": "t",
    "positions": "positions",
    "velocities": "velocities",
    "radii": "radii",
    "kinetic_energy": "energy/kinetic",
    "potential_energy": "energy/potential",
    "dissipated_energy": "energy/dissipated",
    "angular_velocities": "angular_velocities",
    "orientations": "orientations",
    "wall_forces": "walls/forces",
    "wall_displacements": "walls/displacements",
    "wall_work": "energy/wall_work",
    "closure_energy": "energy/closure_energy",
    "flow": "flow",
    "wall_rotations": "walls/rotations",
}
FRAME_ARRAYS = tuple(FRAME_DATASETS)
#: The frame arrays every run file holds (a file without one is damaged).
REQUIRED_FRAME_ARRAYS = ("t", "positions", "velocities", "kinetic_energy", "potential_energy", "dissipated_energy")
#: The frame arrays `rotation_of` reads (a file from before rotation has none).
ROTATION_ARRAYS = ("angular_velocities", "orientations")


#: What h5py and numpy raise on a damaged file (`Trajectory.load` reports them as a
#: `TrajectoryFileError`): OSError (HDF5 read errors, truncation), KeyError (a missing
#: object), ValueError (JSON, shapes), RuntimeError (HDF5 metadata it cannot decode),
#: TypeError (an attribute of an unknown type), IndexError, OverflowError and
#: MemoryError (a size field claiming a huge array).
READ_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError, OverflowError, MemoryError)


def row_offsets(h5) -> np.ndarray:
    """``/contacts/offsets`` checked: integers from 0, never decreasing (F + 1,)."""
    offsets = np.asarray(h5["contacts/offsets"][()])
    if (
        offsets.ndim != 1
        or offsets.size < 1
        or not np.issubdtype(offsets.dtype, np.integer)
        or offsets[0] != 0
        or np.any(np.diff(offsets) < 0)
    ):
        raise TrajectoryFileError("contacts/offsets are not row offsets (integers from 0, never decreasing)")
    return offsets


def check_structure(trajectory) -> None:
    """Raise `TrajectoryFileError` unless the arrays of a loaded trajectory agree in
    shape (F frames) and hold numbers: what `save` writes, so anything else is a
    damaged file. Values are not checked here: the commands refuse a NaN or inf
    naming its frame (`granular.app.runs.check_run_file`)."""
    frames = trajectory.t.shape[0] if trajectory.t.ndim == 1 else -1
    positions = trajectory.positions

    def fail(what):
        raise TrajectoryFileError(f"{what} (damaged file?)")

    if frames < 0:
        fail(f"t has shape {trajectory.t.shape}, expected (F,)")
    if positions.ndim not in (2, 3) or positions.shape[0] != frames:
        fail(f"positions have shape {positions.shape} for {frames} frames")
    if trajectory.velocities.shape != positions.shape:
        fail(f"velocities have shape {trajectory.velocities.shape}, positions {positions.shape}")
    per_body = positions.shape[:2]
    expected = {
        "radii": per_body,
        "kinetic_energy": (frames,),
        "potential_energy": (frames,),
        "dissipated_energy": (frames,),
        "angular_velocities": per_body + (3,),
        "orientations": per_body + (4,),
    }
    for name, shape in expected.items():
        value = getattr(trajectory, name)
        if value is not None and np.shape(value) != shape:
            fail(f"{name} have shape {np.shape(value)}, expected {shape}")
    for name, count in (("wall_forces", None), ("wall_displacements", len(walls_of(trajectory.system)))):
        value = getattr(trajectory, name)
        if value is not None and (
            np.ndim(value) != 3
            or np.shape(value)[0] != frames
            or np.shape(value)[2] != 3
            or (count is not None and np.shape(value)[1] != count)
        ):
            fail(f"{name} have shape {np.shape(value)}, expected ({frames}, {'S' if count is None else count}, 3)")
    if len(trajectory.contacts) != frames:
        fail(f"{len(trajectory.contacts)} frames of contacts for {frames} frames")
    rotations = trajectory.wall_rotations
    if rotations is not None and (
        np.ndim(rotations) != 4 or np.shape(rotations)[0] != frames or np.shape(rotations)[2:] != (3, 3)
    ):
        fail(f"wall_rotations have shape {np.shape(rotations)}, expected ({frames}, W, 3, 3)")
    for name, shape in (("wall_work", (frames,)), ("closure_energy", (frames,)), ("flow", None)):
        value = getattr(trajectory, name)
        if value is not None and (
            np.shape(value)[:1] != (frames,)
            or (shape is not None and np.shape(value) != shape)
            or (shape is None and np.ndim(value) != 2)
        ):
            fail(f"{name} have shape {np.shape(value)} for {frames} frames")
    for name in FRAME_ARRAYS:
        value = getattr(trajectory, name)
        if value is not None and not np.issubdtype(np.asarray(value).dtype, np.number):
            fail(f"{name} are not numbers (dtype {np.asarray(value).dtype})")
    if not isinstance(trajectory.meta, dict):
        fail(f"meta must be a JSON object, got {type(trajectory.meta).__name__}")


#: The per-sphere arrays of a trajectory (a column per sphere, or per id).
PER_SPHERE = ("positions", "velocities", "radii", "angular_velocities", "orientations")


def by_id(values, ids, width: int) -> np.ndarray:
    """Per-sphere ``values`` (n, ...) of the spheres ``ids`` (n,) placed in the columns of
    their ids among ``width``, NaN elsewhere: (width, ...)."""
    values = np.asarray(values, dtype=float)
    out = np.full((width,) + values.shape[1:], np.nan)
    out[np.asarray(ids, dtype=np.int64)] = values
    return out


def widen(values: np.ndarray, width: int) -> np.ndarray:
    """Per-id arrays (F, w, ...) padded with NaN columns to (F, width, ...)."""
    values = np.asarray(values, dtype=float)
    if values.shape[1] >= width:
        return values
    pad = np.full((values.shape[0], width - values.shape[1]) + values.shape[2:], np.nan)
    return np.concatenate([values, pad], axis=1)


def flow_sizes(system: dict, columns: int) -> tuple[int, int]:
    """``(inlets, outlets)`` of a run's flow counters: from the system's description,
    else (one inlet per counter pair) from the columns."""
    flows = system.get("flows") if isinstance(system, dict) else None
    if isinstance(flows, dict):
        return len(flows.get("inlets", [])), len(flows.get("outlets", []))
    raise TrajectoryFileError(f"flow counters with {columns} columns but no inlets or outlets described")


def walls_of(system) -> list:
    """The walls a system description (`describe`) lists, as dicts."""
    walls = system.get("walls") if isinstance(system, dict) else None
    return [wall for wall in walls if isinstance(wall, dict)] if isinstance(walls, list) else []


def rotation_of(h5, upto=slice(None)) -> tuple:
    """``(angular_velocities, orientations)`` of a file (frames ``upto``): stored ones;
    for a version-1 file of spheres (before rotation) zeros and identities; else None
    (not recorded)."""
    omega = h5["angular_velocities"][upto] if "angular_velocities" in h5 else None
    orientations = h5["orientations"][upto] if "orientations" in h5 else None
    positions = h5["positions"]
    if int(h5.attrs["version"]) == 1 and positions.ndim == 3 and positions.shape[2] == 3:
        frames, n = positions.shape[:2]
        omega = np.zeros((frames, n, 3))
        orientations = np.zeros((frames, n, 4))
        orientations[:, :, 0] = 1.0
    return omega, orientations


def concatenate_rows(parts: list) -> tuple[np.ndarray, np.ndarray | None]:
    """Concatenate per-frame arrays along their contact axis.

    ``parts`` are (m_k,) or (m_k, w_k) arrays. 2-D frames are zero-padded to the
    widest ``w`` (a missing friction impulse is a zero one) and their widths
    returned as (F,) ints, or None when every frame has the same width (nothing to
    restore). Raises `TrajectoryFileError` for frames of different ranks.
    """
    if not parts:
        return np.zeros(0), None
    ranks = {p.ndim for p in parts}
    if len(ranks) != 1 or ranks - {1, 2}:
        raise TrajectoryFileError(f"contact arrays must all be (m,) or all (m, w); got ranks {sorted(ranks)}")
    if ranks == {1}:
        return np.concatenate(parts), None
    widths = np.array([p.shape[1] for p in parts], dtype=np.int64)
    wide = int(widths.max())
    padded = [np.pad(p, ((0, 0), (0, wide - p.shape[1]))) for p in parts]
    return np.concatenate(padded), (None if np.all(widths == wide) else widths)


def jsonable(value):
    """``value`` with NumPy arrays and scalars as lists and numbers, for JSON."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def frames_on_disk(h5, stated: int, offsets: np.ndarray) -> int:
    """The leading frames of a streamed run file (`granular.records.streaming`) whose every
    dataset is on disk: its ``frames`` attribute ``stated``, or fewer; ``offsets`` are
    its contact rows' offsets (`row_offsets`).

    The writer grows every dataset, then sets ``frames``, then flushes. A writer killed
    between two metadata writes of a flush can leave on disk the new ``frames`` and
    some datasets' new extents, but not others' (seen once in 600 kills of a streaming
    run: ``contacts/rolling_impulse`` 12 rows short of ``contacts/offsets``): the frame
    it was flushing is then dropped, as if the kill had come before that flush.
    """
    count = min(stated, offsets.size - 1)
    lengths = [h5[name].shape[0] for name in FRAME_DATASETS.values() if name in h5 and h5[name].shape]
    if "contacts/widths" in h5:
        lengths += [h5["contacts/widths"][name].shape[0] for name in h5["contacts/widths"]]
    count = min([count, *lengths])
    rows = min(h5["contacts"][name].shape[0] for name in CONTACT_FIELDS if name in h5["contacts"])
    while count > 0 and offsets[count] > rows:
        count -= 1
    return count
