"""Compiled projected Gauss-Seidel sweeps on the frictionless multiplier problem

    min_{l >= 0}  1/2 l^T W l + c^T l,      W = H H^T,

with ``H = G M^{-1/2}`` a sparse CSR matrix (m x d) (`granular.contact.delassus_rows.DelassusRows`).

One sweep visits every row once and replaces its impulse by the exact minimiser
along that coordinate, ``l_k <- max(0, l_k - s_k / W_kk)`` with ``s_k = H_k u + c_k``,
keeping ``u = H^T l`` (d,) up to date by the change, so that a sweep costs
O(nnz(H)) and ``W`` is never formed. This is the projected Gauss-Seidel method for
a linear complementarity problem (Cottle, Pang and Stone, *The Linear
Complementarity Problem*, Academic Press, 1992), over-relaxed when ``relaxation``
exceeds 1 (Cryer, *The solution of a quadratic programming problem using
systematic overrelaxation*, SIAM J. Control, 1971). Sweeps between full ones
may visit only the rows that are live (pushing, or changed by the last full
sweep): each visit still lowers the objective for a relaxation in (0, 2), and the
regular full sweeps keep every row in play, so the iteration converges to the same
answer, faster where most rows stay idle (a gas, or a pile's many contacts that do
not carry load). `granular.contact.active_set` uses a few sweeps to guess its first
active set.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def sweeps(indptr, indices, data, diagonal, c, impulses, u, count, relaxation, settle, full_every):
    """At most ``count`` projected Gauss-Seidel sweeps in row order, in place on
    ``impulses`` (m,) and ``u = H^T impulses`` (d,); ``(indptr, indices, data)`` is
    ``H`` (CSR), ``diagonal`` (m,) is ``diag W`` (positive); each step along a
    coordinate is scaled by ``relaxation`` in (0, 2) (over-relaxation above 1).

    With ``full_every`` > 1 only sweeps 1, 1 + full_every, ... visit every row;
    the sweeps between visit only the rows that the last full sweep changed or
    left pushing (an idle row, at zero with a positive slack, waits for the next
    full sweep).

    With ``settle`` > 0 the sweeps stop after a full sweep ``s`` (1-based) once
    ``s >= settle`` and no row has entered or left the support (``impulses > 0``)
    in the latter half of the sweeps made (``s >= 2 x`` the last sweep that
    changed it). Returns the number of sweeps made."""
    m = c.size
    last_change = 0
    live = np.empty(m, dtype=np.int64)
    n_live = 0
    for sweep in range(1, count + 1):
        full = full_every <= 1 or (sweep - 1) % full_every == 0
        visits = m if full else n_live
        if full:
            n_live = 0
        for position in range(visits):
            k = position if full else live[position]
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
            if full and (change != 0.0 or new > 0.0):
                live[n_live] = k
                n_live += 1
        if full and settle > 0 and sweep >= settle and sweep >= 2 * last_change:
            return sweep
    return count


def projected_gauss_seidel(
    H,
    diagonal: np.ndarray,
    c: np.ndarray,
    start: np.ndarray,
    count: int,
    relaxation: float = 1.0,
    settle: int = 0,
    full_every: int = 1,
):
    """``(impulses, u, sweeps made)`` after at most ``count`` sweeps from ``start``
    (m,), ``u = H^T impulses``; ``settle`` > 0 stops earlier once the support has
    settled (see `sweeps`)."""
    impulses = np.array(start, dtype=float)
    u = np.asarray(H.T @ impulses, dtype=float)
    made = sweeps(
        H.indptr,
        H.indices,
        H.data,
        diagonal,
        c,
        impulses,
        u,
        int(count),
        float(relaxation),
        int(settle),
        int(full_every),
    )
    return impulses, u, made
