"""The compiled Gauss-Seidel sweeps (`granular.contact.sweep_kernels`) against the numpy law.

A sweep takes the contacts one after the other and replaces each impulse by the
exact local answer of `granular.contact.coulomb_rows.local_answer` at the current
velocities. The reference here does exactly that, contact by contact, in numpy,
on crowds of turning spheres thrown together on a rough floor (with and without
rolling resistance, and with a moving floor's tangential velocity): the compiled
sweeps and residuals must agree with it to round-off.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import granular as gr
from granular.contact import coulomb_rows
from granular.contact import sweep_kernels
from granular.contact.problem import check_friction, rolling_rows


def thrown_crowd(seed: int, rolling_friction: float, rotation: bool = True, jitter: float = 0.0):
    """Twelve turning spheres (radius 1 cm, random masses) thrown together on a rough
    floor (frictional points that do not turn with ``rotation`` False), their lattice
    sites moved by up to ``jitter`` (m) so that their normals are oblique: ``(SweepRows,
    prediction v (d,))`` of their first step."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(np.arange(2), np.arange(2), np.arange(3), indexing="ij"), -1).reshape(-1, 3)
    positions = 0.021 * grid + np.array([0.0, 0.0, 0.0105])
    if jitter:
        positions = positions + rng.uniform(-jitter, jitter, positions.shape)
    velocities = -20.0 * (positions - positions.mean(axis=0)) + rng.normal(0.0, 0.3, positions.shape)
    world = gr.SphereWorld(
        positions,
        0.01,
        masses=rng.uniform(0.5, 2.0, 12),
        velocities=velocities,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
        friction=0.5,
        rolling_friction=rolling_friction,
        angular_velocities=rng.normal(0.0, 30.0, positions.shape) if rotation else None,
        rotation=rotation,
    )
    h = 1e-2
    u0 = np.concatenate([world.u0, world.initial_rotation()[0].reshape(-1)]) if rotation else world.u0
    metric = world.metric(h, world.q0)
    predicted = u0 + h * world.force(0.0, world.q0, u0) / metric.diagonal
    constraints = world.constraints(h, world.q0, h, 2.0 * float(np.abs(predicted).max()))
    mu, T, _ = check_friction(constraints)
    mu_r, R = rolling_rows(constraints)
    offset = rng.normal(0.0, 0.1, (constraints.size, 2))  # as if the contacts' other bodies moved
    rows = coulomb_rows.sweep_rows(metric, constraints.jacobian, T, mu, constraints.lower(h), R, mu_r, offset)
    assert rows is not None and (rows.w_tangent is not None) == rotation
    assert (rows.rolling_friction is not None) == (rolling_friction > 0.0)
    return rows, predicted


def reference_sweep(rows, u, r, order, tolerance=None):
    """One sweep in numpy, contact by contact (the law of `local_answer`). Returns
    the largest residual met at a visit (m/s, or in units of each contact's
    ``tolerance`` (m,)) and the sum of the squares of the residuals met."""
    largest = squares = 0.0
    for k in order:
        U = rows.local_velocities(u, [k])
        rolling = (
            None
            if rows.rolling_friction is None
            else (rows.rolling_friction[[k]], rows.w_rolling[[k]], rows.coupling[[k]])
        )
        v = None if rows.w_tangent is None else rows.w_tangent[[k]]
        new = coulomb_rows.local_answer(U, r[[k]], rows.w[[k]], rows.mu[[k]], v, rolling)[0]
        met = float(np.linalg.norm(weights(rows)[k] * (new - r[k])))
        met = met if tolerance is None else met / tolerance[k]
        largest, squares = max(largest, met), squares + met**2
        change = new - r[k]
        r[k] = new
        np.add.at(u, rows.cols[k], rows.inverse_mass[rows.cols[k]] * (rows.values[k].T @ change))
    return largest, squares


