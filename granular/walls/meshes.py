"""Triangle-mesh walls: a drum with lifters, a mixer blade, a chute, a hopper from CAD.

A `TriangleMesh` is one contact surface (one ``Contacts.wall`` index) made of
triangles, each a thin two-sided sheet. The gap of a sphere is the distance from its
centre to the nearest point of the mesh (on a face, an edge or a vertex) minus its
radius, and each local minimum of that distance is one row
(`granular.walls.mesh_geometry`): a sphere resting on a flat triangulated floor has the
rows of a sphere on a `granular.walls.Plane`, one row across a convex edge or
vertex, one row per face in a concave corner. The triangles near each sphere are
found through a spatial index (`granular.walls.mesh_index`), so a step costs in proportion
to the spheres near the mesh, not to its size.

Motion. A mesh may translate (``velocity``: a constant or a function of time, as
for `Plane`) and turn at a constant ``angular_velocity`` (rad/s) about ``axis``
through ``centre`` (moving with the translation). At time ``t`` a point ``x_0`` of
the mesh as given is at ``R(t) (x_0 - centre) + centre + d(t)``, with ``R(t)`` the
rotation by ``omega t`` about the axis and ``d(t)`` the translation's displacement.
A step's rows see the mesh where it is at the end of the step (Maury's
``D(t_{n+1}, q^n)``, `granular.walls`), computed in the mesh's own frame (the
spheres' centres taken back by the inverse motion, so the index is built once), and
friction and restitution see the velocity of the mesh's material at the contact
point, ``w = mean translation + omega axis x (x_c - c(t_{n+1}))``.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..contact_laws import SurfaceLaw
from ..errors import InvalidInputError
from .mesh_geometry import FACE, Topology, merged
from .mesh_index import TriangleIndex
from .surfaces import ContactRows, WallShape, register_wall
from .common import (
    as_translation,
    checked_angular_speed,
    described_velocity,
    motion_velocity,
    Rotating,
    unit_vector,
    vector3,
)

#: A triangle whose area is below this fraction of the product of its two edges from
#: its first vertex (the sine of its angle there) is degenerate: it has no normal.
_DEGENERATE_SINE = 1e-12


def _mesh_arrays(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    """``vertices`` (V, 3) float and ``faces`` (F, 3) int64, checked, with vertices of
    identical coordinates merged (a mesh given as separate triangles, as STL stores
    them, then knows which triangles share an edge)."""
    try:
        vertices = np.asarray(vertices, dtype=float)
        faces_array = np.asarray(faces)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"TriangleMesh vertices and faces must be arrays: {error}") from None
    if vertices.ndim != 2 or vertices.shape[1] != 3 or vertices.shape[0] < 3:
        raise InvalidInputError(f"TriangleMesh vertices must have shape (V >= 3, 3) (m), got {vertices.shape}")
    if not np.all(np.isfinite(vertices)):
        raise InvalidInputError("TriangleMesh vertices must be finite")
    if faces_array.ndim != 2 or faces_array.shape[1] != 3 or faces_array.shape[0] < 1:
        raise InvalidInputError(
            f"TriangleMesh faces must have shape (F >= 1, 3) (vertex indices), got {faces_array.shape}"
        )
    if not np.issubdtype(faces_array.dtype, np.integer):
        raise InvalidInputError(f"TriangleMesh faces must be integer vertex indices, got dtype {faces_array.dtype}")
    faces_array = faces_array.astype(np.int64)
    bad = np.flatnonzero(np.any((faces_array < 0) | (faces_array >= vertices.shape[0]), axis=1))
    if bad.size:
        raise InvalidInputError(
            f"TriangleMesh face {bad[0]} names vertex {faces_array[bad[0]].tolist()} outside 0..{vertices.shape[0] - 1}"
        )
    unique, inverse = np.unique(vertices, axis=0, return_inverse=True)
    faces_array = inverse.reshape(-1)[faces_array]
    a, b, c = (unique[faces_array[:, k]] for k in range(3))
    area = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    scale = np.linalg.norm(b - a, axis=1) * np.linalg.norm(c - a, axis=1)
    degenerate = np.flatnonzero(~(area > _DEGENERATE_SINE * scale))
    if degenerate.size:
        raise InvalidInputError(
            f"TriangleMesh face {degenerate[0]} is degenerate (its corners "
            f"{np.array([a[degenerate[0]], b[degenerate[0]], c[degenerate[0]]]).tolist()} "
            "are on a line or coincide)"
        )
    return unique, faces_array


def rotation_matrix(axis: np.ndarray, angle: float) -> np.ndarray:
    """(3, 3) rotation by ``angle`` (rad) about the unit ``axis``, right-handed
    (Rodrigues' formula ``I + sin(a) K + (1 - cos(a)) K^2``, ``K`` the cross-product
    matrix of the axis)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


