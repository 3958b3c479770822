"""The fast path of scheme (P_h beta) for a linear system with a harmonic load and
one obstacle coordinate (`granular.schemes.newmark`): the state evolves by one of
three affine maps (free flight, contact with the upper or with the lower obstacle),
whose powers are computed once, so that a block of steps costs two matrix-vector
products (`NewmarkScheme.block_history`, `simulate_tip`: the derivation).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from .newmark import Operators

#: The modes of a step: free flight, contact with the upper obstacle, with the lower.
_FREE, _UPPER, _LOWER = 0, 1, 2


class BlockHistory(NamedTuple):
    """What `NewmarkScheme.block_history` returns for local steps ``0 .. m``.

    tips : (m + 1,) the contact coordinate ``x`` after each step (``tips[0]`` now).
    unconstrained : (m + 1,) its unconstrained value ``x'`` in each step (``[0]``: now),
        or None when not asked for.
    last : ``z`` after step ``m`` (``z[:d] = q``, ``z[d:2d]`` the positions one step before).
    """

    tips: np.ndarray
    unconstrained: np.ndarray | None
    last: np.ndarray


def affine_maps(ops: Operators, p_sin, p_cos, omega: float, max_block: int) -> dict:
    """The free and contact maps of `simulate_tip`, their powers and prediction rows."""
    dt, beta, i = ops.dt, ops.beta, ops.index
    d = ops.M.shape[0]
    D = 2 * d + 5
    IS, IC, IP, IPP, I1 = 2 * d, 2 * d + 1, 2 * d + 2, 2 * d + 3, 2 * d + 4
    theta = omega * dt
    # G^n = sum_j weight_j F^{n+j}: means over [t_{n+j}, t_{n+j+1}], i.e. sinc(theta/2)
    # times the load at t_{n+j+1/2}, whose sin and cos are rotations of (sin, cos)(w t_n).
    sinc = np.sin(0.5 * theta) / (0.5 * theta)
    coef_sin, coef_cos = np.zeros(2), np.zeros(2)
    for j, weight in ((-1, beta), (0, 1.0 - 2.0 * beta), (1, beta)):
        a = (j + 0.5) * theta
        coef_sin += weight * sinc * np.array([np.cos(a), np.sin(a)])
        coef_cos += weight * sinc * np.array([-np.sin(a), np.cos(a)])
    g_s = np.asarray(p_sin) * coef_sin[0] + np.asarray(p_cos) * coef_cos[0]
    g_c = np.asarray(p_sin) * coef_sin[1] + np.asarray(p_cos) * coef_cos[1]
    T = np.zeros((D, D))
    T[:d, :d] = 2.0 * np.eye(d) - dt**2 * ops.solve(ops.S)
    T[:d, d : 2 * d] = -np.eye(d)
    T[:d, IS], T[:d, IC] = dt**2 * ops.solve(g_s), dt**2 * ops.solve(g_c)
    T[:d, IP], T[:d, IPP] = dt**2 * (1.0 - 2.0 * beta) * ops.w, dt**2 * beta * ops.w
    T[d : 2 * d, :d] = np.eye(d)
    T[IS, IS], T[IS, IC], T[IC, IS], T[IC, IC] = np.cos(theta), np.sin(theta), -np.sin(theta), np.cos(theta)
    T[IPP, IP] = T[I1, I1] = 1.0
    r = T[i].copy()
    maps = {"r": r, _FREE: powers(T, r, max_block, 1.0, 0.0)}
    stiffness = ops.penalty.stiffness if ops.penalty is not None else 0.0
    alpha = 1.0 / (1.0 + dt**2 * beta * stiffness * ops.c) if ops.penalty is not None else 0.0
    for mode, bound in ((_UPPER, ops.upper), (_LOWER, ops.lower)):
        if not np.isfinite(bound):
            continue
        # Contact: x = alpha x' + (1 - alpha) bound (alpha = 0: Lemma 4.1's clip),
        # q = q' + (x - x') / c w, the tip stored exactly, p = -stiffness (x - bound).
        excess = r.copy()
        excess[I1] -= bound
        Tm = T.copy()
        Tm[:d] += np.outer((alpha - 1.0) / ops.c * ops.w, excess)
        Tm[i] = alpha * r
        Tm[i, I1] += (1.0 - alpha) * bound
        Tm[IP] = -stiffness * alpha * excess
        maps[mode] = powers(Tm, r, max_block, alpha, bound)
    return maps


def powers(T: np.ndarray, r: np.ndarray, max_block: int, alpha: float, bound: float) -> dict:
    powers = np.empty((max_block + 1,) + T.shape)
    powers[0] = np.eye(T.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(1, max_block + 1):
            powers[j] = T @ powers[j - 1]
    return {"powers": powers, "rows": np.einsum("k,jkl->jl", r, powers[:max_block]), "alpha": alpha, "bound": bound}


def run_blocks(
    z, tips, unconstrained, maps, ops, t_origin, first, dt, omega, phase_index, min_block: int = 8
) -> np.ndarray:
    """Fill ``tips[1:]`` (and ``unconstrained[1:]`` unless None) by blocks of affine
    steps from ``z`` at local step 0, i.e. step ``first`` after ``t_origin`` (see
    `simulate_tip`); return ``z`` after the last step."""
    n_steps = tips.size - 1
    r, upper, lower = maps["r"], ops.upper, ops.lower
    max_block = maps[_FREE]["rows"].shape[0]
    n, block = 0, min_block
    while n < n_steps:
        k = min(block, n_steps - n)
        t = t_origin + (first + n) * dt
        z[phase_index], z[phase_index + 1] = math.sin(omega * t), math.cos(omega * t)
        x0 = r @ z
        mode = _UPPER if x0 > upper else _LOWER if x0 < lower else _FREE
        m = maps[mode]
        predicted = m["rows"][:k] @ z
        predicted[0] = x0
        if mode == _FREE:
            leaves = (predicted > upper) | (predicted < lower)
        else:
            leaves = predicted <= upper if mode == _UPPER else predicted >= lower
        j = int(leaves.argmax())
        j = j if leaves[j] else k
        if unconstrained is not None:
            unconstrained[n + 1 : n + 1 + j] = predicted[:j]
        if mode == _FREE:
            tips[n + 1 : n + 1 + j] = predicted[:j]
        elif m["alpha"] == 0.0:
            tips[n + 1 : n + 1 + j] = m["bound"]
        else:
            tips[n + 1 : n + 1 + j] = m["alpha"] * predicted[:j] + (1.0 - m["alpha"]) * m["bound"]
        z = m["powers"][j] @ z
        n += j
        block = min(2 * block, max_block) if j == k else min_block
    return z
