"""Trajectory: the recorded frames of a run, saved to and loaded from one HDF5 file.

Arrays have a leading frame axis F. For a `SphereWorld`, positions and velocities
are (F, N, 3) (m, m/s) and radii (F, N) (m); for a `ConstrainedSystem` they are
(F, d). Contacts vary in number from frame to frame: they are stored as
concatenated arrays with ``offsets`` (F + 1,), frame k owning rows
``offsets[k]:offsets[k+1]``.

HDF5 layout (h5py, imported only here)::

    /            attrs: format="granular-trajectory", version, system (JSON), meta (JSON)
    /t /positions /velocities [/radii] [/masses]
    /energy/kinetic /energy/potential /energy/dissipated
    /contacts/offsets /contacts/{i,j,wall,gap,normal,impulse,tangential_impulse,rolling_impulse}
    [/contacts/widths/<field>]

Per-contact vectors (``normal``, ``tangential_impulse``) may differ in width from
frame to frame: a step with friction stores ``(m, s)`` tangential impulses, a
frictionless step of the same run ``(m, 0)``, the empty first frame ``(0, 0)``. They
are stored zero-padded to the widest frame, and ``/contacts/widths/<field>`` (F,)
gives each frame's own width, so `load` returns every frame with its shape.

``energy/dissipated`` is cumulative: the energy removed by contact impulses from
the start of the run to each frame (J).

Rotation (version 2): ``/angular_velocities`` (F, N, 3) (rad/s, world frame) and
``/orientations`` (F, N, 4) (unit quaternions ``(w, x, y, z)``, body to world) when
recorded. A version-1 file (written before spheres turned) loads with ``omega = 0``
and identity orientations, which is what its spheres had; a version-2 file without
them (frames that did not carry them) loads with None: not recorded, not zero.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .constraints import Contacts
from .drawing import check_description
from .errors import TrajectoryFileError
from .files import atomic_path

FORMAT = "granular-trajectory"
VERSION = 2
#: Versions `load` reads; files of version 1 have no rotational fields.
_READABLE_VERSIONS = (1, 2)
_CONTACT_FIELDS = ("i", "j", "wall", "gap", "normal", "impulse", "tangential_impulse", "rolling_impulse")
#: Contact fields that files of earlier versions may lack (then zeros of width 0).
_OPTIONAL_CONTACT_FIELDS = ("rolling_impulse",)


@dataclass
class Trajectory:
    """Recorded frames of a run.

    Attributes
    ----------
    t : (F,) times (s).
    positions, velocities : (F, N, 3) or (F, d).
    radii : (F, N) or None.
    kinetic_energy, potential_energy : (F,) (J).
    dissipated_energy : (F,) cumulative contact dissipation since the start (J).
    contacts : list of F `Contacts`.
    system : dict describing the system for renderers (``system["kind"]``).
    meta : dict with ``dt``, ``scheme``, ``solver``, ``masses`` (spheres), ...
    angular_velocities : (F, N, 3) (rad/s) or None (not recorded).
    orientations : (F, N, 4) unit quaternions ``(w, x, y, z)`` or None (not recorded).
    """

    t: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    radii: np.ndarray | None
    kinetic_energy: np.ndarray
    potential_energy: np.ndarray
    dissipated_energy: np.ndarray
    contacts: list = field(default_factory=list)
    system: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    angular_velocities: np.ndarray | None = None
    orientations: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def total_energy(self) -> np.ndarray:
        """Kinetic plus potential energy per frame (J)."""
        return self.kinetic_energy + self.potential_energy

    @property
    def n_contacts(self) -> np.ndarray:
        """Number of active contacts (positive impulse) per frame."""
        return np.array([int(np.count_nonzero(c.impulse > 0.0)) for c in self.contacts])

    @staticmethod
    def from_frames(frames: list, system: dict, meta: dict) -> "Trajectory":
        """Build from a list of `StepResult`-like records (with ``cumulative_dissipation``).

        ``angular_velocities`` and ``orientations`` are kept when every frame has them
        (`StepResult` of spheres), else left None (not recorded)."""
        radii = None if frames[0].radii is None else np.stack([f.radii for f in frames])

        def optional(name):
            values = [getattr(f, name, None) for f in frames]
            return None if any(v is None for v in values) else np.stack(values)

        return Trajectory(
            t=np.array([f.t for f in frames]),
            positions=np.stack([f.positions for f in frames]),
            velocities=np.stack([f.velocities for f in frames]),
            radii=radii,
            kinetic_energy=np.array([f.kinetic_energy for f in frames]),
            potential_energy=np.array([f.potential_energy for f in frames]),
            dissipated_energy=np.array([f.cumulative_dissipation for f in frames]),
            contacts=[f.contacts for f in frames],
            system=system, meta=meta,
            angular_velocities=optional("angular_velocities"), orientations=optional("orientations"))

    @classmethod
    def concatenate(cls, parts: list) -> "Trajectory":
        """Join consecutive trajectories of one simulation into one.

        Each part after the first must start where the previous one ended (a restart
        from its last frame, or the next chunk of a run): its first frame repeats that
        state and is dropped. The last part's ``system`` and ``meta`` are kept. A field
        that some part did not record (``angular_velocities``, ``orientations``,
        ``radii``) is None in the result, never filled in.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("Trajectory.concatenate needs at least one trajectory")
        for previous, part in zip(parts, parts[1:]):
            if len(previous) == 0 or len(part) == 0 or part.t[0] != previous.t[-1]:
                raise ValueError("Trajectory.concatenate: each part must start at the time the "
                                 f"previous one ends (t = {previous.t[-1:]} then {part.t[:1]})")
        if len(parts) == 1:
            return parts[0]

        def join(name):
            values = [getattr(p, name) for p in parts]
            if any(v is None for v in values):
                return None
            return np.concatenate([values[0]] + [v[1:] for v in values[1:]])

        contacts = list(parts[0].contacts)
        for part in parts[1:]:
            contacts += list(part.contacts[1:])
        return cls(t=join("t"), positions=join("positions"), velocities=join("velocities"),
                   radii=join("radii"), kinetic_energy=join("kinetic_energy"),
                   potential_energy=join("potential_energy"),
                   dissipated_energy=join("dissipated_energy"), contacts=contacts,
                   system=parts[-1].system, meta=parts[-1].meta,
                   angular_velocities=join("angular_velocities"), orientations=join("orientations"))

    # -- files ---------------------------------------------------------------------
    def save(self, path) -> Path:
        """Write the trajectory to ``path`` (HDF5). The file is written under a
        temporary name and renamed, so a failure never leaves a half-written file.
        A new file gets the umask's permissions (``0666 & ~umask``, not mkstemp's
        0600); a replaced file keeps its mode."""
        import h5py

        with atomic_path(path) as temporary:
            with h5py.File(temporary, "w") as h5:
                self._write(h5)
        return Path(path)

    def _write(self, h5) -> None:
        h5.attrs["format"] = FORMAT
        h5.attrs["version"] = VERSION
        h5.attrs["system"] = json.dumps(self.system)
        h5.attrs["meta"] = json.dumps(_jsonable(self.meta))
        options = dict(compression="gzip", compression_opts=4, shuffle=True)
        h5.create_dataset("t", data=self.t)
        h5.create_dataset("positions", data=self.positions, **options)
        h5.create_dataset("velocities", data=self.velocities, **options)
        if self.radii is not None:
            h5.create_dataset("radii", data=self.radii, **options)
        for name in ("angular_velocities", "orientations"):
            if getattr(self, name) is not None:
                h5.create_dataset(name, data=getattr(self, name), **options)
        energy = h5.create_group("energy")
        energy.create_dataset("kinetic", data=self.kinetic_energy)
        energy.create_dataset("potential", data=self.potential_energy)
        energy.create_dataset("dissipated", data=self.dissipated_energy)
        group = h5.create_group("contacts")
        counts = [len(c) for c in self.contacts]
        group.create_dataset("offsets", data=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
        for name in _CONTACT_FIELDS:
            parts = [np.asarray(getattr(c, name)) for c in self.contacts]
            data, widths = _concatenate(parts)
            group.create_dataset(name, data=data, **(options if data.size > 1000 else {}))
            if widths is not None:
                group.create_dataset(f"widths/{name}", data=widths)

    @staticmethod
    def load(path) -> "Trajectory":
        """Read a trajectory written by `save`.

        Raises
        ------
        TrajectoryFileError
            The file is missing, unreadable or not a granular trajectory, or its
            system names a drawing adapter that is neither a name nor a legacy string
            of `granular.drawing.LEGACY_ADAPTERS` (`UnknownAdapterError`): a run file
            is data and never names code to run.
        """
        import h5py

        path = Path(path)
        if not path.is_file():
            raise TrajectoryFileError(f"no trajectory file at {path}")
        try:
            with h5py.File(path, "r") as h5:
                if h5.attrs.get("format") != FORMAT:
                    raise TrajectoryFileError(f"{path} is not a granular trajectory (no '{FORMAT}' tag)")
                version = h5.attrs.get("version")
                if version not in _READABLE_VERSIONS:
                    raise TrajectoryFileError(f"{path} has trajectory format version {version}; this granular "
                                              f"reads versions {list(_READABLE_VERSIONS)}")
                trajectory = Trajectory._read(h5)
            _check_structure(trajectory)
        except TrajectoryFileError as error:
            if str(path) in str(error):
                raise
            raise TrajectoryFileError(f"cannot read trajectory {path}: {error}") from None
        except _READ_ERRORS as error:
            # A damaged file fails inside h5py or numpy in many ways (OSError, KeyError,
            # RuntimeError "can't get info", TypeError "unknown string encoding", ...).
            detail = " ".join(str(error).split()) or type(error).__name__
            raise TrajectoryFileError(f"cannot read trajectory {path}: {detail}") from error
        try:
            # A legacy "module:function" adapter becomes its registered name; any other
            # string naming code is refused here, before anything draws the file.
            trajectory.system = check_description(trajectory.system)
        except TrajectoryFileError as error:
            raise type(error)(f"{path}: {error}") from None
        return trajectory

    @staticmethod
    def _read(h5) -> "Trajectory":
        offsets = _offsets(h5)
        columns = {name: h5["contacts"][name][()] for name in _CONTACT_FIELDS
                   if name in h5["contacts"] or name not in _OPTIONAL_CONTACT_FIELDS}
        for name in _OPTIONAL_CONTACT_FIELDS:
            if name not in columns:
                columns[name] = np.zeros((int(offsets[-1]), 0))
        widths = {name: h5[f"contacts/widths/{name}"][()] for name in _CONTACT_FIELDS
                  if f"contacts/widths/{name}" in h5}

        for name, column in columns.items():
            if column.ndim not in (1, 2) or column.shape[0] != offsets[-1]:
                raise TrajectoryFileError(f"contacts/{name} has shape {column.shape}, expected "
                                          f"{int(offsets[-1])} rows (contacts/offsets)")
        for name, width in widths.items():
            if (width.shape != (offsets.size - 1,) or columns[name].ndim != 2
                    or np.any(width < 0) or np.any(width > columns[name].shape[1])):
                raise TrajectoryFileError(f"contacts/widths/{name} does not fit contacts/{name}")

        def frame(name, k):
            rows = columns[name][offsets[k]:offsets[k + 1]]
            return rows[:, :widths[name][k]] if name in widths else rows

        contacts = [Contacts(**{name: frame(name, k) for name in _CONTACT_FIELDS})
                    for k in range(offsets.size - 1)]
        omega, orientations = _rotation(h5)
        return Trajectory(
            t=h5["t"][()], positions=h5["positions"][()], velocities=h5["velocities"][()],
            radii=h5["radii"][()] if "radii" in h5 else None,
            kinetic_energy=h5["energy/kinetic"][()], potential_energy=h5["energy/potential"][()],
            dissipated_energy=h5["energy/dissipated"][()], contacts=contacts,
            system=json.loads(h5.attrs["system"]), meta=json.loads(h5.attrs["meta"]),
            angular_velocities=omega, orientations=orientations)


#: What h5py and numpy raise on a damaged file (`Trajectory.load` reports them as a
#: `TrajectoryFileError`): OSError (HDF5 read errors, truncation), KeyError (a missing
#: object), ValueError (JSON, shapes), RuntimeError (HDF5 metadata it cannot decode),
#: TypeError (an attribute of an unknown type), IndexError, OverflowError and
#: MemoryError (a size field claiming a huge array).
_READ_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError, IndexError, OverflowError, MemoryError)


