"""Remove the overlaps of a set of sphere positions before a run.

`remove_overlaps` moves the spheres until no two overlap and none crosses a wall,
each iteration as little as possible in the mass metric (``min sum_i m_i
|dq_i|^2``) with the machinery of a step (`granular.contact.projection.project`): at
``q_k`` each gap is replaced by its linearisation ``D(q_k) + G(q_k) dq``, which
never exceeds the true gap of a sphere pair (``|x|`` is convex) and equals it for
a plane; the pairs are those within the distance the displacement can close (the
neighbour search of a step, with ``dq`` in the role of ``h u``). When the first
iteration removes every overlap, the result is the projection of the starting
positions onto the linearised non-overlap set.

Because the linearisation is conservative, removing every overlap at once can be
impossible even where the spheres fit (a sphere overlapping a wall and a
neighbour whose other neighbours are close: measured on 150 spheres thrown at
random into a box). An iteration then asks only for a fraction ``a`` of each
overlap, ``D + G dq >= -(1 - a) D`` on the overlapping rows (``dq = 0`` meets it for
``a = 0``), halving ``a`` until a linear program (HiGHS) finds the set non-empty,
and the next iteration starts again from ``a = 1``. An iteration also asks no row
to separate by more than half the smallest radius, so that displacements stay
within the reach of the neighbour search (and of a periodic cell's minimum image).

Units: positions and radii in m, masses in kg (equal masses weigh every sphere
alike).
"""

from __future__ import annotations

import numpy as np

from ..errors import JammingError, SolverError
from ..contact.problem import ContactProblem
from ..contact.projection import infeasible, project
from ..tolerances import OVERLAP_TOLERANCE
from .world import SphereWorld

#: Smallest fraction of the overlaps an iteration may ask to remove before the
#: spheres are declared jammed.
_SMALLEST_FRACTION = 2.0**-20


def remove_overlaps(positions, radii, walls=(), masses=None, periodic=None, max_iterations: int = 50) -> np.ndarray:
    """Positions (N, 3) near ``positions`` at which no two spheres overlap and no sphere
    crosses a wall, up to the overlap tolerance of `granular.SphereWorld`
    (``OVERLAP_TOLERANCE (r_i + r_j)``): each iteration moves the spheres as little
    as possible in the mass metric (module docstring).

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
    world = SphereWorld(
        positions,
        radii,
        masses=1.0 if masses is None else masses,
        gravity=(0.0, 0.0, 0.0),
        walls=walls,
        periodic=periodic,
        initial_overlaps="separate",
    )
    q = world.q0.copy()
    metric = world.metric(world.t0, q)
    step_limit = 0.5 * float(world.radii_at(world.t0).min())
    for _ in range(max_iterations):
        deepest = _deepest_overlap(world, q)
        if deepest == 0.0:
            return q.reshape(world.n, 3)
        displacement = _linearised_projection(world, metric, q, min(deepest, step_limit), step_limit)
        q = world.advance(q, displacement, 1.0)
    deepest = _deepest_overlap(world, q)
    if deepest > 0.0:
        raise SolverError(f"overlaps remain after {max_iterations} iterations (deepest {deepest:.3g} m)")
    return q.reshape(world.n, 3)


def _linearised_projection(world, metric, q, reach, step_limit):
    """The smallest displacement (3N,) from ``q`` that removes (a fraction of) the
    linearised overlaps, with the pairs a displacement of ``reach`` can bring into
    contact (widened and redone when a sphere moves further)."""
    while True:
        constraints = world.constraints(world.t0, q, 1.0, reach)
        answer = _largest_admissible_step(metric, constraints, np.zeros(q.size), step_limit)
        moved = float(world.body_speeds(answer.velocities).max(initial=0.0))
        if moved <= reach + world.speed_slack(world.t0, 1.0):
            return answer.velocities
        reach = 2.0 * moved


def _largest_admissible_step(metric, constraints, wanted, step_limit):
    """The projection of ``wanted`` asking for the largest fraction ``a`` in 1, 1/2,
    1/4, ... of every overlap that a linear program finds possible and the
    projection then solves (module docstring)."""
    overlapping = constraints.gap < 0.0
    fraction = 1.0
    while fraction >= _SMALLEST_FRACTION:
        lower = np.where(overlapping, np.minimum(-fraction * constraints.gap, step_limit), -constraints.gap)
        if not overlapping.any() or not infeasible(constraints.jacobian, lower):
            try:
                return project(ContactProblem(metric, constraints.jacobian, wanted, lower))
            except SolverError:  # JammingError included: at the edge of feasibility
                pass
        fraction *= 0.5
    raise JammingError(
        f"the spheres cannot be separated: no displacement removes even "
        f"{_SMALLEST_FRACTION:.1e} of the overlaps (jammed)",
        status="infeasible",
    )


def _deepest_overlap(world, q) -> float:
    """The deepest overlap beyond the tolerance at ``q`` (m), 0 if none."""
    constraints = world.constraints(world.t0, q, 1.0, 0.0)
    if constraints.size == 0:
        return 0.0
    radii = world.radii_at(world.t0)
    scale = np.where(
        constraints.wall >= 0, radii[constraints.i], radii[constraints.i] + radii[np.maximum(constraints.j, 0)]
    )
    excess = -constraints.gap - OVERLAP_TOLERANCE * scale
    return float(max(0.0, excess.max()))
