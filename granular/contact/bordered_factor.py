"""A sparse factor of a base block of the active-set systems, bordered to serve
other sets of rows (`BorderedFactor`), and the factorisers behind it (qdldl's
simplicial LDL^T, CHOLMOD's supernodal Cholesky through cholespy).

Why a border: an active set that differs from the factored base by a few rows added
(N) and removed (R) is solved through the base factor and a dense Schur complement on
those rows (the block-LU update of active-set QP solvers; Gill, Murray, Saunders and
Wright, *Sparse matrix methods in optimization*, SIAM J. Sci. Stat. Comput., 1984),
instead of a new factorisation (`granular.contact.active_set`).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg
import scipy.sparse as sp

if TYPE_CHECKING:
    from .delassus_rows import DelassusRows

#: The base is factorised by qdldl (the OSQP developers' simplicial LDL^T) up to
#: `LARGE_BASE` rows and by CHOLMOD (supernodal, through cholespy) above: on the
#: Delassus blocks of settled piles the simplicial factorisation is the faster up
#: to thousands of rows and the supernodal one on the largest blocks, and CHOLMOD's
#: solves are 1.4-2.4 times faster from 8,000 rows on, which a factor kept over many
#: steps repeats. Tuned; benchmarks/README.md, "Measurements behind the constants".
LARGE_BASE = 8000
#: `LARGE_BASE` for a factor made anew at nearly every step, whose factorisation is
#: then what counts (the gap closure's, `granular.contact.gap_closure`: 7-11% of its
#: held rows are new each step in a settling pile, beyond the border). On the closure's
#: blocks of the settling 8,000-sphere box qdldl factorises 8,026 / 9,044 / 12,882 /
#: 14,398 rows in 11 / 20 / 74 / 113 ms against CHOLMOD's 34 / 44 / 89 / 116 ms
#: (benchmarks/README.md, "the closure's factoriser").
REFACTORISED_LARGE_BASE = 14000
#: Border columns that cost about one refactorisation: the factorisation-to-solve
#: time ratio of each factoriser on the same blocks (figures in benchmarks/README.md,
#: "Measurements behind the constants").
#: Counts, not timings, decide, so that runs are reproducible bit for bit.
BORDER_PER_FACTORISATION = {"qdldl": 40, "cholmod": 150}
#: Above this many rows CHOLMOD's ratio grows like the square root of the base's
#: size (`border_budget`): a factorisation's work grows faster than a solve's
#: (nested dissection of a 3D network: about n^2 against n^(4/3) operations; George,
#: *Nested dissection of a regular finite element mesh*, 1973). Measured on the
#: frictional layer at rest tiled by `benchmarks/large_piles.py`: 125, 234 and 337 at
#: 27,000, 75,000 and 147,000 rows, against 130 to 180 below 30,000.
CHOLMOD_RATIO_ROWS = 30000
#: Bases of fewer rows are refactorised at every change of the active set: a
#: border round's assembly (the Schur complement and its columns) costs more than
#: qdldl takes to factorise such a base. Tuned; benchmarks/README.md, "Measurements
#: behind the constants".
BORDER_MIN_BASE = 600
#: Border columns kept at most, and the memory they may take (bytes).
MAX_BORDER = 400
MAX_BORDER_BYTES = 1 << 30
#: The border's stored columns are read in place in bases of more than `IN_PLACE_ROWS`
#: rows (CHOLMOD's, and the largest of qdldl's: `REFACTORISED_LARGE_BASE`) when the
#: span of their slots holds at most `IN_PLACE_SPAN` times their number (the stale
#: columns between then cost each product no more than the border's own). Otherwise
#: they are copied side by side in the border's order, which costs little in a small
#: base and keeps its products, and so its runs, as they were when every call stacked
#: its columns.
IN_PLACE_ROWS = LARGE_BASE
IN_PLACE_SPAN = 2


def factorise(matrix: sp.csc_matrix, backend: str):
    """``B -> matrix^{-1} B`` for a sparse symmetric positive definite matrix and a
    right-hand side B of shape (n,) or (n, k); ``matrix`` is its upper triangle for
    qdldl, all of it for CHOLMOD."""
    if backend == "qdldl":
        import qdldl

        solver = qdldl.Solver(matrix, upper=True)  # the upper triangle (see BorderedFactor)

        def solve(right):
            if right.ndim == 1:
                return solver.solve(right)
            return np.column_stack([solver.solve(column) for column in right.T]) if right.shape[1] else right.copy()

        return solve
    import cholespy

    matrix = sp.csc_matrix(matrix)
    solver = cholespy.CholeskySolverD(
        matrix.shape[0],
        matrix.indptr.astype(np.int32),
        matrix.indices.astype(np.int32),
        matrix.data,
        cholespy.MatrixType.CSC,
    )

    def solve(right):
        right = np.ascontiguousarray(right, dtype=float)
        out = np.empty_like(right)
        if right.size:
            solver.solve(right, out)  # several right-hand sides at once run at BLAS-3 speed
        return out

    return solve


def border_budget(size: int, backend: str) -> int:
    """Border columns a base of ``size`` rows factorised by ``backend`` may carry before it
    is refactorised: about the factorisation-to-solve ratio (`BORDER_PER_FACTORISATION`,
    growing with the size for CHOLMOD: `CHOLMOD_RATIO_ROWS`), at most `MAX_BORDER` and
    `MAX_BORDER_BYTES` of columns; none below `BORDER_MIN_BASE` rows."""
    if size < BORDER_MIN_BASE:
        return 0
    ratio = BORDER_PER_FACTORISATION[backend]
    if backend == "cholmod":
        ratio *= max(1.0, size / CHOLMOD_RATIO_ROWS) ** 0.5
    return int(min(ratio, MAX_BORDER_BYTES // (8 * size), MAX_BORDER))


class BorderedFactor:
    """A factor of ``W_BB + rho D_B`` on a base set of rows, known by keys that
    persist across steps, with the border columns that adapt it to other sets.

    For a set A = (B minus R) plus N, ``(W_AA + rho D_A) x = r`` is the base system
    bordered by the couplings ``W_BN`` and by unit columns pinning ``x_R = 0``;
    eliminating the base leaves a dense Schur complement of size ``|N| + |R|``.
    Each border column costs one solve with the base factor and is kept, with the
    couplings it came from, until the base is rebuilt: the bordered matrix stays
    symmetric when the couplings of later steps drift, and conjugate gradients
    absorb the drift.

    The base is CHOLMOD's above ``large_base`` rows (`LARGE_BASE` when None), qdldl's
    up to it.
    """

    def __init__(
        self, keys: np.ndarray, rows_data: DelassusRows, rows: np.ndarray, rho: float, large_base: int | None = None
    ):
        self.rho = rho
        self.size = keys.size
        large_base = LARGE_BASE if large_base is None else large_base
        backend = "cholmod" if self.size > large_base else "qdldl"
        self.solve_base = factorise(rows_data.block(rows, rho, upper=backend == "qdldl"), backend)
        self.keys = keys
        self.order = np.argsort(keys, kind="stable")
        self.sorted_keys = keys[self.order]
        # Border columns by key: (base positions and couplings of the row, or the unit
        # pinning a removed row; the column's slot in ``solved``).
        self.columns: dict[int, tuple] = {}
        self.budget = border_budget(self.size, backend)
        # The base solves of the border columns side by side, in the order they came,
        # in Fortran order (a column contiguous), the array doubling as they come. The
        # bordered solves read them where they lie: stacking the columns of a step
        # anew copied ``size x border`` numbers at every call, a quarter of a step of
        # a 49,000-sphere pile at rest (benchmarks/README.md, `large_piles.py`).
        self.solved = np.empty((self.size, 0), order="F")
        self.stored = 0

    def positions(self, keys: np.ndarray) -> np.ndarray:
        """Base position of each key, -1 when not in the base."""
        if self.size == 0:
            return -np.ones(keys.size, dtype=np.int64)
        where = np.minimum(np.searchsorted(self.sorted_keys, keys), self.size - 1)
        return np.where(self.sorted_keys[where] == keys, self.order[where], -1)

    def preconditioner(self, rows_data: DelassusRows, rows: np.ndarray, keys: np.ndarray, rho: float):
        """``r -> M^{-1} r`` on ``rows`` (keys ``keys[rows]``), M the bordered base
        matrix; None when the border would exceed the budget or the base was
        factorised with another regularisation."""
        if rho != self.rho:
            return None
        positions = self.positions(keys[rows])
        in_base = positions >= 0
        added = rows[~in_base]
        hit = np.zeros(self.size, dtype=bool)
        hit[positions[in_base]] = True
        removed = np.flatnonzero(~hit)
        added_keys = keys[added]
        removed_keys = self.keys[removed]
        new_added = np.array([int(k) not in self.columns for k in added_keys], dtype=bool)
        new_removed = sum(int(k) not in self.columns for k in removed_keys)
        if self.stored + int(new_added.sum()) + new_removed > self.budget:
            return None
        self._add_columns(rows_data, rows, keys, positions, in_base, added[new_added])
        fresh = [(int(key), position) for key, position in zip(removed_keys, removed) if int(key) not in self.columns]
        if fresh:
            units = np.zeros((self.size, len(fresh)))
            units[[position for _, position in fresh], np.arange(len(fresh))] = 1.0
            slots = self._store(self.solve_base(units))
            for slot, (key, position) in zip(slots, fresh):
                self.columns[key] = (np.array([position]), np.ones(1), slot)
        base_rows = positions[in_base]
        if added.size + removed.size == 0:

            def apply(residual):
                right = np.zeros(self.size)
                right[base_rows] = residual
                return self.solve_base(right)[base_rows]

            return apply
        border = [self.columns[int(k)] for k in added_keys] + [self.columns[int(k)] for k in removed_keys]
        return self._bordered(rows_data, added, removed, border, in_base, base_rows)

    def _add_columns(self, rows_data, rows, keys, positions, in_base, fresh):
        """Border columns of the added rows ``fresh`` (couplings with the base rows
        present in this step, and the base solve of them)."""
        if fresh.size == 0:
            return
        present = rows[in_base]
        coupling = rows_data.couplings(present, fresh) if present.size else np.zeros((0, fresh.size))
        right = np.zeros((self.size, fresh.size))
        right[positions[in_base], :] = coupling
        slots = self._store(self.solve_base(right))
        for column, row in enumerate(fresh):
            nonzero = np.flatnonzero(coupling[:, column])
            self.columns[int(keys[row])] = (positions[in_base][nonzero], coupling[nonzero, column], slots[column])

    def _store(self, solved: np.ndarray) -> np.ndarray:
        """The slots in ``self.solved`` given to the columns of ``solved`` (size, k)."""
        slots = np.arange(self.stored, self.stored + solved.shape[1])
        if slots.size and self.stored + slots.size > self.solved.shape[1]:
            grown = np.empty(
                (self.size, min(max(2 * self.solved.shape[1], self.stored + slots.size, 16), self.budget)), order="F"
            )
            grown[:, : self.stored] = self.solved[:, : self.stored]
            self.solved = grown
        self.solved[:, self.stored : self.stored + slots.size] = solved
        self.stored += slots.size
        return slots

    def _bordered(self, rows_data, added, removed, border, in_base, base_rows):
        n_added = added.size
        # Z, the border's base solves (size, k), is read in place, ``Z w = solved w_all``
        # with ``w_all`` zero outside ``slots``, or copied (`IN_PLACE_ROWS`). The
        # products with few base rows gather those rows only.
        slots = np.array([column[2] for column in border], dtype=np.int64)
        first, last = int(slots.min()), int(slots.max()) + 1
        if self.size > IN_PLACE_ROWS and last - first <= IN_PLACE_SPAN * slots.size:
            solved, slots = self.solved[:, first:last], slots - first
        else:
            solved, slots = np.ascontiguousarray(self.solved[:, slots]), np.arange(slots.size)
        counts = np.array([c[0].size for c in border[:n_added]], dtype=np.int64)
        coupled_rows = np.concatenate([c[0] for c in border[:n_added]] + [np.zeros(0, dtype=np.int64)])
        coupling = sp.csr_matrix(
            (
                np.concatenate([c[1] for c in border[:n_added]] + [np.zeros(0)]),
                np.arange(coupled_rows.size),
                np.concatenate([[0], np.cumsum(counts)]),
            ),
            shape=(n_added, coupled_rows.size),
        )  # the couplings W_NB on the base rows they touch, in the order of ``coupled_rows``
        on_base = coupling @ solved[np.ix_(coupled_rows, slots)]  # W_NB Z
        schur = -np.vstack([on_base, solved[np.ix_(removed, slots)]])
        if n_added:
            schur[:n_added, :n_added] += rows_data.couplings(added, added) + np.diag(
                self.rho * rows_data.diagonal[added]
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            lu = scipy.linalg.lu_factor(schur, check_finite=False)
        pivots = np.abs(np.diagonal(lu[0]))
        if not (np.all(np.isfinite(lu[0])) and pivots.min() > 1e-13 * pivots.max()):
            return None  # the border lost the base's accuracy: refactorise instead

        def apply(residual):
            right = np.zeros(self.size)
            right[base_rows] = residual[in_base]
            y = self.solve_base(right)
            w = scipy.linalg.lu_solve(
                lu, np.concatenate([residual[~in_base] - coupling @ y[coupled_rows], -y[removed]]), check_finite=False
            )
            w_all = np.zeros(solved.shape[1])
            w_all[slots] = w
            x_base = y - solved @ w_all
            out = np.empty(residual.size)
            out[in_base] = x_base[base_rows]
            out[~in_base] = w[:n_added]
            return out

        return apply
