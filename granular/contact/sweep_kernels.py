"""Compiled inner loops of the Coulomb Gauss-Seidel sweeps (`granular.contact.friction_gauss_seidel`).

One sweep visits every contact once, with a few dozen floating-point operations
per contact: gather its local velocity from the coordinates it touches, take the
exact local answer of the law, scatter the impulse change back. In numpy the
same sweep is about twenty array calls per colour of the contact graph, each
costing microseconds of interpreter and dispatch whatever its size, several
times the cost of these loops (benchmarks/README.md, "Measurements behind the
constants"). Numba (a maintained JIT compiler
for numpy code) compiles them once, cached on disk next to this file. Two loops of
the contact stages around the sweeps live here for the same reason: the clusters of
an impact (`row_clusters`) and the velocity scale of a problem (`largest_row_speed`).

The loops compute the updates of the vectorised colours they replace: contacts of
one colour share no coordinate, so taking them one after the other in colour
order is the same Gauss-Seidel iteration (equal up to the rounding of the sums).
The local answer is written out for the three components of a Coulomb contact
and for the five of a contact with rolling resistance: a loop over a component
count known only at run time made the sweep several times slower.

Arrays (``m`` contacts, ``q`` = 3 or 5 impulse components, ``p`` coordinates per
contact, ``d + 1`` coordinates with the dummy ``d`` of zero inverse mass):

- ``order`` (m,) int64: the contact (the row of ``r``) each position of the
  arrays below holds. The contacts' arrays are stored in the order the sweeps
  visit them, colour after colour, so that a sweep reads them front to back,
  faster than the same arrays in contact order read through ``order``
  (`_Compiled`; benchmarks/README.md, "Measurements behind the constants");
- ``cols`` (m, p) int64, ``values`` (m, q, p): the contacts' rows (`SweepRows`);
- ``width`` (m,) int64: how many of a contact's ``cols`` are real (the rest pad
  with the dummy ``d``);
- ``scaled`` (m, q, p): ``values`` times the inverse masses of ``cols``;
- ``shift`` (m, 3): ``(lower_k, offset_k1, offset_k2)``, subtracted from the
  normal and tangential local velocities (m/s);
- ``inverse`` (m, 2): ``1 / w_k`` and ``1 / v_k`` (kg);
- ``mu`` (m,): friction coefficients;
- ``rolling`` (m, 6): per contact ``mu_r``, ``1 / w_r`` (kg) and ``W_RT`` (2 x 2,
  row by row) of the rolling resistance (`SweepRows`);
- ``weights`` (m, q): the diagonal of ``W_kk`` (1/kg), which turns an impulse
  change into the natural residual's velocity;
- ``u`` (d + 1,) velocities (m/s, rad/s), ``r`` (m, q) impulses (N s).
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def _onto_disc(a: float, b: float, limit: float):
    """``(a, b)`` scaled onto the disc of radius ``limit`` when outside it (the square
    root only then: 3-5% of a sweep of 2,307 contacts); (0, 0) on a disc of
    radius 0, even where ``a * a + b * b`` underflows (|a|, |b| < 1e-162)."""
    if limit <= 0.0:
        return 0.0, 0.0
    square = a * a + b * b
    if square > limit * limit:
        scale = limit / math.sqrt(square)
        return a * scale, b * scale
    return a, b


@numba.njit(cache=True, inline="always")
def _local_velocities(i, cols, values, width, shift, u):
    """``(U_N, U_T1, U_T2)`` (m/s) of the contact at position ``i``: its rows times
    ``u``, less its shift."""
    normal_velocity, tangent1, tangent2 = -shift[i, 0], -shift[i, 1], -shift[i, 2]
    for j in range(width[i]):
        velocity = u[cols[i, j]]
        normal_velocity += values[i, 0, j] * velocity
        tangent1 += values[i, 1, j] * velocity
        tangent2 += values[i, 2, j] * velocity
    return normal_velocity, tangent1, tangent2


@numba.njit(cache=True, inline="always")
def _coulomb_answer(i, k, cols, values, width, shift, inverse, mu, u, r):
    """The exact local answer ``(l_N, l_T1, l_T2)`` of contact ``k``, stored at
    position ``i`` of the arrays (`coulomb_rows.local_solution`)."""
    normal_velocity, tangent1, tangent2 = _local_velocities(i, cols, values, width, shift, u)
    normal = max(r[k, 0] - normal_velocity * inverse[i, 0], 0.0)
    t1, t2 = _onto_disc(r[k, 1] - tangent1 * inverse[i, 1], r[k, 2] - tangent2 * inverse[i, 1], mu[i] * normal)
    return normal, t1, t2


@numba.njit(cache=True, inline="always")
def _normal_velocity(i, cols, values, width, shift, u):
    """The normal local velocity (m/s) of the contact at position ``i``.

    The sweeps and residuals skip a contact that carries no impulse (``l_N = 0``
    holds the other components at 0, their discs) and is not approached (this
    velocity >= 0): its local answer is then no impulse, its residual 0. A fifth to
    a half of their contacts are such open ones (the working set holds the slowly
    separating rows, `granular.contact.friction.NEAR_CONTACT`), and this velocity is a
    part of the work (benchmarks/README.md, "Measurements behind the constants").
    (The test itself is written at the call sites: a function returning its
    boolean made the compiled sweep slower.)"""
    velocity = -shift[i, 0]
    for j in range(width[i]):
        velocity += values[i, 0, j] * u[cols[i, j]]
    return velocity


@numba.njit(cache=True, inline="always")
def _rolling_answer(i, k, cols, values, width, rolling, u, r, normal, t1, t2):
    """The rolling impulse ``(l_R1, l_R2)`` of contact ``k`` (at position ``i``), exact
    given its new normal and friction impulses (`coulomb_rows.local_answer`)."""
    rolling1 = rolling2 = 0.0
    for j in range(width[i]):
        velocity = u[cols[i, j]]
        rolling1 += values[i, 3, j] * velocity
        rolling2 += values[i, 4, j] * velocity
    return _rolling_law(i, k, rolling, r, rolling1, rolling2, normal, t1, t2)


@numba.njit(cache=True, inline="always")
def _rolling_law(i, k, rolling, r, rolling1, rolling2, normal, t1, t2):
    """The rolling impulse ``(l_R1, l_R2)`` of contact ``k`` (at position ``i``) at its
    rolling velocities ``rolling1``, ``rolling2`` (m/s, before its friction changes),
    exact given its new normal and friction impulses ``normal``, ``t1``, ``t2``."""
    d1, d2 = t1 - r[k, 1], t2 - r[k, 2]
    rolling1 += rolling[i, 2] * d1 + rolling[i, 3] * d2
    rolling2 += rolling[i, 4] * d1 + rolling[i, 5] * d2
    return _onto_disc(r[k, 3] - rolling1 * rolling[i, 1], r[k, 4] - rolling2 * rolling[i, 1], rolling[i, 0] * normal)


@numba.njit(cache=True, inline="always")
def _visit_residual(scale, weights, k, c0, c1, c2):
    """A Coulomb contact's squared natural residual at its visit, ``scale |w_k * c|^2``
    for the impulse change ``c`` and the diagonal ``w_k`` of ``W_kk`` (q = 3)."""
    return scale * ((weights[k, 0] * c0) ** 2 + (weights[k, 1] * c1) ** 2 + (weights[k, 2] * c2) ** 2)


@numba.njit(cache=True, inline="always")
def _visit_residual_rolling(scale, weights, k, c0, c1, c2, c3, c4):
    """`_visit_residual` of a contact with rolling resistance (q = 5)."""
    return scale * (
        (weights[k, 0] * c0) ** 2
        + (weights[k, 1] * c1) ** 2
        + (weights[k, 2] * c2) ** 2
        + (weights[k, 3] * c3) ** 2
        + (weights[k, 4] * c4) ** 2
    )


@numba.njit(cache=True)
def sweep(order, cols, values, width, scaled, shift, inverse, mu, weights, scale, u, r):
    """One Gauss-Seidel sweep of Coulomb contacts (q = 3) in the arrays' order: each
    impulse ``r[order[i]]`` becomes its local answer and ``u`` moves with it (in
    place). Returns ``(largest, change)``: the largest natural residual met on the
    way, each contact's at its visit, in units of ``scale`` (m,: the inverse squared
    tolerances, (s/m)^2), the estimate by which `friction_gauss_seidel.solve` spares
    most residual passes; and the sum of the squares of those residuals, the squared
    norm of the sweep's fixed-point residual ``|S(y) - y|`` in the weights ``W_kk``
    and ``scale``, from which `friction_gauss_seidel._Momentum` takes its momentum."""
    largest = change = 0.0
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _normal_velocity(i, cols, values, width, shift, u) >= 0.0:
            continue
        normal, t1, t2 = _coulomb_answer(i, k, cols, values, width, shift, inverse, mu, u, r)
        c0, c1, c2 = normal - r[k, 0], t1 - r[k, 1], t2 - r[k, 2]
        met = _visit_residual(scale[i], weights, i, c0, c1, c2)
        largest = max(largest, met)
        change += met
        r[k, 0], r[k, 1], r[k, 2] = normal, t1, t2
        for j in range(width[i]):
            u[cols[i, j]] += scaled[i, 0, j] * c0 + scaled[i, 1, j] * c1 + scaled[i, 2, j] * c2
    return math.sqrt(largest), change


@numba.njit(cache=True)
def sweep_rolling(order, cols, values, width, scaled, shift, inverse, mu, rolling, weights, scale, u, r):
    """`sweep` for contacts with rolling resistance (q = 5)."""
    largest = change = 0.0
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _normal_velocity(i, cols, values, width, shift, u) >= 0.0:
            continue
        normal, t1, t2 = _coulomb_answer(i, k, cols, values, width, shift, inverse, mu, u, r)
        l1, l2 = _rolling_answer(i, k, cols, values, width, rolling, u, r, normal, t1, t2)
        c0, c1, c2, c3, c4 = normal - r[k, 0], t1 - r[k, 1], t2 - r[k, 2], l1 - r[k, 3], l2 - r[k, 4]
        met = _visit_residual_rolling(scale[i], weights, i, c0, c1, c2, c3, c4)
        largest = max(largest, met)
        change += met
        r[k, 0], r[k, 1], r[k, 2], r[k, 3], r[k, 4] = normal, t1, t2, l1, l2
        for j in range(width[i]):
            u[cols[i, j]] += (
                scaled[i, 0, j] * c0
                + scaled[i, 1, j] * c1
                + scaled[i, 2, j] * c2
                + scaled[i, 3, j] * c3
                + scaled[i, 4, j] * c4
            )
    return math.sqrt(largest), change


@numba.njit(cache=True, inline="always")
def _law_distance(weights, i, k, r, normal, t1, t2):
    """The natural residual (m/s) of contact ``k`` (at position ``i``, q = 3): the
    distance ``|w_k * (answer - r_k)|`` from its impulses to its local answer."""
    e0 = weights[i, 0] * (normal - r[k, 0])
    e1 = weights[i, 1] * (t1 - r[k, 1])
    e2 = weights[i, 2] * (t2 - r[k, 2])
    return math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)


@numba.njit(cache=True, inline="always")
def _law_distance_rolling(weights, i, k, r, normal, t1, t2, l1, l2):
    """`_law_distance` of a contact with rolling resistance (q = 5)."""
    e0 = weights[i, 0] * (normal - r[k, 0])
    e1 = weights[i, 1] * (t1 - r[k, 1])
    e2 = weights[i, 2] * (t2 - r[k, 2])
    e3 = weights[i, 3] * (l1 - r[k, 3])
    e4 = weights[i, 4] * (l2 - r[k, 4])
    return math.sqrt(e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3 + e4 * e4)


@numba.njit(cache=True)
def residual(order, cols, values, width, shift, inverse, mu, weights, u, r, out):
    """The natural residual ``|weights_k * (local answer_k - r_k)|`` (m/s) of every
    Coulomb contact (q = 3) into ``out`` (m,), by contact."""
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _normal_velocity(i, cols, values, width, shift, u) >= 0.0:
            out[k] = 0.0
            continue
        normal, t1, t2 = _coulomb_answer(i, k, cols, values, width, shift, inverse, mu, u, r)
        out[k] = _law_distance(weights, i, k, r, normal, t1, t2)


@numba.njit(cache=True)
def residual_rolling(order, cols, values, width, shift, inverse, mu, rolling, weights, u, r, out):
    """`residual` for contacts with rolling resistance (q = 5)."""
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _normal_velocity(i, cols, values, width, shift, u) >= 0.0:
            out[k] = 0.0
            continue
        normal, t1, t2 = _coulomb_answer(i, k, cols, values, width, shift, inverse, mu, u, r)
        l1, l2 = _rolling_answer(i, k, cols, values, width, rolling, u, r, normal, t1, t2)
        out[k] = _law_distance_rolling(weights, i, k, r, normal, t1, t2, l1, l2)


@numba.njit(cache=True)
def onto_cones(r, mu, rolling_mu):
    """Impulses ``r`` (m, q) projected onto their cones in place: ``l_N >= 0``, the
    friction impulse onto the disc ``mu l_N`` and, when q = 5, the rolling impulse
    onto the disc ``rolling_mu l_N`` (`coulomb_rows.onto_cones`)."""
    for k in range(r.shape[0]):
        normal = max(r[k, 0], 0.0)
        r[k, 0] = normal
        r[k, 1], r[k, 2] = _onto_disc(r[k, 1], r[k, 2], mu[k] * normal)
        if r.shape[1] == 5:
            r[k, 3], r[k, 4] = _onto_disc(r[k, 3], r[k, 4], rolling_mu[k] * normal)


@numba.njit(cache=True)
def longest_step(r, delta, mu, limit):
    """`friction_gauss_seidel._longest_step`: for each contact, the largest ``a`` in
    ``[0, limit]`` (by 60 bisections) with ``r + a delta`` in its cone (``l_N >= 0``,
    ``|l_T| <= mu l_N (1 + 1e-12)``); the smallest such ``a >= 1`` over the contacts
    that leave their cone before ``limit``, or ``limit``."""
    best = limit
    for k in range(r.shape[0]):
        # The impulses a contact's cone admits along the line form an interval that
        # holds a = 0: a contact outside at a = 1 leaves within one sweep (ignored),
        # and one inside at a = best leaves after best (cannot lower it).
        if not _in_cone(r, delta, mu, k, 1.0) or _in_cone(r, delta, mu, k, best):
            continue
        low, high = 0.0, limit
        for _ in range(60):
            middle = 0.5 * (low + high)
            if _in_cone(r, delta, mu, k, middle):
                low = middle
            else:
                high = middle
        if low >= 1.0 and low < best:
            best = low
    return best


@numba.njit(cache=True, inline="always")
def _in_cone(r, delta, mu, k, a):
    normal = r[k, 0] + a * delta[k, 0]
    return normal >= 0.0 and math.hypot(r[k, 1] + a * delta[k, 1], r[k, 2] + a * delta[k, 2]) <= mu[k] * normal * (
        1.0 + 1e-12
    )


@numba.njit(cache=True)
def colours(cols, dummy):
    """The colour (m,) int64 of each contact: colour ``c`` is the greedy maximal set,
    in decreasing contact index, of the contacts left after colours ``0 .. c - 1``
    that share no coordinate (the dummy ``dummy`` excepted)."""
    m, p = cols.shape
    colour = np.full(m, -1, dtype=np.int64)
    taken = np.full(dummy + 1, -1, dtype=np.int64)  # the last colour that took each coordinate
    # The contacts still without a colour, in decreasing index: each round scans these
    # only (scanning all m contacts every round cost a round per colour times m).
    left = np.arange(m - 1, -1, -1)
    count, current = m, 0
    while count > 0:
        kept = 0
        for position in range(count):
            k = left[position]
            free = True
            for j in range(p):
                if cols[k, j] != dummy and taken[cols[k, j]] == current:
                    free = False
                    break
            if free:
                colour[k] = current
                for j in range(p):
                    taken[cols[k, j]] = current
            else:
                left[kept] = k
                kept += 1
        count = kept
        current += 1
    return colour


@numba.njit(cache=True)
def momentum(x, x_previous, beta):
    """Nesterov's extrapolation of a sweep's iterate, in place: ``x <- x + beta (x -
    x_previous)``, and ``x_previous`` takes the iterate before the extrapolation.
    ``x`` is the flat view of the impulses ``r`` or of the velocities ``u``; ``u`` is
    affine in ``r`` (``u = v + M^{-1} H^T r``), so the pair extrapolated alike stays
    consistent without a pass over the rows. (One flat loop: the same loop over the
    rows and columns of ``r`` took three times as long.)"""
    for i in range(x.size):
        current = x[i]
        x[i] = current + beta * (current - x_previous[i])
        x_previous[i] = current


@numba.njit(cache=True)
def add_impulses(order, cols, width, scaled, r, u):
    """``u += M^{-1} sum_k H_k^T r_k`` in place (``scaled`` already holds ``M^{-1}``)."""
    q = scaled.shape[1]
    for i in range(order.size):
        k = order[i]
        for j in range(width[i]):
            total = 0.0
            for a in range(q):
                total += scaled[i, a, j] * r[k, a]
            u[cols[i, j]] += total


@numba.njit(cache=True)
def _support(k, blocks, on, taken, out):
    """The distinct coordinates (ascending, into ``out``) of contact ``k``'s nonzero
    entries in ``blocks`` (``(indptr, indices, data, rows per contact)`` each, taken
    where ``on[b][k]``); returns their count. ``taken`` (d + 1,) holds, for each
    coordinate, the last contact that took it (so a duplicate is met in O(1), not by
    a search); the few distinct coordinates are then sorted by insertion."""
    n = 0
    for b in range(len(blocks)):
        indptr, indices, data, per = blocks[b]
        if not on[b][k]:
            continue
        for row in range(per * k, per * k + per):
            for entry in range(indptr[row], indptr[row + 1]):
                if data[entry] == 0.0:
                    continue
                column = indices[entry]
                if taken[column] == k:
                    continue
                taken[column] = k
                out[n] = column
                n += 1
    for i in range(1, n):
        column = out[i]
        slot = i
        while slot > 0 and out[slot - 1] > column:
            out[slot] = out[slot - 1]
            slot -= 1
        out[slot] = column
    return n


@numba.njit(cache=True)
def gather_rows(m, d, q, blocks, on, first_local, widest):
    """``(cols (m, p), values (m, q, p))`` of `coulomb_rows.SweepRows` from
    the CSR blocks of ``H`` (`_support`'s ``blocks``; block ``b`` fills the local rows
    ``first_local[b] ..`` of the contacts ``on[b]``), padded with the dummy
    coordinate ``d``; ``widest`` bounds a contact's entries. A duplicate entry adds
    up; each value is the sum of its entries in the order of the blocks, from 0.0
    (a value's entries all come from one row of one block, added in that row's order)."""
    supports = np.empty((m, widest), dtype=np.int64)
    counts = np.empty(m, dtype=np.int64)
    taken = np.full(d + 1, -1, dtype=np.int64)
    p = 1
    for k in range(m):
        counts[k] = _support(k, blocks, on, taken, supports[k])
        p = max(p, counts[k])
    cols = np.full((m, p), d, dtype=np.int64)
    values = np.zeros((m, q, p))
    slot_of = np.empty(d + 1, dtype=np.int64)  # the slot of each coordinate in the current contact
    for k in range(m):
        for slot in range(counts[k]):
            cols[k, slot] = supports[k, slot]
            slot_of[supports[k, slot]] = slot
        for b in range(len(blocks)):
            indptr, indices, data, per = blocks[b]
            if not on[b][k]:
                continue
            for a in range(per):
                row = per * k + a
                for entry in range(indptr[row], indptr[row + 1]):
                    if data[entry] == 0.0:
                        continue
                    values[k, first_local[b] + a, slot_of[indices[entry]]] += data[entry]
    return cols, values


@numba.njit(cache=True)
def local_blocks(cols, values, inverse_mass):
    """The local Delassus blocks ``W_kk = H_k M^{-1} H_k^T`` (m, q, q) (1/kg) of the
    contacts' rows (``values`` (m, q, p) on ``cols`` (m, p); ``inverse_mass`` (d + 1,)
    the diagonal of ``M^{-1}``, 0 for the padding). Each entry is summed over the
    coordinates in their order, whatever the BLAS: a batched matrix product goes through
    small BLAS products, whose summation order depends on the kernel, and cost a fifth
    of a settled frictional pile's step."""
    m, q, p = values.shape
    blocks = np.zeros((m, q, q))
    for k in range(m):
        for a in range(q):
            for b in range(a, q):
                total = 0.0
                for j in range(p):
                    total += values[k, a, j] * inverse_mass[cols[k, j]] * values[k, b, j]
                blocks[k, a, b] = total
                blocks[k, b, a] = total
    return blocks


