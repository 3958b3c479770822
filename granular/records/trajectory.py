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

Walls (spheres): ``/walls/forces`` (F, S, 3) (N), the force the spheres exert on
each contact surface ``s`` (a ``Contacts.wall`` index: a `Box` counts its faces, a
capped `Cylinder` its side and caps) over the step that ends at each frame, its
contact impulses (normal and friction) divided by ``dt`` (`wall_forces`); frame 0,
which has no step, holds zeros. ``/walls/displacements`` (F, W, 3) (m), the shift of
each wall of ``system["walls"]`` from its described position, when some wall moves.
A file written before walls were recorded loads with the forces computed from its
stored contacts (the same numbers) and no displacements (its walls did not move).
``/walls/rotations`` (F, W, 3, 3), each wall's rotation about its centre, when a
mesh turns (the renders and the ParaView export draw it turned).
``/energy/wall_work`` (F,) (J), when some wall moves: the work the moving walls did
on the spheres from the start of the run to each frame (a restart continues it).
``/energy/closure_energy`` (F,) (J), for frictional spheres whose gaps are closed
after each step (`granular.contact.gap_closure`): the potential energy that closure
gave them from the start of the run to each frame, so that the energy balance of
`granular.records.results.StepResult` can be checked from the file.

Spheres that come and go (`granular.spheres.flows`): a run whose world has inlets or
outlets stores each sphere in the column of its permanent id, so positions,
velocities (F, I, 3), radii (F, I), angular velocities and orientations have one
column per id assigned during the run (``I``) and hold NaN where that sphere is
absent (not yet inserted, or removed); ``Contacts.i`` and ``Contacts.j`` are ids.
``/flow`` (F, 1 + 2 n_inlets + 2 n_outlets) holds the counters of each frame
(`granular.spheres.flows.FlowCounters.as_row`), ``meta["masses"]`` the mass of each id.
`Trajectory.present` gives a frame's ids, `Trajectory.frame` a frame with only the
spheres present (what the renderers draw).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..constraints import Contacts
from ..drawing.adapters import check_description
from ..errors import InvalidInputError, TrajectoryFileError
from .files import atomic_path
from .stated_end import open_for_reading
from .trajectory_format import (
    CONTACT_FIELDS,
    FORMAT,
    FRAME_ARRAYS,
    FRAME_DATASETS,
    OPTIONAL_CONTACT_FIELDS,
    REQUIRED_FRAME_ARRAYS,
    ROTATION_ARRAYS,
    PER_SPHERE,
    READABLE_VERSIONS,
    READ_ERRORS,
    SUFFIXES,
    VERSION,
    by_id,
    check_structure,
    concatenate_rows,
    flow_sizes,
    frames_on_disk,
    jsonable,
    rotation_of,
    row_offsets,
    walls_of,
    widen,
)
from ..spheres.assembly import tangent_basis
from ..walls import surface_count


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
    wall_forces : (F, S, 3) (N) or None
        Force on each contact surface of the walls over each frame's step (module
        docstring); None for systems without walls.
    wall_displacements : (F, W, 3) (m) or None
        Shift of each wall from its described position; None when no wall moves.
    wall_rotations : (F, W, 3, 3) or None
        Rotation of each wall about its centre (a turning mesh's; the identity for the
        others); None when no mesh turns.
    wall_work : (F,) (J) or None
        Work the moving walls did on the spheres since the start; None when no wall moves.
    closure_energy : (F,) (J) or None
        Potential energy the gap closure gave the spheres since the start (module
        docstring); None when the run closes no gaps.
    flow : (F, C) or None
        The inlets' and outlets' counters per frame (module docstring), None for a
        world without them; then the sphere arrays have a column per id.
    ids : (F, N) int or None
        The ids of the columns, for a frame made by `frame` (None: column k is id k).
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
    wall_forces: np.ndarray | None = None
    wall_displacements: np.ndarray | None = None
    wall_work: np.ndarray | None = None
    flow: np.ndarray | None = None
    wall_rotations: np.ndarray | None = None
    ids: np.ndarray | None = None
    closure_energy: np.ndarray | None = None

    def __post_init__(self):
        if self.wall_forces is None:
            self.wall_forces = wall_forces(self.contacts, self.system, self.meta)

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def varying(self) -> bool:
        """Whether the spheres present change over the run (inlets or outlets)."""
        return self.flow is not None

    def present(self, k: int) -> np.ndarray:
        """The ids of the spheres present in frame ``k`` (sorted, int)."""
        if not self.varying:
            count = self.positions.shape[1] if self.positions.ndim == 3 else 0
            return np.arange(count) if self.ids is None else np.asarray(self.ids[k])
        return np.flatnonzero(np.isfinite(np.asarray(self.positions[k], float)[:, 0]))

    def sphere_counts(self) -> np.ndarray:
        """The number of spheres present in each frame (F,)."""
        return np.array([self.present(k).size for k in range(len(self))])

    def frame(self, k: int) -> "Trajectory":
        """Frame ``k`` alone as a one-frame trajectory of the spheres present in it (its
        contacts numbered by their rows, ``ids`` (1, n) giving each row's id); for a
        run without inlets or outlets, frame ``k`` as stored."""
        ids = self.present(k)
        rows = np.full(self.positions.shape[1], -1, dtype=np.int64)
        rows[ids] = np.arange(ids.size)
        contacts = self.contacts[k]
        if self.varying and len(contacts):
            i, j = np.asarray(contacts.i, np.int64), np.asarray(contacts.j, np.int64)
            contacts = dataclasses.replace(contacts, i=rows[i], j=np.where(j >= 0, rows[np.maximum(j, 0)], j))

        def pick(value, per_sphere=True):
            if value is None:
                return None
            value = np.asarray(value)[k : k + 1]
            return value[:, ids] if per_sphere and self.varying else value

        return Trajectory(
            t=self.t[k : k + 1],
            positions=pick(self.positions),
            velocities=pick(self.velocities),
            radii=pick(self.radii),
            kinetic_energy=self.kinetic_energy[k : k + 1],
            potential_energy=self.potential_energy[k : k + 1],
            dissipated_energy=self.dissipated_energy[k : k + 1],
            contacts=[contacts],
            system=self.system,
            meta=self.meta,
            angular_velocities=pick(self.angular_velocities),
            orientations=pick(self.orientations),
            wall_forces=pick(self.wall_forces, False),
            wall_displacements=pick(self.wall_displacements, False),
            wall_work=pick(self.wall_work, False),
            closure_energy=pick(self.closure_energy, False),
            flow=None,
            ids=ids[None, :],
            wall_rotations=pick(self.wall_rotations, False),
        )

    def removed_mass(self) -> np.ndarray:
        """Mass (kg) the outlets removed from the start to each frame (F,), all outlets
        together; zeros for a run without outlets."""
        if self.flow is None:
            return np.zeros(len(self))
        inlets, outlets = flow_sizes(self.system, self.flow.shape[1])
        return np.sum(self.flow[:, 1 + 2 * inlets + outlets :], axis=1)

    @property
    def total_energy(self) -> np.ndarray:
        """Kinetic plus potential energy per frame (J)."""
        return self.kinetic_energy + self.potential_energy

    def show(self, color="speed", forces: bool = True, max_bytes: float = 20e6):
        """The run's view (`granular.render.viewer`: spheres, walls, force network, time
        slider) as a K3D plot, displayed inline in Jupyter; returns the plot."""
        from ..render.viewer import build_plot  # K3D, an optional dependency (the "view" extra)

        plot = build_plot(self, color=color, forces=forces, max_bytes=max_bytes)
        plot.display()
        return plot

    @property
    def n_contacts(self) -> np.ndarray:
        """Number of active contacts (positive impulse) per frame."""
        return np.array([int(np.count_nonzero(c.impulse > 0.0)) for c in self.contacts])

    @staticmethod
    def from_frames(
        frames: list, system: dict, meta: dict, wall_displacements=None, wall_rotations=None
    ) -> "Trajectory":
        """Build from a list of `StepResult`-like records (with ``cumulative_dissipation``).

        ``angular_velocities`` and ``orientations`` are kept when every frame has them
        (`StepResult` of spheres), else left None (not recorded). ``wall_displacements``
        (F, W, 3) (m) or None: where the moving walls were at each frame. The wall
        forces are computed from the frames' contacts and ``meta["dt"]``."""
        flows = [getattr(f, "flow", None) for f in frames]
        width = None
        if flows[0] is not None:  # spheres in the columns of their ids (module docstring)
            width = int(max(row[0] for row in flows))

        def stack(values):
            if width is None:
                return np.stack(values)
            return np.stack([by_id(value, frame.ids, width) for value, frame in zip(values, frames)])

        radii = None if frames[0].radii is None else stack([f.radii for f in frames])

        def optional(name):
            values = [getattr(f, name, None) for f in frames]
            return None if any(v is None for v in values) else stack(values)

        work = [getattr(f, "wall_work", None) for f in frames]
        closure = [getattr(f, "closure_energy", None) for f in frames]
        return Trajectory(
            t=np.array([f.t for f in frames]),
            positions=stack([f.positions for f in frames]),
            velocities=stack([f.velocities for f in frames]),
            radii=radii,
            kinetic_energy=np.array([f.kinetic_energy for f in frames]),
            potential_energy=np.array([f.potential_energy for f in frames]),
            dissipated_energy=np.array([f.cumulative_dissipation for f in frames]),
            contacts=[f.contacts for f in frames],
            system=system,
            meta=meta,
            angular_velocities=optional("angular_velocities"),
            orientations=optional("orientations"),
            wall_displacements=None if wall_displacements is None else np.asarray(wall_displacements, float),
            wall_work=None if any(w is None for w in work) else np.array(work, dtype=float),
            closure_energy=None if any(c is None for c in closure) else np.array(closure, dtype=float),
            flow=None if width is None else np.stack(flows),
            wall_rotations=None if wall_rotations is None else np.asarray(wall_rotations, float),
        )

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
                raise ValueError(
                    "Trajectory.concatenate: each part must start at the time the "
                    f"previous one ends (t = {previous.t[-1:]} then {part.t[:1]})"
                )
        if len(parts) == 1:
            return parts[0]

        width = None
        if any(p.flow is not None for p in parts):
            if any(p.flow is None for p in parts):
                raise ValueError("Trajectory.concatenate: parts with and without inlets or outlets")
            width = max(p.positions.shape[1] for p in parts)

        def join(name):
            values = [getattr(p, name) for p in parts]
            if any(v is None for v in values):
                return None
            if width is not None and name in PER_SPHERE:  # columns of ids: pad to the widest
                values = [widen(v, width) for v in values]
            return np.concatenate([values[0]] + [v[1:] for v in values[1:]])

        contacts = list(parts[0].contacts)
        for part in parts[1:]:
            contacts += list(part.contacts[1:])
        return cls(
            contacts=contacts,
            system=parts[-1].system,
            meta=parts[-1].meta,
            **{name: join(name) for name in FRAME_ARRAYS},
        )

    def first_frames(self, count: int) -> "Trajectory":
        """The trajectory of the first ``count`` frames (its system and meta shared)."""

        def cut(value):
            return None if value is None else value[:count]

        return dataclasses.replace(
            self, contacts=self.contacts[:count], **{name: cut(getattr(self, name)) for name in FRAME_ARRAYS}
        )

    # -- files ---------------------------------------------------------------------
    def save(self, path) -> Path:
        """Write the trajectory to ``path`` (HDF5, ending in ``.h5`` or ``.hdf5``:
        `InvalidInputError` otherwise). The file is written under a
        temporary name and renamed, so a failure never leaves a half-written file.
        A new file gets the umask's permissions (``0666 & ~umask``, not mkstemp's
        0600); a replaced file keeps its mode."""
        import h5py

        if Path(path).suffix.lower() not in SUFFIXES:
            raise InvalidInputError(
                f"a trajectory is saved as HDF5: {path} must end in {' or '.join(SUFFIXES)} "
                "(for a .csv or .xyz of one frame use "
                "granular.records.configurations.write_configuration)"
            )
        with atomic_path(path) as temporary:
            with h5py.File(temporary, "w") as h5:
                self._write(h5)
        return Path(path)

    def _write(self, h5) -> None:
        h5.attrs["format"] = FORMAT
        h5.attrs["version"] = VERSION
        h5.attrs["system"] = json.dumps(self.system)
        h5.attrs["meta"] = json.dumps(jsonable(self.meta))
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
        if self.wall_work is not None:
            energy.create_dataset("wall_work", data=self.wall_work)
        if self.closure_energy is not None:
            energy.create_dataset("closure_energy", data=self.closure_energy)
        if self.flow is not None:
            h5.create_dataset("flow", data=self.flow)
        group = h5.create_group("contacts")
        counts = [len(c) for c in self.contacts]
        group.create_dataset("offsets", data=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
        for name in CONTACT_FIELDS:
            parts = [np.asarray(getattr(c, name)) for c in self.contacts]
            data, widths = concatenate_rows(parts)
            group.create_dataset(name, data=data, **(options if data.size > 1000 else {}))
            if widths is not None:
                group.create_dataset(f"widths/{name}", data=widths)
        # Written last, so the objects before them keep the offsets earlier versions gave them.
        walls = {"forces": self.wall_forces, "displacements": self.wall_displacements, "rotations": self.wall_rotations}
        for name, value in walls.items():
            if value is not None:
                h5.create_dataset(f"walls/{name}", data=value, **options)

    @staticmethod
    def load(path) -> "Trajectory":
        """Read a trajectory written by `save`.

        Raises
        ------
        TrajectoryFileError
            The file is missing, unreadable or not a granular trajectory, or its
            system names a drawing adapter that is neither a name nor a legacy string
            of `granular.drawing.adapters.LEGACY_ADAPTERS` (`UnknownAdapterError`): a run file
            is data and never names code to run.
        """
        path = Path(path)
        if not path.is_file():
            raise TrajectoryFileError(f"no trajectory file at {path}")
        try:
            with open_for_reading(path) as h5:
                if h5.attrs.get("format") != FORMAT:
                    raise TrajectoryFileError(f"{path} is not a granular trajectory (no '{FORMAT}' tag)")
                version = h5.attrs.get("version")
                if version not in READABLE_VERSIONS:
                    raise TrajectoryFileError(
                        f"{path} has trajectory format version {version}; this granular "
                        f"reads versions {list(READABLE_VERSIONS)}"
                    )
                trajectory = Trajectory._read(h5)
            check_structure(trajectory)
        except TrajectoryFileError as error:
            if str(path) in str(error):
                raise
            raise TrajectoryFileError(f"cannot read trajectory {path}: {error}") from None
        except READ_ERRORS as error:
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
        # A file written frame by frame (granular.records.streaming) says how many frames are
        # complete; rows of a later frame that reached the disk before the writer
        # stopped are ignored, and so is a frame whose flush was cut (`frames_on_disk`).
        # A file written at once holds exactly its frames.
        offsets = row_offsets(h5)
        frames = frames_on_disk(h5, int(h5.attrs["frames"]), offsets) if "frames" in h5.attrs else None
        upto = slice(None) if frames is None else slice(0, frames)

        def per_frame(name, required=True):
            # a required dataset that is missing is a KeyError: a damaged file (load)
            return h5[name][upto] if required or name in h5 else None

        if frames is not None:
            offsets = offsets[: frames + 1]
        rows = slice(0, int(offsets[-1]))
        columns = {
            name: h5["contacts"][name][rows]
            for name in CONTACT_FIELDS
            if name in h5["contacts"] or name not in OPTIONAL_CONTACT_FIELDS
        }
        for name in OPTIONAL_CONTACT_FIELDS:
            if name not in columns:
                columns[name] = np.zeros((int(offsets[-1]), 0))
        widths = {
            name: h5[f"contacts/widths/{name}"][upto] for name in CONTACT_FIELDS if f"contacts/widths/{name}" in h5
        }

        for name, column in columns.items():
            if column.ndim not in (1, 2) or column.shape[0] != offsets[-1]:
                raise TrajectoryFileError(
                    f"contacts/{name} has shape {column.shape}, expected {int(offsets[-1])} rows (contacts/offsets)"
                )
        for name, width in widths.items():
            if (
                width.shape != (offsets.size - 1,)
                or columns[name].ndim != 2
                or np.any(width < 0)
                or np.any(width > columns[name].shape[1])
            ):
                raise TrajectoryFileError(f"contacts/widths/{name} does not fit contacts/{name}")

        def frame(name, k):
            rows = columns[name][offsets[k] : offsets[k + 1]]
            return rows[:, : widths[name][k]] if name in widths else rows

        contacts = [Contacts(**{name: frame(name, k) for name in CONTACT_FIELDS}) for k in range(offsets.size - 1)]
        omega, orientations = rotation_of(h5, upto)
        arrays = {
            name: per_frame(dataset, required=name in REQUIRED_FRAME_ARRAYS)
            for name, dataset in FRAME_DATASETS.items()
            if name not in ROTATION_ARRAYS
        }
        return Trajectory(
            contacts=contacts,
            system=json.loads(h5.attrs["system"]),
            meta=json.loads(h5.attrs["meta"]),
            angular_velocities=omega,
            orientations=orientations,
            **arrays,
        )


#: Contact surfaces a run may have beyond those its walls describe (a system's own
#: walls that `describe` leaves out); a damaged file naming more is refused rather
#: than allocating a force array for it.
_MAX_UNNAMED_SURFACES = 1000


def wall_forces(contacts: list, system: dict, meta: dict) -> np.ndarray | None:
    """Force (F, S, 3) (N) the spheres exert on each contact surface, per frame.

    For each wall row ``k`` of a frame (``Contacts.wall[k] >= 0``) the wall gives the
    sphere the impulse ``lambda_k n_k + sum_a l_T,k,a t_a(n_k)`` over the step (normal
    into the sphere's side, friction along the row's tangent basis,
    `granular.spheres.assembly.tangent_basis`); by Newton's third law the wall receives its
    opposite. Summed per surface and divided by ``dt``: the mean force over the step
    (N). ``S`` counts the surfaces of ``system["walls"]`` (`granular.walls.surface_count`),
    or more if the contacts name more. None for a system that is not spheres or has
    no wall, or without ``meta["dt"]``.
    """
    if not isinstance(system, dict) or system.get("kind") != "spheres" or not isinstance(meta, dict):
        return None
    dt = meta.get("dt")
    if not isinstance(dt, (int, float)) or not dt > 0.0:
        return None
    named = sum(surface_count(wall) for wall in walls_of(system))
    try:
        used = max((int(np.max(c.wall, initial=-1)) + 1 for c in contacts), default=0)
        if used > named + _MAX_UNNAMED_SURFACES:
            raise TrajectoryFileError(
                f"the contacts name wall {used - 1}, but the system describes {named} wall surfaces"
            )
        count = max(named, used)
        if count == 0:
            return None
        forces = np.zeros((len(contacts), count, 3))
        for f, frame in enumerate(contacts):
            rows = np.flatnonzero(np.asarray(frame.wall) >= 0)
            if rows.size == 0:
                continue
            normals = np.asarray(frame.normal, float)[rows].reshape(-1, 3)
            impulse = np.asarray(frame.impulse, float)[rows, None] * normals
            tangential = np.asarray(frame.tangential_impulse, float)
            if tangential.ndim == 2 and tangential.shape[1] == 2:
                impulse += np.einsum("ka,kab->kb", tangential[rows], tangent_basis(normals))
            np.add.at(forces[f], np.asarray(frame.wall)[rows], -impulse / float(dt))
    except (ValueError, IndexError, TypeError, MemoryError) as error:
        raise TrajectoryFileError(f"the contacts do not give wall forces: {error}") from None
    return forces


def check_frame(trajectory, frame: int) -> int:
    """``frame`` as a non-negative index into ``trajectory`` (negative counts from the end)."""
    n = len(trajectory)
    try:
        index = int(frame)
        exact = index == frame
    except (TypeError, ValueError):
        exact = False
    if not exact:
        raise InvalidInputError(f"frame must be an integer, got {frame!r}")
    if not -n <= index < n:
        raise InvalidInputError(
            f"frame {index} is out of range: the trajectory has {n} frames (0..{n - 1}, or -{n}..-1 from the end)"
        )
    return index % n
