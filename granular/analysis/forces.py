"""The contact forces of one frame as a physicist reads them: forces on the spheres
at contact points, from the multipliers of the step that ends at the frame.

A frame ``k`` of a run holds the state ``(q^{n+1}, u^{n+1})`` at the end of a step
and that step's contacts (`granular.constraints.Contacts`), built at ``q^n`` (Maury's
scheme linearises the constraints at the start of the step). The centres the
contacts belong to are ``q^n`` (`step_start_positions`): the previous frame's, when
it holds the previous step; otherwise ``q^{n+1} - h u^{n+1}``, since the scheme moves
the centres by ``q^{n+1} = q^n + h u^{n+1}``. That is round-off exact, but for
frictional spheres whose gaps the scheme closes after the step
(`granular.contact.gap_closure`): they moved by ``h (u^{n+1} + w)``, and ``q^n`` is then
recovered to within ``h |w|``: about ``h`` times the Coulomb sweeps' tolerance (1e-7 m
at h = 1e-3 s), and inside a curved wall of radius ``R`` up to ``delta^2 / (2 R)`` for a
sphere that slides ``delta`` a step.

Force of a contact (N): its impulse over the step divided by ``h``. A pair ``(i, j)``
with normal ``n`` (from i to j) and friction impulses ``l_T,a`` along the tangent
basis ``t_a(n)`` (`granular.spheres.assembly.tangent_basis`) gives sphere ``j`` the force
``F = (lambda n + sum_a l_T,a t_a) / h`` and sphere ``i`` its opposite; a wall row
gives its sphere ``F`` with ``n`` out of the wall, and the wall ``-F``. Rolling
resistance adds a couple (torque) but no force, and is not part of these records.

Contact points (m): for a pair the middle of the gap along ``n``, ``x_c = q_i + (r_i +
D/2) n = q_j - (r_j + D/2) n`` (``D`` the row's gap; 0 for spheres in contact), so
the two branch vectors ``l_i = x_c - q_i`` and ``l_j = x_c - q_j`` add to the
centre-to-centre vector exactly; for a wall the sphere's point facing it, ``x_c =
q_i - r_i n``, where the scheme evaluates the wall's velocity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..records.active_contacts import noise_impulse
from ..spheres.assembly import tangent_basis
from ..walls import PeriodicBox


@dataclass(frozen=True)
class FrameForces:
    """The contact forces of one frame of a sphere run.

    Attributes
    ----------
    frame : int
        The frame's index.
    centres : (N, 3) array
        Centres at the start of the frame's step, ``q^n`` (m).
    radii : (N,) array
        Radii (m).
    masses : (N,) array
        Masses (kg).
    velocities : (N, 3) array
        Velocities at the frame, ``u^{n+1}`` (m/s).
    pair_i, pair_j : (p,) int arrays
        The spheres of each pair contact.
    pair_force : (p, 3) array
        Force on ``pair_j`` from ``pair_i`` (N); ``pair_i`` receives its opposite.
    pair_point : (p, 3) array
        Contact point of each pair (m), reached from the centre of ``pair_i``.
    pair_vector : (p, 3) array
        From the centre of ``pair_i`` to that of ``pair_j``, ``(r_i + r_j + D) n`` (m):
        in a periodic cell, to the image that touches ``pair_i``.
    wall_sphere, wall_surface : (w,) int arrays
        The sphere and the contact surface (`granular.constraints.Contacts.wall`) of
        each wall contact.
    wall_force : (w, 3) array
        Force on the sphere from the wall (N); the wall receives its opposite.
    wall_point : (w, 3) array
        Contact point on the sphere (m).
    ids : (N,) int array or None
        For a run with inlets or outlets, the permanent id of each sphere (the
        spheres are those present in the frame, in the order of their ids); None
        otherwise (sphere ``i`` is the run's sphere ``i``).
    """

    frame: int
    centres: np.ndarray
    radii: np.ndarray
    masses: np.ndarray
    velocities: np.ndarray
    pair_i: np.ndarray
    pair_j: np.ndarray
    pair_force: np.ndarray
    pair_point: np.ndarray
    pair_vector: np.ndarray
    wall_sphere: np.ndarray
    wall_surface: np.ndarray
    wall_force: np.ndarray
    wall_point: np.ndarray
    ids: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of spheres."""
        return int(self.radii.size)

    def sphere_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every contact seen from each sphere it touches: ``(sphere (c,), force on
        the sphere (c, 3) (N), branch vector from its centre to the contact point
        (c, 3) (m))``, ``c = 2 p + w`` (a pair counts for both spheres). The branch
        vectors of a pair add to ``pair_vector``, so they hold across a periodic cell's
        faces."""
        sphere = np.concatenate([self.pair_i, self.pair_j, self.wall_sphere])
        force = np.concatenate([-self.pair_force, self.pair_force, self.wall_force])
        from_i = self.pair_point - self.centres[self.pair_i]
        branch = np.concatenate([from_i, from_i - self.pair_vector, self.wall_point - self.centres[self.wall_sphere]])
        return sphere, force, branch

    def contact_force_magnitudes(self) -> np.ndarray:
        """``|F|`` (N) of every contact, pairs then walls, ``(p + w,)``."""
        return np.linalg.norm(np.concatenate([self.pair_force, self.wall_force]), axis=1)


def step_start_positions(trajectory, k: int) -> np.ndarray:
    """The centres ``q^n`` (N, 3) (m) at which frame ``k``'s contacts were built (module
    docstring): frame ``k - 1``'s when it is the state one step earlier (same spheres),
    else ``q^{n+1} - h u^{n+1}`` wrapped into a periodic cell as the world wraps them."""
    dt = time_step(trajectory)
    if not trajectory.varying and _one_step_apart(trajectory.t, k, dt):
        return np.asarray(trajectory.positions[k - 1], float)
    centres = np.asarray(trajectory.positions[k], float) - dt * np.asarray(trajectory.velocities[k], float)
    cell = periodic_cell(trajectory)
    return centres if cell is None else cell.wrap(centres)


def _one_step_apart(t, k: int, dt: float) -> bool:
    """Whether frame ``k - 1`` is the state one step of ``dt`` (s) before frame ``k``
    (times ``t_0 + n dt``, so their difference is ``dt`` to a few ulps of ``t``)."""
    return 0 < k < len(t) and bool(abs(float(t[k]) - float(t[k - 1]) - dt) <= 0.25 * dt)


def periodic_cell(trajectory):
    """The run's `granular.walls.PeriodicBox`, or None for a run without one."""

    description = trajectory.system.get("periodic") if isinstance(trajectory.system, dict) else None
    return None if not description else PeriodicBox.from_description(description)


