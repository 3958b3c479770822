"""What a wall offers the world, the run files and the pictures: the `Surface` protocol.

A wall (`granular.walls.Plane`, `Box`, `Cylinder`, `Panel`, `Cone`,
`granular.walls.meshes.TriangleMesh`, or a user's own class) is a `Surface`:

- ``surfaces()``: its contact surfaces, the objects the world asks for rows each step
  (`ContactSurface`); ``Contacts.wall`` numbers them across the world's walls in
  order, and ``surface_count`` says how many a wall has.
- ``rows(positions, radii, margin, t, h)`` of a contact surface: the spheres within
  ``margin`` of it at time ``t``, as a `ContactRows` (gaps, normals, the wall's
  material velocity at the contact points).
- ``describe()``: its description for run files (JSON), whose ``"type"`` names the
  class in the registry (`register_wall`); ``from_description`` builds the wall back
  (`wall_from_description`), so that ``inspect``, the pictures and the ParaView export
  read a run file without the code that made it.
- ``surface_names(start)``: a name for each contact surface, for messages and tables.
- ``shape(bounds)``: its geometry for renders and the ParaView export (`WallShape`);
  ``bounding_box()``: the box it spans (None when infinite); ``translated(shift)``: the
  wall moved by a frame's displacement.

A new wall type is one module: a class with these methods, decorated with
`register_wall`. Nothing else in the package switches on the wall's type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from ..errors import InvalidInputError


@dataclass(frozen=True)
class ContactRows:
    """The contact rows of one contact surface in one step (all arrays share their first axis).

    spheres : (k,) int64
        Sphere of each row.
    gaps : (k,) float
        ``D(t, q)`` (m): the distance from the sphere's centre to the surface minus its
        radius, the surface where it is at ``t`` (the end of the step).
    normals : (k, 3) float
        Unit normals into the admissible side at the contact (the row's gradient on the
        sphere's centre).
    velocities : (k, 3) float or None
        Velocity (m/s) of the wall's material at each contact point ``q - r n`` over the
        step (friction and restitution see the motion relative to it); None for a still
        surface or when no step was given.
    features : (k,) int64 or None
        For a surface that can touch one sphere at several places (a triangle mesh's
        concave corner): 0 for a sphere's nearest row, a distinct positive label for each
        further row of the same sphere, so that every row keeps its own identity across
        steps (warm starts, `granular.constraints.ConstraintSet.keys`). None: all 0.
    """

    spheres: np.ndarray
    gaps: np.ndarray
    normals: np.ndarray
    velocities: np.ndarray | None = None
    features: np.ndarray | None = None

    @staticmethod
    def empty() -> "ContactRows":
        return ContactRows(np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3)))

    @property
    def size(self) -> int:
        return int(self.spheres.size)


@dataclass
class WallShape:
    """A wall's geometry for pictures and the ParaView export.

    faces : list of ``(corners (v, 3), surface, normal (3,) or None)``
        Polygons (m), each with the offset of its contact surface within the wall
        (``Contacts.wall`` minus the wall's first surface) and the unit normal into the
        admissible side (None: two-sided).
    edges : (e, 2, 3)
        Segments drawn over the faces (outlines, rims, a mesh's sharp and boundary edges).
    faces_drawn : bool
        False: the pictures show the edges only (a drum's side would hide its contents);
        the export still writes the faces.
    """

    faces: list = field(default_factory=list)
    edges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))
    faces_drawn: bool = True


@runtime_checkable
class ContactSurface(Protocol):
    """One contact surface (one ``Contacts.wall`` index): its contact law (the four
    coefficients of `granular.contact_laws.SurfaceLaw`, None taking the world's) and its rows."""

    restitution: float | None
    friction: float | None
    rolling_friction: float | None
    tangential_restitution: float | None

    @property
    def moves(self) -> bool: ...

    def rows(
        self, positions: np.ndarray, radii: np.ndarray, margin: float, t: float, h: float | None = None
    ) -> ContactRows:
        """The rows of the spheres (positions (N, 3) m, radii (N,) m) whose gap at time
        ``t`` is at most ``margin`` (m); the material velocities over ``(t - h, t)``
        when ``h`` is given and the surface moves."""

    def label(self) -> str:
        """The surface in words, for error messages."""


@runtime_checkable
class Surface(Protocol):
    """A wall of a `granular.spheres.world.SphereWorld` (module docstring)."""

    kind: ClassVar[str]

    def surfaces(self) -> list: ...

    @property
    def surface_count(self) -> int: ...

    @property
    def moves(self) -> bool: ...

    def displacement(self, t: float) -> np.ndarray: ...

    def describe(self) -> dict: ...

    @classmethod
    def from_description(cls, description: dict) -> "Surface": ...

    def surface_names(self, start: int) -> list[str]: ...

    def shape(self, bounds: np.ndarray) -> WallShape: ...

    def bounding_box(self) -> np.ndarray | None: ...

    def translated(self, shift: np.ndarray) -> "Surface": ...


#: Wall classes by the ``"type"`` of their descriptions (`register_wall`).
WALL_KINDS: dict[str, type] = {}


def register_wall(cls: type) -> type:
    """Class decorator: ``cls`` (with a class attribute ``kind``) reads the descriptions
    whose ``"type"`` is ``cls.kind``. Raises `InvalidInputError` when another class
    already claims that kind."""
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise InvalidInputError(f"{cls.__name__} needs a class attribute 'kind' (the description's type)")
    if WALL_KINDS.get(kind, cls) is not cls:
        raise InvalidInputError(f"wall kind {kind!r} is already taken by {WALL_KINDS[kind].__name__}")
    WALL_KINDS[kind] = cls
    return cls


def _load_builtin_walls() -> None:
    """Import the modules that register the package's own walls."""
    import importlib

    for module in ("walls", "meshes"):
        try:
            importlib.import_module(f"{__package__}.{module}")
        except ModuleNotFoundError as error:  # a module not yet written in a partial install
            if error.name != f"{__package__}.{module}":
                raise


def wall_class(description) -> type | None:
    """The registered class of a wall description, None for an unknown or damaged one."""
    _load_builtin_walls()
    kind = description.get("type") if isinstance(description, dict) else None
    return WALL_KINDS.get(kind) if isinstance(kind, str) else None


def wall_from_description(description: dict):
    """The wall a description describes (``cls.from_description``), or None when its
    type is unknown (a file from a newer version, or damaged): callers then treat it
    as one nameless surface with no geometry. A wall whose velocity was a function is
    rebuilt with a stand-in that reports motion but never moves it: a run file keeps
    where the walls were in each frame, not their velocity functions."""
    cls = wall_class(description)
    if cls is None:
        return None
    try:
        return cls.from_description(description)
    except (KeyError, TypeError, ValueError, InvalidInputError):
        return None


def surface_count(description: dict) -> int:
    """How many contact surfaces (``Contacts.wall`` indices) a wall's description has
    (an unknown type: 1)."""
    wall = wall_from_description(description)
    return 1 if wall is None else wall.surface_count


def surface_names(descriptions: list) -> list[str]:
    """A name for each contact surface (``Contacts.wall`` index) of the wall
    descriptions ``descriptions`` (``system["walls"]``), in the world's order (each
    wall's ``surface_names``; an unknown one: "wall k")."""
    names: list[str] = []
    for description in descriptions or []:
        wall = wall_from_description(description)
        names += [f"wall {len(names)}"] if wall is None else wall.surface_names(len(names))
    return names


def first_surface(descriptions: list, index: int) -> int:
    """The ``Contacts.wall`` index of the first contact surface of ``descriptions[index]``."""
    return sum(surface_count(description) for description in descriptions[:index])


class RecordedVelocity:
    """The stand-in for a velocity function that a run file names but cannot hold:
    zero at every time (`wall_from_description`)."""

    def __call__(self, t):
        return np.zeros(3)