@numba.njit(cache=True)
def block_offsets(blocks, w, v, w_rolling):
    """How far each contact's local block (``blocks`` (m, q, q), `local_blocks`) is from
    the structure the sweeps need: ``(tangent (m,), rolling (m,))``, the largest
    ``|W_ab - E_ab|`` over the normal and tangent rows with ``E = diag(w, v, v)``, and
    (q = 5) over the rolling rows with ``E = w_r I`` and the normal-rolling coupling
    ``W_0b`` (zeros when q = 3). Each is the same maximum of the same differences as
    numpy's, in one pass over the blocks (the numpy form made a dozen passes)."""
    m, q = blocks.shape[0], blocks.shape[1]
    tangent = np.zeros(m)
    rolling = np.zeros(m)
    for k in range(m):
        largest = 0.0
        for a in range(3):
            for b in range(3):
                expected = 0.0
                if a == b:
                    expected = w[k] if a == 0 else v[k]
                size = abs(blocks[k, a, b] - expected)
                if size > largest:
                    largest = size
        tangent[k] = largest
        if q == 5:
            largest = 0.0
            for a in range(3, 5):
                for b in range(3, 5):
                    size = abs(blocks[k, a, b] - (w_rolling[k] if a == b else 0.0))
                    if size > largest:
                        largest = size
                size = abs(blocks[k, 0, a])
                if size > largest:
                    largest = size
            rolling[k] = largest
    return tangent, rolling


