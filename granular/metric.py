"""Mass matrices as metrics: the inner product of every projection.

A metric ``M`` (d x d, symmetric positive definite, kg or generalised inertia)
gives the kinetic norm ``|u|_M^2 = u^T M u``; projections in this norm need
``M u``, ``M^{-1} x`` and ``M^{-1} G^T`` for a sparse Jacobian ``G`` (m x d).

`DiagonalMetric` serves the sphere world (``M = diag(m_1, m_1, m_1, ...)``,
3N entries); `DenseMetric` serves small systems with a full ``M(q)``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .errors import MassMatrixError


class DiagonalMetric:
    """``M = diag(diagonal)``; ``diagonal`` is (d,) and positive."""

    def __init__(self, diagonal: np.ndarray):
        self.diagonal = np.asarray(diagonal, dtype=float)
        self.inverse_diagonal = 1.0 / self.diagonal

    @property
    def size(self) -> int:
        return self.diagonal.size

    def restricted(self, coordinates: np.ndarray) -> "DiagonalMetric":
        """The metric of the coordinates ``coordinates`` alone (the same entries, the
        inverses not recomputed)."""
        restricted = DiagonalMetric.__new__(DiagonalMetric)
        restricted.diagonal = self.diagonal[coordinates]
        restricted.inverse_diagonal = self.inverse_diagonal[coordinates]
        return restricted

    def apply(self, u: np.ndarray) -> np.ndarray:
        """``M u`` for u of shape (d,) or (d, k)."""
        return self.diagonal * u if u.ndim == 1 else self.diagonal[:, None] * u

    def solve(self, x: np.ndarray) -> np.ndarray:
        """``M^{-1} x`` for x of shape (d,) or (d, k)."""
        return self.inverse_diagonal * x if x.ndim == 1 else self.inverse_diagonal[:, None] * x

    def inverse_times_transpose(self, G: sp.spmatrix):
        """``M^{-1} G^T`` (d x m, sparse)."""
        return sp.diags(self.inverse_diagonal) @ G.T.tocsr()

    def delassus(self, G: sp.spmatrix) -> sp.csc_matrix:
        """``W = G M^{-1} G^T`` (m x m, sparse, symmetric positive semi-definite)."""
        scaled = G @ sp.diags(np.sqrt(self.inverse_diagonal))
        return (scaled @ scaled.T).tocsc()

    def matrix(self) -> np.ndarray:
        return np.diag(self.diagonal)

    def kinetic_energy(self, u: np.ndarray) -> float:
        """``0.5 u^T M u`` (J)."""
        return 0.5 * float(np.dot(self.diagonal * u, u))


class DenseMetric:
    """A full symmetric positive definite ``M`` (d x d), factorised once (Cholesky)."""

    def __init__(self, matrix: np.ndarray, name: str = "mass matrix"):
        matrix = np.asarray(matrix, dtype=float)
        check_spd(matrix, name)
        self._matrix = matrix
        self._factor = scipy.linalg.cho_factor(matrix)

    @property
    def size(self) -> int:
        return self._matrix.shape[0]

    def apply(self, u: np.ndarray) -> np.ndarray:
        return self._matrix @ u

    def solve(self, x: np.ndarray) -> np.ndarray:
        return scipy.linalg.cho_solve(self._factor, x)

    def inverse_times_transpose(self, G) -> np.ndarray:
        dense = G.toarray() if sp.issparse(G) else np.asarray(G)
        return self.solve(dense.T)

    def delassus(self, G) -> sp.csc_matrix:
        dense = G.toarray() if sp.issparse(G) else np.asarray(G)
        W = dense @ self.solve(dense.T)
        return sp.csc_matrix(0.5 * (W + W.T))

    def matrix(self) -> np.ndarray:
        return self._matrix

    def kinetic_energy(self, u: np.ndarray) -> float:
        return 0.5 * float(u @ (self._matrix @ u))


def check_spd(matrix: np.ndarray, name: str = "mass matrix") -> None:
    """Raise `MassMatrixError` unless ``matrix`` is square, finite, symmetric and
    positive definite (relative symmetry tolerance 1e-10)."""
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise MassMatrixError(f"{name} must be a square matrix, got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise MassMatrixError(f"{name} has non-finite entries")
    scale = max(np.abs(matrix).max(), np.finfo(float).tiny)
    asymmetry = np.abs(matrix - matrix.T).max() / scale
    if asymmetry > 1e-10:
        raise MassMatrixError(f"{name} is not symmetric (relative asymmetry {asymmetry:.3g})")
    eigenvalues = np.linalg.eigvalsh(0.5 * (matrix + matrix.T))
    if eigenvalues[0] <= 1e-14 * scale:
        raise MassMatrixError(f"{name} is not positive definite: smallest eigenvalue {eigenvalues[0]:.6g}")
