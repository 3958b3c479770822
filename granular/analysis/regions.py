"""Regions of space over which a stress or a density is averaged: a box, a cylinder
and a slab. Each says which points it holds and its volume (m^3).

A sphere belongs to a region when its centre does (the convention of the Love
stress over a representative volume: Christoffersen, Mehrabadi and Nemat-Nasser,
*A micromechanical description of granular material behavior*, 1981); the
average is then exact when the region's boundary cuts no sphere, and carries an
error of the order of a sphere's share of the boundary's surface otherwise
(coarse-graining, `granular.analysis.coarse`, has no such error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _vector(value, name: str) -> np.ndarray:
    array = np.asarray(value, float)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: expected three finite numbers (m), got {value!r}")
    return array


def _length(value, name: str) -> float:
    number = float(value)
    if not (np.isfinite(number) and number > 0.0):
        raise ValueError(f"{name}: expected a positive length (m), got {value!r}")
    return number


AXES = {"x": 0, "y": 1, "z": 2}


def axis_index(axis) -> int:
    """0, 1 or 2 for ``"x"``, ``"y"``, ``"z"`` (or the integer itself); a ValueError otherwise."""
    if isinstance(axis, str) and axis.lower() in AXES:
        return AXES[axis.lower()]
    if isinstance(axis, (int, np.integer)) and 0 <= int(axis) <= 2:
        return int(axis)
    raise ValueError(f"axis: expected x, y or z, got {axis!r}")


@dataclass(frozen=True)
class BoxRegion:
    """The points with ``lower <= x <= upper`` componentwise (m)."""

    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self):
        lower, upper = _vector(self.lower, "lower"), _vector(self.upper, "upper")
        if np.any(upper <= lower):
            raise ValueError(
                f"upper: each component must exceed lower's, got lower {lower.tolist()}, upper {upper.tolist()}"
            )
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def volume(self) -> float:
        return float(np.prod(self.upper - self.lower))

    def contains(self, points) -> np.ndarray:
        """Boolean (k,) of the points (k, 3) inside."""
        points = np.asarray(points, float).reshape(-1, 3)
        return np.all((points >= self.lower) & (points <= self.upper), axis=1)


@dataclass(frozen=True)
class CylinderRegion:
    """The points within ``radius`` of the axis through ``centre`` along ``axis``,
    and within ``height / 2`` of ``centre`` along it (m)."""

    centre: np.ndarray
    axis: np.ndarray
    radius: float
    height: float

    def __post_init__(self):
        axis = _vector(self.axis, "axis")
        if not np.linalg.norm(axis) > 0.0:
            raise ValueError("axis: expected a non-zero direction, got (0, 0, 0)")
        object.__setattr__(self, "centre", _vector(self.centre, "centre"))
        object.__setattr__(self, "axis", axis / np.linalg.norm(axis))
        object.__setattr__(self, "radius", _length(self.radius, "radius"))
        object.__setattr__(self, "height", _length(self.height, "height"))

    @property
    def volume(self) -> float:
        return float(np.pi * self.radius**2 * self.height)

    def contains(self, points) -> np.ndarray:
        relative = np.asarray(points, float).reshape(-1, 3) - self.centre
        along = relative @ self.axis
        across = np.linalg.norm(relative - along[:, None] * self.axis, axis=1)
        return (np.abs(along) <= 0.5 * self.height) & (across <= self.radius)


@dataclass(frozen=True)
class SlabRegion:
    """The points with ``lower <= x[axis] <= upper`` (m); its volume is ``(upper -
    lower) * area``, ``area`` (m^2) being the cross-section the sample fills across
    the axis (a box's floor for a slab along z)."""

    axis: object
    lower: float
    upper: float
    area: float

    def __post_init__(self):
        object.__setattr__(self, "axis", axis_index(self.axis))
        if not (np.isfinite(self.lower) and np.isfinite(self.upper) and self.upper > self.lower):
            raise ValueError(f"upper: expected a bound above lower, got lower {self.lower!r}, upper {self.upper!r}")
        object.__setattr__(self, "area", _length(self.area, "area"))

    @property
    def volume(self) -> float:
        return float((self.upper - self.lower) * self.area)

    def contains(self, points) -> np.ndarray:
        coordinate = np.asarray(points, float).reshape(-1, 3)[:, axis_index(self.axis)]
        return (coordinate >= self.lower) & (coordinate <= self.upper)


Region = BoxRegion | CylinderRegion | SlabRegion


def parse_region(text: str) -> Region:
    """A region from the command line: ``box:x0,y0,z0,x1,y1,z1``,
    ``cylinder:cx,cy,cz,ax,ay,az,radius,height`` or ``slab:z,lower,upper,area``."""
    kind, _, numbers = text.partition(":")
    try:
        values = [float(v) for v in numbers.split(",")[1 if kind == "slab" else 0 :]] if numbers else []
    except ValueError:
        raise ValueError(f"region: cannot read the numbers of {text!r}") from None
    expected = {"box": 6, "cylinder": 8, "slab": 3}
    if kind not in expected or len(values) != expected[kind]:
        raise ValueError(
            f"region: expected box:x0,y0,z0,x1,y1,z1, cylinder:cx,cy,cz,ax,ay,az,R,H or "
            f"slab:AXIS,lower,upper,area; got {text!r}"
        )
    if kind == "box":
        return BoxRegion(np.array(values[:3]), np.array(values[3:]))
    if kind == "cylinder":
        return CylinderRegion(np.array(values[:3]), np.array(values[3:6]), values[6], values[7])
    return SlabRegion(numbers.split(",")[0], values[0], values[1], values[2])
