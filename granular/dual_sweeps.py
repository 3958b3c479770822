"""Compiled projected Gauss-Seidel sweeps on the frictionless multiplier problem

    min_{l >= 0}  1/2 l^T W l + c^T l,      W = H H^T,

with ``H = G M^{-1/2}`` a sparse CSR matrix (m x d) (`granular.active_set.ContactRows`).

One sweep visits every row once and replaces its impulse by the exact minimiser
along that coordinate, ``l_k <- max(0, l_k - s_k / W_kk)`` with ``s_k = H_k u + c_k``,
keeping ``u = H^T l`` (d,) up to date by the change, so that a sweep costs
O(nnz(H)) and ``W`` is never formed. This is the projected Gauss-Seidel method for
a linear complementarity problem (Cottle, Pang and Stone, *The Linear
Complementarity Problem*, Academic Press, 1992), over-relaxed when ``relaxation``
exceeds 1 (Cryer, *The solution of a quadratic programming problem using
systematic overrelaxation*, SIAM J. Control, 1971). `granular.active_set` uses a
few of them to guess its first active set.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def sweeps(indptr, indices, data, diagonal, c, impulses, u, count, relaxation, settle):
    """At most ``count`` projected Gauss-Seidel sweeps in row order, in place on
    ``impulses`` (m,) and ``u = H^T impulses`` (d,); ``(indptr, indices, data)`` is
    ``H`` (CSR), ``diagonal`` (m,) is ``diag W`` (positive); each step along a
    coordinate is scaled by ``relaxation`` in (0, 2) (over-relaxation above 1).

    With ``settle`` > 0 the sweeps stop after sweep ``s`` (1-based) once ``s >=
    settle`` and no row has entered or left the support (``impulses > 0``) in the
    latter half of the sweeps made (``s >= 2 x`` the last sweep that changed it).
    Returns the number of sweeps made."""
    m = c.size
    last_change = 0
    for sweep in range(1, count + 1):
        for k in range(m):
            slack = c[k]
            for entry in range(indptr[k], indptr[k + 1]):
                slack += data[entry] * u[indices[entry]]
            new = impulses[k] - relaxation * slack / diagonal[k]
            if new < 0.0:
                new = 0.0
            change = new - impulses[k]
            if change != 0.0:
                if (new > 0.0) != (impulses[k] > 0.0):
                    last_change = sweep
                impulses[k] = new
                for entry in range(indptr[k], indptr[k + 1]):
                    u[indices[entry]] += data[entry] * change
        if settle > 0 and sweep >= settle and sweep >= 2 * last_change:
            return sweep
    return count


def projected_gauss_seidel(H, diagonal: np.ndarray, c: np.ndarray, start: np.ndarray, count: int,
                           relaxation: float = 1.0, settle: int = 0):
    """``(impulses, u, sweeps made)`` after at most ``count`` sweeps from ``start``
    (m,), ``u = H^T impulses``; ``settle`` > 0 stops earlier once the support has
    settled (see `sweeps`)."""
    impulses = np.array(start, dtype=float)
    u = np.asarray(H.T @ impulses, dtype=float)
    made = sweeps(H.indptr, H.indices, H.data, diagonal, c, impulses, u, int(count), float(relaxation),
                  int(settle))
    return impulses, u, made
