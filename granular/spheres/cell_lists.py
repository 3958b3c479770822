"""Candidate sphere pairs by a cell list (compiled): the search of `granular.spheres.neighbors`
for scenes of spheres of similar sizes, open or periodic.

Space is cut into cubes of side ``cutoff`` (m); two spheres within ``cutoff`` of
each other lie in the same cube or in two cubes that touch, so each sphere is
compared with the spheres of the 27 cubes around its own (Allen and Tildesley,
*Computer Simulation of Liquids*, Oxford University Press, 1987, section 5.3.2).
Spheres are grouped by cube with a counting sort, so a search costs O(N + pairs
compared) and no tree is built. On 1,000 spheres in a box (2,700 pairs) it takes
about a tenth of scipy's ``cKDTree`` build and ``query_pairs``. For open scenes
`contacts_within` also does the exact gap test and keeps the pair vectors and
distances, in one pass that yields the pairs already sorted, cheaper than a
search, a sort and a numpy gap test (benchmarks/README.md, "Measurements behind
the constants").

The grid spans the spheres' bounding box along open axes and the period along
periodic ones (cubes of a period divided into a whole number, at least three, so
that the cubes through a face are distinct; distances to the nearest image). When
the box holds far more cubes than spheres (a sphere thrown far away), or a period
is shorter than three cutoffs, `pairs_within` returns None and the caller uses
the k-d tree, whose cost does not depend on the spread.
"""

from __future__ import annotations

import numba
import numpy as np

from ..compiled_arrays import grown

#: Grid cubes allowed per sphere before the k-d tree is used instead: the counting
#: sort allocates one offset per cube.
MAX_CELLS_PER_SPHERE = 8
#: Relative widening of the search distance and of the cubes: many times the
#: rounding of a squared distance (a few 1e-16) and of a cube index.
_WIDENING = 1e-9


@numba.njit(cache=True)
def _grouped(positions, origin, side, dims):
    """The spheres grouped by cube on a grid of ``dims + 2`` cubes a side (a layer
    of empty cubes around, so that neighbours need no bounds checks): ``members``
    (N,) sphere indices in cube order, ``starts`` (cubes + 1,) offsets into it,
    ``sorted_positions`` (N, 3) in the order of ``members`` (contiguous, so a cube's
    spheres are read together) and ``linear`` (N,) the cube of each sphere."""
    n = positions.shape[0]
    total = (dims[0] + 2) * (dims[1] + 2) * (dims[2] + 2)
    linear = np.empty(n, dtype=np.int64)
    starts = np.zeros(total + 1, dtype=np.int64)
    for k in range(n):
        c = 0
        for axis in range(3):
            index = int((positions[k, axis] - origin[axis]) / side)
            c = c * (dims[axis] + 2) + min(max(index, 0), dims[axis] - 1) + 1
        linear[k] = c
        starts[c + 1] += 1
    for c in range(total):
        starts[c + 1] += starts[c]
    fill = starts[:-1].copy()
    members = np.empty(n, dtype=np.int64)
    sorted_positions = np.empty((n, 3))
    for k in range(n):
        slot = fill[linear[k]]
        members[slot] = k
        sorted_positions[slot] = positions[k]
        fill[linear[k]] += 1
    return members, starts, sorted_positions, linear