@numba.njit(cache=True)
def visit_order_rows(order, cols, values, inverse_mass, dummy):
    """``(cols, values, scaled, width)`` of the contacts ``order`` (the sweeps' visit
    order), for `coulomb_rows.CompiledRows`: their ``cols`` (m, p) and ``values``
    (m, q, p), ``scaled`` the values times the inverse masses of their coordinates, and
    ``width`` (m,) the count of real coordinates (not the ``dummy`` padding). One pass,
    against four gathers and a broadcast product in numpy."""
    m, q, p = order.size, values.shape[1], values.shape[2]
    cols_out = np.empty((m, p), dtype=np.int64)
    values_out = np.empty((m, q, p))
    scaled = np.empty((m, q, p))
    width = np.zeros(m, dtype=np.int64)
    for i in range(m):
        k = order[i]
        for j in range(p):
            column = cols[k, j]
            cols_out[i, j] = column
            if column < dummy:
                width[i] += 1
            weight = inverse_mass[column]
            for a in range(q):
                value = values[k, a, j]
                values_out[i, a, j] = value
                scaled[i, a, j] = value * weight
    return cols_out, values_out, scaled, width


@numba.njit(cache=True)
def transposed_product(indptr, indices, data, x, out):
    """``out += A^T x`` for the CSR matrix ``A = (indptr, indices, data)`` (k, d) and
    ``x`` (k,): each entry of row ``r`` times ``x[r]``, added into ``out[column]`` row
    after row and, within a row, in its entries' order; the products and the order of
    scipy's ``A.T @ x`` (its CSC product on the transpose), so the same result to the
    last bit, without the transposed matrix that scipy builds and checks at every call."""
    for row in range(indptr.size - 1):
        value = x[row]
        for entry in range(indptr[row], indptr[row + 1]):
            out[indices[entry]] += data[entry] * value


