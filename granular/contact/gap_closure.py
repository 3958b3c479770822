"""Closing the gaps a frictional step, or a curved wall, leaves: a projection of the
positions after the velocities are settled (post-stabilisation; Cline and Pai,
*Post-stabilization for rigid body simulation with contact and constraints*, ICRA 2003).

Why. The frictionless projection is exact: its active rows end the step at gaps of
round-off size. The Coulomb sweeps (`granular.contact.friction_gauss_seidel`) accept an
answer whose normal velocities meet Maury's constraint ``D + h G u >= 0`` only to
their tolerance ``tau`` (m/s), so a closed contact ends the step up to ``h tau``
inside its neighbour: about 1e-5 of a radius in a settling pile, never growing
(the next step's constraint asks the contact to reopen by ``-D/h``), but no longer
exact. Tightening the sweeps to round-off is out of reach (their rate is set by the
conditioning of the network of sticking contacts, which worsens with the pile's depth).
A frictionless step is exact on its linearised rows,
but the row of a curved wall misses the surface's curvature (below): such a step is
closed when a wall row sinks beyond the closure's accuracy (`overlaps_a_wall`).

The law. With the step's velocities ``u`` kept, the positions move by ``dq = h w``
with ``w = M^{-1} G^T l`` (``l`` (N s) the closure's multipliers), so that

- every contact that pushes in the step (``lambda_k > 0``), or that the step leaves
  overlapping, ends it touching: ``D_k + h G_k (u + w) = 0``, Signorini's
  complementarity (a contact that pushes is closed) at the position level; so does
  a contact held touching at the previous step that the step leaves open by no more
  than the largest gap error of those (the sweeps' own error: a pull of that size);
- every other row keeps a gap ``D_k + h G_k (u + w) >= 0``: a row the displacement
  would close joins the rows held touching, ``E``;
- ``dq`` is the smallest displacement in the mass metric that holds ``E`` touching,
  ``G_E w = s_E`` with ``s = b - G u`` and ``b = -D/h`` the step's own bounds
  (`granular.constraints.ConstraintSet.lower`). It is unique, though ``l`` is not
  where contacts are redundant (``W_EE l = 0`` gives ``G_E^T l = 0``); ``l`` is the
  solution nearest the previous step's multipliers in the metric ``diag W``, by
  proximal-point iterations on ``(W_EE + rho D_E) l_E = s_E + rho D_E l_ref``
  (Rockafellar, *Monotone operators and the proximal point algorithm*, 1976).

A row of a curved wall closes its actual gap at ``q + h u``, along its normal there
(cylinders' sides, cones: ``s_k = -D_k(q + h u)/h``); the others, pairs, planes (whose
linearised gap is exact), panels (a plane, and a convex rim) and mesh rows, close
their linearised gap ``D_k + h G_k u``. A linearised gap
misses the curvature of the surface by about ``delta^2 / (2 R)`` for a tangential
travel ``delta`` along a surface of radius ``R``: inside a drum or a funnel that is
an overlap (a sphere sliding at 1 m/s in a drum of 5 cm, 1e-3 of its radius at h = 1
ms), and a closure along the normal of the step's start misses by ``|dq| (1 - cos
theta)`` for the angle ``theta`` the normal turned through. A pair's linearised gap
errs only the other way (``n . (x_j - x_i) <= |x_j - x_i|``): two spheres that pushed
while sliding past each other end the step slightly apart.

Why equalities, which may pull a contact that the sweeps left slightly open as well
as push one they left overlapping: the rows held touching are those of the Coulomb
answer, which change little from one step to the next in a pile at rest, so the
sparse factor of ``W_EE + rho D_E`` of an earlier step serves the next one through
conjugate gradients (`granular.contact.active_set`, whose solves this reuses). The
inequality projection instead (only pushes) chose among the same rows a different
set each step, by the noise of the sweeps' residuals, and refactorised every step:
0.6 s of a 0.7 s step of 9,000 frictional spheres at rest. It remains the fallback
when the proximal iterations do not converge (``W_EE`` singular and ``s_E`` outside
its range, which needs gaps no displacement can close at once).

Consequences:

- only normal rows act, and they carry no rotational part, so the spheres' angular
  velocities and orientations are untouched;
- the velocities, and with them the Coulomb law, momentum and the kinetic energy of
  the step, are unchanged; the positions are ``q + h (u + w)`` instead of ``q + h u``;
- between two spheres the pushes are equal and opposite in the metric
  (``m_i dq_i = -m_j dq_j``): the centre of mass of a pile moves only where a wall
  pushes;
- ``|dq|`` is of the order of ``h`` times the sweeps' tolerance, plus the curvature
  term ``delta^2 / (2 R)`` of concave walls.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import active_set, delassus_rows
from .bordered_factor import REFACTORISED_LARGE_BASE
from .problem import ContactProblem
from .projection import project
from ..errors import GranularError
from ..tolerances import OVERLAP_TOLERANCE, VELOCITY_TOLERANCE

#: Rounds in which rows that the displacement would close join the rows held touching,
#: after which the closure falls back on the projection (`_projected`). Rows only join,
#: so the rounds end by themselves; the cap guards against a set growing a row or two
#: a round. Why this many: a round costs conjugate-gradient iterations on the factor
#: it shares with the round before (a new factor when many rows join at once), the
#: fallback a projection that refactorises at nearly every exchange of its active set.
#: A frictional pile of 9,000 spheres at rest, taken from zero impulses, closed its
#: gaps in 5 rounds (26,592 rows held, then 120, 37, 13 and 4 joining): a cap of 4
#: sent it to the fallback's 23 factorisations, 14.7 s against 2.2 s
#: (benchmarks/README.md, `large_piles.py`). The piles and drum of `peers.py`,
#: `stress.py` and `drum.py` need at most 3 rounds.
MAX_JOINING_ROUNDS = 16
#: The closure meets its gaps to this fraction of the touching tolerance
#: (``OVERLAP_TOLERANCE`` times the smallest radius, the overlap the world accepts as
#: contact): closer is not asked of it, and at 100,000 spheres at rest each tenfold
#: of accuracy costs conjugate-gradient iterations on a factor of 280,000 rows.
GAP_FRACTION = 0.1


def close_gaps(
    metric,
    constraints,
    velocities: np.ndarray,
    h: float,
    keys: np.ndarray,
    workspace: active_set.Workspace,
    warm=None,
    pushing=None,
    walls_after=None,
    smallest_radius: float = 0.0,
):
    """``(w (d,), l (m,))``: the velocity ``w`` (m/s) whose step ``h w`` closes the gaps
    the step's velocities ``u`` (d,) leave (module docstring), and its multipliers ``l``
    (N s), for ``constraints`` (the step's `granular.constraints.ConstraintSet`) in
    ``metric``. ``keys`` (m,) name the rows across steps (`ConstraintSet.keys`);
    ``warm`` (m,) are the previous step's multipliers of the same rows (the proximal
    iterations' start), and ``workspace`` carries the factor between steps.
    ``pushing`` (m,) bool marks the rows whose normal impulse is positive (held
    touching); None holds only the overlapping rows. ``walls_after`` is ``(gaps (m,),
    normals (m, 3))`` of the wall rows at ``q + h u`` where the world knows them (NaN
    elsewhere; `granular.spheres.world.SphereWorld.wall_rows_at`): those rows close their
    actual gaps, along their normals there. The gaps are met to `GAP_FRACTION` of the
    touching tolerance ``OVERLAP_TOLERANCE * smallest_radius`` (m), or to round-off
    (``VELOCITY_TOLERANCE`` of the largest gap to close) when that is coarser.

    Returns ``(None, None)`` when every row held touching touches already, or when
    neither the touching closure nor the projection finds an answer (the step then
    keeps ``q + h u``: a correction is never worth stopping a run for)."""
    jacobian = constraints.jacobian
    shortfall = constraints.lower(h) - jacobian @ velocities
    if walls_after is not None:
        actual = _actual_rows(constraints, walls_after)
        if actual.any():
            jacobian = _normals_replaced(jacobian, constraints, actual, walls_after[1])
            shortfall = np.where(actual, -np.where(actual, walls_after[0], 0.0) / h, shortfall)
    held = shortfall > 0.0 if pushing is None else (shortfall > 0.0) | pushing
    if not np.any(shortfall[held] != 0.0):
        return None, None
    warm = np.zeros(shortfall.size) if warm is None else np.nan_to_num(warm)
    # A row held at the previous step stays held while it is open by no more than the
    # largest gap error of the rows held now: the set, and with it the factor, then
    # holds nearly still in a pile at rest (one contact changed at 5 of 280 steps of
    # the frictional pile of `tests/support/piles.py`), where rows whose impulse
    # flickers about zero would otherwise leave and join it step after step.
    held |= (warm != 0.0) & (shortfall >= -float(np.abs(shortfall[held]).max()))
    # velocity units: the largest gap to close over h sets the round-off level
    largest = float(np.abs(shortfall[held]).max())
    feasibility = max(VELOCITY_TOLERANCE * largest, touching_gap(smallest_radius) / h)
    answer = _touching(metric, jacobian, shortfall, keys, workspace, warm, held, feasibility)
    if answer is not None:
        return answer
    return _projected(metric, jacobian, velocities, shortfall, keys, workspace, warm)


def closure_workspace() -> active_set.Workspace:
    """The factor cache the closure carries from step to step. Its held rows change
    beyond the border at nearly every step of a settling pile, so its factor is made
    anew and its factoriser chosen by the factorisation's time: qdldl up to
    `bordered_factor.REFACTORISED_LARGE_BASE` rows."""
    return active_set.Workspace(large_base=REFACTORISED_LARGE_BASE)


def touching_gap(smallest_radius: float) -> float:
    """The closure's accuracy (m): `GAP_FRACTION` of the touching tolerance
    ``OVERLAP_TOLERANCE * smallest_radius`` (m); 0 for a world without spheres."""
    return GAP_FRACTION * OVERLAP_TOLERANCE * smallest_radius if np.isfinite(smallest_radius) else 0.0


def overlaps_a_wall(constraints, walls_after, smallest_radius: float) -> bool:
    """Whether a wall row's actual gap at ``q + h u`` (``walls_after``, as `close_gaps`
    takes it) overlaps by more than the closure's accuracy: what a frictionless step,
    exact on its linearised rows, leaves against a curved wall. Rows that overlapped
    at the step's start in a world that caps their separation speed keep their bound
    and do not count (`close_gaps`)."""
    return bool(np.any(walls_after[0][_actual_rows(constraints, walls_after)] < -touching_gap(smallest_radius)))


def _actual_rows(constraints, walls_after) -> np.ndarray:
    """(m,) bool: the rows that close their actual gap (``walls_after`` gives it), but
    for overlaps separating at a world's capped speed, which keep their bound."""
    actual = np.isfinite(walls_after[0])
    if constraints.separation_speed is not None:
        actual &= constraints.gap >= 0.0
    return actual


