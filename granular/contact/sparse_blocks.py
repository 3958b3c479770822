"""Sparse blocks of the Delassus matrix ``W = H H^T`` cut out in numpy: the rows of a
CSR matrix, principal and cross blocks of a symmetric CSC matrix, its upper triangle.
scipy's fancy indexing and ``triu`` do the same at a cost that is a large share of a
small step (figures beside each function); `tests/test_active_set_blocks.py` checks
each against scipy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def csr_rows(matrix: sp.csr_matrix, rows: np.ndarray) -> sp.csr_matrix:
    """The rows ``rows`` of a CSR matrix, gathered in numpy (scipy's fancy indexing
    costs a quarter of a millisecond per call, a fifth of a small step)."""
    starts = matrix.indptr[rows]
    lengths = matrix.indptr[rows + 1] - starts
    indptr = np.zeros(rows.size + 1, dtype=matrix.indptr.dtype)
    np.cumsum(lengths, out=indptr[1:])
    gather = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
    return sp.csr_matrix((matrix.data[gather], matrix.indices[gather], indptr), shape=(rows.size, matrix.shape[1]))


def upper_triangle(matrix: sp.csc_matrix) -> sp.csc_matrix:
    """The upper triangle of a CSC matrix (a few numpy operations, where scipy's
    ``triu`` costs a third of a qdldl factorisation of a 900-row block)."""
    matrix = sp.csc_matrix(matrix)
    columns = np.repeat(np.arange(matrix.shape[1]), np.diff(matrix.indptr))
    keep = matrix.indices <= columns
    counts = np.bincount(columns[keep], minlength=matrix.shape[1])
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csc_matrix((matrix.data[keep], matrix.indices[keep], indptr), shape=matrix.shape)


def column_entries(W: sp.csc_matrix, columns: np.ndarray, rows: np.ndarray):
    """The entries of the columns ``columns`` of a CSC matrix whose row is in ``rows``:
    ``(row position in rows, column position in columns, value)``, gathered in numpy."""
    position = np.full(W.shape[0], -1, dtype=np.int64)
    position[rows] = np.arange(rows.size)
    starts = W.indptr[columns]
    lengths = W.indptr[columns + 1] - starts
    offsets = np.zeros(columns.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    gather = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    row = position[W.indices[gather]]
    column = np.repeat(np.arange(columns.size), lengths)
    keep = row >= 0
    return row[keep], column[keep], W.data[gather][keep]


def principal_block(W: sp.csc_matrix, rows: np.ndarray, shift: np.ndarray, upper: bool) -> sp.csc_matrix:
    """``W[rows][:, rows] + diag(shift)`` (or its upper triangle) of a symmetric CSC
    matrix with sorted indices, cut out in numpy; ``rows`` sorted."""
    row, column, data = column_entries(W, rows, rows)
    if upper:
        keep = row <= column
        row, column, data = row[keep], column[keep], data[keep]
    indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(column, minlength=rows.size), out=indptr[1:])
    on_diagonal = row == column
    if np.count_nonzero(on_diagonal) == rows.size:
        data[on_diagonal] += shift[column[on_diagonal]]
        return sp.csc_matrix((data, row, indptr), shape=(rows.size, rows.size))
    block = sp.csc_matrix((data, row, indptr), shape=(rows.size, rows.size))  # a zero row of H
    block.setdiag(block.diagonal() + shift)
    return upper_triangle(block) if upper else block


def cross_block(W: sp.csc_matrix, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``W[rows][:, columns]`` of a CSC matrix, dense, gathered in numpy."""
    row, column, data = column_entries(W, columns, rows)
    out = np.zeros((rows.size, columns.size))
    out[row, column] = data
    return out