@numba.njit(cache=True)
def row_clusters(indptr, indices, data, d):
    """The cluster label (k,) int64 of each row of the CSR matrix ``(indptr, indices,
    data)`` of k rows on ``d`` coordinates: rows that share a coordinate through a
    non-zero entry, directly or through other rows, share a label (the connected
    components of the row graph ``|G| |G|^T``), numbered 0, 1, ... in the order of
    their first row. Union-find over the rows with path halving (Tarjan and van Leeuwen,
    *Worst-case analysis of set union algorithms*, 1984): near-linear in the entries."""
    k = indptr.size - 1
    parent = np.arange(k)
    owner = np.full(d, -1, dtype=np.int64)  # the first row met at each coordinate
    for row in range(k):
        for entry in range(indptr[row], indptr[row + 1]):
            if data[entry] == 0.0:
                continue
            column = indices[entry]
            if owner[column] < 0:
                owner[column] = row
                continue
            a, b = _root(parent, row), _root(parent, owner[column])
            if a != b:
                parent[max(a, b)] = min(a, b)
    labels = np.empty(k, dtype=np.int64)
    count = 0
    for row in range(k):
        root = _root(parent, row)
        if root == row:
            labels[row] = count
            count += 1
        else:
            labels[row] = labels[root]  # root < row: labelled already
    return labels