def weights(rows):
    """The diagonal (m, q) of the contacts' blocks ``W_kk`` (1/kg)."""
    columns = [rows.w, rows.w_tangent, rows.w_tangent]
    if rows.rolling_friction is not None:
        columns += [rows.w_rolling, rows.w_rolling]
    return np.column_stack(columns)


def reference_residual(rows, u, r):
    rolling = None if rows.rolling_friction is None else (rows.rolling_friction, rows.w_rolling, rows.coupling)
    change = coulomb_rows.local_answer(rows.local_velocities(u), r, rows.w, rows.mu, rows.w_tangent, rolling) - r
    return np.linalg.norm(weights(rows) * change, axis=1)


@pytest.mark.parametrize("rolling_friction", [0.0, 0.2])
@pytest.mark.parametrize("seed", range(3))
def test_compiled_sweeps_and_residuals_follow_the_local_law(seed, rolling_friction):
    """The sweeps, the residual met at each visit that a sweep returns (in m/s
    without tolerances; in tolerances with them), and the residual."""
    rows, predicted = thrown_crowd(seed, rolling_friction)
    m, q = rows.cols.shape[0], rows.width
    assert m >= 10
    compiled = rows.compiled
    r_fast = np.zeros((m, q))
    u_fast = np.append(predicted, 0.0)
    r_slow, u_slow = r_fast.copy(), u_fast.copy()
    tolerance = np.random.default_rng(seed).uniform(1e-3, 1e-2, m)
    for sweep in range(4):
        if sweep % 2:
            met, change = compiled.sweep(u_fast, r_fast, compiled.visit_scale(tolerance))
            largest, squares = reference_sweep(rows, u_slow, r_slow, compiled.order, tolerance)
        else:
            met, change = compiled.sweep(u_fast, r_fast)
            largest, squares = reference_sweep(rows, u_slow, r_slow, compiled.order)
        assert met == pytest.approx(largest, rel=1e-10)
        assert change == pytest.approx(squares, rel=1e-10)
        assert largest**2 <= change <= m * largest**2 * (1.0 + 1e-10)
        scale = np.abs(r_slow).max()
        assert scale > 0.0
        assert np.abs(r_fast - r_slow).max() <= 1e-12 * scale
        assert np.abs(u_fast - u_slow).max() <= 1e-12 * np.abs(u_slow).max()
    residual = compiled.residual(u_fast, r_fast)
    assert residual.max() > 0.0  # four sweeps do not solve the crowd: the comparison bites
    assert np.allclose(residual, reference_residual(rows, u_fast, r_fast), rtol=1e-10, atol=1e-12 * residual.max())


@pytest.mark.exact
def test_every_contact_is_swept_once_in_colours_that_share_no_coordinate():
    rows, _ = thrown_crowd(0, 0.2)
    order = rows.compiled.order
    assert np.array_equal(np.sort(order), np.arange(rows.cols.shape[0]))
    dummy = rows.inverse_mass.size - 1
    for colour in coulomb_rows.colour_classes(rows.cols, dummy):
        used = rows.cols[colour][rows.cols[colour] != dummy]
        assert used.size == np.unique(used).size


