"""Compiled helpers for the arrays the compiled searches fill without knowing their
length in advance (the cell lists of `granular.spheres.cell_lists` and the mesh index
of `granular.walls.mesh_index`): they start with a guess and double when full."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def grown(values, count, capacity):
    """``values[:count]`` (1-d) at the start of a new array of ``capacity`` entries of
    the same type: the compiled searches' growing outputs (of
    `granular.spheres.cell_lists` and `granular.walls.mesh_index`), doubled when full."""
    larger = np.empty(capacity, dtype=values.dtype)
    larger[:count] = values[:count]
    return larger