def time_step(trajectory) -> float:
    """The run's time step ``meta["dt"]`` (s); a ValueError when the file has none."""
    dt = trajectory.meta.get("dt") if isinstance(trajectory.meta, dict) else None
    if not isinstance(dt, (int, float)) or not dt > 0.0:
        raise ValueError(f"trajectory: the run file records no positive time step (meta dt = {dt!r})")
    return float(dt)


def sphere_masses(trajectory, k: int) -> np.ndarray:
    """Masses (N,) (kg) of frame ``k``'s spheres: ``meta["masses"]``; for a run with
    inlets or outlets, those of the spheres present in the frame, in the order of
    their ids (`granular.Trajectory.present`)."""
    masses = np.asarray(trajectory.meta.get("masses", []), float).reshape(-1)
    n = trajectory.positions.shape[1]
    if masses.size == 1:
        masses = np.full(n, float(masses[0]))
    if masses.size != n:
        raise ValueError(f"trajectory: meta masses has {masses.size} values for {n} spheres")
    return masses[trajectory.present(k)] if getattr(trajectory, "varying", False) else masses


def check_spheres(trajectory) -> None:
    """A ValueError unless ``trajectory`` is a run of spheres (the analysis measures spheres)."""
    if trajectory.system.get("kind") != "spheres" or trajectory.radii is None:
        raise ValueError(
            f"trajectory: the analysis measures runs of spheres, not {trajectory.system.get('kind', 'this system')!r}"
        )


def frame_index(trajectory, k: int) -> int:
    """``k`` as an index into the trajectory (negative from the end); a ValueError out of range."""
    frames = len(trajectory)
    if not -frames <= int(k) < frames:
        raise ValueError(f"frame: {k} is out of range for a run of {frames} frames")
    return int(k) % frames


def frame_forces(trajectory, k: int, threshold: float | None = None) -> FrameForces:
    """The contact forces of frame ``k`` (`FrameForces`).

    ``threshold`` (N s): contacts whose normal impulse is at most this are left out;
    None: the solver's noise level (`granular.records.active_contacts.noise_impulse`), so that the
    contacts are those ``granular inspect`` calls active. 0 keeps every contact
    that carries an impulse.
    """

    check_spheres(trajectory)
    k = frame = frame_index(trajectory, k)
    masses = sphere_masses(trajectory, k)
    limit = noise_impulse(trajectory, k) if threshold is None else float(threshold)
    ids = None
    if getattr(trajectory, "varying", False):
        # A run with inlets or outlets: the spheres present in the frame, their
        # contacts renumbered by row (`granular.Trajectory.frame`).
        ids = trajectory.present(k)
        trajectory, k = trajectory.frame(k), 0
    dt = time_step(trajectory)
    contacts = trajectory.contacts[k]
    centres = step_start_positions(trajectory, k)
    radii = np.asarray(trajectory.radii[k], float)
    impulse = np.asarray(contacts.impulse, float)
    keep = impulse > limit
    normals = np.asarray(contacts.normal, float).reshape(-1, 3)
    vectors = impulse[:, None] * normals
    tangential = np.asarray(contacts.tangential_impulse, float)
    if tangential.ndim == 2 and tangential.shape[1] == 2 and len(contacts):
        vectors = vectors + np.einsum("ka,kab->kb", tangential, tangent_basis(normals))
    forces = vectors / dt
    wall = np.asarray(contacts.wall)
    i, j, gap = np.asarray(contacts.i), np.asarray(contacts.j), np.asarray(contacts.gap, float)
    pairs, walls = np.flatnonzero(keep & (wall < 0)), np.flatnonzero(keep & (wall >= 0))
    pair_point = centres[i[pairs]] + (radii[i[pairs]] + 0.5 * gap[pairs])[:, None] * normals[pairs]
    pair_vector = (radii[i[pairs]] + radii[j[pairs]] + gap[pairs])[:, None] * normals[pairs]
    wall_point = centres[i[walls]] - radii[i[walls], None] * normals[walls]
    return FrameForces(
        frame=frame,
        centres=centres,
        radii=radii,
        masses=masses,
        ids=ids,
        velocities=np.asarray(trajectory.velocities[k], float),
        pair_i=i[pairs].astype(np.int64),
        pair_j=j[pairs].astype(np.int64),
        pair_force=forces[pairs].reshape(-1, 3),
        pair_point=pair_point.reshape(-1, 3),
        pair_vector=pair_vector.reshape(-1, 3),
        wall_sphere=i[walls].astype(np.int64),
        wall_surface=wall[walls].astype(np.int64),
        wall_force=forces[walls].reshape(-1, 3),
        wall_point=wall_point.reshape(-1, 3),
    )
