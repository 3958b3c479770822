"""The contact rows of a `granular.spheres.world.SphereWorld`'s step (its `ConstraintSet`), and
the admissibility check of its positions (the rows of margin 0).

Constraints (Bernicot and Lefebvre-Lepot, *Existence results for non-smooth second
order differential inclusions...*, 2010, section 4): for each pair that could touch
within the step, ``D_ij(t, q) = |q_j - q_i| - (r_i(t) + r_j(t)) >= 0`` with gradient
``G_ij = (..., -n_ij, ..., +n_ij, ...)``, ``n_ij = (q_j - q_i)/|q_j - q_i|``; for each
sphere near a plane (point p, unit normal n), ``D = n.(q_i - p) - r_i(t) >= 0`` with
gradient ``+n`` on sphere i; inside a cylinder, ``D = R - |rho_i| - r_i`` with gradient
``-rho_i / |rho_i|``. A moving wall enters at its position at ``t_{n+1}``,
``D(t_{n+1}, q^n)``, and its material velocity at the contact enters the friction
rows (`granular.walls` derives both).

Friction (Moreau's discrete law with Coulomb friction, `granular.contact.friction`):
with a Coulomb coefficient ``mu > 0`` a contact also gets two unit tangents ``t_1,
t_2`` orthogonal to its normal (`tangent_basis`), the rows of the tangential velocity
of the contact point. For a pair (normal ``n`` from i to j, contact point at ``q_i +
r_i n = q_j - r_j n``), the velocity of j's material point relative to i's along
``t_a`` is ``t_a . (u_j - u_i) - r_i (n x t_a) . omega_i - r_j (n x t_a) .
omega_j``: rows ``(-t_a on u_i, +t_a on u_j, -r_i n x t_a on omega_i, -r_j n x t_a
on omega_j)``. For a wall (normal ``n`` into the admissible side, contact point ``q_i
- r_i n``): ``(+t_a on u_i, -r_i n x t_a on omega_i)``. A sliding contact therefore
applies a torque ``(contact arm) x (friction impulse)`` and a sphere can roll. With
``rotation=False`` the rotational columns are left out: the spheres do not turn, a
grain is a frictional point with a radius (the model of earlier versions, kept for
comparisons).

Rolling resistance (``rolling_friction`` ``mu_r``, per wall too): a torque impulse
bounded by ``mu_r R* lambda_N`` against the relative rolling of each contact, with
``R* = r_i r_j / (r_i + r_j)`` for a pair and ``r_i`` on a wall (`rolling_rows`); the
model and its references are in `granular.contact.friction`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..constraints import ConstraintSet
from ..contact_laws import RowLaws
from ..errors import InvalidInputError, OverlapError
from .neighbors import candidate_contacts, candidate_pairs, pair_vectors
from ..walls.surfaces import ContactRows
from ..tolerances import OVERLAP_TOLERANCE, SEARCH_SKIN
from ..walls import Plane

if TYPE_CHECKING:
    from .world import SphereWorld

#: How per-particle coefficients combine into a pair coefficient.
COMBINATION_RULES = {
    "min": np.minimum,
    "max": np.maximum,
    "mean": lambda a, b: 0.5 * (a + b),
    "geometric": lambda a, b: np.sqrt(a * b),
}


class WorldLaw(NamedTuple):
    """The contact law a surface without its own coefficients takes from the world:
    each sphere's restitution (N,), the friction, rolling friction and tangential
    restitution coefficients."""

    restitution: np.ndarray
    friction: float
    rolling_friction: float
    tangential_restitution: float


@dataclass(frozen=True)
class WallRows:
    """The wall rows of a step, every surface's together (arrays of one length k):
    sphere, surface (``Contacts.wall``), gap (m), unit normal (k, 3), the contact law
    of each row (every coefficient given); the wall's material velocity at the
    contact (k, 3) (m/s) or None when no wall moves; the feature labels
    (`granular.walls.surfaces.ContactRows.features`) or None."""

    spheres: np.ndarray
    surface: np.ndarray
    gaps: np.ndarray
    normals: np.ndarray
    laws: RowLaws
    velocities: np.ndarray | None = None
    features: np.ndarray | None = None


def sphere_constraints(world: SphereWorld, t_next: float, q: np.ndarray, h: float, max_speed: float) -> ConstraintSet:
    """The rows of ``world``'s step ending at ``t_next``, linearised at ``q``
    (`granular.spheres.world.SphereWorld.constraints` says which pairs are kept and why)."""
    clock = time.perf_counter()
    n = world.n
    positions = q.reshape(n, 3)
    radii = world.radii_at(t_next)
    skin = SEARCH_SKIN * float(radii.min(initial=np.inf) if radii.size else 0.0)
    if world.periodic is not None:
        world.periodic.check_cell(radii, margin=2.0 * h * max_speed + skin)
    i, j, vectors, distances = candidate_contacts(positions, radii, 2.0 * h * max_speed + skin, world.periodic)
    searched = time.perf_counter()
    if np.any(distances == 0.0):
        k = int(np.flatnonzero(distances == 0.0)[0])
        raise InvalidInputError(f"spheres {i[k]} and {j[k]} have coincident centres at t = {t_next:.6g} s")
    normals = vectors / distances[:, None]
    gaps = distances - radii[i] - radii[j]
    e_sphere = world.particle_restitution
    restitution = COMBINATION_RULES[world.restitution_rule](e_sphere[i], e_sphere[j])
    law = WorldLaw(e_sphere, world.friction, world.rolling_friction, world.tangential_restitution)
    walls = all_wall_rows(world.surfaces, law, t_next, h, positions, radii, h * max_speed + skin)
    wi, wnormal, wall_velocity = walls.spheres, walls.normals, walls.velocities
    laws = step_laws(world, restitution, walls.laws)
    normal_offset = None
    if wall_velocity is not None:  # the impact law acts on the velocity relative to the wall
        normal_offset = np.concatenate([np.zeros(i.size), np.einsum("ka,ka->k", wall_velocity, wnormal)])
    width = 6 * n if world.rotates else 3 * n  # (u, omega) columns when rotating
    jacobian = sphere_jacobian(i, j, normals, wi, wnormal, n, width)
    minus = -np.ones(wi.size, dtype=np.int64)
    tangents = None
    if np.any(laws.friction > 0.0):
        tangents = sphere_tangents(i, j, normals, wi, wnormal, n, radii if world.rotates else None)
    offset = None
    if tangents is not None and wall_velocity is not None:
        offset = np.zeros((i.size + wi.size, 2))
        offset[i.size :] = np.einsum("kab,kb->ka", tangent_basis(wnormal), wall_velocity)
    rolling, rolling_radius = None, None
    if laws.rolling_friction is not None:
        rolling, rolling_radius = rolling_rows(i, j, normals, wi, wnormal, laws.rolling_friction, radii, n)
    return ConstraintSet(
        gap=np.concatenate([gaps, walls.gaps]),
        jacobian=jacobian,
        laws=laws,
        i=np.concatenate([i, wi]),
        j=np.concatenate([j, minus]),
        wall=np.concatenate([-np.ones(i.size, dtype=np.int64), walls.surface]),
        normal=np.concatenate([normals, wnormal]),
        tangents=tangents,
        seconds={"neighbors": searched - clock, "assembly": time.perf_counter() - searched},
        separation_speed=separation_cap(world.initial_overlaps, world.separation_speed, radii, h),
        rolling=rolling,
        rolling_radius=rolling_radius,
        tangential_offset=offset,
        normal_offset=normal_offset,
        surface_names=world.surface_names,
        feature=None if walls.features is None else np.concatenate([np.zeros(i.size, np.int64), walls.features]),
    )


def step_laws(world: SphereWorld, pair_restitution: np.ndarray, wall_laws: RowLaws) -> RowLaws:
    """The contact law of each row of a step, the pairs' first: their combined
    restitution ``pair_restitution`` (p,) and the world's coefficients, then the wall
    rows' ``wall_laws``. A coefficient that no contact of the world carries is left out
    (friction 0, rolling friction and tangential restitution None)."""
    pairs = pair_restitution.size

    def joined(world_value: float, wall_values: np.ndarray, carried: bool) -> np.ndarray | None:
        return np.concatenate([np.full(pairs, world_value), wall_values]) if carried else None

    return RowLaws(
        np.concatenate([pair_restitution, wall_laws.restitution]),
        joined(world.friction, wall_laws.friction, world.has_friction),
        joined(world.rolling_friction, wall_laws.rolling_friction, world.has_rolling_friction),
        joined(world.tangential_restitution, wall_laws.tangential_restitution, world.has_tangential_restitution),
    )


def raise_if_overlapping(t: float, positions: np.ndarray, radii: np.ndarray, periodic, surfaces, surface_name) -> None:
    """Raise `OverlapError` naming the first overlapping pair or sphere-wall contact of the
    spheres at ``positions`` (N, 3) with ``radii`` (N,) at ``t`` (the rows of margin 0;
    ``surface_name(k)`` names contact surface ``k`` in the message)."""
    i, j = candidate_pairs(positions, radii, 0.0, periodic)
    if i.size:
        vectors = pair_vectors(positions, i, j, periodic)
        gaps = np.linalg.norm(vectors, axis=1) - radii[i] - radii[j]
        tolerance = OVERLAP_TOLERANCE * (radii[i] + radii[j])
        bad = np.flatnonzero(gaps < -tolerance)
        if bad.size:
            k = bad[np.argmin(gaps[bad])]
            raise OverlapError(
                f"spheres {i[k]} and {j[k]} overlap by {-gaps[k]:.6g} m at t = {t:.6g} s",
                pair=(int(i[k]), int(j[k])),
                overlap=float(-gaps[k]),
            )
    for k, surface in enumerate(surfaces):
        rows = surface.rows(positions, radii, 0.0, t)
        bad = np.flatnonzero(rows.gaps < -OVERLAP_TOLERANCE * radii[rows.spheres])
        if bad.size:
            worst = bad[np.argmin(rows.gaps[bad])]
            s, overlap = int(rows.spheres[worst]), float(-rows.gaps[worst])
            raise OverlapError(
                f"sphere {s} overlaps the {surface_name(k)} (surface {k}: "
                f"{surface.label()}) by {overlap:.6g} m at t = {t:.6g} s",
                pair=(s, f"wall {k}"),
                overlap=overlap,
            )


def separation_cap(initial_overlaps: str, separation_speed: float | None, radii: np.ndarray, h: float) -> float | None:
    """The separation speed of overlapping rows (m/s), None when overlaps are errors;
    by default a tenth of the smallest radius per step."""
    if initial_overlaps != "separate":
        return None
    if separation_speed is not None:
        return separation_speed
    return 0.1 * float(radii.min(initial=np.inf) if radii.size else 0.0) / h


def all_wall_rows(surfaces, law: WorldLaw, t_next, h, positions, radii, margin) -> WallRows:
    """The rows of every contact surface at the end of the step (each surface's
    `granular.walls.surfaces.ContactSurface.rows`), in surface order, with each row's
    contact law; when every surface is a still plane, all in one pass
    (`still_plane_rows`)."""
    if surfaces and all(type(plane) is Plane and not plane.moves for plane in surfaces):
        return still_plane_rows(surfaces, law, positions, radii, margin)
    parts = [surface.rows(positions, radii, margin, t_next, h) for surface in surfaces]
    return combined_rows(surfaces, parts, law)


def combined_rows(surfaces, parts: list[ContactRows], law: WorldLaw) -> WallRows:
    """The rows ``parts`` of the ``surfaces`` (one `ContactRows` each, in surface order)
    as one `WallRows`, each row with its surface's law (`surface_law`)."""
    if not parts:
        parts = [ContactRows.empty()]
        laws = np.zeros((1, 4))
    else:
        laws = np.array([surface_law(surface, law) for surface in surfaces], dtype=float).reshape(-1, 4)
    sizes = np.array([part.size for part in parts])
    surface = np.repeat(np.arange(len(parts), dtype=np.int64), sizes)
    spheres = np.concatenate([part.spheres for part in parts]).astype(np.int64)
    row_law = laws[surface] if spheres.size else np.zeros((0, 4))
    restitution = np.where(np.isnan(row_law[:, 0]), law.restitution[spheres], row_law[:, 0])
    velocities = None
    if any(getattr(s, "moves", False) for s in surfaces):
        velocities = np.concatenate(
            [part.velocities if part.velocities is not None else np.zeros((part.size, 3)) for part in parts]
        )
    features = None
    if any(part.features is not None for part in parts):
        features = np.concatenate(
            [part.features if part.features is not None else np.zeros(part.size, np.int64) for part in parts]
        )
    return WallRows(
        spheres,
        surface,
        np.concatenate([part.gaps for part in parts]),
        np.concatenate([part.normals for part in parts]).reshape(-1, 3),
        RowLaws(restitution, row_law[:, 1], row_law[:, 2], row_law[:, 3]),
        velocities,
        features,
    )


