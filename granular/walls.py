"""Walls: infinite planes, axis-aligned box containers and periodic boxes.

Conventions (those of the whole package): a plane through ``point`` with unit ``normal``
admits the spheres on the side the normal points to; the gap of sphere ``i`` is
``D = normal . (q_i - point) - r_i`` (m), admissible when ``D >= 0``.
A `Box` is the set of planes of its faces, normals pointing inwards.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InvalidInputError


def _vector3(value, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != (3,):
        raise InvalidInputError(f"{name} must have shape (3,), got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidInputError(f"{name} must be finite, got {array}")
    return array


def _restitution(value, name: str) -> float | None:
    if value is None:
        return None
    e = float(value)
    if not 0.0 <= e <= 1.0:
        raise InvalidInputError(f"{name} restitution must lie in [0, 1], got {e}")
    return e


def _check_rolling(value, name: str) -> None:
    if value is not None and not (np.isfinite(value) and value >= 0.0):
        raise InvalidInputError(f"{name} rolling_friction must be finite and >= 0, got {value}")


@dataclass(frozen=True)
class Plane:
    """An infinite plane wall.

    Parameters
    ----------
    point : (3,) array
        A point of the plane (m).
    normal : (3,) array
        Normal pointing to the admissible half-space; normalised here.
    restitution : float or None
        Coefficient of restitution of sphere-plane impacts; ``None`` uses the
        sphere's coefficient.
    friction : float or None
        Coulomb coefficient of sphere-plane contacts; ``None`` uses the world's.
    rolling_friction : float or None
        Rolling resistance coefficient ``mu_r`` (dimensionless) of sphere-plane
        contacts: torque impulse at most ``mu_r r lambda_N``; ``None`` uses the world's.
    """

    point: np.ndarray
    normal: np.ndarray
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None

    def __post_init__(self):
        point = _vector3(self.point, "Plane point")
        normal = _vector3(self.normal, "Plane normal")
        length = np.linalg.norm(normal)
        if length == 0.0:
            raise InvalidInputError("Plane normal must be non-zero")
        object.__setattr__(self, "point", point)
        object.__setattr__(self, "normal", normal / length)
        object.__setattr__(self, "restitution", _restitution(self.restitution, "Plane"))
        if self.friction is not None and not self.friction >= 0.0:
            raise InvalidInputError(f"Plane friction must be >= 0, got {self.friction}")
        _check_rolling(self.rolling_friction, "Plane")

    def planes(self) -> list["Plane"]:
        return [self]

    def describe(self) -> dict:
        return {"type": "plane", "point": self.point.tolist(), "normal": self.normal.tolist()}


@dataclass(frozen=True)
class Box:
    """An axis-aligned box container: spheres stay inside ``[lower, upper]``.

    Parameters
    ----------
    lower, upper : (3,) arrays
        Opposite corners (m), ``lower < upper`` componentwise.
    open_top : bool
        Leave out the face ``z = upper[2]`` (a container open to the sky).
    restitution, friction, rolling_friction : float or None
        As for `Plane`, shared by the faces.
    """

    lower: np.ndarray
    upper: np.ndarray
    open_top: bool = False
    restitution: float | None = None
    friction: float | None = None
    rolling_friction: float | None = None

    def __post_init__(self):
        lower = _vector3(self.lower, "Box lower")
        upper = _vector3(self.upper, "Box upper")
        if not np.all(upper > lower):
            raise InvalidInputError(f"Box needs lower < upper componentwise, got {lower} and {upper}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "restitution", _restitution(self.restitution, "Box"))
        if self.friction is not None and not self.friction >= 0.0:
            raise InvalidInputError(f"Box friction must be >= 0, got {self.friction}")
        _check_rolling(self.rolling_friction, "Box")

    def planes(self) -> list[Plane]:
        faces = []
        for axis in range(3):
            normal = np.zeros(3)
            normal[axis] = 1.0
            faces.append(Plane(self.lower, normal, self.restitution, self.friction, self.rolling_friction))
            if not (self.open_top and axis == 2):
                faces.append(Plane(self.upper, -normal, self.restitution, self.friction, self.rolling_friction))
        return faces

    @property
    def volume(self) -> float:
        return float(np.prod(self.upper - self.lower))

    def describe(self) -> dict:
        return {"type": "box", "lower": self.lower.tolist(), "upper": self.upper.tolist(),
                "open_top": bool(self.open_top)}


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

    lower: np.ndarray
    upper: np.ndarray
    axes: tuple = (0, 1, 2)

    def __post_init__(self):
        lower = _vector3(self.lower, "PeriodicBox lower")
        upper = _vector3(self.upper, "PeriodicBox upper")
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
        return {"type": "periodic", "lower": self.lower.tolist(), "upper": self.upper.tolist(),
                "axes": list(self.axes)}
