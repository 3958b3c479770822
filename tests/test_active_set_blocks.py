"""The blocks of the Delassus matrix that the active-set solver cuts in numpy agree
with scipy's slicing of ``W = H H^T`` (two ways of computing the same entries)."""

import numpy as np
import pytest
import scipy.sparse as sp

from granular.contact import delassus_rows
from granular.contact.delassus_rows import DelassusRows
from granular.contact.sparse_blocks import cross_block, principal_block
from support.systems import InverseMassDiagonal


def _contact_jacobian(rng, m: int, n_bodies: int, zero_rows=()) -> sp.csr_matrix:
    """m rows, each touching one or two bodies of three coordinates, like sphere contacts."""
    rows, columns, values = [], [], []
    for k in range(m):
        if k in zero_rows:
            continue
        bodies = rng.choice(n_bodies, size=rng.integers(1, 3), replace=False)
        normal = rng.normal(size=3)
        normal /= np.linalg.norm(normal)
        for sign, body in zip((1.0, -1.0), bodies):
            rows += [k] * 3
            columns += list(3 * body + np.arange(3))
            values += list(sign * normal)
    return sp.csr_matrix((values, (rows, columns)), shape=(m, 3 * n_bodies))


@pytest.mark.exact
@pytest.mark.parametrize("upper", [False, True])
def test_a_principal_block_cut_in_numpy_is_scipys_slice_plus_the_shift(upper):
    rng = np.random.default_rng(3)
    G = _contact_jacobian(rng, 400, 120)
    W = sp.csc_matrix(G @ G.T)
    W.sort_indices()
    rows = np.sort(rng.choice(400, size=150, replace=False))
    shift = rng.uniform(0.1, 1.0, rows.size)
    expected = W[rows][:, rows].toarray() + np.diag(shift)
    if upper:
        expected = np.triu(expected)
    block = principal_block(W, rows, shift, upper)
    np.testing.assert_array_equal(block.toarray(), expected)
    assert block.has_sorted_indices  # qdldl reads each column in order


@pytest.mark.exact
def test_a_row_of_h_that_is_zero_still_gets_its_shift_on_the_diagonal():
    rng = np.random.default_rng(4)
    G = _contact_jacobian(rng, 60, 30, zero_rows={5, 17})
    W = sp.csc_matrix(G @ G.T)
    W.sort_indices()
    rows = np.arange(0, 60, 2)
    shift = np.full(rows.size, 0.5)
    np.testing.assert_array_equal(
        principal_block(W, rows, shift, False).toarray(), W[rows][:, rows].toarray() + 0.5 * np.eye(rows.size)
    )


@pytest.mark.exact
def test_a_cross_block_cut_in_numpy_is_scipys_slice():
    rng = np.random.default_rng(5)
    G = _contact_jacobian(rng, 300, 90)
    W = sp.csc_matrix(G @ G.T)
    W.sort_indices()
    rows = np.sort(rng.choice(300, size=120, replace=False))
    columns = rng.choice(300, size=25, replace=False)
    np.testing.assert_array_equal(cross_block(W, rows, columns), W[rows][:, columns].toarray())