def still_plane_rows(planes, law: WorldLaw, positions, radii, margin) -> WallRows:
    """The rows of the still flat ``planes`` in one pass (the rows of plane 0, then of
    plane 1, ...). The gaps are computed as `Plane.gaps` computes them, term for
    term, and the rows are the same; one pass saves the per-plane calls'
    interpreter overhead (benchmarks/README.md, "Measurements behind the constants")."""
    points = np.array([plane.point for plane in planes])
    normals = np.array([plane.normal for plane in planes])
    gaps = ((positions[None, :, :] - points[:, None, :]) @ normals[:, :, None])[..., 0] - radii
    k, near = np.nonzero(gaps <= margin)
    plane_e, plane_mu, plane_mu_r, plane_et = np.array([surface_law(plane, law) for plane in planes]).T
    e = np.where(np.isnan(plane_e[k]), law.restitution[near], plane_e[k])
    return WallRows(
        near.astype(np.int64),
        k.astype(np.int64),
        gaps[k, near],
        normals[k],
        RowLaws(e, plane_mu[k], plane_mu_r[k], plane_et[k]),
    )


def surface_law(surface, law: WorldLaw) -> tuple[float, float, float, float]:
    """``(restitution, friction, rolling friction, tangential restitution)`` of a
    surface's contacts: its own, or the world's ``law`` where it has none (restitution
    NaN: each sphere's own)."""
    et = getattr(surface, "tangential_restitution", None)
    return (
        np.nan if surface.restitution is None else float(surface.restitution),
        law.friction if surface.friction is None else float(surface.friction),
        law.rolling_friction if surface.rolling_friction is None else float(surface.rolling_friction),
        law.tangential_restitution if et is None else float(et),
    )