@register_wall
class TriangleMesh(SurfaceLaw, Rotating):
    """A wall made of triangles (module docstring).

    Parameters
    ----------
    vertices : (V, 3) array
        Corner coordinates (m), at ``t = 0`` for a moving mesh. Vertices with identical
        coordinates are merged.
    faces : (F, 3) int array
        Each triangle's three vertex indices. Triangles must not be degenerate. Their
        orientation does not matter (each triangle is two-sided).
    restitution, friction, rolling_friction, tangential_restitution : float or None
        The mesh's contact law (`granular.contact_laws.SurfaceLaw`; None: the world's,
        the sphere's restitution).
    velocity : None, (3,) array or callable ``t -> (3,)``
        Prescribed translation (m/s), as for `Plane`: a vibrating chute.
    angular_velocity : float
        Constant rotation (rad/s) about ``axis`` through ``centre``, right-handed: a
        drum with lifters, a mixer blade.
    axis : (3,) array
        The rotation axis (normalised here); used when ``angular_velocity != 0``.
    centre : (3,) array
        A point of the rotation axis (m) at ``t = 0``.
    name : str or None
        The surface's name in tables and messages (default "mesh k", k its
        ``Contacts.wall`` index).
    """

    kind = "mesh"
    surface_count = 1

    def __init__(
        self,
        vertices,
        faces,
        restitution=None,
        friction=None,
        rolling_friction=None,
        tangential_restitution=None,
        velocity=None,
        angular_velocity: float = 0.0,
        axis=(0.0, 0.0, 1.0),
        centre=(0.0, 0.0, 0.0),
        name: str | None = None,
    ):
        self.vertices, self.faces = _mesh_arrays(vertices, faces)
        SurfaceLaw.__init__(
            self,
            restitution=restitution,
            friction=friction,
            rolling_friction=rolling_friction,
            tangential_restitution=tangential_restitution,
        )
        self.check_law()
        self.angular_velocity = checked_angular_speed(angular_velocity, "TriangleMesh")
        self.axis = unit_vector(axis, "TriangleMesh axis")
        self.centre = vector3(centre, "TriangleMesh centre")
        self._translation = as_translation(velocity, "TriangleMesh")
        self.velocity = (
            velocity if self._translation.function is not None or velocity is None else self._translation.constant
        )
        if name is not None and not isinstance(name, str):
            raise InvalidInputError(f"TriangleMesh name must be a string, got {name!r}")
        self.name = name

    @classmethod
    def from_file(cls, path, scale: float = 1.0, **options) -> "TriangleMesh":
        """The mesh of an STL, OBJ or PLY file (any format trimesh reads), its
        coordinates multiplied by ``scale`` (m per file unit: 1e-3 for a CAD file in
        millimetres); ``options`` as for `TriangleMesh`. Read by trimesh, which merges
        the vertices STL repeats per triangle and triangulates polygons. Raises
        `InvalidInputError` for a missing or unreadable file or one without triangles."""
        try:
            import trimesh
        except ImportError:  # a declared dependency: only a broken install lacks it
            raise InvalidInputError("reading mesh files needs trimesh: pip install trimesh") from None
        path = Path(path)
        if not path.is_file():
            raise InvalidInputError(f"no mesh file at {path}")
        try:
            mesh = trimesh.load(path, force="mesh", process=True)
        except Exception as error:  # trimesh raises many kinds on a damaged file
            raise InvalidInputError(f"cannot read the mesh in {path}: {error}") from None
        faces = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))))
        if faces.ndim != 2 or faces.shape[0] == 0:
            raise InvalidInputError(f"{path} holds no triangles")
        try:
            factor = float(scale)
        except (TypeError, ValueError):
            raise InvalidInputError(f"scale must be a positive number (m per file unit), got {scale!r}") from None
        if not (np.isfinite(factor) and factor > 0.0):
            raise InvalidInputError(f"scale must be positive and finite, got {factor}")
        return cls(np.asarray(mesh.vertices, float) * factor, faces, **options)

    # -- geometry -------------------------------------------------------------------
    @functools.cached_property
    def topology(self) -> Topology:
        """Normals, edges and their triangles (`granular.walls.mesh_geometry.Topology`)."""
        return Topology(self.vertices, self.faces)

    @functools.cached_property
    def index(self) -> TriangleIndex:
        """The spatial index of the triangles (`granular.walls.mesh_index.TriangleIndex`)."""
        return TriangleIndex(self.topology)

    def rotation(self, t: float) -> np.ndarray:
        """(3, 3) the rotation of the mesh at ``t`` (the identity when it does not turn)."""
        if self.angular_velocity == 0.0:
            return np.eye(3)
        return rotation_matrix(self.axis, self.angular_velocity * float(t))

    def surfaces(self) -> list["TriangleMesh"]:
        return [self]

    # -- rows -----------------------------------------------------------------------
    def rows(self, positions, radii, margin, t, h=None) -> ContactRows:
        """`granular.walls.surfaces.ContactSurface.rows`: the mesh where it is at ``t`` (module docstring)."""
        if self.moves:
            rotation, origin = self.rotation(t), self.centre + self.displacement(t)
            local = (positions - origin) @ rotation + self.centre  # R^T (q - c(t)) + c_0, row-wise
        else:
            local = positions
        spheres, triangles, gaps, normals = self._local_rows(local, radii, margin)
        features = _ranks(spheres)
        if not self.moves:
            return ContactRows(spheres, gaps, normals, None, features)
        normals = normals @ rotation.T
        velocities = None
        if h is not None:
            points = positions[spheres] - radii[spheres, None] * normals
            velocities = motion_velocity(self._translation, self.angular_velocity, self.axis, self.centre, points, t, h)
        return ContactRows(spheres, gaps, normals, velocities, features)

    def _local_rows(self, positions, radii, margin):
        """``(spheres, triangles, gaps, normals)`` of the mesh as given (`granular.walls.mesh_geometry`):
        one row per local minimum of each sphere's distance within ``margin``, sorted
        by sphere then triangle."""
        spheres, triangles, features, points, distance, height = self.index.near(positions, radii, margin)
        if spheres.size == 0:
            return spheres, triangles, np.zeros(0), np.zeros((0, 3))
        q = positions[spheres]
        on_face = features == FACE
        face_normal = self.topology.normals[triangles]
        gaps = np.where(on_face, np.abs(height), distance) - radii[spheres]
        side = np.where(height < 0.0, -1.0, 1.0)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            along = (q - points) / distance[:, None]
        normals = np.where(on_face[:, None] | (distance[:, None] == 0.0), side * face_normal, along)
        points = np.where(on_face[:, None], q - height[:, None] * face_normal, points)
        order = np.lexsort((triangles, gaps, spheres))
        kept = order[merged(spheres[order], points[order], gaps[order], radii)]
        kept = kept[np.lexsort((triangles[kept], spheres[kept]))]
        return spheres[kept], triangles[kept], gaps[kept], normals[kept]

    def label(self) -> str:
        return f"{self.name or 'triangle mesh'} of {len(self.faces)} triangles"

    # -- description and drawing -----------------------------------------------------
    def describe(self) -> dict:
        description = {"type": "mesh", "vertices": self.vertices.tolist(), "faces": self.faces.tolist()}
        if self.name is not None:
            description["name"] = self.name
        if self._translation.moves:
            description["velocity"] = self._translation.describe()
        if self.angular_velocity != 0.0:
            description.update(
                angular_velocity=self.angular_velocity, axis=self.axis.tolist(), centre=self.centre.tolist()
            )
        return description

    @classmethod
    def from_description(cls, description: dict) -> "TriangleMesh":
        return cls(
            description["vertices"],
            description["faces"],
            velocity=described_velocity(description),
            angular_velocity=description.get("angular_velocity", 0.0),
            axis=description.get("axis", (0.0, 0.0, 1.0)),
            centre=description.get("centre", (0.0, 0.0, 0.0)),
            name=description.get("name"),
        )

    def surface_names(self, start: int) -> list[str]:
        return [self.name or f"mesh {start}"]

    def shape(self, bounds: np.ndarray) -> WallShape:
        """Each triangle (two-sided), and the boundary and sharp edges (`Topology.sharp_edges`)."""
        corners = self.vertices[self.faces]
        edges = self.vertices[self.topology.sharp_edges]
        return WallShape([(triangle, 0, None) for triangle in corners], edges.reshape(-1, 2, 3))

    def bounding_box(self) -> np.ndarray:
        return np.array([self.vertices.min(axis=0), self.vertices.max(axis=0)])

    def placed(self, shift, rotation) -> "TriangleMesh":
        """This mesh turned by ``rotation`` (3, 3) about its centre and moved by ``shift``
        (3,) (m): where a turning mesh is at a frame (``Trajectory.wall_rotations``),
        for drawing."""
        rotation = np.asarray(rotation, float).reshape(3, 3)
        moved = self.translated(shift)
        moved.vertices = (self.vertices - self.centre) @ rotation.T + self.centre + np.asarray(shift, float)
        return moved

    def translated(self, shift) -> "TriangleMesh":
        shift = np.asarray(shift, float)
        moved = TriangleMesh.__new__(TriangleMesh)
        moved.__dict__.update({key: value for key, value in self.__dict__.items() if key not in ("topology", "index")})
        moved.vertices, moved.centre = self.vertices + shift, self.centre + shift
        return moved


def _ranks(spheres: np.ndarray) -> np.ndarray:
    """Position (k,) of each row among its sphere's rows (rows sorted by sphere): 0 for
    the first (`granular.walls.surfaces.ContactRows.features`)."""
    if spheres.size == 0:
        return np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, spheres[1:] != spheres[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, spheres.size]))
    return np.arange(spheres.size, dtype=np.int64) - first
