"""Remove the overlaps of a set of sphere positions before a run.

`remove_overlaps` projects the positions onto the set where no two spheres overlap
and no sphere crosses a wall, in the mass metric: it moves them as little as
possible, ``min sum_i m_i |q_i - q0_i|^2``. The set is not convex, so the
projection is computed by sequential linearisation with the machinery of a step
(`granular.projection.project`): at ``q_k`` each gap is replaced by its
linearisation ``D(q_k) + G(q_k) (q - q_k)``, which never exceeds the true gap of a
sphere pair (``|x|`` is convex) and equals it for a plane; the pairs are those
within the distance the displacement can close (the neighbour search of a step,
with the displacement in the role of ``h u``). Iterates converge to a local
projection.

Because the linearisation is conservative, removing every overlap at once can be
impossible even where the spheres fit (a sphere overlapping a wall and a
neighbour whose other neighbours are close: measured on 150 spheres thrown at
random into a box). An iteration then asks only for a fraction ``a`` of each
overlap, ``D + G dq >= -(1 - a) D`` on the overlapping rows (``dq = 0`` meets it for
``a = 0``), halving ``a`` until a linear program (HiGHS) finds the set non-empty,
and the next iteration starts again from ``a = 1``.

Units: positions and radii in m, masses in kg (equal masses give the Euclidean
projection).
"""
from __future__ import annotations

import numpy as np

from .errors import JammingError, SolverError
from .projection import _infeasible, project
from .tolerances import OVERLAP_TOLERANCE
from .world import SphereWorld

#: Relative change of the positions (in units of the smallest radius) below which
#: the sequential linearisation has converged.
_CONVERGED = 1e-9
#: Smallest fraction of the overlaps an iteration may ask to remove before the
#: spheres are declared jammed.
_SMALLEST_FRACTION = 2.0 ** -20


def remove_overlaps(positions, radii, walls=(), masses=None, periodic=None,
                    max_iterations: int = 50) -> np.ndarray:
    """Positions (N, 3) closest to ``positions`` (in the mass metric) at which no two
    spheres overlap and no sphere crosses a wall, up to the overlap tolerance of
    `granular.SphereWorld` (``OVERLAP_TOLERANCE (r_i + r_j)``).

    Parameters
    ----------
    positions : (N, 3) array
        Centres (m), possibly overlapping.
    radii : float or (N,) array
        Radii (m).
    walls : sequence of `Plane` and `Box`
        Obstacles the spheres must stay clear of.
    masses : float, (N,) array or None
        Weights of the metric (kg); None moves every sphere alike.
    periodic : PeriodicBox or None
        Periodic boundary conditions (the result is wrapped into the cell).
    max_iterations : int
        Linearisations before giving up.

    Raises
    ------
    InvalidInputError
        Bad shapes or values (as `SphereWorld`).
    JammingError
        The spheres cannot fit (the linearised set is empty).
    SolverError
        No overlap-free configuration after ``max_iterations`` linearisations.
    """
    world = SphereWorld(positions, radii, masses=1.0 if masses is None else masses, gravity=(0.0, 0.0, 0.0),
                        walls=walls, periodic=periodic, initial_overlaps="separate")
    target = world.q0.copy()
    q = target.copy()
    metric = world.metric(world.t0, q)
    r_min = float(world.radii_at(world.t0).min())
    reach = _deepest_overlap(world, q)
    for _ in range(max_iterations):
        displacement, reach = _linearised_projection(world, metric, q, target, reach)
        q_next = world.advance(q, displacement, 1.0)
        change = float(np.abs(displacement).max(initial=0.0))
        q = q_next
        if change <= _CONVERGED * r_min and _deepest_overlap(world, q) == 0.0:
            break
    else:
        if _deepest_overlap(world, q) > 0.0:
            raise SolverError(f"overlaps remain after {max_iterations} linearisations "
                              f"(deepest {_deepest_overlap(world, q):.3g} m)")
    return q.reshape(world.n, 3)


def _linearised_projection(world, metric, q, target, reach):
    """One linearised projection from ``q`` towards ``target``; returns the displacement
    (3N,) and the search reach (m) that was enough for it."""
    while True:
        constraints = world.constraints(world.t0, q, 1.0, reach)
        answer = _largest_admissible_step(metric, constraints, target - q)
        moved = float(world.body_speeds(answer.velocities).max(initial=0.0))
        if moved <= reach + world.speed_slack(world.t0, 1.0):
            return answer.velocities, max(reach, moved)
        reach = 2.0 * moved  # a sphere moved past the pairs searched: widen and redo


def _largest_admissible_step(metric, constraints, wanted):
    """The projection of ``wanted`` asking for the largest fraction ``a`` in 1, 1/2,
    1/4, ... of every overlap that a linear program finds possible and the
    projection then solves (module docstring)."""
    overlapping = constraints.gap < 0.0
    fraction = 1.0
    while fraction >= _SMALLEST_FRACTION:
        lower = np.where(overlapping, -fraction * constraints.gap, -constraints.gap)
        if not overlapping.any() or not _infeasible(constraints.jacobian, lower):
            try:
                return project(metric, constraints.jacobian, wanted, lower)
            except SolverError:  # JammingError included: at the edge of feasibility
                pass
        fraction *= 0.5
    raise JammingError(f"the spheres cannot be separated: no displacement removes even "
                       f"{_SMALLEST_FRACTION:.1e} of the overlaps (jammed)", status="infeasible")


def _deepest_overlap(world, q) -> float:
    """The deepest overlap beyond the tolerance at ``q`` (m), 0 if none."""
    constraints = world.constraints(world.t0, q, 1.0, 0.0)
    if constraints.size == 0:
        return 0.0
    radii = world.radii_at(world.t0)
    scale = np.where(constraints.wall >= 0, radii[constraints.i],
                     radii[constraints.i] + radii[np.maximum(constraints.j, 0)])
    excess = -constraints.gap - OVERLAP_TOLERANCE * scale
    return float(max(0.0, excess.max()))