def rolling_rows(i, j, normals, wall_sphere, wall_normals, mu_r, radii, n):
    """``(rows, R* (m,))`` of the step's rows (pairs first, then walls) whose rolling
    resistance coefficients are ``mu_r`` (m,): the sparse (2m, 6N) rows ``2k + a`` of
    the relative angular velocity along tangent ``a`` times the rolling radius ``R*``
    (``-R* t_a`` on ``omega_i``, ``+R* t_a`` on ``omega_j`` for a pair, ``+R* t_a`` on
    ``omega_i`` for a wall; None when every coefficient is 0), and ``R* = r_i r_j /
    (r_i + r_j)`` for a pair, ``r_i`` on a wall (m). Scaled so, a rolling row is a
    velocity (m/s) and its law a Coulomb disc of coefficient ``mu_r``
    (`granular.contact.friction`)."""
    reduced = np.concatenate([radii[i] * radii[j] / (radii[i] + radii[j]), radii[wall_sphere]])
    if not np.any(mu_r > 0.0):
        return None, reduced
    pair_basis, wall_basis = tangent_basis(normals), tangent_basis(wall_normals)
    p, w = i.size, wall_sphere.size
    # Row 2k + a directly (not two stacked Jacobians interleaved afterwards): a pair's
    # entries on omega_i then omega_j, a wall's on omega_i.
    pair_rows = np.stack([reduced[:p, None] * pair_basis[:, a] for a in range(2)], axis=1)  # (p, 2, 3)
    wall_rows = np.stack([reduced[p:, None] * wall_basis[:, a] for a in range(2)], axis=1)  # (w, 2, 3)
    pair_data = np.concatenate([-pair_rows, pair_rows], axis=2)
    pair_cols = np.concatenate([3 * (i + n)[:, None] + np.arange(3), 3 * (j + n)[:, None] + np.arange(3)], axis=1)
    wall_cols = 3 * (wall_sphere + n)[:, None] + np.arange(3)
    data = np.concatenate([pair_data.ravel(), wall_rows.ravel()])
    indices = np.concatenate([np.repeat(pair_cols, 2, axis=0).ravel(), np.repeat(wall_cols, 2, axis=0).ravel()])
    indptr = np.concatenate([np.arange(0, 12 * p + 1, 6), 12 * p + np.arange(3, 6 * w + 1, 3)])
    return sp.csr_matrix((data, indices, indptr), shape=(2 * (p + w), 6 * n)), reduced