@numba.njit(cache=True)
def _pairs(positions, cutoff, origin, dims):
    """Pairs ``(i, j)``, ``i < j``, whose centres are at most ``cutoff`` apart,
    unordered. Each cube is compared with itself and with the 13 cubes after it in
    the lexicographic order of the offsets, so each pair of cubes is met once."""
    members, starts, sorted_positions, _ = _grouped(positions, origin, cutoff, dims)
    stride_y = dims[2] + 2
    stride_x = (dims[1] + 2) * stride_y
    later = np.empty(14, dtype=np.int64)  # (0, 0, 0) then the 13 later offsets
    for offset in range(13, 27):
        later[offset - 13] = (offset // 9 - 1) * stride_x + ((offset // 3) % 3 - 1) * stride_y + offset % 3 - 1
    limit = cutoff * cutoff
    capacity = 16 * positions.shape[0] + 16
    first = np.empty(capacity, dtype=np.int64)
    second = np.empty(capacity, dtype=np.int64)
    count = 0
    for own in range(starts.size - 1):
        own_start, own_end = starts[own], starts[own + 1]
        if own_start == own_end:
            continue
        for k in range(14):
            other = own + later[k]
            other_end = starts[other + 1]
            for a in range(own_start, own_end):
                b_first = a + 1 if k == 0 else starts[other]
                for b in range(b_first, other_end):
                    d0 = sorted_positions[b, 0] - sorted_positions[a, 0]
                    d1 = sorted_positions[b, 1] - sorted_positions[a, 1]
                    d2 = sorted_positions[b, 2] - sorted_positions[a, 2]
                    if d0 * d0 + d1 * d1 + d2 * d2 > limit:
                        continue
                    if count == capacity:
                        capacity *= 2
                        first, second = grown(first, count, capacity), grown(second, count, capacity)
                    i, j = members[a], members[b]
                    first[count] = min(i, j)
                    second[count] = max(i, j)
                    count += 1
    return first[:count], second[:count]


@numba.njit(cache=True)
def _contacts(positions, radii, margin, origin, side, dims):
    """The pairs ``i < j`` of an open scene with ``gap_ij <= margin``, sorted
    lexicographically, with their vectors ``q_j - q_i`` and distances:
    `granular.spheres.neighbors.candidate_contacts` in one pass. Each sphere ``i`` meets
    the spheres ``j > i`` of the 27 cubes around its own (cubes of side ``side``
    at least ``2 r_max + margin``), so the pairs come out by ``i`` and only the
    few of one sphere need sorting. The vector, its length (the square root of
    the sum of the squares in the order x, y, z) and the gap test are computed as
    `granular.spheres.neighbors.pair_gaps` computes them, term for term."""
    members, starts, sorted_positions, cube = _grouped(positions, origin, side, dims)
    n = positions.shape[0]
    slot_of = np.empty(n, dtype=np.int64)
    for slot in range(n):
        slot_of[members[slot]] = slot
    limit = side * side
    stride_y = dims[2] + 2
    stride_x = (dims[1] + 2) * stride_y
    around = np.empty(27, dtype=np.int64)
    for offset in range(27):
        around[offset] = (offset // 9 - 1) * stride_x + ((offset // 3) % 3 - 1) * stride_y + offset % 3 - 1
    capacity = 8 * n + 16
    first = np.empty(capacity, dtype=np.int64)
    second = np.empty(capacity, dtype=np.int64)
    vectors = np.empty((capacity, 3))
    distances = np.empty(capacity)
    count = 0
    for i in range(n):
        begin = count
        a = slot_of[i]
        for k in range(27):
            other = cube[i] + around[k]
            for b in range(starts[other], starts[other + 1]):
                j = members[b]
                if j <= i:
                    continue
                # The sorted copies hold the same coordinates: v = q_j - q_i exactly.
                v0 = sorted_positions[b, 0] - sorted_positions[a, 0]
                v1 = sorted_positions[b, 1] - sorted_positions[a, 1]
                v2 = sorted_positions[b, 2] - sorted_positions[a, 2]
                square = v0 * v0 + v1 * v1 + v2 * v2
                if square > limit:  # farther than a cube: cannot pass the test below
                    continue
                distance = np.sqrt(square)
                if distance - radii[i] - radii[j] > margin:
                    continue
                if count == capacity:
                    capacity *= 2
                    first = grown(first, count, capacity)
                    second = grown(second, count, capacity)
                    wider = np.empty((capacity, 3))
                    wider[:count] = vectors[:count]
                    vectors = wider
                    distances = grown(distances, count, capacity)
                first[count] = i
                # Insertion into the sorted run of sphere i (a handful of pairs).
                slot = count
                while slot > begin and second[slot - 1] > j:
                    second[slot] = second[slot - 1]
                    vectors[slot] = vectors[slot - 1]
                    distances[slot] = distances[slot - 1]
                    slot -= 1
                second[slot] = j
                vectors[slot, 0], vectors[slot, 1], vectors[slot, 2] = v0, v1, v2
                distances[slot] = distance
                count += 1
    return first[:count], second[:count], vectors[:count], distances[:count]


@numba.njit(cache=True)
def _pairs_periodic(positions, sides, origin, dims, lengths, periodic):
    """`_pairs` in a cell periodic along the axes where ``periodic`` is true:
    ``positions`` wrapped into the cell there, cube sides ``sides`` (3,) (at least
    the cutoff), at least 3 cubes along a periodic axis (so a cube's neighbours
    are distinct cubes and each pair of cubes is met once), distances to the
    nearest periodic image (``lengths`` (3,) the periods). Its counting sort and
    its appends to the pair arrays repeat `_grouped`'s and `_pairs`'s: versions
    shared through a padding argument and an append function ran slower in both
    kernels (benchmarks/README.md, "Measurements behind the constants"); only the
    rare doubling of the arrays is shared (`grown`)."""
    n = positions.shape[0]
    total = dims[0] * dims[1] * dims[2]
    linear = np.empty(n, dtype=np.int64)
    starts = np.zeros(total + 1, dtype=np.int64)
    for k in range(n):
        c = 0
        for axis in range(3):
            index = int((positions[k, axis] - origin[axis]) / sides[axis])
            c = c * dims[axis] + min(max(index, 0), dims[axis] - 1)
        linear[k] = c
        starts[c + 1] += 1
    for c in range(total):
        starts[c + 1] += starts[c]
    fill = starts[:-1].copy()
    members = np.empty(n, dtype=np.int64)
    sorted_positions = np.empty((n, 3))
    for k in range(n):
        slot = fill[linear[k]]
        members[slot] = k
        sorted_positions[slot] = positions[k]
        fill[linear[k]] += 1
    limit = sides.min() * sides.min()
    capacity = 16 * n + 16
    first = np.empty(capacity, dtype=np.int64)
    second = np.empty(capacity, dtype=np.int64)
    count = 0
    neighbour = np.empty(3, dtype=np.int64)
    own_cell = np.empty(3, dtype=np.int64)
    for own in range(total):
        own_start, own_end = starts[own], starts[own + 1]
        if own_start == own_end:
            continue
        own_cell[0] = own // (dims[1] * dims[2])
        own_cell[1] = (own // dims[2]) % dims[1]
        own_cell[2] = own % dims[2]
        for offset in range(13, 27):  # (0, 0, 0) then the 13 later offsets
            outside = False
            for axis in range(3):
                step = (offset // 9 - 1) if axis == 0 else ((offset // 3) % 3 - 1 if axis == 1 else offset % 3 - 1)
                index = own_cell[axis] + step
                if periodic[axis]:
                    index = (index + dims[axis]) % dims[axis]
                elif index < 0 or index >= dims[axis]:
                    outside = True
                neighbour[axis] = index
            if outside:
                continue
            other = (neighbour[0] * dims[1] + neighbour[1]) * dims[2] + neighbour[2]
            for a in range(own_start, own_end):
                b_first = a + 1 if offset == 13 else starts[other]
                for b in range(b_first, starts[other + 1]):
                    squared = 0.0
                    for axis in range(3):
                        d = sorted_positions[b, axis] - sorted_positions[a, axis]
                        if periodic[axis]:
                            d -= lengths[axis] * np.rint(d / lengths[axis])
                        squared += d * d
                    if squared > limit:
                        continue
                    if count == capacity:
                        capacity *= 2
                        first, second = grown(first, count, capacity), grown(second, count, capacity)
                    i, j = members[a], members[b]
                    first[count] = min(i, j)
                    second[count] = max(i, j)
                    count += 1
    return first[:count], second[:count]


@numba.njit(cache=True)
def _bounds(positions):
    """Lowest and highest coordinates (3,) (numpy's reductions along the short axis
    cost more)."""
    low = positions[0].copy()
    high = positions[0].copy()
    for k in range(1, positions.shape[0]):
        for axis in range(3):
            low[axis] = min(low[axis], positions[k, axis])
            high[axis] = max(high[axis], positions[k, axis])
    return low, high


def contacts_within(positions: np.ndarray, radii: np.ndarray, margin: float):
    """``(i, j, vectors (M, 3), distances (M,))`` of the pairs ``i < j`` of an open
    scene with ``gap_ij <= margin`` (m), sorted lexicographically
    (`granular.spheres.neighbors.candidate_contacts`), or None where `pairs_within` would
    return None (the caller then uses the k-d tree). ``radii`` (N,) m, of similar
    sizes: the cubes are ``2 max(radii) + margin`` wide."""
    n = len(positions)
    positions = np.ascontiguousarray(positions, dtype=float)
    side = (2.0 * float(np.max(radii)) + float(margin)) * (1.0 + _WIDENING)
    low, high = _bounds(positions)
    cubes = np.floor((high - low) / side) + 1.0
    if not np.all(np.isfinite(cubes)) or np.prod(cubes + 2.0) > MAX_CELLS_PER_SPHERE * n + 27:
        return None
    return _contacts(
        positions, np.ascontiguousarray(radii, dtype=float), float(margin), low, side, cubes.astype(np.int64)
    )


def pairs_within(positions: np.ndarray, cutoff: float, periodic=None) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs ``(i, j)`` (int64 arrays, ``i < j``, sorted lexicographically) of the
    centres ``positions`` (N, 3) (m) at most ``cutoff`` (m, > 0) apart, to a relative
    rounding of the squared distance, through the nearest periodic image along the
    axes of ``periodic`` (a `granular.walls.PeriodicBox`, or None). None when the
    spheres' bounding box would need more than `MAX_CELLS_PER_SPHERE` cubes a
    sphere, or a periodic axis is shorter than three cutoffs; the caller then
    uses the k-d tree, and filters the pairs by its exact gap test. Positions that
    are not finite also give None (the tree then reports them)."""
    n = len(positions)
    positions = np.ascontiguousarray(positions, dtype=float)
    # Widened so that no pair at most ``cutoff`` apart is lost to the rounding of
    # the squared distance or of a cube index; the caller's exact test decides.
    side = float(cutoff) * (1.0 + _WIDENING)
    if periodic is not None:
        positions = periodic.wrap(positions)
    low, high = _bounds(positions)
    cubes = np.floor((high - low) / side) + 1.0
    if periodic is None:
        if not np.all(np.isfinite(cubes)) or np.prod(cubes + 2.0) > MAX_CELLS_PER_SPHERE * n + 27:
            return None
        i, j = _pairs(positions, side, low, cubes.astype(np.int64))
    else:
        along = np.zeros(3, dtype=bool)
        along[list(periodic.axes)] = True
        lengths = np.where(along, periodic.upper - periodic.lower, 1.0)
        cubes[along] = np.floor(lengths[along] / side)
        if not np.all(np.isfinite(cubes)) or np.any(cubes[along] < 3) or np.prod(cubes) > MAX_CELLS_PER_SPHERE * n + 27:
            return None
        origin = np.where(along, periodic.lower, low)
        sides = np.where(along, lengths / cubes, side)
        i, j = _pairs_periodic(positions, sides, origin, cubes.astype(np.int64), lengths, along)
    keys = np.sort(i * n + j)
    return keys // n, keys % n