@numba.njit(cache=True, inline="always")
def _root(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@numba.njit(cache=True)
def largest_row_speed(indptr, indices, data, speeds):
    """``max_i sum_j |A_ij| speeds_j`` over the rows of the CSR matrix ``(indptr,
    indices, data)`` (0 without rows; ``speeds`` >= 0): the largest speed a row sees,
    each row summed in the order of its entries from 0.0, as ``abs(A) @ speeds`` sums
    it, without the copy of ``A`` that ``abs`` makes."""
    largest = 0.0
    for row in range(indptr.size - 1):
        total = 0.0
        for entry in range(indptr[row], indptr[row + 1]):
            total += abs(data[entry]) * speeds[indices[entry]]
        largest = max(largest, total)
    return largest


# -- the sweeps on two-body blocks ---------------------------------------------------------
#
# A contact of spheres touches at most two bodies, each through a translational block of
# three coordinates (``3 b .. 3 b + 2``) and a rotational one (``t + 3 b ..``, ``t`` the
# count of translational coordinates). Its normal row has no rotational entries, its
# rolling rows no translational ones, and the second body's translational (and rolling)
# entries are the first body's negated (`granular.spheres.assembly`). Stored so, a
# contact's rows take 27 numbers instead of ``q`` rows of 12 entries and their 12 scaled
# copies, and a sweep skips the structural zeros: a sweep reads a third of the memory,
# which the deep piles' sweeps, whose rows do not fit in the cache, gain most from
# (benchmarks/README.md, "the rotating drum").
# The products and sums are the generic sweep's, in the same order (coordinates
# ascending; a skipped entry is an exact zero, whose product adds nothing), so both
# sweeps give the same iterates bit for bit (`tests/test_sweep_kernels.py`).


@numba.njit(cache=True)
def pair_blocks(order, cols, values, dummy, translations):
    """The two-body blocks of the contacts' rows (``cols`` (m, p) padded with the
    ``dummy`` coordinate, ``values`` (m, q, p), by contact), stored in the sweeps' order
    (position ``i`` holds contact ``order[i]``), or ``ok`` False when some contact does
    not have the structure above with ``translations`` translational coordinates.
    Read through ``order`` here, once, so that the sweeps on the blocks need no copy of
    the rows in their order (`visit_order_rows`).

    Returns ``(ok, bases, normal, tangent, first, second, rolling)``: ``bases`` (m, 4)
    int64, the first coordinates of the first body's translational block, the second
    body's (-1 on a wall), the first body's rotational block and the second's (-1);
    ``normal`` (m, 3) and ``tangent`` (m, 2, 3) the normal and tangent rows on the
    first body's translation (the second's are their negatives); ``first`` and
    ``second`` (m, 2, 3) the tangent rows on each body's rotation; ``rolling`` (m, 2, 3)
    the rolling rows on the first body's rotation (zeros when q = 3)."""
    m, q, p = values.shape
    bases = np.full((m, 4), -1, dtype=np.int64)
    normal = np.zeros((m, 3))
    tangent = np.zeros((m, 2, 3))
    first = np.zeros((m, 2, 3))
    second = np.zeros((m, 2, 3))
    rolling = np.zeros((m, 2, 3))
    dense = np.zeros((q, 2, 2, 3))  # row, body, translation (0) or rotation (1), axis
    bodies = np.empty(2, dtype=np.int64)
    for i in range(m):
        dense[:] = 0.0
        count = 0
        contact = order[i]
        for j in range(p):
            column = cols[contact, j]
            if column == dummy:
                continue
            kind = 0 if column < translations else 1
            body = (column - kind * translations) // 3
            slot = -1
            for s in range(count):
                if bodies[s] == body:
                    slot = s
            if slot < 0:
                if count == 2:
                    return False, bases, normal, tangent, first, second, rolling
                bodies[count] = body
                slot = count
                count += 1
            for a in range(q):
                dense[a, slot, kind, (column - kind * translations) % 3] = values[contact, a, j]
        if count == 0 or (count == 2 and bodies[1] < bodies[0]):
            return False, bases, normal, tangent, first, second, rolling
        pair = count == 2
        bases[i, 0], bases[i, 2] = 3 * bodies[0], translations + 3 * bodies[0]
        if pair:
            bases[i, 1], bases[i, 3] = 3 * bodies[1], translations + 3 * bodies[1]
        for s in range(3):
            if dense[0, 0, 1, s] != 0.0 or dense[0, 1, 1, s] != 0.0:
                return False, bases, normal, tangent, first, second, rolling
            for a in range(q):
                if pair and dense[a, 1, 0, s] != -dense[a, 0, 0, s]:
                    return False, bases, normal, tangent, first, second, rolling
            normal[i, s] = dense[0, 0, 0, s]
            for a in range(2):
                tangent[i, a, s] = dense[1 + a, 0, 0, s]
                first[i, a, s] = dense[1 + a, 0, 1, s]
                second[i, a, s] = dense[1 + a, 1, 1, s]
                if q == 5:
                    if dense[3 + a, 0, 0, s] != 0.0 or (pair and dense[3 + a, 1, 1, s] != -dense[3 + a, 0, 1, s]):
                        return False, bases, normal, tangent, first, second, rolling
                    rolling[i, a, s] = dense[3 + a, 0, 1, s]
    return True, bases, normal, tangent, first, second, rolling


@numba.njit(cache=True, inline="always")
def _block_velocities(i, bases, normal, tangent, first, second, shift, u):
    """``(U_N, U_T1, U_T2)`` of the contact at position ``i`` from its two-body blocks,
    summed over its coordinates in ascending order as the generic sweep sums them."""
    ta, tb, ra, rb = bases[i, 0], bases[i, 1], bases[i, 2], bases[i, 3]
    normal_velocity, tangent1, tangent2 = -shift[i, 0], -shift[i, 1], -shift[i, 2]
    for s in range(3):
        velocity = u[ta + s]
        normal_velocity += normal[i, s] * velocity
        tangent1 += tangent[i, 0, s] * velocity
        tangent2 += tangent[i, 1, s] * velocity
    if tb >= 0:
        for s in range(3):
            velocity = u[tb + s]
            normal_velocity += (-normal[i, s]) * velocity
            tangent1 += (-tangent[i, 0, s]) * velocity
            tangent2 += (-tangent[i, 1, s]) * velocity
    for s in range(3):
        velocity = u[ra + s]
        tangent1 += first[i, 0, s] * velocity
        tangent2 += first[i, 1, s] * velocity
    if rb >= 0:
        for s in range(3):
            velocity = u[rb + s]
            tangent1 += second[i, 0, s] * velocity
            tangent2 += second[i, 1, s] * velocity
    return normal_velocity, tangent1, tangent2


@numba.njit(cache=True, inline="always")
def _block_normal_velocity(i, bases, normal, shift, u):
    """``U_N`` of the contact at position ``i`` (`_normal_velocity` on the blocks)."""
    ta, tb = bases[i, 0], bases[i, 1]
    velocity = -shift[i, 0]
    for s in range(3):
        velocity += normal[i, s] * u[ta + s]
    if tb >= 0:
        for s in range(3):
            velocity += (-normal[i, s]) * u[tb + s]
    return velocity


@numba.njit(cache=True)
def sweep_blocks(order, bases, normal, tangent, first, second, inverse_mass, shift, inverse, mu, weights, scale, u, r):
    """`sweep` on the contacts' two-body blocks (q = 3): the same iterates bit for bit."""
    largest = change = 0.0
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _block_normal_velocity(i, bases, normal, shift, u) >= 0.0:
            continue
        new, t1, t2 = _block_coulomb_answer(i, k, bases, normal, tangent, first, second, shift, inverse, mu, u, r)
        c0, c1, c2 = new - r[k, 0], t1 - r[k, 1], t2 - r[k, 2]
        met = _visit_residual(scale[i], weights, i, c0, c1, c2)
        largest = max(largest, met)
        change += met
        r[k, 0], r[k, 1], r[k, 2] = new, t1, t2
        # No rolling rows (q = 3): ``second`` only fills the unread argument's type.
        _scatter_blocks(i, bases, normal, tangent, first, second, inverse_mass, c0, c1, c2, 0.0, 0.0, u, False, second)
    return math.sqrt(largest), change


@numba.njit(cache=True)
def sweep_blocks_rolling(
    order,
    bases,
    normal,
    tangent,
    first,
    second,
    rolling_rows,
    inverse_mass,
    shift,
    inverse,
    mu,
    rolling,
    weights,
    scale,
    u,
    r,
):
    """`sweep_rolling` on the contacts' two-body blocks (q = 5): the same iterates bit
    for bit. ``rolling_rows`` (m, 2, 3) from `pair_blocks`, ``rolling`` as in `sweep_rolling`."""
    largest = change = 0.0
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _block_normal_velocity(i, bases, normal, shift, u) >= 0.0:
            continue
        new, t1, t2 = _block_coulomb_answer(i, k, bases, normal, tangent, first, second, shift, inverse, mu, u, r)
        l1, l2 = _block_rolling_answer(i, k, bases, rolling_rows, rolling, u, r, new, t1, t2)
        c0, c1, c2, c3, c4 = new - r[k, 0], t1 - r[k, 1], t2 - r[k, 2], l1 - r[k, 3], l2 - r[k, 4]
        met = _visit_residual_rolling(scale[i], weights, i, c0, c1, c2, c3, c4)
        largest = max(largest, met)
        change += met
        r[k, 0], r[k, 1], r[k, 2], r[k, 3], r[k, 4] = new, t1, t2, l1, l2
        _scatter_blocks(
            i, bases, normal, tangent, first, second, inverse_mass, c0, c1, c2, c3, c4, u, True, rolling_rows
        )
    return math.sqrt(largest), change


@numba.njit(cache=True, inline="always")
def _scatter_blocks(i, bases, normal, tangent, first, second, inverse_mass, c0, c1, c2, c3, c4, u, rolls, rolling_rows):
    """``u += M^{-1} H_k^T c`` for the impulse change ``c`` of the contact at position
    ``i``, each coordinate's sum in the generic sweep's order (its zero terms left out)."""
    ta, tb, ra, rb = bases[i, 0], bases[i, 1], bases[i, 2], bases[i, 3]
    for s in range(3):
        weight = inverse_mass[ta + s]
        u[ta + s] += (normal[i, s] * weight) * c0 + (tangent[i, 0, s] * weight) * c1 + (tangent[i, 1, s] * weight) * c2
    if tb >= 0:
        for s in range(3):
            weight = inverse_mass[tb + s]
            u[tb + s] += (
                ((-normal[i, s]) * weight) * c0
                + ((-tangent[i, 0, s]) * weight) * c1
                + ((-tangent[i, 1, s]) * weight) * c2
            )
    for s in range(3):
        weight = inverse_mass[ra + s]
        change = (first[i, 0, s] * weight) * c1 + (first[i, 1, s] * weight) * c2
        if rolls:  # added term by term: the generic sum's association
            change = change + (rolling_rows[i, 0, s] * weight) * c3
            change = change + (rolling_rows[i, 1, s] * weight) * c4
        u[ra + s] += change
    if rb >= 0:
        for s in range(3):
            weight = inverse_mass[rb + s]
            change = (second[i, 0, s] * weight) * c1 + (second[i, 1, s] * weight) * c2
            if rolls:
                change = change + ((-rolling_rows[i, 0, s]) * weight) * c3
                change = change + ((-rolling_rows[i, 1, s]) * weight) * c4
            u[rb + s] += change


@numba.njit(cache=True)
def add_impulses_blocks(order, bases, normal, tangent, first, second, rolling_rows, inverse_mass, r, u):
    """`add_impulses` on the contacts' two-body blocks: ``u += M^{-1} sum_k H_k^T r_k`` in
    place, each coordinate's sum the generic loop's bit for bit (the same products,
    added contact after contact in the same order; the skipped entries exact zeros)."""
    rolls = r.shape[1] == 5
    for i in range(order.size):
        k = order[i]
        c3 = r[k, 3] if rolls else 0.0
        c4 = r[k, 4] if rolls else 0.0
        _scatter_blocks(
            i,
            bases,
            normal,
            tangent,
            first,
            second,
            inverse_mass,
            r[k, 0],
            r[k, 1],
            r[k, 2],
            c3,
            c4,
            u,
            rolls,
            rolling_rows,
        )


@numba.njit(cache=True, inline="always")
def _block_coulomb_answer(i, k, bases, normal, tangent, first, second, shift, inverse, mu, u, r):
    """`_coulomb_answer` on the two-body blocks. (Its last two lines are written out
    here as there: taken through one shared helper they made the q = 3 block sweep 5%
    slower, 49.3-49.6 against 46.4-47.1 us a sweep of the box's captured solves.)"""
    normal_velocity, tangent1, tangent2 = _block_velocities(i, bases, normal, tangent, first, second, shift, u)
    new = max(r[k, 0] - normal_velocity * inverse[i, 0], 0.0)
    t1, t2 = _onto_disc(r[k, 1] - tangent1 * inverse[i, 1], r[k, 2] - tangent2 * inverse[i, 1], mu[i] * new)
    return new, t1, t2


@numba.njit(cache=True, inline="always")
def _block_rolling_answer(i, k, bases, rolling_rows, rolling, u, r, new, t1, t2):
    """`_rolling_answer` on the two-body blocks."""
    ra, rb = bases[i, 2], bases[i, 3]
    rolling1 = rolling2 = 0.0
    for s in range(3):
        velocity = u[ra + s]
        rolling1 += rolling_rows[i, 0, s] * velocity
        rolling2 += rolling_rows[i, 1, s] * velocity
    if rb >= 0:
        for s in range(3):
            velocity = u[rb + s]
            rolling1 += (-rolling_rows[i, 0, s]) * velocity
            rolling2 += (-rolling_rows[i, 1, s]) * velocity
    return _rolling_law(i, k, rolling, r, rolling1, rolling2, new, t1, t2)


@numba.njit(cache=True)
def residual_blocks(order, bases, normal, tangent, first, second, shift, inverse, mu, weights, u, r, out):
    """`residual` on the contacts' two-body blocks (q = 3): the same values bit for bit."""
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _block_normal_velocity(i, bases, normal, shift, u) >= 0.0:
            out[k] = 0.0
            continue
        new, t1, t2 = _block_coulomb_answer(i, k, bases, normal, tangent, first, second, shift, inverse, mu, u, r)
        out[k] = _law_distance(weights, i, k, r, new, t1, t2)


@numba.njit(cache=True)
def residual_blocks_rolling(
    order, bases, normal, tangent, first, second, rolling_rows, shift, inverse, mu, rolling, weights, u, r, out
):
    """`residual_rolling` on the contacts' two-body blocks (q = 5): the same values bit for bit."""
    for i in range(order.size):
        k = order[i]
        if r[k, 0] == 0.0 and _block_normal_velocity(i, bases, normal, shift, u) >= 0.0:
            out[k] = 0.0
            continue
        new, t1, t2 = _block_coulomb_answer(i, k, bases, normal, tangent, first, second, shift, inverse, mu, u, r)
        l1, l2 = _block_rolling_answer(i, k, bases, rolling_rows, rolling, u, r, new, t1, t2)
        out[k] = _law_distance_rolling(weights, i, k, r, new, t1, t2, l1, l2)
