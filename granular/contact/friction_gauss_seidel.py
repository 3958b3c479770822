"""Nonsmooth Gauss-Seidel for the 3D Coulomb-Maury law of spheres.

Solves the law (N)-(T) of `granular.contact.friction` contact by contact, as Moreau and
Jean's contact dynamics codes do (LMGC90, Siconos' NSGS): each contact in turn
takes the impulse that satisfies the law *exactly* for the velocity the other
contacts leave it, and sweeps repeat until no contact would change its impulse.

Notation (``m`` contacts, ``d`` coordinates, ``p`` the widest support of a
contact's rows): contact ``k`` has the normal row ``G_k`` and two tangent rows
``T_k`` (``H_k``, 3 x d, sparse), the impulse ``r_k = (l_N, l_T1, l_T2)`` (N s)
and the local velocity ``U_k = H_k u + (D_k / h, 0, 0)`` (m/s), ``u = v + M^{-1}
sum_k H_k^T r_k``.

The local problem. With a diagonal metric whose local Delassus block is
``W_kk = H_k M^{-1} H_k^T = diag(w_k, v_k, v_k)`` (normal decoupled from an
isotropic tangential block), the friction impulse of a contact does not move its
own normal velocity. Spheres have such blocks: without rotation ``w = v = 1/m_i +
1/m_j`` for a pair, ``1/m_i`` for a wall (the normal and the tangents are
orthonormal); turning spheres add ``r_i^2/J_i + r_j^2/J_j`` (``r_i^2/J_i`` on a
wall) to ``v`` only, because a normal row has no rotational part and the
rotational parts ``r (n x t_a)`` of the two tangents are orthogonal and of equal
length. The law for ``r_k`` given ``b = U_k - W_kk r_k`` (the velocity without its
own impulse) then has a closed form::

    l_N = max(0, -b_N / w)
    l_T = -b_T / v, scaled onto the disc |l_T| <= mu l_N when outside it

(inside the disc the contact sticks, ``U_T = 0``; on its boundary it slides with
``U_T = b_T (1 - v mu l_N / |b_T|)``, against ``l_T``). Frictionless rows
(``mu = 0``) keep ``l_T = 0``.

Compiled sweeps. A sweep is a loop over the contacts in compiled code
(`granular.contact.sweep_kernels`, numba: five times the numpy sweeps it replaced, whose
cost was interpreter overhead). The contacts are visited colour after colour
(`colour_classes`: no two contacts of a colour share a coordinate, so a colour's
updates do not see each other, the order the vectorised sweeps had); the answer
is deterministic.

Stopping, and what the answer guarantees. The natural residual ``e_k = |W_kk
(r_k^local - r_k)|`` (m/s), where ``r_k^local`` is the exact local answer at the
current velocities, is what accepts an answer: `granular.contact.kkt.coulomb_residual`
defines it, the compiled kernels compute the same quantity in the sweeps' loop
(`tests/test_kkt.py` checks that both agree). Every second sweep it is checked
against the tolerance. Computing it for all contacts costs two thirds of a sweep,
so between measurements (made every fifth check, whenever the estimate would
accept, and at the last sweep allowed) it is estimated: each sweep returns the
largest ``e_k`` met at a visit, and the estimate scales it by the ratio of the last
measurement to its own estimate. Only a measured residual accepts. When ``max_k
e_k <= tolerance`` the returned impulses satisfy, at every contact: the cone
``|l_T| <= mu l_N`` and ``l_N >= 0`` exactly (every local answer lies in the
cone), and (N) and (T) up to ``tolerance`` in velocity units (``U_k`` is within
``e_k`` of the velocity of an exact local solution). Otherwise
`ConvergenceError` names the worst contact. Convergence of the sweeps is not
guaranteed in theory (the Coulomb problem is not a convex program), and it is
linear and slow in deep contact networks (a rate of about 0.97 a sweep in the
sand pile); where the current stick/slip pattern has no solution the sweeps
drift, and `solve` jumps along the drift (its docstring). Figures: see
`scenes/sand_pile.py`.

Momentum. Each sweep starts from Nesterov's extrapolation of the last two
sweeps' impulses, restarted whenever a sweep's largest residual grows
(`_Momentum`): every measured iterate is still a sweep's output, so what an
accepted answer guarantees is unchanged. It halves the sweeps a step takes in the
settling frictional box and the rotating drum.

Stalls of turning spheres, and the Newton hand-over. Among spheres that turn,
the sweeps can stall for good although the law has a solution nearby: in the
sand pile's stream (t = 0.534 s) and the 3D pour of `benchmarks/rotation_speed.py`
(t = 0.192 s) the residual wandered between 2 and 18 times the tolerance for
5,000 sweeps (a limit cycle of about 1,500 sweeps in 3D, a steady drift in the
slot), with the kinetic energy constant to 1e-5 and only 6 of the 41 offending
contacts ever changing status: the sweeps circle in one stick/slip pattern whose
linearised Gauss-Seidel iteration does not contract (sliding contacts make it
non-symmetric; each tangential impulse now also turns both spheres, coupling a
contact to all the others of its spheres through ``r^2/J``, 2.5 times the
translational coupling of a solid sphere). The drift is not a self-equilibrated
impulse field alone (``H^T dr = 0``): 60% of it is, 40% moves velocities, and the
residual, in velocity units, does not fall. A regularised semismooth Newton
method on the same law (`_newton`) from the stalled impulses reaches 0.002-0.04
times the tolerance in 3-20 linear solves, so `solve` hands over to it after
`_first_newton_wait` checks without progress; one sweep from its answer makes every
impulse a local answer again, accepted by the same residual test as the sweeps'
(otherwise the sweeps go on from there).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ConvergenceError

@cache
def _kernels():
    """`granular.contact.sweep_kernels`, imported on first use: importing numba costs
    a noticeable fraction of a second, which a run without friction need not pay
    (cached: an import statement, though cheap, is repeated on every call of the
    sweeps)."""
    from . import sweep_kernels
    return sweep_kernels


#: A frictional contact's block ``W_kk`` counts as ``diag(w_k, v_k, v_k)`` when it differs
#: from it by less than this fraction of ``max(w_k, v_k)`` (round-off of unit tangents).
_ISOTROPY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SweepRows:
    """Per-contact dense copies of the sparse rows of ``H = [G; T]``.

    cols : (m, p) coordinates each contact's rows touch, padded with ``d`` (a dummy
        coordinate of zero inverse mass).
    values : (m, 3, p) the rows (normal, tangent 1, tangent 2) on those coordinates.
    inverse_mass : (d + 1,) diagonal of ``M^{-1}`` with 0 for the dummy (1/kg).
    w : (m,) the normal entry ``w_k`` of the local Delassus block (1/kg).
    mu : (m,) friction coefficients.
    lower : (m,) ``-D_k / h`` (m/s).
    w_tangent : (m,) the tangential entry ``v_k`` (1/kg), or None when ``v = w``
        (isotropic blocks: spheres that do not turn).
    rolling_friction : (m,) rolling resistance coefficients ``mu_r`` of the contacts, or
        None without rolling resistance; then ``values`` has 5 rows per contact
        (normal, two tangents, two rolling rows: the relative angular velocity times
        the rolling radius ``R*``, m/s) and impulses are ``(l_N, l_T1, l_T2, l_R1,
        l_R2)``, the rolling torque impulse being ``R* l_R`` (N m s).
    w_rolling : (m,) the rolling block ``W_RR = w_r I`` (1/kg), 1 where unused.
    coupling : (m, 2, 2) ``W_RT``, how a tangential impulse moves the rolling velocity.
    tangent_offset : (m, 2) velocity (m/s) of a moving wall's contact point along the
        tangents, subtracted from the tangential velocities (`granular.walls`), or None.
    """

    cols: np.ndarray
    values: np.ndarray
    inverse_mass: np.ndarray
    w: np.ndarray
    mu: np.ndarray
    lower: np.ndarray
    w_tangent: np.ndarray | None = None
    rolling_friction: np.ndarray | None = None
    w_rolling: np.ndarray | None = None
    coupling: np.ndarray | None = None
    tangent_offset: np.ndarray | None = None

    @property
    def width(self) -> int:
        """Impulse components per contact: 3, or 5 with rolling resistance."""
        return self.values.shape[1]

    def subset(self, rows: np.ndarray) -> "SweepRows":
        """The rows of the contacts ``rows`` (indices), as `sweep_rows` would build
        them from those contacts alone (up to padding and the scalar forms of
        isotropic or roll-free sets, which give the same answers)."""
        def take(values):
            return None if values is None else values[rows]
        return SweepRows(self.cols[rows], self.values[rows], self.inverse_mass, self.w[rows], self.mu[rows],
                           self.lower[rows], take(self.w_tangent), take(self.rolling_friction), take(self.w_rolling),
                           take(self.coupling), take(self.tangent_offset))

    @cached_property
    def compiled(self) -> "_Compiled":
        """The arrays of the compiled sweeps and residual, gathered once."""
        return _Compiled(self)

    def local_velocities(self, u: np.ndarray, rows=slice(None)) -> np.ndarray:
        """``U_k`` (k, 3) of the contacts ``rows`` for the velocities ``u`` (d + 1,)."""
        U = np.einsum("kap,kp->ka", self.values[rows], u[self.cols[rows]])
        U[:, 0] -= self.lower[rows]
        if self.tangent_offset is not None:
            U[:, 1:3] -= self.tangent_offset[rows]
        return U


def sweep_rows(metric, G: sp.csr_matrix, T: sp.csr_matrix, mu: np.ndarray,
               lower: np.ndarray, R: sp.csr_matrix | None = None,
               rolling_friction: np.ndarray | None = None,
               tangent_offset: np.ndarray | None = None) -> SweepRows | None:
    """The rows of ``m`` contacts (``G`` (m, d), ``T`` (2m, d), row ``2k + a`` tangent
    ``a`` of contact ``k``; optionally rolling rows ``R`` (2m, d) with coefficients
    ``rolling_friction`` (m,)), or None when the method does not apply: a metric
    without a diagonal, a frictional contact whose block is not ``diag(w, v, v)``,
    or a rolling contact whose rolling block is not ``w_r I`` decoupled from the normal.
    ``tangent_offset`` (m, 2): a moving wall's tangential velocity (`SweepRows`)."""
    inverse = getattr(metric, "inverse_diagonal", None)
    if inverse is None:
        return None
    m, d = G.shape
    rolling = R is not None and rolling_friction is not None and np.any(rolling_friction > 0.0)
    bound = np.zeros(m) if not rolling else np.asarray(rolling_friction, dtype=float)
    # Each contact's rows on its distinct coordinates, gathered from the blocks of
    # H = [G; T; R] in compiled loops (`sweep_kernels.gather_rows`), not by a sort and
    # scatter in numpy.
    parts = [(_csr_block(G, 1), np.ones(m, dtype=bool), 0)]   # (block, contacts it applies to, first local row)
    if np.any(mu > 0.0):
        parts.append((_csr_block(T, 2), np.asarray(mu > 0.0), 1))
    if rolling:
        parts.append((_csr_block(R, 2), bound > 0.0, 3))
    q = 5 if rolling else 3
    widest = sum(int(np.diff(block[0]).max(initial=0)) * block[3] for block, _, _ in parts) + 1
    cols, values = _kernels().gather_rows(m, d, q, tuple(part[0] for part in parts), tuple(part[1] for part in parts),
                                          np.array([part[2] for part in parts], dtype=np.int64), widest)
    inverse_mass = np.append(np.asarray(inverse, dtype=float), 0.0)
    full = (values * inverse_mass[cols][:, None, :]) @ values.transpose(0, 2, 1)
    blocks = full[:, :3, :3]
    w = blocks[:, 0, 0]
    frictional = mu > 0.0
    v = np.where(frictional, blocks[:, 1, 1], w)  # frictionless rows have no tangent block
    expected = np.zeros_like(blocks)
    expected[:, 0, 0], expected[:, 1, 1], expected[:, 2, 2] = w, v, v
    offset = np.abs(blocks - expected).max(axis=(1, 2))
    if np.any(frictional & (offset > _ISOTROPY_TOLERANCE * np.maximum(w, v))):
        return None
    # Isotropic blocks (v = w to round-off) keep the scalar form, bit for bit as before.
    w_tangent = None if np.all(np.abs(v - w) <= _ISOTROPY_TOLERANCE * w) else v
    w_rolling = coupling = None
    if rolling:
        rolls = bound > 0.0
        w_rolling = np.where(rolls, full[:, 3, 3], 1.0)
        roll_block = full[:, 3:, 3:] - w_rolling[:, None, None] * np.eye(2)
        offset = np.maximum(np.abs(roll_block).max(axis=(1, 2)), np.abs(full[:, 0, 3:]).max(axis=1))
        if np.any(rolls & (offset > _ISOTROPY_TOLERANCE * np.maximum(w_rolling, w))):
            return None
        coupling = full[:, 3:, 1:3]
    return SweepRows(cols, values, inverse_mass, w, np.asarray(mu, dtype=float), np.asarray(lower, dtype=float),
                       w_tangent, bound if rolling else None, w_rolling, coupling,
                       None if tangent_offset is None else np.asarray(tangent_offset, dtype=float))


