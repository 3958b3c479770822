"""Packings and initial configurations: fill a region with spheres, read and write them.

Filling (`fill_box`, `fill_cylinder`) is random sequential addition (RSA): the
spheres are placed biggest first, each at a uniformly random position inside the
region where it overlaps neither the walls nor a sphere placed before; a sphere
that finds no place after ``max_attempts`` tries stops the fill with an
`InvalidInputError` saying how many were placed. Candidates are drawn and checked
in vectorised rounds against a `scipy.spatial.cKDTree` of the placed spheres;
once the region fills up they are drawn only in the cells of a grid not yet
covered by the placed spheres, so the last spheres still find the little room
left (`_Grid`).

RSA of equal spheres saturates at a packing fraction (solid volume over region
volume) of 0.38 in an unbounded space; walls lower it. With the default 2000
attempts, 0.30 fits and 0.32 fails in a box of 10 diameters a side (the fill
stops near 0.32); a box of 20 diameters takes 0.30 (4583 spheres) and stops near
0.32. Denser: ``fill_box(..., grow=True)`` packs the spheres
shrunk to a fraction of 0.2 and grows them back in steps of 5 % in radius, each
followed by `granular.remove_overlaps` (a projection, no dynamics); it reaches
0.45-0.50 but costs much more (benchmarks/README.md, "Measurements behind the
constants") and refuses more than 0.6 at once (random close packing is 0.64). A cylinder has
no wall of granular to project on, so it is RSA only. Beyond, grow the spheres in
a simulation (the ``growing_spheres`` scene reaches about 0.5).

Every gap of a filled region is >= 0: the placement keeps a clearance of
``1e-9`` of the radii (relative; ``1e-8`` for the growth, above the tolerance of
`remove_overlaps`) so that rounding cannot make a gap negative, and every packing
is checked (pairs through a KD tree, and the walls) before it is returned.

Configuration files are read and written by `granular.records.configurations`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.spatial import cKDTree

from ..errors import InvalidInputError, SolverError
from .overlaps import remove_overlaps
from ..validation import finite_array, positive_radii, positive_scalar
from ..walls import Box

#: Relative clearance kept between placed spheres and to the walls, so that the
#: gaps computed from the written floats are never negative by rounding.
_CLEARANCE = 1e-9
#: Candidate positions drawn and checked in one round (vectorised).
_BATCH = 256
#: Most cells of the grid of uncovered space (`_Grid`), bounding its memory (bytes).
_MAX_CELLS = 20_000_000
#: ``grow=True``: RSA packs the spheres shrunk to this packing fraction, then they
#: grow by factors of ``_GROWTH`` in radius, each followed by `remove_overlaps`.
_GROW_START = 0.2
_GROWTH = 1.05
#: Largest packing fraction growth is asked for (random close packing: 0.64).
_GROW_LIMIT = 0.6
#: Relative excess radius of the growth, above the overlap tolerance of remove_overlaps.
_GROW_CLEARANCE = 1e-8


# -- size distributions ----------------------------------------------------------------
def sphere_radii(n: int, radii, rng: np.random.Generator) -> np.ndarray:
    """The (n,) radii (m) of a size distribution.

    ``radii`` is one of: a number (every sphere alike); a tuple ``(low, high)``, radii
    uniform in ``[low, high]``; a list or array of n radii; a callable ``rng ->
    radius`` (called n times) or ``rng -> (n,) array`` (called once).
    """
    n = _count(n)
    if callable(radii):
        values = _from_callable(radii, n, rng)
    elif isinstance(radii, tuple):
        values = _uniform_range(radii, n, rng)
    else:
        values = finite_array(radii, "radii")
        if values.ndim == 0:
            values = np.full(n, float(values))
        elif values.shape != (n,):
            raise InvalidInputError(
                f"radii must be a number, a (low, high) tuple, a callable or {n} radii, got shape {values.shape}"
            )
    return positive_radii(values)


def _from_callable(radii: Callable, n: int, rng) -> np.ndarray:
    try:
        first = np.asarray(radii(rng), dtype=float)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"the radius callable must return numbers: {error}") from None
    if first.shape == (n,) and n != 1:
        return first
    if first.size != 1:
        raise InvalidInputError(f"the radius callable must return one radius or {n} radii, got shape {first.shape}")
    rest = [float(np.asarray(radii(rng), dtype=float).reshape(-1)[0]) for _ in range(n - 1)]
    return finite_array(np.concatenate([first.reshape(1), rest]), "radii")


def _uniform_range(bounds: tuple, n: int, rng) -> np.ndarray:
    if len(bounds) != 2:
        raise InvalidInputError(f"a radius range must be (low, high), got {bounds!r}")
    low, high = (positive_scalar(v, "radius range bound") for v in bounds)
    if high < low:
        raise InvalidInputError(f"a radius range needs low <= high, got ({low}, {high})")
    return rng.uniform(low, high, n)


def _count(n) -> int:
    """``n`` as an int >= 1 (a count of spheres or attempts)."""
    try:
        whole = not isinstance(n, bool) and float(n).is_integer() and n >= 1
    except (TypeError, ValueError):
        whole = False
    if not whole:
        raise InvalidInputError(f"expected a positive integer (a number of spheres or attempts), got {n!r}")
    return int(n)


# -- regions ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _BoxRegion:
    lower: np.ndarray
    upper: np.ndarray
    name = "box"

    @property
    def volume(self) -> float:
        return float(np.prod(self.upper - self.lower))

    def largest_radius(self) -> float:
        return 0.5 * float(np.min(self.upper - self.lower))

    def bounds(self, r: float) -> tuple[np.ndarray, np.ndarray]:
        """Corners (3,), (3,) of an axis-aligned box holding every admissible centre of radius ``r``."""
        return self.lower + r, self.upper - r

    def outside(self, points: np.ndarray, r, slack: float = 0.0) -> np.ndarray:
        """(k,) bool: the centre ``points[k]`` of radius ``r`` (scalar or (k,)) lies more than
        ``slack`` (m) outside the admissible set (``slack = 0``: the sphere is not inside)."""
        r = np.reshape(r, (-1, 1))
        return np.any((points < self.lower + r - slack) | (points > self.upper - r + slack), axis=1)


@dataclass(frozen=True)
class _CylinderRegion:
    centre: np.ndarray  # midpoint of the axis segment
    axis: np.ndarray  # unit vector
    radius: float
    height: float
    name = "cylinder"

    @property
    def volume(self) -> float:
        return math.pi * self.radius**2 * self.height

    def largest_radius(self) -> float:
        return min(self.radius, 0.5 * self.height)

    def bounds(self, r: float) -> tuple[np.ndarray, np.ndarray]:
        """Corners of an axis-aligned box holding every admissible centre of radius ``r``."""
        # extent along world axis k of a disc of radius R' and a segment of length h' along a
        across = (self.radius - r) * np.sqrt(np.clip(1.0 - self.axis**2, 0.0, 1.0))
        extent = np.abs(self.axis) * (0.5 * self.height - r) + across
        return self.centre - extent, self.centre + extent

    def outside(self, points: np.ndarray, r, slack: float = 0.0) -> np.ndarray:
        """As `_BoxRegion.outside`: more than ``slack`` outside the admissible centres."""
        r = np.asarray(r, dtype=float)
        relative = points - self.centre
        along = relative @ self.axis
        rho = np.linalg.norm(relative - np.outer(along, self.axis), axis=1)
        return (rho > self.radius - r + slack) | (np.abs(along) > 0.5 * self.height - r + slack)


def _vector(value, name: str) -> np.ndarray:
    return finite_array(value, name, (3,))


def _axis(axis) -> np.ndarray:
    if isinstance(axis, str):
        if axis.lower() not in ("x", "y", "z"):
            raise InvalidInputError(f"axis must be 'x', 'y', 'z' or a vector (3,), got {axis!r}")
        return np.eye(3)["xyz".index(axis.lower())]
    vector = _vector(axis, "axis")
    length = float(np.linalg.norm(vector))
    if length == 0.0:
        raise InvalidInputError("axis must be a non-zero vector")
    return vector / length


# -- filling ---------------------------------------------------------------------------
def fill_box(
    n: int, lower, upper, radii, seed=None, max_attempts: int = 2000, grow: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """N non-overlapping spheres inside the box ``[lower, upper]`` (module docstring: RSA).

    Parameters
    ----------
    n : int
        Number of spheres.
    lower, upper : (3,) arrays
        Opposite corners (m), ``lower < upper`` componentwise.
    radii : number, ``(low, high)`` tuple, (n,) array or callable
        Size distribution (m), see `sphere_radii`.
    seed : int, numpy Generator or None
        Random seed: the same seed gives the same packing.
    max_attempts : int
        Candidate positions tried per sphere before giving up.
    grow : bool
        Denser than RSA (module docstring): pack the spheres shrunk to a packing
        fraction of 0.2, then grow them back, removing the overlaps after each 5 %
        of growth with `granular.remove_overlaps`. Reaches 0.45-0.5, but its cost
        grows fast with n and the fraction (benchmarks/README.md, "Measurements
        behind the constants"); jammed spheres raise `InvalidInputError`.

    Returns
    -------
    positions : (n, 3) array (m), radii : (n,) array (m), in the order of ``radii``
    when given per sphere (biggest are placed first, whatever the order).

    Raises
    ------
    InvalidInputError
        Bad arguments, or the box cannot hold the spheres (the message gives the
        packing fraction asked and how many spheres were placed).
    """
    lower, upper = _vector(lower, "lower"), _vector(upper, "upper")
    if not np.all(upper > lower):
        raise InvalidInputError(f"the box needs lower < upper componentwise, got {lower.tolist()} and {upper.tolist()}")
    return _fill(_BoxRegion(lower, upper), n, radii, seed, max_attempts, grow=bool(grow))


def fill_cylinder(
    n: int, centre, axis, radius: float, height: float, radii, seed=None, max_attempts: int = 2000
) -> tuple[np.ndarray, np.ndarray]:
    """N non-overlapping spheres inside a closed cylinder (module docstring: RSA).

    Parameters
    ----------
    centre : (3,) array
        Midpoint of the cylinder's axis (m): it spans ``height / 2`` on each side.
    axis : 'x', 'y', 'z' or (3,) array
        Direction of the axis (normalised here).
    radius, height : float
        Radius and full height of the cylinder (m).
    n, radii, seed, max_attempts
        As for `fill_box`.

    Returns and raises as `fill_box`.
    """
    region = _CylinderRegion(
        _vector(centre, "centre"),
        _axis(axis),
        positive_scalar(radius, "cylinder radius"),
        positive_scalar(height, "cylinder height"),
    )
    return _fill(region, n, radii, seed, max_attempts)


def _fill(region, n, radii, seed, max_attempts, grow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(
            f"seed must be a non-negative integer or a numpy Generator, got {seed!r} ({error})"
        ) from None
    radii = sphere_radii(n, radii, rng)
    max_attempts = _count(max_attempts)
    biggest = float(radii.max())
    if biggest >= region.largest_radius():
        raise InvalidInputError(
            f"a sphere of radius {biggest:.6g} m does not fit in the {region.name} "
            f"(at most {region.largest_radius():.6g} m)"
        )
    if grow:
        if packing_fraction(radii, region.volume) > _GROW_LIMIT:
            raise InvalidInputError(
                f"cannot fill the box by growth: packing fraction "
                f"{packing_fraction(radii, region.volume):.3g} asked, more than "
                f"{_GROW_LIMIT} (random close packing is 0.64)"
            )
        # RSA of shrunken spheres always succeeds at this fraction; growth does the rest
        scale = min(1.0, (_GROW_START / packing_fraction(radii, region.volume)) ** (1.0 / 3.0))
        positions = _grow(region, _rsa(region, radii * scale, rng, max_attempts), radii, scale)
    else:
        positions = _rsa(region, radii, rng, max_attempts)
    _check_clear(region, positions, radii)
    return positions, radii


def _rsa(region, radii, rng, max_attempts) -> np.ndarray:
    """Positions (n, 3) of the spheres ``radii`` (n,) placed by RSA, in the order given."""
    n = len(radii)
    order = np.argsort(-radii, kind="stable")
    placed = _place_all(region, radii[order] * (1.0 + _CLEARANCE), rng, max_attempts)
    if placed.count < n:
        fraction = packing_fraction(radii, region.volume)
        reached = packing_fraction(radii[order][placed.done], region.volume)
        raise InvalidInputError(
            f"cannot fill the {region.name}: packing fraction {fraction:.3g} asked, "
            f"{placed.count} of {n} spheres placed (fraction {reached:.3g}) before one "
            f"found no room in {max_attempts} attempts; random sequential addition "
            f"reaches about 0.32 (less in a small region; a box can use grow=True)"
        )
    positions = np.empty((n, 3))
    positions[order] = placed.positions
    return positions


def _grow(region, positions, radii, scale: float) -> np.ndarray:
    """Grow the spheres from ``scale * radii`` to ``radii`` by factors of ``_GROWTH``,
    removing the overlaps after each (`granular.remove_overlaps`, box walls)."""

    walls = [Box(region.lower, region.upper)]
    asked = packing_fraction(radii, region.volume)
    while scale < 1.0:
        scale = min(1.0, scale * _GROWTH)
        try:
            # slightly bigger than asked: remove_overlaps leaves overlaps up to its tolerance
            positions = remove_overlaps(positions, radii * scale * (1.0 + _GROW_CLEARANCE), walls=walls)
        except SolverError as error:  # JammingError included
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise InvalidInputError(
                f"cannot fill the box by growth: packing fraction {asked:.3g} asked, the "
                f"spheres jammed at {asked * scale**3:.3g} ({reason})"
            ) from None
    return positions


def _check_clear(region, positions, radii) -> None:
    """Raise if two spheres overlap or one crosses the region's boundary: a guard
    against a wrong packing ever being returned (it would be a bug)."""

    pairs = cKDTree(positions).query_pairs(2.0 * float(radii.max()), output_type="ndarray")
    if len(pairs):
        i, j = pairs.T
        gaps = np.linalg.norm(positions[i] - positions[j], axis=1) - radii[i] - radii[j]
        if gaps.min() < 0.0:
            k = int(np.argmin(gaps))
            raise SolverError(f"spheres {i[k]} and {j[k]} overlap by {-gaps[k]:.3g} m in the packing (a bug)")
    outside = np.flatnonzero(region.outside(positions, radii))
    if outside.size:
        raise SolverError(f"sphere {outside[0]} crosses the {region.name}'s boundary in the packing (a bug)")


def _place_all(region, radii, rng, max_attempts) -> "_Placed":
    """Place the spheres of ``radii`` (sorted, biggest first) in rounds; stop at the
    first that used up ``max_attempts`` candidates, or when no room is left.

    A round takes the next unplaced spheres (at most ``_BATCH``, so the biggest
    still go first), draws candidates for each (more per sphere when few remain)
    in the cells of `_Grid` not yet known to be covered, keeps for each sphere
    its first candidate inside the region and clear of the placed spheres, and
    drops a kept candidate that overlaps an earlier one of the same round (that
    sphere retries in the next round). The grid starts marking covered space once
    a round places fewer than half of its spheres.
    """
    placed = _Placed(len(radii))
    grid = _Grid(region, float(radii.min()))
    attempts = np.zeros(len(radii), dtype=int)
    while placed.count < len(radii):
        chunk = np.flatnonzero(~placed.done)[:_BATCH]
        if attempts[chunk].max() >= max_attempts:
            break
        per_sphere = int(min(max(1, _BATCH // len(chunk)), max_attempts - attempts[chunk].max()))
        owner = np.repeat(chunk, per_sphere)
        candidates = grid.sample(rng, len(owner))
        if candidates is None:  # every cell is covered: no sphere fits anywhere
            break
        attempts[chunk] += per_sphere
        free = ~region.outside(candidates, radii[owner]) & placed.free(candidates, radii[owner])
        first = _first_free(owner, free)
        kept = first[_mutually_clear(candidates[first], radii[owner[first]])]
        placed.add(owner[kept], candidates[kept], radii[owner[kept]])
        if grid.active:
            grid.cover(candidates[kept], radii[owner[kept]])
        elif kept.size < 0.5 * chunk.size:  # filling up: from now on skip covered space
            grid.active = True
            grid.cover(placed.positions[placed.order], placed.radii)
    return placed


class _Grid:
    """Cells over the admissible centres of the smallest sphere, with those known to be
    covered: no centre of a sphere still to place can lie in them.

    Near saturation almost every uniform point of the region falls where no sphere
    fits; drawing candidates only in the cells not covered keeps the acceptance
    high (the candidates stay uniform over the free space, which lies inside the
    uncovered cells). A cell is covered when it lies entirely outside the
    admissible centres, or entirely within ``r_j + r_min`` of a placed sphere j.
    """

    def __init__(self, region, smallest: float):
        self.smallest = smallest
        self.active = False  # covering costs more than it saves while most candidates fit
        self.low, high = region.bounds(smallest)
        # cells of half the smallest radius, fewer than _MAX_CELLS of them
        size = max(0.5 * smallest, float(np.prod(high - self.low) / _MAX_CELLS) ** (1.0 / 3.0))
        self.shape = np.maximum(np.ceil((high - self.low) / size), 1).astype(int)
        self.size = (high - self.low) / self.shape
        self.half_diagonal = 0.5 * float(np.linalg.norm(self.size))
        cells = int(np.prod(self.shape))
        self.covered = np.zeros(cells, dtype=bool)
        for start in range(0, cells, 1 << 20):  # in blocks: the centres of all cells at once are big
            block = np.arange(start, min(start + (1 << 20), cells))
            self.covered[block] = region.outside(self.centres(block), smallest, self.half_diagonal)

    def centres(self, cells: np.ndarray) -> np.ndarray:
        return self.low + (np.column_stack(np.unravel_index(cells, self.shape)) + 0.5) * self.size

    def sample(self, rng, count: int) -> np.ndarray | None:
        """``count`` points uniform over the uncovered cells, or None when all are covered."""
        open_cells = np.flatnonzero(~self.covered)
        if open_cells.size == 0:
            return None
        cells = open_cells[rng.integers(0, open_cells.size, count)]
        return self.centres(cells) + rng.uniform(-0.5, 0.5, (count, 3)) * self.size

    def cover(self, positions: np.ndarray, radii: np.ndarray) -> None:
        """Mark the cells entirely within ``r_j + r_min`` of the new spheres ``positions``."""
        for block in range(0, len(positions), 64):  # bounds the memory of the stencils
            self._cover(positions[block : block + 64], radii[block : block + 64])

    def _cover(self, positions, radii) -> None:
        if len(positions) == 0:
            return
        reach = radii + self.smallest - self.half_diagonal  # > 0: cells are smaller than the spheres
        span = np.ceil(float(reach.max()) / self.size).astype(int)
        stencil = np.stack(np.meshgrid(*(np.arange(-s, s + 1) for s in span), indexing="ij"), -1).reshape(-1, 3)
        home = np.floor((positions - self.low) / self.size).astype(int)
        cells = home[:, None, :] + stencil[None, :, :]
        centres = self.low + (cells + 0.5) * self.size
        inside = np.all((cells >= 0) & (cells < self.shape), axis=2)
        near = np.linalg.norm(centres - positions[:, None, :], axis=2) <= reach[:, None]
        hit = cells[inside & near]
        self.covered[np.ravel_multi_index(hit.T, self.shape)] = True


def _first_free(owner: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Index of the first free candidate of each sphere that has one (owner sorted)."""
    rows = np.flatnonzero(free)
    _, first = np.unique(owner[rows], return_index=True)
    return rows[first]


def _mutually_clear(positions: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """(k,) bool: candidate j overlaps no candidate i < j (conservatively: even a dropped one)."""
    keep = np.ones(len(positions), dtype=bool)
    if len(positions) < 2:
        return keep
    pairs = cKDTree(positions).query_pairs(2.0 * float(radii.max()), output_type="ndarray")
    if len(pairs):
        i, j = pairs.min(axis=1), pairs.max(axis=1)
        clash = np.linalg.norm(positions[i] - positions[j], axis=1) < radii[i] + radii[j]
        keep[j[clash]] = False
    return keep


class _Placed:
    """The spheres placed so far (indexed as the sorted radii), with a KD tree of them
    for the overlap checks."""

    def __init__(self, n: int):
        self.positions = np.full((n, 3), np.nan)
        self.done = np.zeros(n, dtype=bool)
        self.order = np.zeros(0, dtype=int)  # placed indices, in the tree's order
        self.radii = np.zeros(0)  # their radii, in the tree's order
        self.tree = None

    @property
    def count(self) -> int:
        return int(self.order.size)

    def add(self, indices, positions, radii) -> None:
        if len(indices) == 0:
            return
        self.positions[indices] = positions
        self.done[indices] = True
        self.order = np.concatenate([self.order, indices])
        self.radii = np.concatenate([self.radii, radii])
        self.tree = cKDTree(self.positions[self.order])

    def free(self, candidates: np.ndarray, radii: np.ndarray) -> np.ndarray:
        """(k,) bool: the candidates at which a sphere of radius ``radii[k]`` overlaps none placed."""
        free = np.ones(len(candidates), dtype=bool)
        if self.tree is None:
            return free
        # every placed sphere that could touch a candidate lies within r + the biggest radius
        reach = float(radii.max() + self.radii.max())
        near = cKDTree(candidates).sparse_distance_matrix(self.tree, reach, output_type="ndarray")
        clash = near["v"] < radii[near["i"]] + self.radii[near["j"]]
        free[near["i"][clash]] = False
        return free


def packing_fraction(radii, volume: float) -> float:
    """Solid volume of the spheres over ``volume`` (m^3): ``sum 4/3 pi r^3 / volume``."""
    return float(np.sum(4.0 / 3.0 * math.pi * np.asarray(radii, dtype=float) ** 3)) / positive_scalar(volume, "volume")