def test_longest_step_stops_at_the_first_contact_to_leave_its_cone():
    """Three contacts moved along ``delta``: the first leaves its cone at a = 2 (its
    normal impulse reaches 0), the second at a = 3; the third leaves at a = 0.5, within one
    sweep, and is ignored (module docstring of `granular.contact.friction_gauss_seidel`)."""
    r = np.array([[2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    delta = np.array([[-1.0, 0.0, 0.0], [0.0, 0.5 / 3.0, 0.0], [-2.0, 0.0, 0.0]])
    mu = np.full(3, 0.5)
    assert sweep_kernels.longest_step(r, delta, mu, 1e4) == pytest.approx(2.0, rel=1e-9)
    assert sweep_kernels.longest_step(r[1:], delta[1:], mu[1:], 1e4) == pytest.approx(3.0, rel=1e-9)
    assert sweep_kernels.longest_step(r[2:], delta[2:], mu[2:], 1e4) == 1e4


def parallel_colours(cols, dummy):
    """The colouring by rounds of local maxima (numpy), the rule `colour_classes`
    names: a candidate joins when it has the largest index among the candidates at
    each of its coordinates; the winners' neighbours leave the candidates."""
    m, p = cols.shape
    left, index, classes = np.ones(m, dtype=bool), np.arange(m), []
    while left.any():
        candidate, chosen = left.copy(), np.zeros(m, dtype=bool)
        while candidate.any():
            owner = np.full(dummy + 1, -1)
            np.maximum.at(owner, cols[candidate].ravel(), np.repeat(index[candidate], p))
            wins = candidate & np.all((owner[cols] == index[:, None]) | (cols == dummy), axis=1)
            chosen |= wins
            taken = np.zeros(dummy + 1, dtype=bool)
            taken[cols[wins].ravel()] = True
            taken[dummy] = False
            candidate &= ~taken[cols].any(axis=1)
        classes.append(np.flatnonzero(chosen))
        left &= ~chosen
    return classes


@pytest.mark.exact
@pytest.mark.parametrize("seed", range(4))
def test_greedy_colours_are_the_colours_of_rounds_of_local_maxima(seed):
    """Random contact graphs (300 contacts on 120 coordinates, padded rows, the
    padding anywhere in a row): the same groups, in the same order."""
    rng = np.random.default_rng(seed)
    dummy = 120
    cols = rng.integers(0, dummy, (300, 6))
    cols[rng.random(cols.shape) < 0.3] = dummy
    expected = parallel_colours(cols, dummy)
    found = coulomb_rows.colour_classes(cols, dummy)
    assert len(found) == len(expected) > 3
    for a, b in zip(found, expected):
        assert np.array_equal(a, b)


@pytest.mark.exact
def test_gathered_rows_are_the_dense_blocks_of_h_on_each_contacts_coordinates():
    """`sweep_kernels.gather_rows` (through `sweep_rows`) against the dense rows of
    ``H = [G; T; R]``: each contact's coordinates are the sorted coordinates of its
    nonzero entries (tangents only where mu > 0, rolling rows only where mu_r > 0),
    and its values are the dense rows on them. The blocks are given with an
    explicit zero and a duplicate entry, which must be left out and added up."""
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    m, d = 7, 30
    G = sp.random(m, d, density=0.15, random_state=rng, format="csr")
    T = sp.random(2 * m, d, density=0.15, random_state=rng, format="csr")
    R = sp.random(2 * m, d, density=0.1, random_state=rng, format="csr")
    # Row 0 of G gets an explicit zero on a new coordinate and a duplicate of its first entry.
    extra_columns = [int(np.setdiff1d(np.arange(d), G.indices)[0]), int(G.indices[G.indptr[0]])]
    G = sp.csr_matrix(
        (
            np.concatenate([[0.0, 0.25], G.data]),
            np.concatenate([extra_columns, G.indices]),
            np.concatenate([[0], G.indptr[1:] + 2]),
        ),
        shape=(m, d),
    )
    mu = np.where(np.arange(m) % 3 == 0, 0.0, 0.5)
    mu_r = np.where(np.arange(m) % 2 == 0, 0.1, 0.0)
    blocks = (coulomb_rows.csr_block(G, 1), coulomb_rows.csr_block(T, 2), coulomb_rows.csr_block(R, 2))
    cols, values = coulomb_rows.kernels().gather_rows(
        m, d, 5, blocks, (np.ones(m, bool), mu > 0.0, mu_r > 0.0), np.array([0, 1, 3]), 64
    )
    dense_G, dense_T, dense_R = G.toarray(), T.toarray(), R.toarray()  # toarray sums duplicates
    for k in range(m):
        rows = np.zeros((5, d))
        rows[0] = dense_G[k]
        if mu[k] > 0.0:
            rows[1:3] = dense_T[2 * k : 2 * k + 2]
        if mu_r[k] > 0.0:
            rows[3:5] = dense_R[2 * k : 2 * k + 2]
        present = np.flatnonzero(
            np.zeros(d, bool)
            | (G[k].toarray()[0] != 0)
            | (mu[k] > 0.0) & (np.abs(dense_T[2 * k : 2 * k + 2]).sum(axis=0) > 0)
            | (mu_r[k] > 0.0) & (np.abs(dense_R[2 * k : 2 * k + 2]).sum(axis=0) > 0)
        )
        real = cols[k] < d
        np.testing.assert_array_equal(cols[k][real], present)
        np.testing.assert_array_equal(values[k][:, real], rows[:, present])
        assert np.all(values[k][:, ~real] == 0.0)
    assert extra_columns[0] not in cols[0]  # the explicit zero is left out


def test_a_contact_without_normal_impulse_keeps_no_friction_even_below_underflow():
    """The cone holds exactly: with ``l_N = 0`` the friction and rolling impulses are
    0, also when their squares underflow (1e-170), which the sweeps rely on to skip
    open contacts (`granular.contact.sweep_kernels`)."""
    r = np.array([[0.0, 1e-170, -1e-170, 1e-170, 0.0], [1.0, 3.0, 4.0, 0.3, 0.4]])
    mu, rolling = np.array([0.5, 0.5]), np.array([0.1, 0.1])
    sweep_kernels.onto_cones(r, mu, rolling)
    assert np.all(r[0] == 0.0)
    assert np.allclose(r[1], [1.0, 0.3, 0.4, 0.06, 0.08], rtol=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_largest_row_speed_is_the_largest_entry_of_abs_rows_times_speeds_bit_for_bit(seed):
    """`sweep_kernels.largest_row_speed` sums each row's ``|A_ij| speeds_j`` in the
    order of its entries from 0.0, as scipy's ``abs(A) @ speeds`` does: the same
    largest value to the last bit, on random CSR matrices with empty rows and signed,
    zero and explicit-zero entries, in int32 and int64 indices; 0 for no rows."""
    rng = np.random.default_rng(seed)
    A = sp.random(60, 90, density=0.05, random_state=seed, format="csr")
    A.data = rng.normal(size=A.data.size) * np.where(rng.random(A.data.size) < 0.1, 0.0, 1.0)
    speeds = np.abs(rng.normal(size=90))
    expected = float((abs(A) @ speeds).max(initial=0.0))
    for indices in (np.int32, np.int64):
        got = sweep_kernels.largest_row_speed(A.indptr.astype(indices), A.indices.astype(indices), A.data, speeds)
        assert got == expected
    empty = sp.csr_matrix((0, 90))
    assert sweep_kernels.largest_row_speed(empty.indptr, empty.indices, empty.data, speeds) == 0.0


@pytest.mark.exact
@pytest.mark.parametrize("seed", range(3))
def test_transposed_product_is_scipys_bit_for_bit(seed):
    """`coulomb_rows.transposed_product` adds each row's products into the columns in
    the rows' order, as scipy's ``A.T @ x`` does: the same vector to the last bit, on
    random CSR matrices with empty rows, duplicate and explicit-zero entries, in int32
    and int64 indices, for a strided ``x``. Other shapes and formats fall back to
    scipy's product."""
    rng = np.random.default_rng(seed)
    A = sp.random(60, 90, density=0.05, random_state=seed, format="csr")
    A.data = rng.normal(size=A.data.size) * np.where(rng.random(A.data.size) < 0.1, 0.0, 1.0)
    # The first ten rows get three more entries each on column 0, which other rows fill
    # too: the products of a row are added one after the other, in the row's order.
    coo = A.tocoo()
    extra = np.repeat(np.arange(10), 3)
    row = np.concatenate([coo.row, extra])
    order = np.argsort(row, kind="stable")
    A = sp.csr_matrix(
        (
            np.concatenate([coo.data, rng.normal(size=extra.size)])[order],
            np.concatenate([coo.col, np.zeros(extra.size, dtype=int)])[order],
            np.concatenate([[0], np.cumsum(np.bincount(row, minlength=60))]),
        ),
        shape=A.shape,
    )
    x = rng.normal(size=(60, 3))[:, 1]  # a strided column, as the impulses' columns are
    expected = A.T @ x
    for indices in (np.int32, np.int64):
        B = sp.csr_matrix((A.data, A.indices.astype(indices), A.indptr.astype(indices)), shape=A.shape)
        assert coulomb_rows.transposed_product(B, x).tobytes() == expected.tobytes()
    assert np.array_equal(coulomb_rows.transposed_product(A.tocsc(), x), A.T @ x)
    with pytest.raises(ValueError):
        coulomb_rows.transposed_product(A, x[:-1])


@pytest.mark.exact
@pytest.mark.parametrize("q", [3, 5])
def test_block_offsets_are_numpys_largest_differences_bit_for_bit(q):
    """`sweep_kernels.block_offsets` against the numpy expression it replaced: the
    largest ``|W - diag(w, v, v)|`` over the normal and tangent rows and, with rolling
    rows, the largest of ``|W_R - w_r I|`` and of the normal-rolling coupling, on
    random blocks (a maximum of the same differences: equal to the last bit)."""
    rng = np.random.default_rng(q)
    m = 50
    full = rng.normal(size=(m, q, q)) * np.where(rng.random((m, q, q)) < 0.3, 0.0, 1.0)
    w, v, w_rolling = full[:, 0, 0], rng.normal(size=m), rng.normal(size=m)
    expected = np.zeros((m, 3, 3))
    expected[:, 0, 0], expected[:, 1, 1], expected[:, 2, 2] = w, v, v
    tangent, rolling = sweep_kernels.block_offsets(full, w, v, w_rolling)
    assert tangent.tobytes() == np.abs(full[:, :3, :3] - expected).max(axis=(1, 2)).tobytes()
    if q == 5:
        roll_block = full[:, 3:, 3:] - w_rolling[:, None, None] * np.eye(2)
        numpy_rolling = np.maximum(np.abs(roll_block).max(axis=(1, 2)), np.abs(full[:, 0, 3:]).max(axis=1))
        assert rolling.tobytes() == numpy_rolling.tobytes()
    else:
        assert np.all(rolling == 0.0)


@pytest.mark.parametrize("rolling_friction", [0.0, 0.2])
def test_rows_without_the_sweeps_block_structure_are_refused(rolling_friction):
    """`coulomb_rows.sweep_rows` returns None (the caller then takes another method)
    when a frictional contact's block is not ``diag(w, v, v)`` (one tangent row
    lengthened by 1e-6, a thousand times the isotropy tolerance) or, with rolling
    resistance, when a rolling row couples with the normal row; the untouched crowd's
    rows are accepted."""
    rng = np.random.default_rng(0)
    grid = np.stack(np.meshgrid(np.arange(2), np.arange(2), np.arange(3), indexing="ij"), -1).reshape(-1, 3)
    positions = 0.021 * grid
    world = gr.SphereWorld(
        positions + np.array([0.0, 0.0, 0.0105]) + rng.uniform(-5e-4, 5e-4, (12, 3)),
        0.01,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
        friction=0.5,
        rolling_friction=rolling_friction,
    )
    h = 1e-2
    metric = world.metric(h, world.q0)
    constraints = world.constraints(h, world.q0, h, 1.0)
    mu, T, _ = check_friction(constraints)
    mu_r, R = rolling_rows(constraints)
    lower = constraints.lower(h)
    G = constraints.jacobian
    assert coulomb_rows.sweep_rows(metric, G, T, mu, lower, R, mu_r) is not None
    stretched = T.tocsr(copy=True)
    stretched.data[stretched.indptr[0] : stretched.indptr[1]] *= 1.0 + 1e-6
    assert coulomb_rows.sweep_rows(metric, G, stretched, mu, lower, R, mu_r) is None
    if R is not None:
        coupled = R.tolil(copy=True)
        coupled[0, :] = coupled[0, :] + G[0, :]  # a rolling row with a part along the normal row
        assert coulomb_rows.sweep_rows(metric, G, T, mu, lower, coupled.tocsr(), mu_r) is None


def generic(compiled):
    """A copy of ``compiled`` that sweeps with the generic loops (no two-body blocks)."""
    plain = copy.copy(compiled)
    plain.blocks = None
    return plain


@pytest.mark.exact
@pytest.mark.parametrize("rolling_friction", [0.0, 0.2])
@pytest.mark.parametrize("seed", range(3))
def test_two_body_block_sweeps_are_the_generic_sweeps_bit_for_bit(seed, rolling_friction):
    """Turning spheres' rows have the two-body structure (`sweep_kernels.pair_blocks`),
    and their block sweeps and residuals give the generic loops' iterates, visit
    residuals and residuals to the last bit: the same products summed in the same
    order, the skipped entries exact zeros. The sites are jittered: on the lattice the
    normals and tangents are along the axes, and most sums have a single term."""
    rows, predicted = thrown_crowd(seed, rolling_friction, jitter=5e-4)
    compiled = rows.compiled
    assert compiled.blocks is not None
    plain = generic(compiled)
    m, q = rows.cols.shape[0], rows.width
    r_blocks, u_blocks = np.zeros((m, q)), np.append(predicted, 0.0)
    r_plain, u_plain = r_blocks.copy(), u_blocks.copy()
    scale = compiled.visit_scale(np.random.default_rng(seed).uniform(1e-3, 1e-2, m))
    for _ in range(20):
        assert compiled.sweep(u_blocks, r_blocks, scale) == plain.sweep(u_plain, r_plain, scale)
        assert np.array_equal(r_blocks, r_plain) and np.array_equal(u_blocks, u_plain)
        assert np.array_equal(compiled.residual(u_blocks, r_blocks), plain.residual(u_plain, r_plain))
    assert compiled.residual(u_blocks, r_blocks).max() > 0.0  # not yet solved: the comparison bites
    # u = v + M^{-1} H^T r from the swept impulses, on the blocks and by the generic loop
    u_from_blocks, u_from_plain = np.append(predicted, 0.0), np.append(predicted, 0.0)
    compiled.add_impulses(u_from_blocks, r_blocks)
    plain.add_impulses(u_from_plain, r_plain)
    assert np.array_equal(u_from_blocks, u_from_plain)
    assert not np.array_equal(u_from_blocks, np.append(predicted, 0.0))  # the impulses move u


def test_rows_without_the_two_body_structure_take_the_generic_sweep():
    """Rows that break the structure keep the generic loops: a normal row with a
    rotational entry, a contact touching a third body, a second body whose
    translational entries are not the first's negated, and spheres that do not turn
    (``d = 3N``). Each is a copy of a thrown crowd's rows with one contact changed."""
    rows, _ = thrown_crowd(0, 0.0)
    assert rows.compiled.blocks is not None
    d = rows.inverse_mass.size - 1
    # A contact of two spheres, the second not the last (so a third sphere follows it).
    pair = int(np.flatnonzero(((rows.cols < d).sum(axis=1) == 12) & (rows.cols[:, 5] + 3 < d // 2))[0])
    cases = []
    turning = rows.values.copy()
    turning[pair, 0, 8] = 1e-3  # the normal row on a rotational coordinate
    cases.append((rows.cols, turning))
    third = rows.cols.copy()
    third[pair, 3:6] += 3  # its second body's translation moved to the next sphere's
    cases.append((third, rows.values))
    unequal = rows.values.copy()
    entry = 3 + int(np.argmax(np.abs(rows.values[pair, 1, 3:6])))  # a tangent entry of the second body
    unequal[pair, 1, entry] *= 1.0 + 1e-15  # not exactly the first body's entry negated
    cases.append((rows.cols, unequal))
    for cols, values in cases:
        changed = dataclasses.replace(rows, cols=cols, values=values)
        assert changed.compiled.blocks is None
    points, _ = thrown_crowd(0, 0.0, rotation=False)
    assert points.compiled.blocks is None
