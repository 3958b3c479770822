"""Sphere-triangle mesh contact geometry: closest points, and one row per contact.

Closest point. The point ``c`` of triangle ``(a, b, c)`` nearest a centre ``q`` lies
in one of seven Voronoi regions of the triangle: a vertex, an edge or the face.
`closest_points` classifies ``q`` by the signs of dot products of ``q - a`` etc.
with the edges, and projects onto the feature of its region (Ericson, *Real-Time
Collision Detection*, Morgan Kaufmann 2005, section 5.1.5, ``ClosestPtPointTriangle``),
vectorised over candidate pairs.

One row per contact. The gap of a sphere to a mesh is the distance from its centre
to the mesh surface minus its radius; a contact is a *local minimum* of the distance
from ``q`` to the surface, and every local minimum gets exactly one row (the rows of
a sphere on a triangulated surface are those of the smooth surface it represents,
as in the treatments of Kremmer and Favier, "A method for representing boundaries in
discrete element modelling", Int. J. Numer. Meth. Engng 51, 2001, and Su, Gu and Xu,
"Discrete element simulation of particle flow in arbitrarily complex geometries",
Chem. Eng. Sci. 66, 2011). Triangle ``T``'s nearest point ``c`` is:

- on its face (inside the triangle): always a local minimum of the distance. Its gap
  and normal are those of the triangle's plane, ``|n . (q - a)| - r`` and ``+-n``,
  computed as `granular.walls.Plane` computes them.
- on an edge ``e``: a local minimum iff ``c`` is also the nearest point of every
  other triangle ``T'`` on ``e``. The distance is convex on ``T'``, so that holds iff
  it does not decrease into ``T'`` from ``c``: ``(q - c) . m_{T'} <= 0``, ``m_{T'}``
  the unit vector in ``T'``'s plane orthogonal to ``e`` pointing into ``T'``.
- on a vertex ``v``: likewise iff ``(q - v) . (w - v) <= 0`` for every vertex ``w``
  joined to ``v`` by an edge (``T'``'s nearest point is ``v`` iff the distance does not
  decrease along its two edges from ``v``).

So a sphere above the middle of a triangle of a flat triangulated floor gets that
triangle's face row only (the neighbours' nearest points lie on the shared edges,
where the distance still decreases into the first triangle); a sphere right above a
shared edge or vertex gets rows with the same contact point from several
triangles, and `merged` keeps one: a flat triangulated floor gives the rows of a
`Plane`. Across a convex edge or vertex the rows of the triangles there coincide in
the same way (one row); in a concave corner (a drum's wall and a lifter) each face
gives its own row. Where ``q``'s projection onto the plane of ``T`` lies on ``T``'s
boundary to within rounding, the nearest point is classified as the face's
(`FACE_TOLERANCE`), so that a sphere above a shared edge of a flat floor gets the
plane's gap to the last bit.
"""

from __future__ import annotations

import numpy as np

#: A nearest point of a triangle whose distance from ``q`` exceeds ``q``'s distance to
#: the triangle's plane by at most this fraction is treated as the face's (its plane
#: gap and normal). The excess is ``delta^2 / (2 s)`` for a projection ``delta`` outside
#: the triangle at plane distance ``s``: 8 ulps of the distance, its rounding when
#: computed from three coordinates, so only projections on the boundary to rounding
#: (``delta <= 4e-8 s``) are reclassified, and the gap changes by at most that rounding.
FACE_TOLERANCE = 8.0 * np.finfo(float).eps
#: The rounding allowed in the local-minimum tests ``(q - c) . m <= 0`` (relative to
#: ``|q - c|`` and the edge length): a few ulps of a dot product of unit-scaled vectors.
MINIMUM_TOLERANCE = 16.0 * np.finfo(float).eps
#: Two rows of one sphere whose contact points lie within this many radii of each
#: other are one contact (`merged`): the overlap tolerance of the package (1e-9 r),
#: far above the rounding of a contact point and far below any distinct contact.
MERGE_TOLERANCE = 1e-9

FACE = 0
VERTEX = 1  # features 1, 2, 3: vertex 0, 1, 2 of the triangle
EDGE = 4  # features 4, 5, 6: edge (0, 1), (1, 2), (2, 0)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ka,ka->k", a, b)


