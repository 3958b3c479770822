"""Candidate sphere pairs: every pair whose gap is at most a margin.

``gap_ij = |q_j - q_i| - (r_i + r_j)`` (m), with the minimum-image pair vector
along periodic axes. `candidate_pairs` uses a compiled cell list
(`granular.spheres.cell_lists`, O(N); in open scenes one pass that also tests the gaps)
for spheres of similar sizes and scipy's cKDTree
(O(N log N)) otherwise (a few large spheres, spheres spread far apart, or a
periodic cell less than three search distances wide); `brute_force_pairs` checks all N(N-1)/2 pairs and is kept as the
oracle of the tests.

Both return ``(i, j)``: two int arrays of the same length with ``i < j``, sorted
lexicographically, so the two finders are directly comparable.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from ..walls import PeriodicBox

#: Spheres larger than this multiple of the median radius are searched one by one,
#: so that one big sphere does not inflate the search radius of all the small ones.
_LARGE_RADIUS_FACTOR = 2.0


def pair_vectors(
    positions: np.ndarray, i: np.ndarray, j: np.ndarray, periodic: PeriodicBox | None = None
) -> np.ndarray:
    """Vectors ``q_j - q_i`` (M, 3), minimum image along periodic axes."""
    vectors = positions[j] - positions[i]
    if periodic is not None:
        vectors = periodic.minimum_image(vectors)
    return vectors


def pair_gaps(positions, radii, i, j, periodic=None) -> np.ndarray:
    """Gaps ``|q_j - q_i| - r_i - r_j`` (M,) of the given pairs (m)."""
    vectors = pair_vectors(positions, i, j, periodic)
    return np.linalg.norm(vectors, axis=1) - radii[i] - radii[j]


def _sorted_unique(i: np.ndarray, j: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    low, high = np.minimum(i, j), np.maximum(i, j)
    # A sort and a mask: numpy 2's np.unique hashes, slower on these keys.
    keys = np.sort(low.astype(np.int64) * n + high)
    keys = keys[np.concatenate((keys[:1] == keys[:1], keys[1:] != keys[:-1]))]
    return (keys // n).astype(np.int64), (keys % n).astype(np.int64)


def _tree(positions: np.ndarray, cutoff: float, periodic: PeriodicBox | None) -> cKDTree:
    """A cKDTree; periodic axes get their period as box size, others a box too
    large to wrap within ``cutoff``."""
    if periodic is None:
        return cKDTree(positions)
    shifted = positions.copy()
    boxsize = np.empty(3)
    for axis in range(3):
        if axis in periodic.axes:
            length = periodic.upper[axis] - periodic.lower[axis]
            shifted[:, axis] = np.mod(positions[:, axis] - periodic.lower[axis], length)
            boxsize[axis] = length
        else:
            low, high = positions[:, axis].min(), positions[:, axis].max()
            shifted[:, axis] = positions[:, axis] - low
            boxsize[axis] = (high - low) + 2.0 * cutoff + 1.0
    # cKDTree wants coordinates strictly inside [0, boxsize).
    shifted = np.minimum(shifted, np.nextafter(boxsize, 0.0))
    return cKDTree(shifted, boxsize=boxsize)


def candidate_pairs(
    positions: np.ndarray, radii: np.ndarray, margin: float, periodic: PeriodicBox | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``i < j`` with ``gap_ij <= margin``.

    Parameters
    ----------
    positions : (N, 3) array
        Sphere centres (m).
    radii : (N,) array
        Sphere radii (m), positive.
    margin : float
        Largest gap kept (m), >= 0.
    periodic : PeriodicBox or None
        Periodic axes, minimum-image distances.
    """
    i, j, _, _ = candidate_contacts(positions, radii, margin, periodic)
    return i, j


def candidate_contacts(positions: np.ndarray, radii: np.ndarray, margin: float, periodic: PeriodicBox | None = None):
    """`candidate_pairs` with what its gap test computed: ``(i, j, vectors (M, 3),
    distances (M,))``, the pair vectors ``q_j - q_i`` (m, minimum image) and their
    lengths, which the constraint rows reuse."""
    n = len(positions)
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros((0, 3)), np.zeros(0)
    if periodic is None and not _has_large_spheres(radii):
        # Imported at first use, like the other compiled kernels.
        from .cell_lists import contacts_within

        found = contacts_within(positions, radii, margin)
        if found is not None:
            return found
    i, j = _pairs_to_test(positions, radii, margin, periodic)
    vectors = pair_vectors(positions, i, j, periodic)
    distances = np.linalg.norm(vectors, axis=1)
    keep = distances - radii[i] - radii[j] <= margin  # `pair_gaps`, term for term
    return i[keep], j[keep], vectors[keep], distances[keep]


def _has_large_spheres(radii: np.ndarray) -> bool:
    """Whether some sphere is larger than `_LARGE_RADIUS_FACTOR` times the median."""
    largest = float(radii.max())
    if largest <= _LARGE_RADIUS_FACTOR * float(radii.min()):  # the median is at least the smallest
        return False
    return largest > _LARGE_RADIUS_FACTOR * float(np.median(radii))


def _pairs_to_test(positions, radii, margin, periodic):
    """Every pair that may have ``gap_ij <= margin`` (and others), ``i < j``, sorted."""
    n = len(positions)
    median = float(np.median(radii))
    large = np.flatnonzero(radii > _LARGE_RADIUS_FACTOR * median)
    small_max = float(radii.max()) if large.size == 0 else _LARGE_RADIUS_FACTOR * median
    cutoff = 2.0 * small_max + margin
    largest_cutoff = float(radii.max()) * 2.0 + margin
    if large.size == 0:
        # Imported at first use, like the other compiled kernels (numba's import
        # costs a few tenths of a second).
        from .cell_lists import pairs_within

        found = pairs_within(positions, cutoff, periodic)
        if found is not None:
            return found
    tree = _tree(positions, largest_cutoff, periodic)
    pairs = tree.query_pairs(cutoff, output_type="ndarray").astype(np.int64)
    i, j = pairs[:, 0], pairs[:, 1]
    if large.size:
        reach = radii[large] + float(radii.max()) + margin
        lists = tree.query_ball_point(tree.data[large], reach)
        counts = np.fromiter((len(neigh) for neigh in lists), dtype=np.int64, count=len(lists))
        extra_i = np.repeat(large, counts)
        extra_j = np.concatenate([np.asarray(neigh, dtype=np.int64) for neigh in lists]) if counts.sum() else extra_i
        keep = extra_i != extra_j
        i = np.concatenate([i, extra_i[keep]])
        j = np.concatenate([j, extra_j[keep]])
    return _sorted_unique(i, j, n)


def brute_force_pairs(
    positions: np.ndarray, radii: np.ndarray, margin: float, periodic: PeriodicBox | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``i < j`` with ``gap_ij <= margin``, by checking every pair: O(N^2).

    The oracle of `candidate_pairs` in the tests; same arguments and output.
    """
    i, j = np.triu_indices(len(positions), k=1)
    keep = pair_gaps(positions, radii, i, j, periodic) <= margin
    return i[keep].astype(np.int64), j[keep].astype(np.int64)
