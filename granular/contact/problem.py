"""The one problem type every contact solver takes: `ContactProblem`.

A step's contact problem is the discrete contact law of Maury's scheme (Bernicot and
Lefebvre-Lepot, *Existence results for non-smooth second order differential
inclusions, convergence result for a numerical scheme and application to the
modelling of inelastic collisions*, 2010) with, where rows carry it, Coulomb
friction and rolling resistance (`granular.contact.friction` states the law):

    u = v + M^{-1} (G^T l_N + T^T l_T + R^T l_R),   G u >= b,   l_N >= 0, ...

Shapes and units: ``d`` coordinates, ``m`` contact rows, ``s`` tangent directions per
contact (1 in the plane, 2 in 3D). Velocities are m/s for spheres (generalised
velocities for other systems), impulses N s. Without tangent rows the problem is the
frictionless projection ``min 1/2 |u - v|_M^2  s.t.  G u >= b``
(`granular.contact.projection.project`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError


@dataclass(frozen=True)
class ContactProblem:
    """One contact problem.

    metric : the mass metric ``M`` (`granular.metric`).
    jacobian : ``G`` (m, d), the normal rows (gradients of the gaps along unit normals).
    predicted : ``v`` (d,), the prediction the contacts correct.
    lower : ``b`` (m,), the lower bounds of ``G u`` (velocity units; ``-D/h`` in Maury's step).
    tangents : ``T`` (m s, d) sparse, row ``s k + a`` the velocity of contact ``k``
        along its unit tangent ``a``; None without friction.
    tangent_count : ``s``, tangent directions per contact (0 without tangents).
    friction : ``mu`` (m,) Coulomb coefficients, or None (frictionless).
    rolling : ``R`` (2m, d) rolling rows (m/s, `granular.spheres.world`), or None.
    rolling_friction : ``mu_r`` (m,) rolling coefficients, or None.
    tangential_offset : (m, s) tangential velocity of a moving wall's surface (m/s),
        taken off ``T v``; None for fixed walls and pairs.
    warm_start : (m,) the previous step's normal impulses (N s) of the same rows, or None.
    warm_tangential : (m, s) their friction impulses (N s), or None.
    warm_rolling : (m, 2) their rolling impulses (N s), or None.
    keys : (m,) int64 keys naming the rows across steps (`ConstraintSet.keys`), or None.
    stall_floor : the run's floor of a stall of the Coulomb sweeps, in sweeps
        (`granular.contact.friction_gauss_seidel.stall_floor`; a small set's floor is
        raised by work, `granular.contact.friction_gauss_seidel.effective_floor`), or None
        for the fixed default.
    sweep_aim : the fraction of their tolerance the Coulomb sweeps aim at, in (0, 1]
        (`granular.contact.friction_gauss_seidel.solve`'s ``aim``), or None for
        `granular.contact.friction_gauss_seidel.TARGET`.
    contact_name : ``k -> str`` naming row ``k`` in messages ("contact 3 (sphere 1 and
        wall 0)"), or None.
    """

    metric: object
    jacobian: object
    predicted: np.ndarray
    lower: np.ndarray
    tangents: sp.csr_matrix | None = None
    tangent_count: int = 0
    friction: np.ndarray | None = None
    rolling: sp.csr_matrix | None = None
    rolling_friction: np.ndarray | None = None
    tangential_offset: np.ndarray | None = None
    warm_start: np.ndarray | None = None
    warm_tangential: np.ndarray | None = None
    warm_rolling: np.ndarray | None = None
    keys: np.ndarray | None = None
    contact_name: Callable[[int], str] | None = None
    stall_floor: int | None = None
    sweep_aim: float | None = None

    @property
    def size(self) -> int:
        """``m``, the number of contact rows."""
        return self.lower.size

    def delassus(self):
        """``W = G M^{-1} G^T`` (m x m), computed once (the problem is a value: the
        cache changes no field)."""
        if "_delassus" not in self.__dict__:
            self.__dict__["_delassus"] = self.metric.delassus(self.jacobian)
        return self.__dict__["_delassus"]

    @classmethod
    def from_constraints(
        cls,
        metric,
        constraints,
        predicted: np.ndarray,
        h: float,
        warm_start: np.ndarray | None = None,
        warm_tangential: np.ndarray | None = None,
        warm_rolling: np.ndarray | None = None,
        stall_floor: int | None = None,
        sweep_aim: float | None = None,
    ) -> "ContactProblem":
        """The frictional problem of a step's `ConstraintSet` (gaps at ``t_{n+1}``, rows at
        ``q^n``) for the step ``h`` (s): ``b = -D/h`` (`ConstraintSet.lower`), the tangent
        and rolling rows checked (`InvalidInputError` naming a bad row). Rolling
        resistance without friction gets zero tangent rows (s = 2).

        The rows' laws (`granular.contact_laws.RowLaws`) become the problem's
        coefficients here, and only here: ``mu`` (`check_friction`) and ``mu_r``
        (`rolling_rows`)."""
        mu, T, s = check_friction(constraints)
        mu_r, R = rolling_rows(constraints)
        m = constraints.jacobian.shape[0]
        if R is not None and s == 0:
            T, s = sp.csr_matrix((2 * m, constraints.jacobian.shape[1])), 2
        return cls(
            metric,
            constraints.jacobian,
            predicted,
            constraints.lower(h),
            tangents=T,
            tangent_count=s,
            friction=mu,
            rolling=R,
            rolling_friction=mu_r,
            tangential_offset=getattr(constraints, "tangential_offset", None),
            warm_start=warm_start,
            warm_tangential=warm_tangential,
            warm_rolling=warm_rolling if R is not None else None,
            contact_name=lambda k: _contact_name(constraints, k),
            stall_floor=stall_floor,
            sweep_aim=sweep_aim,
        )


def tangential_jacobian(constraints) -> tuple[sp.csr_matrix, int]:
    """The tangent rows of a `ConstraintSet` as a sparse (m s, d) matrix and ``s``.

    ``constraints.tangents`` may be a dense (m, s, d) array (`ConstrainedSystem`)
    or a sparse (m s, d) matrix whose row ``s k + a`` is tangent ``a`` of row ``k``
    (`SphereWorld`, where a dense array would be m x 3N).
    """
    m, d = constraints.jacobian.shape
    tangents = constraints.tangents
    if tangents is None:
        return sp.csr_matrix((0, d)), 0
    if sp.issparse(tangents):
        if m == 0 or tangents.shape[0] % m or tangents.shape[1] != d:
            raise InvalidInputError(
                f"sparse tangents must have shape (m s, d) with m = {m}, d = {d}, got {tangents.shape}"
            )
        return tangents.tocsr(), tangents.shape[0] // m  # itself when already CSR
    tangents = np.asarray(tangents, dtype=float)
    if tangents.ndim != 3 or tangents.shape[0] != m or tangents.shape[2] != d:
        raise InvalidInputError(f"tangents must have shape (m, s, d) = ({m}, s, {d}), got {tangents.shape}")
    return sp.csr_matrix(tangents.reshape(m * tangents.shape[1], d)), tangents.shape[1]


def check_friction(constraints) -> tuple[np.ndarray, sp.csr_matrix, int]:
    """``(mu, T, s)`` of a constraint set (``mu`` its ``laws.friction``), or
    `InvalidInputError` naming the bad row: a negative or non-finite coefficient, or a
    frictional row without a tangent."""
    mu = np.asarray(constraints.laws.friction, dtype=float)
    bad = np.flatnonzero(~np.isfinite(mu) | (mu < 0.0))
    if bad.size:
        raise InvalidInputError(
            f"friction coefficient of constraint {bad[0]} is {mu[bad[0]]}; it must be finite and >= 0"
        )
    T, s = tangential_jacobian(constraints)
    frictional = np.flatnonzero(mu > 0.0)
    if frictional.size and s == 0:
        raise InvalidInputError(
            f"constraint {frictional[0]} has friction {mu[frictional[0]]} but the constraint set has no tangents"
        )
    if frictional.size:
        missing = frictional[_row_squares(T).reshape(-1, s).sum(axis=1)[frictional] == 0.0]
        if missing.size:
            raise InvalidInputError(f"constraint {missing[0]} has friction {mu[missing[0]]} but a zero tangent")
    return mu, T, s


def rolling_rows(constraints) -> tuple:
    """``(mu_r (m,), R (2m, d))`` of a constraint set with rolling resistance (``mu_r``
    its ``laws.rolling_friction``), else
    ``(None, None)``; `InvalidInputError` for a negative or non-finite coefficient or
    rows of the wrong shape."""
    R, mu_r = constraints.rolling, constraints.laws.rolling_friction
    if R is None or mu_r is None:
        return None, None
    mu_r = np.asarray(mu_r, dtype=float)
    m, d = constraints.jacobian.shape
    bad = np.flatnonzero(~np.isfinite(mu_r) | (mu_r < 0.0))
    if bad.size:
        raise InvalidInputError(
            f"rolling friction coefficient of constraint {bad[0]} is {mu_r[bad[0]]}; it must be finite and >= 0"
        )
    if mu_r.shape != (m,) or R.shape != (2 * m, d):
        raise InvalidInputError(
            f"rolling rows must have shape (2m, d) = ({2 * m}, {d}) and coefficients "
            f"({m},), got {R.shape} and {mu_r.shape}"
        )
    if not np.any(mu_r > 0.0):
        return None, None
    return mu_r, (R.tocsr() if sp.issparse(R) else sp.csr_matrix(R))


def _row_squares(matrix: sp.csr_matrix) -> np.ndarray:
    """The sum of the squares of each row's entries (rows,), from the CSR arrays:
    no product matrix is formed (``T.multiply(T)`` allocated one the size of ``T``
    every step, a tenth of a settled pile's step)."""
    sums = np.zeros(matrix.shape[0])
    filled = np.diff(matrix.indptr) > 0
    if np.any(filled):  # reduceat sums from each filled row's start to the next's
        sums[filled] = np.add.reduceat(matrix.data * matrix.data, matrix.indptr[:-1][filled])
    return sums


def _contact_name(constraints, k) -> str:
    """ "contact k (sphere i and sphere j)", or the wall by the name the user's walls
    give it (`ConstraintSet.surface_names`), as `granular inspect` names it."""
    wall = int(constraints.wall[k])
    names = getattr(constraints, "surface_names", None) or ()
    other = f"sphere {constraints.j[k]}" if wall < 0 else (names[wall] if wall < len(names) else f"wall {wall}")
    return f"contact {k} (sphere {constraints.i[k]} and {other})"