def closest_points(q: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest points (P, 3) of triangles ``(a, b, c)`` (each (P, 3), m) to points
    ``q`` (P, 3), and the feature (P,) each lies on: `FACE`, `VERTEX` + k (vertex k),
    `EDGE` + k (edge from vertex k to vertex k + 1 mod 3) (module docstring; Ericson 2005,
    section 5.1.5)."""
    ab, ac, ap = b - a, c - a, q - a
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    bp = q - b
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    cp = q - c
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        # face region: barycentric (1 - v - w, v, w)
        denominator = va + vb + vc
        v_face, w_face = vb / denominator, vc / denominator
        point = a + v_face[:, None] * ab + w_face[:, None] * ac
        feature = np.full(q.shape[0], FACE, dtype=np.int64)
        # the regions, in the reverse of Ericson's order of tests (the first test wins)
        edge_bc = (va <= 0.0) & (d4 - d3 >= 0.0) & (d5 - d6 >= 0.0)
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        point = np.where(edge_bc[:, None], b + w[:, None] * (c - b), point)
        feature = np.where(edge_bc, EDGE + 1, feature)
        edge_ac = (vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0)
        w = d2 / (d2 - d6)
        point = np.where(edge_ac[:, None], a + w[:, None] * ac, point)
        feature = np.where(edge_ac, EDGE + 2, feature)
        vertex_c = (d6 >= 0.0) & (d5 <= d6)
        point = np.where(vertex_c[:, None], c, point)
        feature = np.where(vertex_c, VERTEX + 2, feature)
        edge_ab = (vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0)
        v = d1 / (d1 - d3)
        point = np.where(edge_ab[:, None], a + v[:, None] * ab, point)
        feature = np.where(edge_ab, EDGE, feature)
        vertex_b = (d3 >= 0.0) & (d4 <= d3)
        point = np.where(vertex_b[:, None], b, point)
        feature = np.where(vertex_b, VERTEX + 1, feature)
        vertex_a = (d1 <= 0.0) & (d2 <= 0.0)
        point = np.where(vertex_a[:, None], a, point)
        feature = np.where(vertex_a, VERTEX, feature)
    return point, feature


class Topology:
    """What the local-minimum tests need of a triangle mesh (module docstring).

    Built from ``vertices`` (V, 3) (m) and ``faces`` (F, 3) (vertex indices, each
    triangle non-degenerate): unit face normals (F, 3) (right-handed in the vertex
    order); ``face_edges`` (F, 3), the edge id of each triangle's edge k (from vertex k
    to k + 1); ``edge_faces`` (E, K) the triangles on each edge and ``edge_inward``
    (E, K, 3) the unit vector in that triangle's plane, orthogonal to the edge, into
    it (padded with -1 and 0 beyond an edge's count); ``neighbours`` (V, L) the
    vertices joined to each vertex by an edge (padded with -1).
    """

    def __init__(self, vertices: np.ndarray, faces: np.ndarray):
        self.vertices, self.faces = vertices, faces
        a, b, c = (vertices[faces[:, k]] for k in range(3))
        cross = np.cross(b - a, c - a)
        self.normals = cross / np.linalg.norm(cross, axis=1)[:, None]
        directed = np.stack([faces, np.roll(faces, -1, axis=1)], axis=2).reshape(-1, 2)  # (3F, 2)
        undirected = np.sort(directed, axis=1)
        self.edges, inverse = np.unique(undirected, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        self.face_edges = inverse.reshape(-1, 3)
        self.edge_faces, slots = _padded_groups(inverse, np.repeat(np.arange(faces.shape[0]), 3), len(self.edges))
        # the inward unit vector of each triangle's edge k: in the plane, orthogonal to
        # the edge, towards the opposite vertex
        start, end = vertices[directed[:, 0]], vertices[directed[:, 1]]
        opposite = vertices[np.roll(faces, -2, axis=1).reshape(-1)]
        inward = np.cross(np.repeat(self.normals, 3, axis=0), end - start)
        inward /= np.linalg.norm(inward, axis=1)[:, None]
        inward *= np.where(_dot(inward, opposite - start) < 0.0, -1.0, 1.0)[:, None]
        self.edge_inward = np.zeros(self.edge_faces.shape + (3,))
        self.edge_inward[inverse, slots] = inward
        ends = np.concatenate([self.edges, self.edges[:, ::-1]])
        self.neighbours, _ = _padded_groups(ends[:, 0], ends[:, 1], vertices.shape[0])

    @property
    def sharp_edges(self) -> np.ndarray:
        """(e, 2) vertex pairs of the edges to draw: on the boundary (one triangle),
        shared by more than two, or between triangles whose normals differ by more than
        20 degrees."""
        faces = self.edge_faces
        if faces.shape[1] < 2:  # no edge shared (a lone triangle): pad the second column
            faces = np.pad(faces, ((0, 0), (0, 2 - faces.shape[1])), constant_values=-1)
        count = np.sum(faces >= 0, axis=1)
        pair = count == 2
        first, second = self.normals[faces[:, 0]], self.normals[np.maximum(faces[:, 1], 0)]
        bent = pair & (np.abs(_dot(first, second)) < np.cos(np.radians(20.0)))
        return self.edges[(count != 2) | bent]


def _padded_groups(keys: np.ndarray, values: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``values`` grouped by ``keys`` (in ``range(count)``) into a (count, K) array padded
    with -1, and the slot of each value in its row."""
    order = np.argsort(keys, kind="stable")
    keys_sorted = keys[order]
    starts = np.searchsorted(keys_sorted, np.arange(count))
    slots_sorted = np.arange(keys.size) - starts[keys_sorted]
    width = int(slots_sorted.max()) + 1 if keys.size else 1
    grouped = -np.ones((count, width), dtype=np.int64)
    grouped[keys_sorted, slots_sorted] = values[order]
    slots = np.empty(keys.size, dtype=np.int64)
    slots[order] = slots_sorted
    return grouped, slots


def local_minima(
    topology: Topology,
    q: np.ndarray,
    triangles: np.ndarray,
    points: np.ndarray,
    features: np.ndarray,
    distances: np.ndarray,
) -> np.ndarray:
    """Whether each nearest point ``points`` (P, 3) (feature ``features`` of triangle
    ``triangles``, at ``distances`` from ``q``) is a local minimum of the distance from
    ``q`` to the whole mesh (module docstring). Face points always are."""
    keep = features == FACE
    offset = q - points
    on_edge = np.flatnonzero((features >= EDGE))
    if on_edge.size:
        edge = topology.face_edges[triangles[on_edge], features[on_edge] - EDGE]
        inward = topology.edge_inward[edge]  # (p, K, 3)
        slope = np.einsum("pka,pa->pk", inward, offset[on_edge])
        keep[on_edge] = np.all(slope <= MINIMUM_TOLERANCE * distances[on_edge, None], axis=1)
    at_vertex = np.flatnonzero((features >= VERTEX) & (features < EDGE))
    if at_vertex.size:
        vertex = topology.faces[triangles[at_vertex], features[at_vertex] - VERTEX]
        neighbours = topology.neighbours[vertex]  # (p, L)
        spokes = topology.vertices[np.maximum(neighbours, 0)] - topology.vertices[vertex][:, None, :]
        slope = np.einsum("pla,pa->pl", spokes, offset[at_vertex])
        lengths = np.linalg.norm(spokes, axis=2)
        fine = (slope <= MINIMUM_TOLERANCE * distances[at_vertex, None] * lengths) | (neighbours < 0)
        keep[at_vertex] = np.all(fine, axis=1)
    return keep


def merged(spheres: np.ndarray, points: np.ndarray, gaps: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Indices of the rows to keep, rows given sorted by sphere: of the rows of one
    sphere whose contact points ``points`` (P, 3) lie within `MERGE_TOLERANCE` radii of
    each other, the first (the caller orders them so that it is the one to keep)."""
    keep = np.ones(spheres.size, dtype=bool)
    starts = np.flatnonzero(np.r_[True, spheres[1:] != spheres[:-1]])
    counts = np.diff(np.r_[starts, spheres.size])
    for shift in range(1, int(counts.max(initial=1))):
        later = np.arange(shift, spheres.size)
        earlier = later - shift
        same = spheres[later] == spheres[earlier]
        later, earlier = later[same], earlier[same]
        close = (
            np.linalg.norm(points[later] - points[earlier], axis=1) <= MERGE_TOLERANCE * radii[spheres[later]]
        ) & keep[earlier]
        keep[later[close]] = False
    return np.flatnonzero(keep)