def sphere_jacobian(i, j, normals, wall_sphere, wall_normals, n, width=None) -> sp.csr_matrix:
    """Sparse G (m x width, default 3N): pair rows ``-n`` on sphere i, ``+n`` on sphere j;
    wall rows ``+n`` (translational columns only; ``width = 6N`` leaves the rotational
    columns of a rotating world empty: a normal row does not turn a sphere)."""
    pair_cols = np.concatenate([3 * i[:, None] + np.arange(3), 3 * j[:, None] + np.arange(3)], axis=1)
    pair_data = np.concatenate([-normals, normals], axis=1)
    wall_cols = 3 * wall_sphere[:, None] + np.arange(3)
    indices = np.concatenate([pair_cols.ravel(), wall_cols.ravel()])
    data = np.concatenate([pair_data.ravel(), wall_normals.ravel()])
    indptr = np.concatenate([np.arange(0, 6 * i.size + 1, 6), 6 * i.size + np.arange(3, 3 * wall_sphere.size + 1, 3)])
    m = i.size + wall_sphere.size
    return sp.csr_matrix((data, indices, indptr), shape=(m, 3 * n if width is None else width))


def tangent_basis(normals: np.ndarray) -> np.ndarray:
    """Two unit tangents (k, 2, 3) orthogonal to each unit normal (k, 3), right-handed
    ``(t_1, t_2, n)``; ``t_1`` is ``n x e`` for the axis ``e`` least aligned with ``n``."""
    axis = np.eye(3)[np.argmin(np.abs(normals), axis=1)]
    first = np.cross(normals, axis)
    first /= np.linalg.norm(first, axis=1)[:, None]
    return np.stack([first, np.cross(normals, first)], axis=1)