def _csr_block(block: sp.csr_matrix, per_contact: int) -> tuple:
    """``(indptr, indices, data, per_contact)`` of a block of ``H`` with ``per_contact``
    rows a contact, in the dtypes `sweep_kernels.gather_rows` is compiled for."""
    block = sp.csr_matrix(block)
    return (block.indptr.astype(np.int64), block.indices.astype(np.int64), block.data.astype(float),
            int(per_contact))


def colour_classes(cols: np.ndarray, dummy: int) -> list[np.ndarray]:
    """Contacts (indices, ascending) grouped so that no two of a group share a
    coordinate (``dummy``, the padding of ``cols``, excepted).

    Each group is the greedy maximal independent set, in decreasing contact index,
    of the contacts the previous groups left (`sweep_kernels.colours`): the set
    that rounds of "a candidate joins when it has the largest index among the
    candidates at each of its coordinates" also build (Blelloch, Fineman and Shun,
    *Greedy sequential maximal independent set and matching are parallel on
    average*, 2012). Deterministic.
    """
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    colour = _kernels().colours(cols, int(dummy))
    order = np.argsort(colour, kind="stable")
    return np.split(order, np.cumsum(np.bincount(colour))[:-1]) if colour.size else []


def local_solution(U: np.ndarray, r: np.ndarray, w: np.ndarray, mu: np.ndarray,
                   v: np.ndarray | None = None) -> np.ndarray:
    """The exact local answer (k, 3) for contacts at velocity ``U`` (k, 3) under
    impulses ``r`` (k, 3) with blocks ``diag(w, v, v)`` (``w``, ``v`` (k,), ``v = w``
    when None) and coefficients ``mu`` (k,)."""
    if v is None:
        b = U - w[:, None] * r
        tangential = -b[:, 1:] / w[:, None]
    else:
        b = U - np.column_stack([w, v, v]) * r
        tangential = -b[:, 1:] / v[:, None]
    normal = np.maximum(-b[:, 0] / w, 0.0)
    size = np.hypot(tangential[:, 0], tangential[:, 1])
    limit = mu * normal
    outside = size > limit
    shrink = np.where(outside, limit / np.where(outside, size, 1.0), 1.0)
    return np.column_stack([normal, tangential * shrink[:, None]])