def _offsets(h5) -> np.ndarray:
    """``/contacts/offsets`` checked: integers from 0, never decreasing (F + 1,)."""
    offsets = np.asarray(h5["contacts/offsets"][()])
    if (offsets.ndim != 1 or offsets.size < 1 or not np.issubdtype(offsets.dtype, np.integer)
            or offsets[0] != 0 or np.any(np.diff(offsets) < 0)):
        raise TrajectoryFileError("contacts/offsets are not row offsets (integers from 0, never decreasing)")
    return offsets


def _check_structure(trajectory: "Trajectory") -> None:
    """Raise `TrajectoryFileError` unless the arrays of a loaded trajectory agree in
    shape (F frames) and hold numbers: what `save` writes, so anything else is a
    damaged file. Values are not checked here: the commands refuse a NaN or inf
    naming its frame (`granular.runs.check_run_file`)."""
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
    expected = {"radii": per_body, "kinetic_energy": (frames,), "potential_energy": (frames,),
                "dissipated_energy": (frames,), "angular_velocities": per_body + (3,),
                "orientations": per_body + (4,)}
    for name, shape in expected.items():
        value = getattr(trajectory, name)
        if value is not None and np.shape(value) != shape:
            fail(f"{name} have shape {np.shape(value)}, expected {shape}")
    if len(trajectory.contacts) != frames:
        fail(f"{len(trajectory.contacts)} frames of contacts for {frames} frames")
    for name in ("t", "positions", "velocities", "radii", "kinetic_energy", "potential_energy",
                 "dissipated_energy", "angular_velocities", "orientations"):
        value = getattr(trajectory, name)
        if value is not None and not np.issubdtype(np.asarray(value).dtype, np.number):
            fail(f"{name} are not numbers (dtype {np.asarray(value).dtype})")
    if not isinstance(trajectory.meta, dict):
        fail(f"meta must be a JSON object, got {type(trajectory.meta).__name__}")


def _rotation(h5) -> tuple:
    """``(angular_velocities, orientations)`` of a file: stored ones; for a version-1
    file of spheres (before rotation) zeros and identities; else None (not recorded)."""
    omega = h5["angular_velocities"][()] if "angular_velocities" in h5 else None
    orientations = h5["orientations"][()] if "orientations" in h5 else None
    positions = h5["positions"]
    if int(h5.attrs["version"]) == 1 and positions.ndim == 3 and positions.shape[2] == 3:
        frames, n = positions.shape[:2]
        omega = np.zeros((frames, n, 3))
        orientations = np.zeros((frames, n, 4))
        orientations[:, :, 0] = 1.0
    return omega, orientations


def _concatenate(parts: list) -> tuple[np.ndarray, np.ndarray | None]:
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


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
