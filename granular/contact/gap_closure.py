"""Closing the gaps a frictional step leaves: a projection of the positions after the
velocities are settled (post-stabilisation; Cline and Pai, *Post-stabilization for
rigid body simulation with contact and constraints*, ICRA 2003).

Why. The frictionless projection is exact: its active rows end the step at gaps of
round-off size. The Coulomb sweeps (`granular.contact.friction_gauss_seidel`) accept an
answer whose normal velocities meet Maury's constraint ``D + h G u >= 0`` only to
their tolerance ``tau`` (m/s), so a closed contact ends the step up to ``h tau``
inside its neighbour: about 1e-5 of a radius in a settling pile, never growing
(the next step's constraint asks the contact to reopen by ``-D/h``), but no longer
exact. Tightening the sweeps to round-off is out of reach (their rate is set by the
depth of the contact network).

The law. With the step's velocities ``u`` kept, the positions move by the smallest
displacement in the mass metric that makes every linearised gap of the step
non-negative:

    dq = argmin 1/2 |dq|_M^2   s.t.   D + h G u + G dq >= 0,

i.e. ``dq = h w`` with ``w`` the metric projection of 0 onto ``{w : G w >= b - G u}``,
``b = -D/h`` the step's own bounds (`granular.constraints.ConstraintSet.lower`).
That is the frictionless projection of `granular.contact.projection.project`, solved
exactly by its active-set method with a factor carried from step to step. Its
multipliers ``l`` (N s) give ``dq = h M^{-1} G^T l``:

- only normal rows act, and they carry no rotational part, so the spheres' angular
  velocities and orientations are untouched;
- the velocities, and with them the Coulomb law, momentum and the kinetic energy of
  the step, are unchanged; the positions are ``q + h (u + w)`` instead of ``q + h u``;
- between two spheres the pushes are equal and opposite in the metric
  (``m_i dq_i = -m_j dq_j``): the centre of mass of a pile moves only where a wall
  pushes;
- a row the sweeps left open stays open (``l = 0``), a closed row ends at a gap of
  round-off size, and ``|dq|`` is at most of the order of ``h tau``.
"""

from __future__ import annotations

import numpy as np

from . import active_set
from .problem import ContactProblem
from .projection import project
from ..errors import GranularError


def close_gaps(
    metric, constraints, velocities: np.ndarray, h: float, keys: np.ndarray, workspace: active_set.Workspace, warm=None
):
    """``(w (d,), l (m,))``: the velocity ``w`` (m/s) whose step ``h w`` closes the gaps
    the step's velocities ``u`` (d,) leave (module docstring), and its multipliers ``l``
    (N s), for ``constraints`` (the step's `granular.constraints.ConstraintSet`) in
    ``metric``. ``keys`` (m,) name the rows across steps (`ConstraintSet.keys`);
    ``warm`` (m,) are the previous step's multipliers of the same rows (the active-set
    method's start), and ``workspace`` carries its factor between steps.

    Returns ``(None, None)`` when no row needs a push, or when the projection finds no
    answer it can certify (the step then keeps ``q + h u``: a correction is never worth
    stopping a run for)."""
    jacobian = constraints.jacobian
    shortfall = constraints.lower(h) - jacobian @ velocities
    if shortfall.size == 0 or not np.any(shortfall > 0.0):
        return None, None
    problem = ContactProblem(
        metric,
        jacobian,
        np.zeros_like(velocities),
        shortfall,
        warm_start=warm,
        keys=keys,
    )
    try:
        answer = project(problem, workspace=workspace, strict=True)
    except GranularError:
        return None, None
    return answer.velocities, answer.impulses