def _normals_replaced(jacobian, constraints, rows: np.ndarray, normals: np.ndarray):
    """``jacobian`` with the wall rows ``rows`` (m,) bool given the unit ``normals`` (m, 3)
    instead of their own (a wall row's is its normal at its sphere's centre
    coordinates, `granular.spheres.assembly`)."""
    chosen = np.flatnonzero(rows)
    change = normals[chosen] - constraints.normal[chosen]
    columns = 3 * constraints.i[chosen][:, None] + np.arange(3)
    correction = sp.csr_matrix((change.ravel(), (np.repeat(chosen, 3), columns.ravel())), shape=jacobian.shape)
    return sp.csr_matrix(jacobian + correction)


def _touching(metric, jacobian, shortfall, keys, workspace, warm, held, feasibility):
    """The closure that holds the rows ``held`` (m,) bool touching (module docstring) to
    ``feasibility`` (m/s): ``(w, l)``, or None when its proximal iterations do not
    converge."""
    rows_data = delassus_rows.DelassusRows(metric, jacobian, -shortfall)
    context = active_set.SolveContext(rows_data, keys, None, feasibility, workspace, active_set.ActiveSetStats())
    workspace.last = context.stats
    held = held.copy()
    for _ in range(MAX_JOINING_ROUNDS):
        rows = np.flatnonzero(held)
        multipliers = np.zeros(shortfall.size)
        values = _proximal(context, rows, shortfall[rows], warm[rows])
        if values is None:
            return None
        multipliers[rows] = values
        slack = rows_data.slack(multipliers)  # G w - s
        closing = ~held & (slack < -feasibility)
        if not closing.any():
            return metric.solve(jacobian.T @ multipliers), multipliers
        held |= closing
    return None


def _proximal(context, rows, target, reference):
    """``l_E`` (len(rows),) with ``W_EE l_E = target`` to the context's feasibility (velocity
    units), by proximal-point iterations from ``reference``; None when
    `active_set.MAX_PROXIMAL` of them do not reach it."""
    rho = active_set.RHO
    scale = rho * context.rows.diagonal[rows]
    plain = context.rows.operator(rows, 0.0)
    values = reference
    for _ in range(active_set.MAX_PROXIMAL):
        values = active_set.solve_block(context, rows, rho, target + scale * values, values)
        if np.abs(plain(values) - target).max(initial=0.0) <= context.feasibility:
            return values
    return None


def _projected(metric, jacobian, velocities, shortfall, keys, workspace, warm):
    """The fallback: the metric projection of 0 onto ``{w : G w >= s}`` (pushes only),
    ``(w, l)`` or ``(None, None)``."""
    problem = ContactProblem(
        metric, jacobian, np.zeros_like(velocities), shortfall, warm_start=np.maximum(warm, 0.0), keys=keys
    )
    try:
        answer = project(problem, workspace=workspace, strict=True)
    except GranularError:
        return None, None
    return answer.velocities, answer.impulses