def local_answer(U: np.ndarray, r: np.ndarray, w, mu, v=None, rolling=None) -> np.ndarray:
    """The local answer (k, q) of contacts with ``q`` = 3 (`local_solution`) or 5
    impulse components. With rolling resistance, ``rolling = (mu_r (k,), w_r (k,),
    coupling (k, 2, 2))``: the normal and friction impulses first (exact given the
    rolling impulse), then the rolling impulse, exact given them: ``l_R = -b_R / w_r``
    scaled onto the disc ``|l_R| <= mu_r l_N`` when outside it, where ``b_R`` is the
    rolling velocity without the contact's own rolling impulse after its new
    friction impulse (``U_R + W_RT dl_T - w_r l_R,old``). Inside the disc the contact
    does not roll (``U_R = 0``); on its boundary it rolls against ``l_R``. Sweeps repeat
    until neither part changes (the natural residual)."""
    new = local_solution(U[:, :3], r[:, :3], w, mu, v)
    if rolling is None:
        return new
    bound, w_r, coupling = rolling
    U_R = U[:, 3:] + np.einsum("kab,kb->ka", coupling, new[:, 1:] - r[:, 1:3])
    tau = r[:, 3:] - U_R / w_r[:, None]
    return np.column_stack([new, _onto_disc(tau, bound * new[:, 0])])