def sphere_tangents(i, j, normals, wall_sphere, wall_normals, n, radii=None) -> sp.csr_matrix:
    """Sparse tangential Jacobian: row ``2k + a`` is tangent ``a`` of row ``k``.

    Without ``radii`` (spheres that do not turn): (2m, 3N), ``-t`` on sphere i and
    ``+t`` on sphere j for a pair, ``+t`` for a wall row, so ``T u`` is the sliding
    velocity of the centres. With ``radii`` (N,) (m, at the end of the step): (2m,
    6N) on ``(u, omega)``, adding ``-r_i (n x t)`` on ``omega_i`` and ``-r_j (n x t)``
    on ``omega_j`` for a pair, ``-r_i (n x t)`` on ``omega_i`` for a wall, so that ``T
    (u, omega)`` is the tangential velocity of j's material point at the contact
    relative to i's (or of i's on the wall): module docstring."""
    if radii is None:
        pair_basis, wall_basis = tangent_basis(normals), tangent_basis(wall_normals)
        rows = [sphere_jacobian(i, j, pair_basis[:, a], wall_sphere, wall_basis[:, a], n) for a in range(2)]
        m = i.size + wall_sphere.size
        order = np.arange(2 * m).reshape(2, m).T.reshape(-1)  # interleave: 2k + a
        return sp.vstack(rows).tocsr()[order]
    from .assembly_kernels import turning_tangent_rows  # compiled at first use

    data, indices, indptr = turning_tangent_rows(
        np.ascontiguousarray(i, dtype=np.int64),
        np.ascontiguousarray(j, dtype=np.int64),
        np.ascontiguousarray(normals, dtype=float).reshape(-1, 3),
        np.ascontiguousarray(wall_sphere, dtype=np.int64),
        np.ascontiguousarray(wall_normals, dtype=float).reshape(-1, 3),
        np.ascontiguousarray(radii, dtype=float),
        int(n),
    )
    p, w = i.size, wall_sphere.size
    return sp.csr_matrix((data, indices, indptr), shape=(2 * (p + w), 6 * n))
