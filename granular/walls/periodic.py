"""Periodic boundary conditions (`PeriodicBox`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InvalidInputError
from .surfaces import WallShape, register_wall
from .common import vector3


@register_wall
@dataclass(frozen=True)
class PeriodicBox:
    """Periodic boundary conditions along chosen axes.

    Positions along a periodic axis are wrapped into ``[lower, upper)`` after every
    step; pair vectors use the minimum-image convention. The box must be larger
    than twice the largest sphere diameter plus the search margin along each
    periodic axis.

    Parameters
    ----------
    lower, upper : (3,) arrays
        The periodic cell (m). Components along non-periodic axes are ignored.
    axes : sequence of int
        The periodic axes, a subset of ``(0, 1, 2)``.
    """

    kind: ClassVar[str] = "periodic"
    surface_count: ClassVar[int] = 0

    lower: np.ndarray
    upper: np.ndarray
    axes: tuple = (0, 1, 2)

    def __post_init__(self):
        lower = vector3(self.lower, "PeriodicBox lower")
        upper = vector3(self.upper, "PeriodicBox upper")
        axes = tuple(sorted(set(int(a) for a in self.axes)))
        if not axes or any(a not in (0, 1, 2) for a in axes):
            raise InvalidInputError(f"PeriodicBox axes must be a non-empty subset of (0, 1, 2), got {self.axes}")
        if not np.all(upper[list(axes)] > lower[list(axes)]):
            raise InvalidInputError("PeriodicBox needs lower < upper along its periodic axes")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "axes", axes)

    @property
    def lengths(self) -> np.ndarray:
        """(3,) period along each axis, ``inf`` along non-periodic axes."""
        lengths = np.full(3, np.inf)
        for a in self.axes:
            lengths[a] = self.upper[a] - self.lower[a]
        return lengths

    def check_cell(self, radii: np.ndarray, margin: float) -> None:
        """`InvalidInputError` unless every periodic length exceeds twice the largest
        diameter plus ``margin`` (m): a sphere must not meet two images of one other
        sphere, nor its own image, within the neighbour search's reach."""
        reach = 2.0 * (2.0 * float(radii.max()) + margin)
        for axis in self.axes:
            if self.lengths[axis] <= reach:
                raise InvalidInputError(
                    f"periodic cell length {self.lengths[axis]:.6g} m along axis {axis} must exceed twice the "
                    f"largest diameter plus the search margin ({reach:.6g} m)"
                )

    def wrap(self, positions: np.ndarray) -> np.ndarray:
        """Positions (N, 3) wrapped into the cell along the periodic axes."""
        wrapped = positions.copy()
        for a in self.axes:
            length = self.upper[a] - self.lower[a]
            wrapped[:, a] = self.lower[a] + np.mod(positions[:, a] - self.lower[a], length)
        return wrapped

    def minimum_image(self, vectors: np.ndarray) -> np.ndarray:
        """Pair vectors (M, 3) reduced to their shortest periodic image."""
        reduced = vectors.copy()
        for a in self.axes:
            length = self.upper[a] - self.lower[a]
            reduced[:, a] -= length * np.round(reduced[:, a] / length)
        return reduced

    def describe(self) -> dict:
        return {"type": "periodic", "lower": self.lower.tolist(), "upper": self.upper.tolist(), "axes": list(self.axes)}

    @classmethod
    def from_description(cls, description: dict) -> "PeriodicBox":
        return cls(description["lower"], description["upper"], tuple(description.get("axes", (0, 1, 2))))

    def surfaces(self) -> list:
        return []

    def surface_names(self, start: int) -> list[str]:
        return []

    def shape(self, bounds: np.ndarray) -> WallShape:
        """Nothing: the pictures draw the cell from the system's ``"periodic"`` entry."""
        return WallShape()

    def bounding_box(self) -> np.ndarray:
        return np.array([self.lower, self.upper])

    def translated(self, shift) -> "PeriodicBox":
        return self