def _onto_disc(vectors: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Vectors (k, 2) scaled onto the discs ``|x| <= limit`` (k,) when outside them."""
    size = np.hypot(vectors[:, 0], vectors[:, 1])
    outside = size > limit
    return vectors * np.where(outside, limit / np.where(outside, size, 1.0), 1.0)[:, None]


def _rolling(rows: SweepRows, members=slice(None)):
    if rows.rolling_friction is None:
        return None
    return rows.rolling_friction[members], rows.w_rolling[members], rows.coupling[members]


def _onto_cones(rows: SweepRows, r: np.ndarray) -> np.ndarray:
    """Impulses (m, q) projected onto the friction cones and the rolling discs (a copy)."""
    cone = np.array(r, dtype=float, order="C")
    rolling = rows.mu if rows.rolling_friction is None else rows.rolling_friction   # unread when q = 3
    _kernels().onto_cones(cone, np.ascontiguousarray(rows.mu, dtype=float), np.ascontiguousarray(rolling, dtype=float))
    return cone


def solve(rows: SweepRows, predicted: np.ndarray, start: np.ndarray, tolerance,
          max_sweeps: int, names=None) -> tuple[np.ndarray, int, float]:
    """Sweep until the natural residual of every contact is below ``_TARGET`` times its
    tolerance (m/s; a number, or one per contact (m,)), or below its tolerance once
    the sweeps stall.

    ``predicted`` (d,) the velocity ``v``, ``start`` (m, 3) the initial impulses
    (a warm start; projected onto the cones first). Returns ``(r (m, 3), sweeps,
    residual)``. Raises `ConvergenceError` after ``max_sweeps``, naming the time,
    the worst contact (``names(k)`` describes it) and its residual, and carrying
    the measured iterate nearest its law (``best``) for a caller that goes on.

    Drift extrapolation: when the residual stalls and successive sweeps change the
    impulses by the same ``delta``, the sweeps are walking along a direction in
    which the current stick/slip pattern has no solution (a closed loop of
    sticking contacts whose gaps ``D/h`` are incompatible by round-off, measured
    in the pile: ``delta`` constant to 1e-9 for thousands of sweeps). Gauss-Seidel
    would walk until an impulse reaches its cone's boundary; the step jumps there
    at once (`_longest_step`) when that is at least `_SHORTEST_JUMP` sweeps away.
    This only moves the starting point of the next sweeps: the answer is accepted
    by the residual alone.

    Newton hand-over: after `_first_newton_wait` residual checks without a 10%
    decrease (and `_NEWTON_RETRY` checks after an attempt), `_newton` starts from the current
    impulses, with a budget: the Newton calls' factorisations together cost no more
    than the sweeps made so far plus one factorisation (`_factorisation_cost`), so a
    stall whose Newton steps do not help costs at most about twice its sweeps (the
    ski-rental bound again, now on every call: on a stall of a settling layer of 1,000
    turning spheres, calls every `_NEWTON_RETRY` checks made 1,361 factorisations, 363
    s, for answers no better than the sweeps'); after one sweep from its answer (so that every impulse is a local
    answer again) the impulses are returned when their residual is within the
    tolerance (the stalled-sweeps criterion above); otherwise the sweeps go on
    from there if Newton did better than them (module docstring).
    """
    m = rows.cols.shape[0]
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=float), (m,))
    r = _onto_cones(rows, start)
    u = _velocities(rows, predicted, r)
    kernels = rows.compiled
    scale = kernels.visit_scale(tolerance)
    history, previous, newton_at, newton_wait = [], None, 0, _first_newton_wait(m)
    best_ratio, best = np.inf, None   # the measured iterate nearest its law, kept if none is accepted
    estimate, calibration = None, 1.0   # the residual's estimate (below)
    accelerated = _Momentum(r, u)
    newton_work = 0.0   # the Newton calls' factorisations so far, in sweeps (`_factorisation_cost`)
    for sweep in range(max_sweeps + 1):
        check = sweep % _CHECK_EVERY == 0 or sweep == max_sweeps
        if check:
            # The last sweep's largest residual at a visit, scaled by the last ratio
            # of the residual to it, stands in for the residual between measurements:
            # the pass over the contacts that the residual costs (two thirds of a
            # sweep) is made at the checks that test for a drift, and to confirm an answer.
            history.append(None if estimate is None else calibration * estimate)
            measured = (estimate is None or _accepts(history) or _drift_check(len(history))
                        or sweep == max_sweeps)
            if measured:
                residual = _residual(rows, u, r)
                history[-1] = (residual / tolerance).max(initial=0.0)   # in units of each tolerance
                if history[-1] < best_ratio:
                    best_ratio, best = history[-1], r.copy()
                if estimate is not None and estimate > 0.0:
                    calibration = history[-1] / estimate
                if _accepts(history):
                    return r, sweep, float(residual.max(initial=0.0))
            if (accelerated.enabled and sweep >= _MOMENTUM_PATIENCE and history[-1] <= _MOMENTUM_STALL
                    and _no_new_low(history)):
                # A long stall near the tolerance: plain sweeps from the best iterate (`_Momentum`).
                accelerated.stop()
                r = best.copy()
                u = _velocities(rows, predicted, r)
                estimate = None
        if sweep == max_sweeps:
            break
        # The change of the impulses is needed only by the drift test of the checks that
        # make it (`_drift_check`): at such a check and at the sweep before it.
        next_check = (sweep + 1) % _CHECK_EVERY == 0 or sweep + 1 == max_sweeps
        tracked = (check and _drift_check(len(history))) or (next_check and _drift_check(len(history) + 1))
        before = r.copy() if tracked else None
        accelerated.extrapolate(r, u)
        estimate = kernels.sweep(u, r, scale)
        accelerated.judge(estimate)
        delta = r - before if tracked else None
        if check and delta is not None and _drifting(history, delta, previous):
            jumped = _extrapolate(rows, u, r, delta, float(residual.max(initial=0.0)))
            if jumped is not r:
                r, estimate = jumped, None
                accelerated.restart()
        if check and len(history) - newton_at >= newton_wait and _stalled(history, newton_wait):
            newton_at = len(history)
            newton_wait = _NEWTON_RETRY
            residual = _residual(rows, u, r)
            solved, ratio, work = _newton_on_loaded(rows, predicted, r, residual, tolerance,
                                                    budget=sweep - newton_work)
            newton_work += work
            if ratio < (residual / tolerance).max(initial=0.0):
                # One sweep from Newton's answer makes every impulse a local answer
                # (in its cone, a sliding one exactly on its boundary).
                r = _onto_cones(rows, solved)
                u = _velocities(rows, predicted, r)
                kernels.sweep(u, r)
                residual = _residual(rows, u, r)
                if (residual / tolerance).max(initial=0.0) <= 1.0:
                    return r, sweep + 2, float(residual.max(initial=0.0))
                estimate = None
                accelerated.restart()
        previous = delta
    # The last sweep allowed is always measured, so `best` is the measured iterate
    # nearest its law, the last one included.
    r = best
    u = _velocities(rows, predicted, r)
    residual = _residual(rows, u, r)
    worst = int(np.argmax(residual / tolerance))
    if residual[worst] <= tolerance[worst]:
        # Short of the target but within the tolerance: what a stall would accept.
        return r, max_sweeps, float(residual.max(initial=0.0))
    which = f"contact {worst}" if names is None else names(worst)
    raise ConvergenceError(f"the Coulomb Gauss-Seidel sweeps did not converge in {max_sweeps} sweeps: "
                           f"{which} is {residual[worst]:.3g} m/s from its local law (tolerance "
                           f"{tolerance[worst]:.3g} m/s)", status="gauss_seidel", best=r,
                           residual=float(residual[worst]), tolerance=float(tolerance[worst]), where=which)


class _Momentum:
    """Nesterov's momentum on the sweeps, with adaptive restart.

    A sweep is a fixed-point map ``r -> S(r)`` of the impulses. Like an accelerated
    gradient method (Nesterov, *A method of solving a convex programming problem with
    convergence rate O(1/k^2)*, 1983), the next sweep starts from the extrapolated
    point ``y = x_k + beta_k (x_k - x_{k-1})``, ``beta_k = (k - 1) / (k + 2)``, where
    ``x_k`` is the k-th sweep's output since the last restart; the sweep's output is
    again a set of exact local answers (each in its cone), so every iterate the
    residual test measures is a Gauss-Seidel iterate and the acceptance is unchanged.
    ``y`` itself may leave the cones: a sweep does not need its input in them.
    Momentum can overshoot where contacts change status, so it restarts (``k = 0``,
    a plain sweep next) whenever a sweep's largest residual at a visit grows: the
    adaptive restart of O'Donoghue and Candes (*Adaptive restart for accelerated
    gradient schemes*, Foundations of Computational Mathematics, 2015) with the
    sweep's own residual in place of the objective, which the Coulomb law does not
    have. On captured steps of the settling 1,000-sphere box this takes 2-4 times
    fewer sweeps to the same residual (benchmarks/README.md, "Measurements behind the
    constants"); mass-damped sweeps alone (over-relaxation) failed on some of them.

    Momentum stops for good at a long stall near the tolerance: after
    `_MOMENTUM_PATIENCE` sweeps, within `_MOMENTUM_STALL` tolerances, and no new low
    of the residual over `_STALL_WINDOW` checks (`_no_new_low`); the plain sweeps
    then go on from the best iterate measured. Where the current stick/slip pattern has no
    solution the plain sweeps drift and are accepted at the tolerance once stalled
    (`_accepts`); momentum amplifies the drift instead: in a step of the rotating
    drum it wandered at 1-6 times the tolerance for 20,000 sweeps, where the plain
    sweeps stop after 744.
    """

    def __init__(self, r: np.ndarray, u: np.ndarray):
        self.r_previous, self.u_previous = r.copy(), u.copy()
        self.count, self.last = 0, np.inf
        self.enabled = _MOMENTUM

    def extrapolate(self, r: np.ndarray, u: np.ndarray) -> None:
        """``r`` and ``u`` (in place) moved to the next sweep's starting point."""
        if not self.enabled:
            return
        beta = max(self.count - 1, 0) / (self.count + 2)
        _kernels().momentum(r, u, self.r_previous, self.u_previous, beta)
        self.count += 1

    def stop(self) -> None:
        """Plain sweeps from now on."""
        self.enabled = False

    def judge(self, estimate: float) -> None:
        """Restart when the sweep's largest residual at a visit (``estimate``) grew."""
        if estimate > self.last:
            self.count = 0
        self.last = estimate

    def restart(self) -> None:
        """After the iterate was replaced (a jump along a drift, Newton's answer)."""
        self.count, self.last = 0, np.inf


#: Whether the sweeps carry Nesterov's momentum (`_Momentum`).
_MOMENTUM = True
#: Momentum stops at a stall whose residual is within this many tolerances, once the
#: solve has made this many sweeps (`_Momentum`).
_MOMENTUM_STALL = 10.0
_MOMENTUM_PATIENCE = 1000
#: The sweeps aim at this fraction of the tolerance and accept the tolerance only
#: once they stall (`_stalled`). Why: an answer at the tolerance leaves gaps wrong
#: by ``h`` times it, which the next step's loops of sticking contacts cannot all
#: close: its sweeps then stall at 1.1-1.3 times the error they inherit (measured
#: in the pile). Aiming lower keeps that floor under the tolerance.
_TARGET = 0.125
#: Residual checks (2 sweeps each) without a 10% decrease that count as a stall.
_STALL_WINDOW = 25
#: The residual is checked every this many sweeps: measured at the drift checks and
#: whenever it may accept, estimated from the sweeps in between (`solve`).
_CHECK_EVERY = 2
#: Residual checks over which a stalled residual (down by less than 10%) calls for
#: extrapolation (10 sweeps).
_STALL_CHECKS = 5
#: Residual checks without a 10% decrease after which the sweeps first hand over to
#: `_newton`: the larger of `_NEWTON_AFTER` and `_NEWTON_CHECKS_PER_CONTACT` per contact
#: (`_first_newton_wait`). Why so many: most slow descents are not stalls, and a Newton
#: call costs as much as thousands of sweeps (`tests/data/stalled_turning_cluster.npz`,
#: the settling 1,000-sphere pour of `benchmarks/rotation_speed.py`). Waiting until the
#: stalled sweeps have cost about as much as a call bounds the work by twice the
#: better choice made in hindsight, stall or slow descent (the ski-rental argument).
#: Tuned; benchmarks/README.md, "Measurements behind the constants".
_NEWTON_AFTER = 800
_NEWTON_CHECKS_PER_CONTACT = 1
#: Residual checks without a 10% decrease between a Newton attempt that did not end
#: the solve and the next. Whether Newton reaches the tolerance depends on where it
#: starts, so a stall needs several attempts: in the sand pile's pour (seed 4,
#: t = 1.297 s, 435 contacts) three attempts 500 and 1,000 checks apart all missed
#: the tolerance and the step failed; attempts 100 checks apart end it (figures in
#: benchmarks/README.md, "Measurements behind the constants").
_NEWTON_RETRY = 100
#: A drift is followed only when the jump is worth at least this many sweeps. Why:
#: trying a jump costs about two sweeps (the velocities moved, the residual), and
#: among thousands of contacts one changes status at once, so most jumps are
#: shorter than that and following them all costs more than it saves. The drifts
#: the jumps were made for are long (the pile: the same change for 1000s of
#: sweeps). Tuned; benchmarks/README.md, "Measurements behind the constants".
_SHORTEST_JUMP = 2.0
#: A jump is kept when the residual grows by at most this factor: along a pure
#: drift it stays constant until a contact changes status at the end of the jump.
_JUMP_GROWTH = 1.01


def _first_newton_wait(contacts: int) -> int:
    """Stalled residual checks before the first Newton attempt (`_NEWTON_AFTER`)."""
    return max(_NEWTON_AFTER, _NEWTON_CHECKS_PER_CONTACT * contacts)


def _accepts(history) -> bool:
    """Whether the last residual (in tolerances) is an answer: below `_TARGET`, or
    below 1 once the sweeps stall."""
    return history[-1] <= _TARGET or (history[-1] <= 1.0 and _stalled(history))


def _stalled(history, window: int = _STALL_WINDOW) -> bool:
    """Whether the residual fell by less than 10% over the last ``window`` checks."""
    return len(history) > window and history[-1] > 0.9 * history[-1 - window]


def _no_new_low(history, window: int = _STALL_WINDOW) -> bool:
    """Whether the last ``window`` checks found no residual 10% below the lowest
    before them (momentum's residual oscillates, so `_stalled`'s test of the last
    value against one ``window`` back misses its stalls)."""
    return len(history) > window and min(history[-window:]) > 0.9 * min(history[:-window])


def _drift_check(checks: int) -> bool:
    """Whether the residual check that makes ``checks`` checks in all tests for a drift."""
    return checks > _STALL_CHECKS and checks % _STALL_CHECKS == 0


def _drifting(history, delta, previous) -> bool:
    """Whether the residual stalled over `_STALL_CHECKS` checks and the last two
    sweeps moved the impulses alike (within 5%)."""
    if previous is None or not _drift_check(len(history)):
        return False
    if history[-1] < 0.9 * history[-1 - _STALL_CHECKS]:
        return False
    size = np.linalg.norm(delta)
    return size > 0.0 and np.linalg.norm(delta - previous) <= 0.05 * size


def _extrapolate(rows: SweepRows, u: np.ndarray, r: np.ndarray, delta: np.ndarray, before: float) -> np.ndarray:
    """``r`` moved along the drift ``delta`` up to `_longest_step`, projected onto the
    cones, with ``u`` moved in place; kept only if its largest residual does not
    exceed ``before`` (m/s, the residual at the check, one sweep earlier) by more
    than `_JUMP_GROWTH` (the drift is linear only near where it was measured:
    unchecked jumps of 1000 sweeps' worth made a 108-contact set of the pile wander)."""
    step = _longest_step(r, delta, rows.mu)
    if step < _SHORTEST_JUMP:
        return r
    jumped = _onto_cones(rows, r + step * delta)
    trial = u.copy()
    _add_impulses(rows, trial, jumped - r)
    if _residual(rows, trial, jumped).max(initial=0.0) > _JUMP_GROWTH * before:
        return r
    u[:] = trial
    return jumped


def natural_residual(rows: SweepRows, predicted: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Natural residual (m,) of impulses ``r`` (m, 3) for the prediction ``v`` (d,), m/s."""
    return _residual(rows, _velocities(rows, predicted, r), r)


def _velocities(rows: SweepRows, predicted: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``u = v + M^{-1} sum_k H_k^T r_k`` (d + 1,), with the dummy coordinate, for
    the prediction ``v`` (d,) and the impulses ``r`` (m, q)."""
    u = np.append(predicted, 0.0)
    _add_impulses(rows, u, r)
    return u


def _residual(rows: SweepRows, u: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Natural residual (m,) of every contact, m/s (module docstring)."""
    return rows.compiled.residual(u, r)


def _longest_step(r, delta, mu, limit: float = 1e4) -> float:
    """How far to extrapolate ``r + a delta`` (k, 3): up to the first contact that
    changes status (its normal impulse reaches 0 or a sticking impulse its cone's
    boundary), found per contact by bisection (`sweep_kernels.longest_step`).
    Contacts that would change within one sweep (``a < 1``) are at their bound
    already and do not limit the step (the caller projects them back onto their
    cones); ``limit`` caps it."""
    return float(_kernels().longest_step(np.ascontiguousarray(r[:, :3], dtype=float),
                                            np.ascontiguousarray(delta[:, :3], dtype=float),
                                            np.ascontiguousarray(mu, dtype=float), float(limit)))


def _add_impulses(rows: SweepRows, u: np.ndarray, r: np.ndarray) -> None:
    """``u += M^{-1} sum_k H_k^T r_k`` in place (u (d + 1,), r (m, q))."""
    rows.compiled.add_impulses(u, r)


class _Compiled:
    """The sweeps and the residual of one `SweepRows` in compiled loops
    (`granular.contact.sweep_kernels`: why, and the arrays' meaning). The sweeps visit the
    contacts colour after colour (`colour_classes`), the order of the vectorised
    colours they replaced; the contacts' arrays are stored in that order
    (``order[i]`` is the contact at position ``i``), so that a sweep reads them
    front to back (a third faster than through ``order``: `sweep_kernels`)."""

    def __init__(self, rows: SweepRows):
        m = rows.cols.shape[0]
        dummy = rows.inverse_mass.size - 1
        classes = colour_classes(rows.cols, dummy)
        order = np.concatenate(classes).astype(np.int64) if classes else np.zeros(0, dtype=np.int64)
        self.rows, self.order = rows, order
        self.cols = np.ascontiguousarray(rows.cols[order], dtype=np.int64)
        self.values = np.ascontiguousarray(rows.values[order], dtype=float)
        self.width = np.count_nonzero(self.cols < dummy, axis=1).astype(np.int64)
        self.scaled = self.values * rows.inverse_mass[self.cols][:, None, :]
        shift = np.zeros((m, 3))
        shift[:, 0] = rows.lower
        if rows.tangent_offset is not None:
            shift[:, 1:3] = rows.tangent_offset
        self.shift = shift[order]
        v = rows.w if rows.w_tangent is None else rows.w_tangent
        self.inverse = (1.0 / np.column_stack([rows.w, v]))[order]
        self.mu = np.ascontiguousarray(rows.mu[order], dtype=float)
        weights = [rows.w, v, v]
        self.rolling = None
        if rows.rolling_friction is not None:
            self.rolling = np.column_stack([rows.rolling_friction, 1.0 / rows.w_rolling,
                                            rows.coupling.reshape(m, 4)])[order]
            weights += [rows.w_rolling, rows.w_rolling]
        self.weights = np.column_stack(weights)[order]

    def sweep(self, u: np.ndarray, r: np.ndarray, scale=None) -> float:
        """One sweep: every impulse of ``r`` (m, q) its local answer, ``u`` (d + 1,)
        moved with them (both in place; both must be C-contiguous float arrays).
        Returns the largest natural residual of a contact at its visit, in units of
        its tolerance when ``scale`` is `visit_scale` of the tolerances, in m/s when
        None."""
        scale = np.ones(self.order.size) if scale is None else scale
        common = (self.order, self.cols, self.values, self.width, self.scaled, self.shift, self.inverse, self.mu)
        if self.rolling is None:
            return _kernels().sweep(*common, self.weights, scale, u, r)
        return _kernels().sweep_rolling(*common, self.rolling, self.weights, scale, u, r)

    def visit_scale(self, tolerance: np.ndarray) -> np.ndarray:
        """The sweeps' ``scale`` for per-contact tolerances (m,) (m/s): their inverse
        squares, in the arrays' order."""
        return np.ascontiguousarray(1.0 / np.asarray(tolerance, dtype=float)[self.order] ** 2)

    def residual(self, u: np.ndarray, r: np.ndarray) -> np.ndarray:
        """The natural residual (m,) of ``r`` at velocities ``u``, m/s."""
        out = np.empty(self.cols.shape[0])
        common = (self.order, self.cols, self.values, self.width, self.shift, self.inverse, self.mu)
        u, r = np.ascontiguousarray(u, dtype=float), np.ascontiguousarray(r, dtype=float)
        if self.rolling is None:
            _kernels().residual(*common, self.weights, u, r, out)
        else:
            _kernels().residual_rolling(*common, self.rolling, self.weights, u, r, out)
        return out

    def add_impulses(self, u: np.ndarray, r: np.ndarray) -> None:
        """``u += M^{-1} sum_k H_k^T r_k`` in place (u (d + 1,), r (m, q))."""
        _kernels().add_impulses(self.order, self.cols, self.width, self.scaled,
                                np.ascontiguousarray(r, dtype=float), u)


# -- the way out of a stall: a semismooth Newton method on the same law --------------------

#: Newton iterations of one `_newton` call (each: one sparse LU of the contacts' Jacobian).
_NEWTON_ITERATIONS = 20
#: A Newton variant stops after this many iterations that do not improve on the best
#: residual met (it converges in 3-20 when it does on the pours' stalls).
_NEWTON_PATIENCE = 6
#: The Newton variants `_newton` tries: (regularisation ``eps`` of ``J + eps I``, relative
#: to the unit diagonal ``J`` has on a sticking or open contact; whether steps are damped).
_NEWTON_VARIANTS = ((1e-2, False), (1e-3, True), (3e-2, False))

#: Newton calls of one hand-over, each with the contacts the last one's answer
#: approached (`_newton_on_loaded`).
_NEWTON_ROUNDS = 3


def _newton_on_loaded(rows: SweepRows, predicted: np.ndarray, r: np.ndarray, residual: np.ndarray,
                      tolerance: np.ndarray, budget: float = np.inf) -> tuple[np.ndarray, float, float]:
    """`_newton` on the contacts that carry an impulse in ``r`` or miss their law
    (``residual`` (m,) > 0, m/s: the natural residual at ``r``), the others kept at
    zero impulse: ``(r (m, q), ratio)``, the ratio over the contacts its last call
    solved.

    Why: an open contact with no impulse that meets its law adds its rows to
    Newton's system without taking part (its equation is ``r_k = 0``), and the
    sweeps' working set holds many of them (the rows that join it before they close,
    `granular.contact.friction.NEAR_CONTACT`): about 20% of the 2,300 contacts of the stalls
    of the 1,000-sphere pour. On the same stalls, this set costs less than the whole
    working set, with answers within the tolerance either way (figures in
    benchmarks/README.md, "Measurements behind the constants").

    ``budget`` (sweeps of ``rows``) bounds the factorisations of the call (`_newton`);
    returns ``(r, ratio, work)``, ``work`` the factorisations made, in sweeps.

    A contact left out may be approached by Newton's answer. When Newton meets the
    tolerance on its contacts and such contacts miss their law at its answer, they
    join and Newton runs again from its answer, up to `_NEWTON_ROUNDS` times (the
    working set of `granular.contact.friction`, inside one call). Why: at stalls of the sand
    pile's pour of turning spheres (seed 4), Newton solved its contacts to 0.03-0.86
    times the tolerance and 2-3 contacts outside them then missed their law by 10-30
    times it, attempt after attempt, until the solve failed after 20,000 sweeps; with
    the rounds, the stall of t = 0.698 s (504 contacts,
    `tests/data/stall_of_approached_contacts.npz`) is solved in 1,626 sweeps, and the
    pour runs to its end. Contacts still left out are seen by the residual test `solve`
    makes after one sweep from Newton's answer, and the sweeps go on."""
    taking_part = (r[:, 0] > 0.0) | (residual > 0.0)
    solved, ratio, start, work = np.zeros_like(r), np.inf, r, 0.0
    sweep_size = float(rows.values.size)   # what a sweep reads of the rows, the unit of `budget`
    for round_ in range(_NEWTON_ROUNDS):
        part = np.flatnonzero(taking_part)
        if part.size == 0 or work >= budget:
            break
        solved = np.zeros_like(r)
        solved[part], ratio, more = _newton(rows.subset(part), predicted, start[part], tolerance[part],
                                            0.25 * _TARGET, (budget - work) * sweep_size)
        work += more / sweep_size
        if ratio > 1.0 or round_ == _NEWTON_ROUNDS - 1:
            break
        missed = (natural_residual(rows, predicted, _onto_cones(rows, solved)) > tolerance) & ~taking_part
        if not missed.any():
            break
        taking_part |= missed
        start = solved
    return solved, ratio, work


class _Newton:
    """The law (N)-(T)-(R) of all contacts as the zero of Alart and Curnier's function
    (*A mixed formulation for frictional contact problems prone to Newton like
    solution methods*, Computer Methods in Applied Mechanics and Engineering, 1991),
    ``F(r) = r - P(r - rho U(r))``, ``U(r) = W r + U_0`` the contacts' velocities,
    ``W = H M^{-1} H^T`` (sparse), ``P`` per contact: ``l_N -> max(l_N, 0)`` and the
    projections onto the discs ``|l_T| <= mu l_N``, ``|l_R| <= mu_r l_N``, ``rho`` the
    inverse diagonal of ``W``. ``F(r) = 0`` exactly when every contact satisfies its
    local law, i.e. when the natural residual of the sweeps is 0."""

    def __init__(self, rows: SweepRows, predicted: np.ndarray):
        m, q, p = rows.values.shape
        d = predicted.size
        index = np.repeat(np.arange(m * q), p)
        cols = np.repeat(rows.cols[:, None, :], q, axis=1).ravel()
        values = rows.values.ravel()
        keep = (cols < d) & (values != 0.0)
        H = sp.csr_matrix((values[keep], (index[keep], cols[keep])), shape=(m * q, d))
        self.rows, self.predicted, self.shape = rows, predicted, (m, q)
        self.W = (H @ sp.diags(rows.inverse_mass[:-1]) @ H.T).tocsr()
        self.free = rows.local_velocities(np.append(predicted, 0.0)).ravel()
        diagonal = self.W.diagonal()
        self.scale = diagonal.reshape(m, q)        # 1/rho, 1/kg: F * scale is a velocity
        self.rho = np.where(diagonal > 0.0, 1.0 / np.where(diagonal > 0.0, diagonal, 1.0), 0.0).reshape(m, q)
        discs = [(1, rows.mu)]
        if q == 5:
            discs.append((3, rows.rolling_friction))
        self.discs = discs
        block = np.arange(m * q).reshape(m, q)
        self.block_rows = np.repeat(block, q, axis=1).ravel()
        self.block_cols = np.tile(block, (1, q)).ravel()

    def value(self, r: np.ndarray, jacobian: bool = False):
        """``F(r)`` (m, q) and, if asked, a generalised Jacobian (sparse (mq, mq))."""
        m, q = self.shape
        U = (self.W @ r.ravel() + self.free).reshape(m, q)
        z = r - self.rho * U
        F = np.empty_like(r)
        F[:, 0] = r[:, 0] - np.maximum(z[:, 0], 0.0)
        A = np.zeros((m, q, q))   # dF/dr = A + B (I - rho W), blocks per contact
        B = np.zeros((m, q, q))
        A[:, np.arange(q), np.arange(q)] = 1.0
        B[:, 0, 0] = np.where(z[:, 0] > 0.0, -1.0, 0.0)
        loaded = r[:, 0] > 0.0
        for a, mu in self.discs:
            radius = mu * np.maximum(r[:, 0], 0.0)
            zt = z[:, a:a + 2]
            size = np.hypot(zt[:, 0], zt[:, 1])
            outside = (size > radius) | (radius <= 0.0)   # P = 0 on a disc of radius 0
            direction = zt / np.where(size > 0.0, size, 1.0)[:, None]
            ratio = np.where(outside, radius / np.where(size > 0.0, size, 1.0), 1.0)
            F[:, a:a + 2] = r[:, a:a + 2] - zt * ratio[:, None]
            if jacobian:
                tangent = np.eye(2)[None] - outside[:, None, None] * direction[:, :, None] * direction[:, None, :]
                B[:, a:a + 2, a:a + 2] = -ratio[:, None, None] * tangent
                A[:, a:a + 2, 0] = -np.where(outside & loaded, 1.0, 0.0)[:, None] * direction * mu[:, None]
        if not jacobian:
            return F, None
        size = m * q
        blocks_AB = sp.csr_matrix(((A + B).ravel(), (self.block_rows, self.block_cols)), shape=(size, size))
        blocks_B = sp.csr_matrix((B.ravel(), (self.block_rows, self.block_cols)), shape=(size, size))
        return F, (blocks_AB - blocks_B @ sp.diags(self.rho.ravel()) @ self.W).tocsc()

    def merit(self, F: np.ndarray) -> float:
        return 0.5 * float(np.sum((self.scale * F) ** 2))


def _newton(rows: SweepRows, predicted: np.ndarray, r: np.ndarray, tolerance: np.ndarray,
            target: float, budget: float = np.inf) -> tuple[np.ndarray, float, float]:
    """Impulses from regularised semismooth Newton iterations on `_Newton`'s
    function, started at ``r`` (m, q), their largest natural residual in units
    of ``tolerance`` and the work of the factorisations made (`_factorisation_cost`):
    the best iterate met (by that residual), stopping below ``target``, or before a
    factorisation that would take the work over ``budget`` (entries a sweep reads).
    The variants of `_NEWTON_VARIANTS` are tried in turn from ``r``
    until one reaches ``target``, or the tolerance once the first has run (fewer
    calls, each answer within the tolerance; benchmarks/README.md, "Measurements
    behind the constants").

    Each iteration solves ``(J + eps I) dr = -F(r)`` with a generalised Jacobian
    ``J``. ``J`` is singular wherever the impulses are not unique (more sticking
    contacts than a sphere has degrees of freedom make ``W`` singular); ``eps``
    gives such directions the step of a proximal-point iteration (``eps |dr|^2``
    added to the linearised problem) and changes nothing at a zero of ``F``, which
    is what is sought. A variant takes full steps or halves them until the merit
    ``1/2 |F / rho|^2`` (velocities squared) decreases: neither is robust alone on
    the pours' stalled sets (the merit is not smooth where contacts change status,
    and backtracking stops on such kinks; full steps may wander), hence the
    variants. The answer is judged by the natural residual alone.
    """
    system = _Newton(rows, predicted)
    start = r
    best, best_residual = r, _ratio(rows, predicted, r, tolerance)
    work, last = 0.0, 0.0   # factorisation work so far and the last one's (`_factorisation_cost`)
    for variant, (eps, damped) in enumerate(_NEWTON_VARIANTS):
        # The next variant only when this one did not reach the tolerance itself: an
        # answer within it is what `solve` accepts (module docstring), and each
        # variant costs up to `_NEWTON_ITERATIONS` sparse LUs.
        if best_residual <= target or (variant > 0 and best_residual <= 1.0):
            break
        r, stale = start, 0
        regularisation = eps * sp.identity(r.size, format="csc")
        ordering = None   # `_sparse_solve` picks it at the first factorisation
        F, J = system.value(r, jacobian=True)
        merit = system.merit(F)
        if last == 0.0:   # no factorisation made yet: the a-priori estimate stands in
            last = _estimated_factorisation_cost(J.nnz + r.size, r.size)
        for _ in range(_NEWTON_ITERATIONS):
            if work + last > budget:   # the next factorisation would overrun the budget
                break
            try:
                step, ordering, last = _sparse_solve(J + regularisation, -F.ravel(), ordering)
                work += last
                step = step.reshape(r.shape)
            except RuntimeError:   # a singular factor: no step
                break
            if not np.all(np.isfinite(step)):
                break
            length = 1.0
            if damped:
                for _ in range(12):
                    F_trial, _ = system.value(r + length * step)
                    if system.merit(F_trial) <= (1.0 - 1e-4 * length) * merit:
                        break
                    length *= 0.5
                else:
                    break
            r = r + length * step
            F, J = system.value(r, jacobian=True)
            merit = system.merit(F)
            residual = _ratio(rows, predicted, r, tolerance)
            if residual < best_residual:
                best, best_residual, stale = r, residual, 0
            else:
                stale += 1
            if best_residual <= target or stale >= _NEWTON_PATIENCE:
                break
    return best, best_residual, work


#: SuperLU's orderings for Newton's matrices ``J + eps I`` (`_sparse_solve`): a
#: minimum-degree ordering of ``J + J^T`` in symmetric mode, and COLAMD.
_ORDERINGS = {"MMD_AT_PLUS_A": dict(permc_spec="MMD_AT_PLUS_A", options=dict(SymmetricMode=True)),
              "COLAMD": dict(permc_spec="COLAMD")}


def _sparse_solve(matrix: sp.spmatrix, right: np.ndarray, ordering: str | None = None):
    """``(matrix^{-1} right, ordering, cost)`` by SuperLU with ``ordering`` (a key of
    `_ORDERINGS`), or, when None, with each of them, keeping the one whose factor has
    fewer entries (deterministic); ``cost`` is `_factorisation_cost` of the
    factorisations made. Why both: ``J`` has the symmetric pattern of ``W``
    plus diagonal blocks, and which ordering suits it depends on the blocks. On the
    1,000-sphere pour (`benchmarks/rotation_speed.py`) the minimum-degree ordering
    halves COLAMD's fill for turning spheres, and doubles it with rolling resistance
    (figures in benchmarks/README.md, "Measurements behind the constants"). A Newton call keeps
    ``J``'s pattern, so it chooses once (`_newton`)."""
    matrix = sp.csc_matrix(matrix)
    if ordering is not None:
        factor = spla.splu(matrix, **_ORDERINGS[ordering])
        return factor.solve(right), ordering, _factorisation_cost(factor)
    best, cost = None, 0.0
    for name, options in _ORDERINGS.items():
        factor = spla.splu(matrix, **options)
        cost += _factorisation_cost(factor)
        fill = factor.L.nnz + factor.U.nnz
        if best is None or fill < best[0]:
            best = (fill, name, factor)
    return best[2].solve(right), best[1], cost


#: Floating-point operations of a sparse LU per entry read by a sweep, in units of
#: ``fill^2 / n`` (`_factorisation_cost`). Why a model and not a clock: the hand-over's
#: budget must not depend on the machine, so that a run is repeatable. The model
#: ``fill^2 / n`` (the operations of a factor whose columns have the mean count) over
#: this factor matched the measured time of a factorisation in sweeps within a factor
#: 1.5 on the stalls of the 1,000-sphere box and of a periodic layer of 1,000 turning
#: spheres (benchmarks/README.md, "Measurements behind the constants").
_LU_OPERATIONS_PER_SWEEP_ENTRY = 4.0


def _estimated_factorisation_cost(entries: int, n: int) -> float:
    """`_factorisation_cost` of an ``n x n`` matrix with ``entries`` nonzeros before
    factorising it: its fill taken as ``entries n^(1/3)``, the growth of a nested
    dissection of a three-dimensional mesh (George, *Nested dissection of a regular
    finite element mesh*, SIAM J. Numer. Anal., 1973: fill O(n^(4/3)) in 3D). On the
    stalls of the 1,000-sphere box and of a periodic layer of 1,000 turning spheres it
    was within a factor 1.6 of SuperLU's fill (benchmarks/README.md, "Measurements
    behind the constants"). Why: the first factorisation of a Newton call must be
    priced before it is made; at 100,000 spheres one would take longer than the whole
    sweep budget."""
    fill = float(entries) * float(n) ** (1.0 / 3.0)
    return fill * fill / max(n, 1) / _LU_OPERATIONS_PER_SWEEP_ENTRY


def _factorisation_cost(factor) -> float:
    """The work of a SuperLU factorisation ``factor`` in entries a sweep reads
    (divide by a sweep's ``values.size`` for sweeps): ``fill^2 / n`` over
    `_LU_OPERATIONS_PER_SWEEP_ENTRY`."""
    fill = float(factor.L.nnz + factor.U.nnz)
    return fill * fill / max(factor.shape[0], 1) / _LU_OPERATIONS_PER_SWEEP_ENTRY


def _ratio(rows: SweepRows, predicted: np.ndarray, r: np.ndarray, tolerance: np.ndarray) -> float:
    """Largest natural residual of ``r`` in units of each contact's tolerance."""
    return float((natural_residual(rows, predicted, r) / tolerance).max(initial=0.0))
