"""Walls of revolution: the `Cylinder` (a drum, capped or not), its `CylinderSide`,
and the `Cone` of a funnel (conventions in `granular.walls`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ..drawing import walls as drawing
from ..contact_laws import SurfaceLaw
from ..errors import InvalidInputError
from .surfaces import WallShape, register_wall
from ..validation import as_number
from .common import (
    checked_angular_speed,
    described_velocity,
    motion_velocity,
    orthogonal_unit,
    positive_length,
    RowsNear,
    set_translation,
    Translation,
    Turning,
    unit_rows,
    unit_vector,
    vector3,
    with_motion,
)
from .planes import Plane


@register_wall
@dataclass(frozen=True)
class Cylinder(SurfaceLaw, Turning):
    """The inside of a circular cylinder: a drum, a silo, a pipe.

    Spheres stay within ``radius`` of the axis: the gap of sphere ``i`` is ``D =
    radius - |rho_i| - r_i`` (m), with ``rho_i`` the part of ``q_i - centre``
    orthogonal to the axis, and the normal into the admissible side is ``-rho_i /
    |rho_i|``. The wall is concave, so the linearised row ``D + h G u >= 0`` lets a
    sphere sliding along it at speed ``v`` sink by up to ``(h v)^2 / (2 (radius -
    r))`` in a step (second order in ``h``; the next step's gap starts from it).

    Parameters
    ----------
    centre : (3,) array
        The middle of the axis (m), at ``t = 0`` for a moving cylinder.
    axis : (3,) array
        Direction of the axis, non-zero; normalised here.
    radius : float
        Inner radius (m), positive.
    height : float or None
        Length along the axis (m), the cylinder spanning ``centre +- height/2 axis``;
        None: infinite (no caps).
    caps : bool
        For a finite cylinder: close both ends with planes (then the wall has three
        contact surfaces: side, the cap at ``-height/2``, the cap at ``+height/2``).
        ``False``: open ends; the side then holds only the spheres whose centres lie
        within its length (a sphere that leaves through an end is free).
    angular_velocity : float
        Spin (rad/s) about ``axis`` (right-handed), acting through friction: a
        rotating drum. The caps turn with the side.
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation (m/s), as for `Plane`.
    restitution, friction, rolling_friction, tangential_restitution : float or None, keyword-only
        The contact law (`granular.contact_laws.SurfaceLaw`), shared by the side and the caps.
    """

    kind: ClassVar[str] = "cylinder"

    centre: np.ndarray
    axis: np.ndarray
    radius: float
    height: float | None = None
    caps: bool = True
    angular_velocity: float = 0.0
    velocity: object = None

    def __post_init__(self):
        object.__setattr__(self, "centre", vector3(self.centre, "Cylinder centre"))
        object.__setattr__(self, "axis", unit_vector(self.axis, "Cylinder axis"))
        object.__setattr__(self, "radius", positive_length(self.radius, "Cylinder radius"))
        if self.height is not None:
            object.__setattr__(self, "height", positive_length(self.height, "Cylinder height"))
        object.__setattr__(self, "caps", bool(self.caps))
        object.__setattr__(self, "angular_velocity", checked_angular_speed(self.angular_velocity, "Cylinder"))
        self.check_law()
        set_translation(self, "Cylinder")

    @property
    def capped(self) -> bool:
        return self.caps and self.height is not None

    def surfaces(self) -> list:
        """The contact surfaces: the side (`CylinderSide`), then the caps when finite and
        capped, the one at ``-height/2`` first."""
        motion = self._translation if self._translation.moves else None
        half = None if self.height is None else 0.5 * self.height
        side = CylinderSide(self.centre, self.axis, self.radius, half, self.angular_velocity, motion, **self.law())
        if not self.capped:
            return [side]
        return [side] + [
            Plane(
                self.centre - sign * half * self.axis,
                sign * self.axis,
                velocity=motion,
                angular_velocity=sign * self.angular_velocity,
                **self.law(),
            )
            for sign in (1.0, -1.0)
        ]

    planes = surfaces

    @property
    def surface_count(self) -> int:
        return 3 if self.capped else 1

    @property
    def volume(self) -> float | None:
        """Inner volume (m^3) of a finite cylinder, None for an infinite one."""
        return None if self.height is None else float(np.pi * self.radius**2 * self.height)

    def describe(self) -> dict:
        description = {
            "type": "cylinder",
            "centre": self.centre.tolist(),
            "axis": self.axis.tolist(),
            "radius": float(self.radius),
            "height": None if self.height is None else float(self.height),
            "caps": bool(self.capped),
        }
        return with_motion(description, self._translation, self.angular_velocity)

    @classmethod
    def from_description(cls, description: dict) -> "Cylinder":
        return cls(
            description["centre"],
            description["axis"],
            description["radius"],
            description.get("height"),
            bool(description.get("caps", False)),
            description.get("angular_velocity", 0.0),
            described_velocity(description),
        )

    def surface_names(self, start: int) -> list[str]:
        return ["cylinder side"] + (["cylinder cap -", "cylinder cap +"] if self.capped else [])

    def rings(self, bounds: np.ndarray, segments: int) -> np.ndarray:
        """(2, segments, 3) the circles at the two ends: at ``centre -+ height/2 axis``,
        or, for an infinite cylinder, at the ends of the projection of ``bounds``."""
        if self.height is not None:
            ends = np.array([-0.5, 0.5]) * self.height
        else:
            ends = drawing.axis_extent(self.centre, self.axis, bounds)
        return drawing.rings(self.centre, self.axis, (self.radius, self.radius), ends, segments)

    def shape(self, bounds: np.ndarray, segments: int = 48) -> WallShape:
        """``segments`` quads of the side (surface 0), then, when capped, the cap at
        ``-height/2`` (1) and the one at ``+height/2`` (2); pictures draw the outlines only."""
        ring_pair = self.rings(bounds, segments)
        faces = [(quad, 0, None) for quad in drawing.band_quads(ring_pair)]
        if self.capped:
            faces += [(ring_pair[0], 1, self.axis), (ring_pair[1][::-1], 2, -self.axis)]
        return WallShape(faces, drawing.outlines([corners for corners, _, _ in faces]), faces_drawn=False)

    def bounding_box(self) -> np.ndarray | None:
        if self.height is None:
            return None
        ring_pair = self.rings(np.zeros((2, 3)), 16)
        return np.array([ring_pair.reshape(-1, 3).min(axis=0), ring_pair.reshape(-1, 3).max(axis=0)])

    def translated(self, shift) -> "Cylinder":
        return replace(self, centre=self.centre + np.asarray(shift, float))


@dataclass(frozen=True)
class CylinderSide(SurfaceLaw, RowsNear):
    """The side of a `Cylinder` as one contact surface (built by `Cylinder.surfaces`,
    with its contact law).

    ``half_height`` None: infinite; else the side acts on the spheres whose centres
    lie within ``half_height`` of ``centre`` along the axis. ``translation`` is the
    cylinder's `Translation` or None.
    """

    centre: np.ndarray
    axis: np.ndarray
    radius: float
    half_height: float | None
    angular_velocity: float
    translation: object
    #: A linearised row misses the side's curvature (`granular.spheres.world.SphereWorld.wall_rows_at`).
    curved: ClassVar[bool] = True

    @property
    def moves(self) -> bool:
        return self.translation is not None or self.angular_velocity != 0.0

    def displacement(self, t: float) -> np.ndarray:
        return np.zeros(3) if self.translation is None else self.translation.displacement(t)

    def at(self, t: float) -> "CylinderSide":
        """The still side where this one is at ``t`` (itself if it never translates)."""
        if self.translation is None:
            return self
        return replace(self, centre=self.centre + self.displacement(t), translation=None, angular_velocity=0.0)

    def gaps(self, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) and inward unit normals (N, 3); spheres beyond the length of
        an open finite side get an infinite gap. A centre on the axis takes any
        normal orthogonal to it (all are equally far from the side)."""
        relative = positions - self.centre
        along = relative @ self.axis
        rho = relative - along[:, None] * self.axis
        distance = np.linalg.norm(rho, axis=1)
        normals = unit_rows(-rho, distance, orthogonal_unit(self.axis))
        gaps = self.radius - distance - radii
        if self.half_height is not None:
            gaps = np.where(np.abs(along) <= self.half_height, gaps, np.inf)
        return gaps, normals

    def gaps_at(self, t: float, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`gaps` of the side where it is at ``t`` (`RowsNear.rows`)."""
        return self.at(t).gaps(positions, radii)

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the side's material at ``points`` (k, 3) over the step
        ending at ``t_next``: the mean translation plus ``omega axis x (x - c)``."""
        translation = self.translation if self.translation is not None else Translation(None, "Cylinder")
        return motion_velocity(translation, self.angular_velocity, self.axis, self.centre, points, t_next, h)

    def label(self) -> str:
        return (
            f"cylinder side of radius {self.radius} about the axis {self.axis.tolist()} through {self.centre.tolist()}"
        )


@register_wall
@dataclass(frozen=True)
class Cone(SurfaceLaw, RowsNear, Turning):
    """A conical funnel (a frustum), open at both ends, a thin two-sided shell.

    The shell joins the circle of radius ``lower_radius`` about ``axis`` through
    ``centre`` to the circle of radius ``upper_radius`` at ``centre + height axis``.
    A surface of revolution is nearest a point in the point's own meridian half-plane,
    so the gap of sphere ``i`` is the distance, in that half-plane, from its centre
    ``(rho_i, z_i)`` (distance to the axis, height along it) to the segment from
    ``(lower_radius, 0)`` to ``(upper_radius, height)``, minus ``r_i``; the normal is
    the unit vector from the nearest point of the segment to the centre, turned back
    into space. The rims are rounded lips (the segment's ends): a grain leaves
    through the lower opening when its diameter fits it. A centre on the axis takes
    any radial direction (all are equally far). Like a `Cylinder`'s side the shell is
    curved, so a linearised row lets a sphere sliding along it sink by a second-order
    amount in ``h`` in a step.

    Parameters
    ----------
    centre : (3,) array
        Centre of the lower rim (m), at ``t = 0`` for a moving cone.
    axis : (3,) array
        From the lower rim towards the upper one; normalised here.
    lower_radius, upper_radius : float
        Rim radii (m), >= 0, not both 0.
    height : float
        Distance between the rims along the axis (m), positive.
    angular_velocity : float
        Spin (rad/s) about the axis, felt through friction only.
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation (m/s), as for `Plane`.
    restitution, friction, rolling_friction, tangential_restitution : float or None, keyword-only
        The contact law (`granular.contact_laws.SurfaceLaw`).
    """

    kind: ClassVar[str] = "cone"
    surface_count: ClassVar[int] = 1
    #: A linearised row misses the shell's curvature (`granular.spheres.world.SphereWorld.wall_rows_at`).
    curved: ClassVar[bool] = True

    centre: np.ndarray
    axis: np.ndarray
    lower_radius: float
    upper_radius: float
    height: float
    angular_velocity: float = 0.0
    velocity: object = None

    def __post_init__(self):
        object.__setattr__(self, "centre", vector3(self.centre, "Cone centre"))
        object.__setattr__(self, "axis", unit_vector(self.axis, "Cone axis"))
        for name in ("lower_radius", "upper_radius"):
            value = as_number(getattr(self, name), f"Cone {name}", "a number of metres")
            if not (np.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"Cone {name} must be finite and >= 0, got {value} m")
            object.__setattr__(self, name, value)
        if self.lower_radius == 0.0 and self.upper_radius == 0.0:
            raise InvalidInputError("Cone needs a positive lower_radius or upper_radius")
        object.__setattr__(self, "height", positive_length(self.height, "Cone height"))
        object.__setattr__(self, "angular_velocity", checked_angular_speed(self.angular_velocity, "Cone"))
        self.check_law()
        set_translation(self, "Cone")

    def surfaces(self) -> list["Cone"]:
        return [self]

    def gaps(self, positions: np.ndarray, radii: np.ndarray, centre=None) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) and unit normals (N, 3) (class docstring), the lower rim's centre at ``centre``."""
        centre = self.centre if centre is None else centre
        relative = positions - centre
        z = relative @ self.axis
        radial = relative - z[:, None] * self.axis
        rho = np.linalg.norm(radial, axis=1)
        outward = unit_rows(radial, rho, orthogonal_unit(self.axis))
        start, direction = (
            np.array([self.lower_radius, 0.0]),
            np.array([self.upper_radius - self.lower_radius, self.height]),
        )
        point = np.column_stack([rho, z])
        fraction = np.clip((point - start) @ direction / (direction @ direction), 0.0, 1.0)
        offset = point - (start + fraction[:, None] * direction)
        distance = np.linalg.norm(offset, axis=1)
        # on the shell itself (an overlap of a whole radius): the side the axis is on
        inward = np.array([-direction[1], direction[0]]) / np.linalg.norm(direction)
        offset = unit_rows(offset, distance, inward)
        normals = offset[:, :1] * outward + offset[:, 1:] * self.axis
        return distance - radii, normals

    def gaps_at(self, t: float, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`gaps` of the cone where it is at ``t`` (`RowsNear.rows`)."""
        return self.gaps(
            positions, radii, self.centre + self.displacement(t) if self._translation.moves else self.centre
        )

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the shell at ``points`` (k, 3) over the step ending at
        ``t_next``: the mean translation plus ``omega axis x (x - c(t_next))``."""
        return motion_velocity(self._translation, self.angular_velocity, self.axis, self.centre, points, t_next, h)

    def label(self) -> str:
        return (
            f"cone from radius {self.lower_radius} at {self.centre.tolist()} to radius {self.upper_radius} "
            f"at height {self.height} along {self.axis.tolist()}"
        )

    def describe(self) -> dict:
        description = {
            "type": "cone",
            "centre": self.centre.tolist(),
            "axis": self.axis.tolist(),
            "lower_radius": self.lower_radius,
            "upper_radius": self.upper_radius,
            "height": self.height,
        }
        return with_motion(description, self._translation, self.angular_velocity)

    @classmethod
    def from_description(cls, description: dict) -> "Cone":
        return cls(
            description["centre"],
            description["axis"],
            description["lower_radius"],
            description["upper_radius"],
            description["height"],
            description.get("angular_velocity", 0.0),
            described_velocity(description),
        )

    def surface_names(self, start: int) -> list[str]:
        return [f"cone {start}"]

    def rings(self, segments: int) -> np.ndarray:
        return drawing.rings(
            self.centre, self.axis, (self.lower_radius, self.upper_radius), (0.0, self.height), segments
        )

    def shape(self, bounds: np.ndarray, segments: int = 48) -> WallShape:
        """``segments`` quads of the shell; pictures draw the rims and every sixth generator."""
        ring_pair = self.rings(segments)
        quads = drawing.band_quads(ring_pair)
        edges = [
            drawing.polygon_edges(ring_pair[0]),
            drawing.polygon_edges(ring_pair[1]),
            np.stack([ring_pair[0, ::6], ring_pair[1, ::6]], axis=1),
        ]
        return WallShape([(quad, 0, None) for quad in quads], np.concatenate(edges), faces_drawn=False)

    def bounding_box(self) -> np.ndarray:
        points = self.rings(16).reshape(-1, 3)
        return np.array([points.min(axis=0), points.max(axis=0)])

    def translated(self, shift) -> "Cone":
        return replace(self, centre=self.centre + np.asarray(shift, float))
