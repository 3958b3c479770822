"""Flat walls: the infinite `Plane`, the `Box` of planes, the finite rectangular
`Panel` and the `Polygon` of flat faces (conventions in `granular.walls`)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace
from typing import ClassVar

import numpy as np

from ..drawing import walls as drawing
from ..contact_laws import SurfaceLaw
from ..errors import InvalidInputError
from .surfaces import WallShape, register_wall
from .common import (
    checked_angular_speed,
    described_velocity,
    motion_velocity,
    names_of_normal,
    RowsNear,
    set_translation,
    Translating,
    Turning,
    unit_vector,
    vector3,
    with_motion,
)


@register_wall
@dataclass(frozen=True)
class Plane(SurfaceLaw, RowsNear, Turning):
    """An infinite plane wall, still or moving.

    Parameters
    ----------
    point : (3,) array
        A point of the plane (m), at ``t = 0`` for a moving plane.
    normal : (3,) array
        Normal pointing to the admissible side; normalised here.
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation velocity (m/s): a piston (along the normal), a shear
        wall (along the plane). ``None``: the plane stays put.
    angular_velocity : float
        Spin (rad/s) about the normal through ``point`` (right-handed): a turntable,
        or the end cap of a turning `Cylinder`. It only acts through friction.
    restitution, friction, rolling_friction, tangential_restitution : float or None, keyword-only
        The contact law of sphere-plane contacts (`granular.contact_laws.SurfaceLaw`;
        None: the world's). Rolling resistance resists the sphere's own rolling, as
        on a still plane; restitution acts on the velocity relative to a moving plane.
    """

    kind: ClassVar[str] = "plane"
    surface_count: ClassVar[int] = 1

    point: np.ndarray
    normal: np.ndarray
    _: KW_ONLY
    velocity: object = None
    angular_velocity: float = 0.0

    def __post_init__(self):
        name = type(self).__name__
        object.__setattr__(self, "point", vector3(self.point, f"{name} point"))
        object.__setattr__(self, "normal", unit_vector(self.normal, f"{name} normal"))
        self.check_law()
        object.__setattr__(self, "angular_velocity", checked_angular_speed(self.angular_velocity, name))
        set_translation(self, name)

    def surfaces(self) -> list["Plane"]:
        """The contact surfaces of this wall (one per ``Contacts.wall`` index)."""
        return [self]

    planes = surfaces

    def at(self, t: float) -> "Plane":
        """The still plane where this one is at time ``t`` (itself if it never moves)."""
        if not self.moves:
            return self
        return replace(self, point=self.point + self.displacement(t), velocity=None, angular_velocity=0.0)

    def gaps(self, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) of spheres at ``positions`` (N, 3) with ``radii`` (N,), and the
        unit normals (N, 3) into the admissible side (a read-only broadcast)."""
        gaps = (positions - self.point) @ self.normal - radii
        return gaps, np.broadcast_to(self.normal, positions.shape)

    def gaps_at(self, t: float, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`gaps` of the plane where it is at ``t`` (`RowsNear.rows`)."""
        return self.at(t).gaps(positions, radii)

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the wall's material at ``points`` (k, 3) over the
        step ``(t_next - h, t_next)``: mean translation plus the spin about the normal
        through the point's position at ``t_next``."""
        return motion_velocity(self._translation, self.angular_velocity, self.normal, self.point, points, t_next, h)

    def label(self) -> str:
        return f"plane through {self.point.tolist()} with normal {self.normal.tolist()}"

    def describe(self) -> dict:
        description = {"type": "plane", "point": self.point.tolist(), "normal": self.normal.tolist()}
        return with_motion(description, self._translation, self.angular_velocity)

    @classmethod
    def from_description(cls, description: dict) -> "Plane":
        return cls(
            description["point"],
            description["normal"],
            velocity=described_velocity(description),
            angular_velocity=description.get("angular_velocity", 0.0),
        )

    def surface_names(self, start: int) -> list[str]:
        """ "floor" for a still plane facing +z, else its index and normal."""
        moving = " moving" if self._translation.moves else ""
        if np.allclose(self.normal, (0, 0, 1)) and not moving:
            return ["floor"]
        return [f"plane {start}{moving} (normal {names_of_normal(self.normal)})"]

    def shape(self, bounds: np.ndarray) -> WallShape:
        """The rectangle of the plane that covers the projection of ``bounds`` (2, 3)."""
        patch = drawing.plane_patch(self.point, self.normal, bounds)
        return WallShape([(patch, 0, self.normal)], drawing.polygon_edges(patch))

    def bounding_box(self) -> None:
        return None

    def translated(self, shift) -> "Plane":
        return replace(self, point=self.point + np.asarray(shift, float))


@register_wall
@dataclass(frozen=True)
class Box(SurfaceLaw, Translating):
    """An axis-aligned box container: spheres stay inside ``[lower, upper]``.

    Parameters
    ----------
    lower, upper : (3,) arrays
        Opposite corners (m), ``lower < upper`` componentwise, at ``t = 0``.
    open_top : bool
        Leave out the face ``z = upper[2]`` (a container open to the sky).
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation of the whole box (m/s), as for `Plane`: a shaken box.
    restitution, friction, rolling_friction, tangential_restitution : float or None, keyword-only
        The contact law (`granular.contact_laws.SurfaceLaw`), shared by the faces.
    """

    kind: ClassVar[str] = "box"

    lower: np.ndarray
    upper: np.ndarray
    open_top: bool = False
    _: KW_ONLY
    velocity: object = None

    def __post_init__(self):
        lower = vector3(self.lower, "Box lower")
        upper = vector3(self.upper, "Box upper")
        if not np.all(upper > lower):
            raise InvalidInputError(f"Box needs lower < upper componentwise, got {lower} and {upper}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "open_top", bool(self.open_top))
        self.check_law()
        set_translation(self, "Box")

    def surfaces(self) -> list[Plane]:
        """The faces, per axis the lower one then the upper one (not the open top);
        a moving box's faces share its translation."""
        motion = self._translation if self._translation.moves else None
        faces = []
        for axis in range(3):
            normal = np.zeros(3)
            normal[axis] = 1.0
            faces.append(Plane(self.lower, normal, velocity=motion, **self.law()))
            if not (self.open_top and axis == 2):
                faces.append(Plane(self.upper, -normal, velocity=motion, **self.law()))
        return faces

    planes = surfaces

    @property
    def surface_count(self) -> int:
        return 5 if self.open_top else 6

    @property
    def volume(self) -> float:
        return float(np.prod(self.upper - self.lower))

    def describe(self) -> dict:
        description = {
            "type": "box",
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "open_top": bool(self.open_top),
        }
        return with_motion(description, self._translation)

    @classmethod
    def from_description(cls, description: dict) -> "Box":
        return cls(
            description["lower"],
            description["upper"],
            bool(description.get("open_top", False)),
            velocity=described_velocity(description),
        )

    def surface_names(self, start: int) -> list[str]:
        """The faces by side: "box x-min", "box x-max", ..., "floor", "box top"."""
        names, axes = [], "xyz"
        for axis in range(3):
            names.append("floor" if axis == 2 else f"box {axes[axis]}-min")
            if not (self.open_top and axis == 2):
                names.append("box top" if axis == 2 else f"box {axes[axis]}-max")
        return names

    def shape(self, bounds: np.ndarray) -> WallShape:
        """The faces (not an open top), with their outlines."""
        faces = drawing.box_faces(self.lower, self.upper)
        if self.open_top:
            faces = faces[:5]  # the upper z face is the last (box_faces' order, surfaces')
        return WallShape(
            [(corners, f, normal) for f, (corners, normal) in enumerate(faces)],
            drawing.outlines([corners for corners, _ in faces]),
        )

    def bounding_box(self) -> np.ndarray:
        return np.array([self.lower, self.upper])

    def translated(self, shift) -> "Box":
        shift = np.asarray(shift, float)
        return replace(self, lower=self.lower + shift, upper=self.upper + shift)


@register_wall
@dataclass(frozen=True)
class Panel(SurfaceLaw, RowsNear, Translating):
    """A finite rectangle, a thin two-sided sheet: a hopper's flank, a baffle, a chute.

    The rectangle is ``corner + s along + w across`` for ``0 <= s, w <= 1``. The gap
    of sphere ``i`` is its centre's distance to the nearest point ``c`` of the
    rectangle minus its radius, and the row's normal is ``(q_i - c) / |q_i - c|``
    (Ericson, *Real-Time Collision Detection*, Morgan Kaufmann 2005, section 5.1.4:
    the closest point of a rectangle clamps the centre's coordinates along its edges).
    Over the face (``c`` inside) the gap is the plane distance ``|n . (q_i -
    corner)| - r_i`` and the normal ``+-n``, computed as a `Plane` computes them; past
    an edge the rectangle's rim is a rounded lip, and a sphere can sit on either side.

    Parameters
    ----------
    corner : (3,) array
        A corner (m), at ``t = 0`` for a moving panel.
    along, across : (3,) arrays
        The two edges from ``corner`` (m), non-zero and orthogonal (to 1e-9 of the
        product of their lengths).
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation (m/s), as for `Plane`: a vibrating chute.
    restitution, friction, rolling_friction, tangential_restitution : float or None, keyword-only
        The contact law (`granular.contact_laws.SurfaceLaw`).
    """

    kind: ClassVar[str] = "panel"
    surface_count: ClassVar[int] = 1

    corner: np.ndarray
    along: np.ndarray
    across: np.ndarray
    _: KW_ONLY
    velocity: object = None

    def __post_init__(self):
        object.__setattr__(self, "corner", vector3(self.corner, "Panel corner"))
        along, across = vector3(self.along, "Panel along"), vector3(self.across, "Panel across")
        lengths = np.linalg.norm(along), np.linalg.norm(across)
        if min(lengths) == 0.0:
            raise InvalidInputError("Panel edges along and across must be non-zero (m)")
        if abs(float(along @ across)) > 1e-9 * lengths[0] * lengths[1]:
            raise InvalidInputError(
                f"Panel edges along {along.tolist()} and across {across.tolist()} must be orthogonal (a rectangle)"
            )
        object.__setattr__(self, "along", along)
        object.__setattr__(self, "across", across)
        self.check_law()
        set_translation(self, "Panel")

    @property
    def normal(self) -> np.ndarray:
        """The unit normal ``along x across`` (the side the panel's drawing faces)."""
        return unit_vector(np.cross(self.along, self.across), "Panel normal")

    def surfaces(self) -> list["Panel"]:
        return [self]

    def gaps(self, positions: np.ndarray, radii: np.ndarray, corner=None) -> tuple[np.ndarray, np.ndarray]:
        """Gaps (N,) (m) and unit normals (N, 3) (class docstring), the corner at ``corner``."""
        corner = self.corner if corner is None else corner
        relative = positions - corner
        lengths = np.array([np.linalg.norm(self.along), np.linalg.norm(self.across)])
        units = np.array([self.along / lengths[0], self.across / lengths[1]])
        coordinates = relative @ units.T
        clamped = np.clip(coordinates, 0.0, lengths)
        normal = self.normal
        height = relative @ normal
        offset = relative - clamped @ units
        distance = np.linalg.norm(offset, axis=1)
        inside = np.all(clamped == coordinates, axis=1) | (distance == 0.0)
        side = np.where(height < 0.0, -1.0, 1.0)
        gaps = np.where(inside, np.abs(height), distance) - radii
        normals = np.where(
            inside[:, None], side[:, None] * normal, offset / np.where(distance > 0.0, distance, 1.0)[:, None]
        )
        return gaps, normals

    def gaps_at(self, t: float, positions: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`gaps` of the panel where it is at ``t`` (`RowsNear.rows`)."""
        return self.gaps(positions, radii, self.corner + self.displacement(t) if self.moves else self.corner)

    def surface_velocity(self, points: np.ndarray, t_next: float, h: float) -> np.ndarray:
        """Velocity (k, 3) (m/s) of the panel at ``points`` (k, 3) over the step ending
        at ``t_next``: its mean translation (it does not turn)."""
        return motion_velocity(self._translation, 0.0, self.normal, self.corner, points, t_next, h)

    def label(self) -> str:
        return f"panel at {self.corner.tolist()} with edges {self.along.tolist()} and {self.across.tolist()}"

    def corners(self) -> np.ndarray:
        """(4, 3) the rectangle's corners in order (m)."""
        return self.corner + np.array([np.zeros(3), self.along, self.along + self.across, self.across])

    def describe(self) -> dict:
        description = {
            "type": "panel",
            "corner": self.corner.tolist(),
            "along": self.along.tolist(),
            "across": self.across.tolist(),
        }
        return with_motion(description, self._translation)

    @classmethod
    def from_description(cls, description: dict) -> "Panel":
        return cls(
            description["corner"], description["along"], description["across"], velocity=described_velocity(description)
        )

    def surface_names(self, start: int) -> list[str]:
        return [f"panel {start}"]

    def shape(self, bounds: np.ndarray) -> WallShape:
        corners = self.corners()
        return WallShape([(corners, 0, None)], drawing.polygon_edges(corners))

    def bounding_box(self) -> np.ndarray:
        corners = self.corners()
        return np.array([corners.min(axis=0), corners.max(axis=0)])

    def translated(self, shift) -> "Panel":
        return replace(self, corner=self.corner + np.asarray(shift, float))


@register_wall
@dataclass(frozen=True)
class Polygon:
    """A flat polygon as run files of earlier versions describe a finite panel
    (``{"type": "polygon", "vertices": [...], "normal": [...]}``): read for names and
    pictures only (one contact surface; it has no rows)."""

    kind: ClassVar[str] = "polygon"
    surface_count: ClassVar[int] = 1

    vertices: np.ndarray
    normal: np.ndarray | None = None

    @classmethod
    def from_description(cls, description: dict) -> "Polygon":
        vertices = np.asarray(description["vertices"], float)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or len(vertices) < 3:
            raise InvalidInputError(f"polygon vertices must have shape (v >= 3, 3), got {vertices.shape}")
        normal = description.get("normal")
        return cls(vertices, None if normal is None else np.asarray(normal, float))

    moves = False

    def surfaces(self) -> list:
        raise InvalidInputError("a polygon read from a run file is for pictures only; build a Panel to simulate")

    def displacement(self, t: float) -> np.ndarray:
        return np.zeros(3)

    def describe(self) -> dict:
        description = {"type": "polygon", "vertices": self.vertices.tolist()}
        if self.normal is not None:
            description["normal"] = self.normal.tolist()
        return description

    def surface_names(self, start: int) -> list[str]:
        return [f"wall {start}"]

    def shape(self, bounds: np.ndarray) -> WallShape:
        normal = (
            self.normal
            if self.normal is not None
            else np.cross(self.vertices[1] - self.vertices[0], self.vertices[2] - self.vertices[0])
        )
        return WallShape([(self.vertices, 0, drawing.unit(normal))], drawing.polygon_edges(self.vertices))

    def bounding_box(self) -> np.ndarray:
        return np.array([self.vertices.min(axis=0), self.vertices.max(axis=0)])

    def translated(self, shift) -> "Polygon":
        return replace(self, vertices=self.vertices + np.asarray(shift, float))
