"""Independent references the tests compare the solvers with (cvxpy, imported when used)."""

from __future__ import annotations

import numpy as np


def reference_contact_law(
    M: np.ndarray, G: np.ndarray, T: np.ndarray, mu: float, v: np.ndarray, lower: float = 0.0
) -> np.ndarray:
    """The discrete contact law ``S(q, v)`` for one contact, solved as written in the study of
    Moreau's contact dynamics with Coulomb friction (Springer, 2017,
    doi:10.1007/978-3-319-55795-3_40), as a reference.

    ``M`` (d, d), ``G`` (d,) the normal row, ``T`` (s, d) the tangent rows, ``v`` (d,).
    Returns ``v`` if ``G v >= lower``, otherwise the kinetic-metric projection of 0
    onto ``(v + M^{-1} R) cap {u : G u = lower}``, ``R = {G^T l_N + T^T l_T : |l_T| <=
    mu l_N}``. With ``lower = -D/h != 0`` the objective is ``1/2 |u|_M^2 - lower l_N``
    (the same up to a constant when ``lower = 0``), the form whose stationarity
    gives (T) (module docstring). Solved with cvxpy (Clarabel), imported here.
    """
    import cvxpy as cp

    T = np.atleast_2d(T)
    if G @ v >= lower:
        return v.copy()
    normal, tangential = cp.Variable(), cp.Variable(T.shape[0])
    Minv = np.linalg.inv(M)
    u = v + Minv @ (G * normal + T.T @ tangential)
    L = np.linalg.cholesky(M)
    objective = 0.5 * cp.sum_squares(L.T @ u) - lower * normal
    problem = cp.Problem(cp.Minimize(objective), [cp.norm(tangential) <= mu * normal, G @ u == lower])
    problem.solve(solver="CLARABEL")
    return v + Minv @ (G * float(normal.value) + T.T @ np.asarray(tangential.value).reshape(-1))
