"""The rows of one metric projection in its multiplier form: the linear term
``c = G v - b`` (m,) and the Delassus operator ``W = G M^{-1} G^T`` (m x m), never
formed unless its blocks are worth it.

``W = H H^T`` with ``H = G L^{-T}`` for the Cholesky factor ``M = L L^T`` of the metric
(``H = G M^{-1/2}``, sparse, for the diagonal metric of spheres; dense for a small
`granular.protocols.ConstrainedSystem`). The active-set solver
(`granular.contact.active_set`) asks for slacks ``s = W l + c``, principal blocks
``W_AA + rho D_A`` (``D = diag W``), their products, and couplings ``W_AB``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .sparse_blocks import cross_block, csr_rows, principal_block, upper_triangle

#: Blocks of at most this many rows are solved directly by a dense Cholesky
#: factorisation, which at this size costs a fraction of building a sparse factor
#: through scipy and qdldl: impact clusters and the first steps of a pour. Tuned;
#: benchmarks/README.md, "Measurements behind the constants".
DENSE_ROWS = 150
#: ``W`` is formed once, and the blocks and couplings of later rounds are cut out
#: of it, when the blocks and couplings built so far by products of ``H`` have cost
#: as much as forming ``W``. Costs in rows of ``H``: a use costs its rows plus
#: `USE_OVERHEAD_ROWS`, forming ``W`` its number of rows: a block by products costs
#: a fixed overhead plus a cost per row, forming ``W`` about the same cost per row,
#: and the overhead is that of about 750 rows (a linear fit; benchmarks/README.md,
#: "Measurements behind the constants"). A settled 100,000-sphere pile, with 16
#: times more rows than active ones, forms ``W`` only after many blocks.
USE_OVERHEAD_ROWS = 750


class DelassusRows:
    """The rows of one projection: the linear term ``c`` (m,) and ``W = H H^T`` with
    ``H = G L^{-T}`` (m x d) for the Cholesky factor ``M = L L^T`` of the metric
    (``H = G M^{-1/2}``, sparse, for the diagonal metric of spheres; dense for a
    small ``ConstrainedSystem``). ``diagonal`` (m,) is ``diag W``; ``sparse_delassus``
    is ``W`` (CSC) once forming it is worth its cost (`USE_OVERHEAD_ROWS`), else None."""

    def __init__(self, metric, jacobian: sp.csr_matrix | np.ndarray, c: np.ndarray):
        dense = isinstance(jacobian, np.ndarray)
        csr = None if dense else sp.csr_matrix(jacobian)  # no copy when already CSR
        if dense and hasattr(metric, "inverse_diagonal"):
            # A small problem on the coordinates it touches (`granular.contact.projection`):
            # dense arrays throughout, no sparse constructor a call.
            self.H = jacobian * np.sqrt(metric.inverse_diagonal)[None, :]
            self.diagonal = np.einsum("ij,ij->i", self.H, self.H)
        elif hasattr(metric, "inverse_diagonal"):
            # Built from the arrays (scipy's elementwise products and row sums cost a
            # tenth of a millisecond each, three projections a step).
            assert csr is not None
            data = csr.data * np.sqrt(metric.inverse_diagonal)[csr.indices]
            self.H = sp.csr_matrix((data, csr.indices, csr.indptr), shape=csr.shape)
            row_of_entry = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
            self.diagonal = np.bincount(row_of_entry, weights=data * data, minlength=csr.shape[0])
        else:
            lower = scipy.linalg.cholesky(metric.matrix(), lower=True)
            G = jacobian if csr is None else csr.toarray()
            self.H = scipy.linalg.solve_triangular(lower, G.T, lower=True).T
            self.diagonal = np.einsum("ij,ij->i", self.H, self.H)
        self.diagonal = np.maximum(self.diagonal, np.finfo(float).tiny)
        # A transposed view (CSC): its products add the same terms in the same order as
        # a CSR copy's, without the copy's cost.
        self.HT = self.H.T
        self.c = c
        self._rows: np.ndarray | None = None
        self._H_rows: tuple | None = None
        self.sparse_delassus: sp.csc_matrix | None = None  # W, once worth forming
        self._used_rows, self._uses = 0, 0
        # Few rows: W itself, dense, serves every product (impact clusters).
        self.W = None
        if c.size <= DENSE_ROWS:
            W = self.H @ self.HT
            self.W = W.toarray() if sp.issparse(W) else np.asarray(W)

    @property
    def size(self) -> int:
        return self.c.size

    def slack(self, impulses: np.ndarray) -> np.ndarray:
        """``s = W l + c`` (m,), velocity units."""
        if self.W is not None:
            return self.W @ impulses + self.c
        return self.H @ (self.HT @ impulses) + self.c

    def _rows_of_H(self, rows: np.ndarray):
        """``(H_A, H_A^T)`` for the rows ``rows`` (the last ones are kept)."""
        if self._rows is None or not np.array_equal(self._rows, rows):
            H = csr_rows(self.H, rows) if sp.issparse(self.H) else self.H[rows]
            self._rows, self._H_rows = rows, (H, H.T.tocsr() if sp.issparse(H) else H.T)
        return self._H_rows

    def block(self, rows: np.ndarray, rho: float, upper: bool = False) -> sp.csc_matrix:
        """``W_AA + rho D_A`` on the rows ``rows`` (sorted), sparse; only its upper
        triangle with ``upper``."""
        if upper and sp.issparse(self.H):
            # Compiled (imported at first use, like `granular.contact.dual_sweeps`): the same
            # entries as the cut from ``W`` or the products below, at a fraction of
            # their cost, so no reason to form ``W`` for it.
            from .delassus_blocks import upper_block

            return upper_block(self.H, rows, rho * self.diagonal[rows])
        W = self._delassus_if_worth(rows.size)
        if W is not None:
            return principal_block(W, rows, rho * self.diagonal[rows], upper)
        H, HT = self._rows_of_H(rows)
        block = sp.csc_matrix(H @ HT)
        block.setdiag(block.diagonal() + rho * self.diagonal[rows])
        return upper_triangle(block) if upper else block

    def _delassus_if_worth(self, rows: int) -> sp.csc_matrix | None:
        """``W`` (CSC, sorted indices) once it is worth forming (`USE_OVERHEAD_ROWS`),
        else None; ``rows`` is the number of rows the caller is about to use."""
        self._used_rows += rows
        self._uses += 1
        spent = self._used_rows + USE_OVERHEAD_ROWS * self._uses  # this use included
        if self.sparse_delassus is None and self._uses > 1 and spent >= self.size:
            delassus = sp.csc_matrix(self.H @ self.HT)
            delassus.sort_indices()
            self.sparse_delassus = delassus
        return self.sparse_delassus

    def dense_block(self, rows: np.ndarray, rho: float) -> np.ndarray:
        """``W_AA + rho D_A`` as a dense array."""
        if self.W is not None:
            block = self.W[np.ix_(rows, rows)]
        else:
            H, HT = self._rows_of_H(rows)
            block = H @ HT
            block = block.toarray() if sp.issparse(block) else np.array(block)
        block[np.diag_indices_from(block)] += rho * self.diagonal[rows]
        return block

    def operator(self, rows: np.ndarray, rho: float):
        """``x -> (W_AA + rho D_A) x`` on the rows ``rows``."""
        prox = rho * self.diagonal[rows]
        if self.W is not None:
            block = self.W[np.ix_(rows, rows)]
            return lambda x: block @ x + prox * x
        # Products with all of H, scattered and gathered: cheaper than slicing the
        # rows out of H when only a few products are needed (one a CG iteration).
        full = np.zeros(self.size)

        def apply(x):
            full[rows] = x
            return (self.H @ (self.HT @ full))[rows] + prox * x

        return apply

    def couplings(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``W[rows][:, columns]`` as a dense array."""
        if not sp.issparse(self.H):
            return self.H[rows] @ self.H[columns].T
        W = self._delassus_if_worth(rows.size + columns.size)
        if W is not None:
            return cross_block(W, rows, columns)
        return (csr_rows(self.H, rows) @ csr_rows(self.H, columns).T).toarray()