def test_blocks_and_couplings_are_the_same_before_and_after_w_is_formed():
    """The first uses build blocks by products of H; later ones cut them from W
    (`USE_OVERHEAD_ROWS`). Both give W_AA + rho D_A to rounding."""
    rng = np.random.default_rng(6)
    m = 5000
    G = _contact_jacobian(rng, m, 1500)
    masses = rng.uniform(0.5, 2.0, 1500).repeat(3)
    data = DelassusRows(InverseMassDiagonal(1.0 / masses), G, rng.normal(size=m))
    rows = np.sort(rng.choice(m, size=100, replace=False))
    columns = np.setdiff1d(np.arange(m), rows)[:30]
    first_block = data.block(rows, 1e-3).toarray()
    first_coupling = data.couplings(rows, columns)
    assert data.sparse_delassus is None
    for _ in range(m // delassus_rows.USE_OVERHEAD_ROWS + 2):
        later_block = data.block(rows, 1e-3).toarray()
    assert data.sparse_delassus is not None
    later_coupling = data.couplings(rows, columns)
    scale = np.abs(first_block).max()
    np.testing.assert_allclose(later_block, first_block, rtol=0, atol=1e-14 * scale)
    np.testing.assert_allclose(later_coupling, first_coupling, rtol=0, atol=1e-14 * scale)
    H = G.multiply(np.sqrt(1.0 / masses)[None, :]).tocsr()
    exact = (H[rows] @ H[rows].T).toarray() + np.diag(1e-3 * data.diagonal[rows])
    np.testing.assert_allclose(later_block, exact, rtol=0, atol=1e-14 * scale)


@pytest.mark.exact
@pytest.mark.parametrize("axis_aligned", [False, True])
def test_the_compiled_upper_block_is_scipys_product_bit_for_bit(axis_aligned):
    """`DelassusRows.block(upper=True)` (what qdldl factorises) comes from
    `granular.contact.delassus_blocks`; its structure and entries are those of scipy's
    product plus the shift, exact zeros left out (two normals along different axes
    on one body), the diagonal of a zero row kept with its shift alone."""
    from granular.contact.sparse_blocks import csr_rows, upper_triangle
    from granular.contact.delassus_blocks import upper_block

    rng = np.random.default_rng(7)
    G = _contact_jacobian(rng, 500, 120, zero_rows={3, 40})
    if axis_aligned:
        G.data = np.sign(G.data) * (np.abs(G.data) > 0.5)
    masses = rng.uniform(0.5, 2.0, 120).repeat(3)
    data = DelassusRows(InverseMassDiagonal(1.0 / masses), G, rng.normal(size=500))
    rows = np.sort(np.concatenate([[3, 40], rng.choice(np.setdiff1d(np.arange(500), [3, 40]), 250, replace=False)]))
    shift = 1e-3 * data.diagonal[rows]
    H = csr_rows(data.H, rows)
    expected = sp.csc_matrix(H @ H.T.tocsr())
    expected.setdiag(expected.diagonal() + shift)
    expected = upper_triangle(expected)
    for block in (upper_block(data.H, rows, shift), data.block(rows, 1e-3, upper=True)):
        assert block.has_sorted_indices
        np.testing.assert_array_equal(block.indptr, expected.indptr)
        np.testing.assert_array_equal(block.indices, expected.indices)
        np.testing.assert_array_equal(block.data, expected.data)
    if axis_aligned:
        assert expected.nnz < np.count_nonzero(np.triu(np.abs(H.toarray()) @ np.abs(H.toarray()).T))
    W = sp.csc_matrix(data.H @ data.HT)
    W.sort_indices()
    np.testing.assert_array_equal(
        upper_block(data.H, rows, shift).toarray(), principal_block(W, rows, shift, True).toarray()
    )


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("backend", ["qdldl", "cholmod"])
def test_a_bordered_factor_solves_the_changed_set_as_a_factor_of_it_would(backend, in_place, monkeypatch):
    """`BorderedFactor`: the base factor of 700 rows (by qdldl, or by CHOLMOD as for
    large bases), with rows removed and rows added (a border within its budget),
    solves ``(W_AA + rho D_A) x = r`` on the changed set as a direct solve of that
    block does, to the block's conditioning times the machine epsilon; so does a
    later set that reuses some of the border columns and adds new ones, and the
    first set's solve, used again after the later one stored its columns; with the
    columns read where they are stored or gathered first."""
    from granular.contact import bordered_factor
    from granular.contact.bordered_factor import BorderedFactor

    # The backend follows the base's size: CHOLMOD's threshold lowered below 700 rows.
    monkeypatch.setattr(bordered_factor, "LARGE_BASE", 8000 if backend == "qdldl" else 500)
    # The border's columns read where they are stored, or copied first.
    monkeypatch.setattr(bordered_factor, "IN_PLACE_ROWS", 500 if in_place else 8000)
    monkeypatch.setattr(bordered_factor, "IN_PLACE_SPAN", bordered_factor.MAX_BORDER if in_place else 0)
    base_size = 700
    rng = np.random.default_rng(5)
    m = base_size + 200
    G = _contact_jacobian(rng, m, base_size)  # more coordinates than rows: W definite
    rows_data = DelassusRows(InverseMassDiagonal(rng.uniform(0.5, 2.0, G.shape[1])), G, np.zeros(m))
    keys, rho = np.arange(m, dtype=np.int64) * 7, 1e-8
    factor = BorderedFactor(keys[:base_size], rows_data, np.arange(base_size), rho)

    def check(removed, added, apply=None):
        rows = np.setdiff1d(np.r_[np.arange(base_size), added], removed)
        apply = apply or factor.preconditioner(rows_data, rows, keys, rho)
        assert apply is not None  # within the border's budget
        block = rows_data.block(rows, rho).toarray()
        right = rng.normal(size=rows.size)
        direct = np.linalg.solve(block, right)
        # A backward-stable solve of a block of condition kappa errs by about kappa eps
        # relative to the answer; the base's solve and the Schur complement's composed,
        # by a small multiple of it.
        eigenvalues = np.linalg.eigvalsh(block)
        kappa = eigenvalues[-1] / eigenvalues[0]
        assert np.abs(apply(right) - direct).max() / np.abs(direct).max() <= 10 * kappa * np.finfo(float).eps
        return apply

    # A stored column carries the couplings of the base rows present when it was made;
    # the later set keeps those rows absent (more removed), so the couplings hold.
    first = (np.arange(0, 10), base_size + np.arange(0, 10))
    later = (np.arange(0, 15), base_size + np.arange(5, 20))  # 15 columns again, 15 new
    first_apply = check(*first)
    check(*later)
    check(*first, apply=first_apply)


def test_a_border_never_takes_more_memory_than_its_bound_and_grows_with_cholmods_ratio():
    """`border_budget`: the border's columns (8 bytes a row each) stay within
    `MAX_BORDER_BYTES` at every size, none below `BORDER_MIN_BASE` rows; CHOLMOD's
    budget grows with the base from `CHOLMOD_RATIO_ROWS` rows (its factorisation-to-
    solve ratio), until the memory bound takes over."""
    from granular.contact import bordered_factor as bf

    sizes = np.unique(np.geomspace(100, 5e6, 60).astype(int))
    for size in sizes:
        backend = "cholmod" if size > bf.LARGE_BASE else "qdldl"
        budget = bf.border_budget(int(size), backend)
        assert 8 * size * budget <= bf.MAX_BORDER_BYTES
        assert (budget == 0) == (size < bf.BORDER_MIN_BASE)
    base = bf.BORDER_PER_FACTORISATION["cholmod"]
    assert bf.border_budget(bf.CHOLMOD_RATIO_ROWS, "cholmod") == base
    assert bf.border_budget(4 * bf.CHOLMOD_RATIO_ROWS, "cholmod") == 2 * base  # the square root


def test_the_gap_closures_factor_is_qdldls_up_to_its_own_threshold(monkeypatch):
    """A factor made anew at nearly every step (the gap closure's, `gap_closure.closure_workspace`)
    is chosen by its factorisation's time: qdldl up to `REFACTORISED_LARGE_BASE` rows, where
    a factor kept across steps (the default workspace) is CHOLMOD's from `LARGE_BASE`.
    Both thresholds are lowered here around a base of 700 rows. The two factors solve
    ``(W_AA + rho D_A) x = r`` as a dense solve of the block does, to the block's
    conditioning times the machine epsilon (a backward-stable solve and the conjugate
    gradients' stopping rule, a tenth of a feasibility set at that level)."""
    from granular.contact import active_set, bordered_factor, gap_closure

    monkeypatch.setattr(bordered_factor, "LARGE_BASE", 500)
    monkeypatch.setattr(gap_closure, "REFACTORISED_LARGE_BASE", 1000)
    chosen = []
    factorise = bordered_factor.factorise

    def recording(matrix, backend):
        chosen.append(backend)
        return factorise(matrix, backend)

    monkeypatch.setattr(bordered_factor, "factorise", recording)
    rng = np.random.default_rng(11)
    m = 700
    G = _contact_jacobian(rng, m, m)  # more coordinates than rows: W definite
    rows_data = DelassusRows(InverseMassDiagonal(rng.uniform(0.5, 2.0, G.shape[1])), G, np.zeros(m))
    keys, rows, rho = np.arange(m, dtype=np.int64), np.arange(m), 1e-8
    block = rows_data.block(rows, rho).toarray()
    right = rng.normal(size=m)
    direct = np.linalg.solve(block, right)
    eigenvalues = np.linalg.eigvalsh(block)
    kappa = eigenvalues[-1] / eigenvalues[0]
    feasibility = kappa * np.finfo(float).eps * np.abs(right).max()
    answers = {}
    for name, workspace in (("kept", active_set.Workspace()), ("closure", gap_closure.closure_workspace())):
        context = active_set.SolveContext(rows_data, keys, None, feasibility, workspace, active_set.ActiveSetStats())
        answers[name] = active_set.solve_block(context, rows, rho, right, np.zeros(m))
    assert chosen == ["cholmod", "qdldl"]
    for answer in answers.values():
        assert np.abs(answer - direct).max() / np.abs(direct).max() <= 10 * kappa * np.finfo(float).eps
