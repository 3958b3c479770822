"""Compiled principal blocks of the Delassus matrix ``W = H H^T`` for the base
factorisation of `granular.contact.active_set`.

``H`` (m x d) is a sparse CSR matrix whose rows touch a few coordinates each
(three or six for sphere contacts); the block ``W_AA + diag(shift)`` on a sorted set
``A`` of rows is formed here directly as its upper triangle in CSC with sorted
indices, what qdldl reads. Through scipy the same block took gathering the rows,
transposing them, a sparse product, a conversion, ``setdiag`` and a triangle cut: a
dozen constructors, which cost more than the factorisation itself
(benchmarks/README.md, "Measurements behind the constants").

The entries are bit for bit those of scipy's product followed by the shift: each
``W_ij`` (i <= j) is accumulated from 0 over the columns of row ``i`` in its stored
order, ``+= H_ic H_jc``, as scipy's CSR product computes row ``i``; an
off-diagonal entry that comes out exactly zero is left out, as scipy leaves it out;
the diagonal is always stored (``W_ii + shift_i``, the shift alone for a zero row,
as ``setdiag`` inserts it). `tests/test_active_set_blocks.py` checks the equality.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp


@numba.njit(cache=True)
def _upper_block(indptr, indices, data, rows, shift, width):
    n = rows.size
    # The selected rows by column: for each column, the positions in ``rows`` (in
    # increasing order) of the rows that touch it, and their entries.
    start = np.zeros(width + 1, dtype=np.int64)
    for a in range(n):
        for entry in range(indptr[rows[a]], indptr[rows[a] + 1]):
            start[indices[entry] + 1] += 1
    for column in range(width):
        start[column + 1] += start[column]
    fill = start[:-1].copy()
    position = np.empty(start[width], dtype=np.int64)
    value = np.empty(start[width])
    for a in range(n):
        for entry in range(indptr[rows[a]], indptr[rows[a] + 1]):
            column = indices[entry]
            position[fill[column]] = a
            value[fill[column]] = data[entry]
            fill[column] += 1
    # Row i of the upper triangle, (i, j >= i), accumulated in row i's order.
    bound = n
    for a in range(n):
        for entry in range(indptr[rows[a]], indptr[rows[a] + 1]):
            column = indices[entry]
            bound += start[column + 1] - start[column]
    out_row = np.empty(bound, dtype=np.int64)
    out_column = np.empty(bound, dtype=np.int64)
    out_value = np.empty(bound)
    sums = np.zeros(n)
    mark = np.full(n, -1, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        k = 0
        for entry in range(indptr[rows[i]], indptr[rows[i] + 1]):
            column = indices[entry]
            for t in range(start[column], start[column + 1]):
                j = position[t]
                if j < i:
                    continue
                if mark[j] != i:
                    mark[j] = i
                    sums[j] = 0.0
                    touched[k] = j
                    k += 1
                sums[j] += data[entry] * value[t]
        if mark[i] != i:  # a zero row: the shift alone
            out_row[count], out_column[count], out_value[count] = i, i, shift[i]
            count += 1
        for t in range(k):
            j = touched[t]
            if j == i:
                out_row[count], out_column[count], out_value[count] = i, i, sums[i] + shift[i]
                count += 1
            elif sums[j] != 0.0:
                out_row[count], out_column[count], out_value[count] = i, j, sums[j]
                count += 1
    # By columns, rows increasing (the entries above come by increasing row).
    indptr_out = np.zeros(n + 1, dtype=np.int64)
    for t in range(count):
        indptr_out[out_column[t] + 1] += 1
    for j in range(n):
        indptr_out[j + 1] += indptr_out[j]
    place = indptr_out[:-1].copy()
    indices_out = np.empty(count, dtype=np.int64)
    data_out = np.empty(count)
    for t in range(count):
        j = out_column[t]
        indices_out[place[j]] = out_row[t]
        data_out[place[j]] = out_value[t]
        place[j] += 1
    return indptr_out, indices_out, data_out


def upper_block(H: sp.csr_matrix, rows: np.ndarray, shift: np.ndarray) -> sp.csc_matrix:
    """The upper triangle of ``(H H^T)[rows][:, rows] + diag(shift)`` (CSC, sorted
    indices) for a CSR ``H`` and sorted ``rows``; entries as scipy's product gives them."""
    indptr, indices, data = _upper_block(
        H.indptr, H.indices, H.data, np.asarray(rows, dtype=np.int64), np.asarray(shift, dtype=float), H.shape[1]
    )
    return sp.csc_matrix((data, indices, indptr), shape=(rows.size, rows.size))
