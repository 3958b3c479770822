"""A spatial index of a mesh's triangles, and the compiled search of the triangles near each sphere.

Cell list. Space over the mesh's bounding box is cut into cubes of side ``side``
(m); each triangle is listed in every cube its bounding box overlaps (a counting
sort into compressed rows, as `granular.spheres.cell_lists` groups spheres; Allen and
Tildesley, *Computer Simulation of Liquids*, 1987, section 5.3.2). A sphere of
centre ``q`` and reach ``rho`` (its radius plus the search margin) is compared with
the triangles of the cubes its box ``q +- rho`` overlaps, each triangle once (a
stamp per triangle), first by the triangle's bounding box (its distance from ``q``
at most ``rho``), then by its nearest point (`granular.walls.mesh_geometry`, Ericson 2005, section 5.1.5). The cube side
is the larger of twice the median triangle's bounding radius (about its centroid) and a quarter of the
first query's median reach, so that a cube holds a few triangles, or a query covers
at most about nine cubes a side when the triangles are small beside the spheres (a
finely meshed floor); cubes farther from the centre than its reach are skipped (a
sphere resting on a floor reaches only a disc of it). The grid never holds more than
`MAX_CELLS` cubes (the side then grows).

The search is one compiled loop (numba) over the spheres inside the mesh's box
widened by their reach; it returns only the triangles whose nearest point is within
the margin, with that point, so the rest of the row building (`granular.walls.meshes`)
works on a few rows per sphere.
"""

from __future__ import annotations

import numba
import numpy as np

from ..compiled_arrays import grown
from .mesh_geometry import EDGE, FACE, FACE_TOLERANCE, MINIMUM_TOLERANCE, VERTEX

#: Most cubes the grid may hold (its compressed rows allocate one offset per cube).
MAX_CELLS = 4_000_000


@numba.njit(cache=True)
def _closest_point(qx, qy, qz, corners, t):
    """Nearest point ``(x, y, z)`` of triangle ``t`` (``corners[t]`` = a, b, c) to ``q``,
    and its feature (Ericson 2005, ``ClosestPtPointTriangle``, in scalars; the features
    of `granular.walls.mesh_geometry`)."""
    ax, ay, az = corners[t, 0, 0], corners[t, 0, 1], corners[t, 0, 2]
    bx, by, bz = corners[t, 1, 0], corners[t, 1, 1], corners[t, 1, 2]
    cx, cy, cz = corners[t, 2, 0], corners[t, 2, 1], corners[t, 2, 2]
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = qx - ax, qy - ay, qz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, VERTEX
    bpx, bpy, bpz = qx - bx, qy - by, qz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz, VERTEX + 1
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz, EDGE
    cpx, cpy, cpz = qx - cx, qy - cy, qz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz, VERTEX + 2
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz, EDGE + 2
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz), EDGE + 1
    denominator = va + vb + vc
    v, w = vb / denominator, vc / denominator
    return ax + v * abx + w * acx, ay + v * aby + w * acy, az + v * abz + w * acz, FACE


@numba.njit(cache=True)
def _is_local_minimum(
    feature, t, ox, oy, oz, distance, faces, face_edges, edge_inward, edge_faces, vertices, neighbours
):
    """`granular.walls.mesh_geometry.local_minima` for one nearest point, ``(ox, oy, oz) = q - point``."""
    if feature == FACE:
        return True
    if feature >= EDGE:
        e = face_edges[t, feature - EDGE]
        for slot in range(edge_faces.shape[1]):
            if edge_faces[e, slot] < 0:
                break
            slope = edge_inward[e, slot, 0] * ox + edge_inward[e, slot, 1] * oy + edge_inward[e, slot, 2] * oz
            if slope > MINIMUM_TOLERANCE * distance:
                return False
        return True
    v = faces[t, feature - VERTEX]
    for slot in range(neighbours.shape[1]):
        w = neighbours[v, slot]
        if w < 0:
            break
        sx, sy, sz = vertices[w, 0] - vertices[v, 0], vertices[w, 1] - vertices[v, 1], vertices[w, 2] - vertices[v, 2]
        if sx * ox + sy * oy + sz * oz > MINIMUM_TOLERANCE * distance * np.sqrt(sx * sx + sy * sy + sz * sz):
            return False
    return True


@numba.njit(cache=True)
def _grid(lower, upper, origin, side, dims):
    """Triangles by cube: ``(starts (cubes + 1,), members)`` in compressed rows, the
    triangle of bounding box ``[lower_t, upper_t]`` listed in every cube it overlaps."""
    total = dims[0] * dims[1] * dims[2]
    counts = np.zeros(total + 1, dtype=np.int64)
    low = np.empty(3, dtype=np.int64)
    high = np.empty(3, dtype=np.int64)
    for phase in range(2):
        if phase == 1:
            for c in range(total):
                counts[c + 1] += counts[c]
            fill = counts[:-1].copy()
            members = np.empty(counts[total], dtype=np.int64)
        for t in range(lower.shape[0]):
            for axis in range(3):
                low[axis] = min(max(int((lower[t, axis] - origin[axis]) / side), 0), dims[axis] - 1)
                high[axis] = min(max(int((upper[t, axis] - origin[axis]) / side), 0), dims[axis] - 1)
            for i in range(low[0], high[0] + 1):
                for j in range(low[1], high[1] + 1):
                    for k in range(low[2], high[2] + 1):
                        cell = (i * dims[1] + j) * dims[2] + k
                        if phase == 0:
                            counts[cell + 1] += 1
                        else:
                            members[fill[cell]] = t
                            fill[cell] += 1
    return counts, members


@numba.njit(cache=True)
def _near(
    positions,
    radii,
    margin,
    spheres,
    corners,
    normals,
    lower,
    upper,
    origin,
    side,
    dims,
    starts,
    members,
    faces,
    face_edges,
    edge_inward,
    edge_faces,
    vertices,
    neighbours,
):
    """The (sphere, triangle) pairs whose gap is at most ``margin`` and whose nearest
    point is a local minimum of the distance to the mesh (module docstring):
    ``(sphere, triangle, feature, point (3,), distance, height)`` for each, the
    feature reclassified as the face's when ``q``'s distance exceeds its plane distance
    ``|height|`` by at most `FACE_TOLERANCE` of it (`granular.walls.mesh_geometry`)."""
    capacity = 64
    found_sphere = np.empty(capacity, dtype=np.int64)
    found_triangle = np.empty(capacity, dtype=np.int64)
    found_feature = np.empty(capacity, dtype=np.int64)
    found_point = np.empty((capacity, 3))
    found_distance = np.empty(capacity)
    found_height = np.empty(capacity)
    count = 0
    stamp = np.full(corners.shape[0], -1, dtype=np.int64)
    low = np.empty(3, dtype=np.int64)
    high = np.empty(3, dtype=np.int64)
    for s in spheres:
        qx, qy, qz = positions[s, 0], positions[s, 1], positions[s, 2]
        reach = radii[s] + margin
        for axis in range(3):
            low[axis] = min(max(int((positions[s, axis] - reach - origin[axis]) / side), 0), dims[axis] - 1)
            high[axis] = min(max(int((positions[s, axis] + reach - origin[axis]) / side), 0), dims[axis] - 1)
        for i in range(low[0], high[0] + 1):
            di = _outside(qx, origin[0] + i * side, side)
            for j in range(low[1], high[1] + 1):
                dj = _outside(qy, origin[1] + j * side, side)
                for k in range(low[2], high[2] + 1):
                    dk = _outside(qz, origin[2] + k * side, side)
                    if di * di + dj * dj + dk * dk > reach * reach:
                        continue  # the cube lies beyond the sphere's reach
                    cell = (i * dims[1] + j) * dims[2] + k
                    for slot in range(starts[cell], starts[cell + 1]):
                        t = members[slot]
                        if stamp[t] == s:
                            continue
                        stamp[t] = s
                        dx = _outside(qx, lower[t, 0], upper[t, 0] - lower[t, 0])
                        dy = _outside(qy, lower[t, 1], upper[t, 1] - lower[t, 1])
                        dz = _outside(qz, lower[t, 2], upper[t, 2] - lower[t, 2])
                        if dx * dx + dy * dy + dz * dz > reach * reach:
                            continue  # the triangle's bounding box lies beyond the reach
                        px, py, pz, feature = _closest_point(qx, qy, qz, corners, t)
                        ox, oy, oz = qx - px, qy - py, qz - pz
                        distance = np.sqrt(ox * ox + oy * oy + oz * oz)
                        height = (
                            (qx - corners[t, 0, 0]) * normals[t, 0]
                            + (qy - corners[t, 0, 1]) * normals[t, 1]
                            + (qz - corners[t, 0, 2]) * normals[t, 2]
                        )
                        if feature == FACE or distance - abs(height) <= FACE_TOLERANCE * distance:
                            feature = FACE
                            if abs(height) - radii[s] > margin:
                                continue
                        elif distance - radii[s] > margin:
                            continue
                        if not _is_local_minimum(
                            feature,
                            t,
                            ox,
                            oy,
                            oz,
                            distance,
                            faces,
                            face_edges,
                            edge_inward,
                            edge_faces,
                            vertices,
                            neighbours,
                        ):
                            continue
                        if count == capacity:
                            capacity *= 2
                            found_sphere = grown(found_sphere, count, capacity)
                            found_triangle = grown(found_triangle, count, capacity)
                            found_feature = grown(found_feature, count, capacity)
                            found_distance = grown(found_distance, count, capacity)
                            found_height = grown(found_height, count, capacity)
                            wider = np.empty((capacity, 3))
                            wider[:count] = found_point[:count]
                            found_point = wider
                        found_sphere[count] = s
                        found_triangle[count] = t
                        found_feature[count] = feature
                        found_point[count, 0] = px
                        found_point[count, 1] = py
                        found_point[count, 2] = pz
                        found_distance[count] = distance
                        found_height[count] = height
                        count += 1
    return (
        found_sphere[:count],
        found_triangle[:count],
        found_feature[:count],
        found_point[:count],
        found_distance[:count],
        found_height[:count],
    )


@numba.njit(cache=True)
def _outside(x, start, side):
    """How far ``x`` lies outside the interval ``[start, start + side]`` (0 inside)."""
    if x < start:
        return start - x
    if x > start + side:
        return x - start - side
    return 0.0


class TriangleIndex:
    """The cell list of the triangles of a mesh (`granular.walls.mesh_geometry.Topology`)."""

    def __init__(self, topology):
        self.topology = topology
        self.corners = np.ascontiguousarray(topology.vertices[topology.faces], dtype=float)
        self.normals = np.ascontiguousarray(topology.normals, dtype=float)
        self.centroids = self.corners.mean(axis=1)
        self.bounds = np.linalg.norm(self.corners - self.centroids[:, None, :], axis=2).max(axis=1)
        self.lower, self.upper = self.corners.min(axis=1), self.corners.max(axis=1)
        self.box = np.array([self.lower.min(axis=0), self.upper.max(axis=0)])
        self.side = None  # chosen at the first query (module docstring)

    def _build(self, reach: float) -> None:
        extent = self.box[1] - self.box[0]
        side = max(2.0 * float(np.median(self.bounds)), 0.25 * reach, 1e-12 * float(extent.max()))
        while np.prod(np.floor(extent / side) + 1.0) > MAX_CELLS:
            side *= 1.5
        self.side = side
        self.dims = np.floor(extent / side).astype(np.int64) + 1
        self.starts, self.members = _grid(self.lower, self.upper, self.box[0], side, self.dims)

    def near(self, positions: np.ndarray, radii: np.ndarray, margin: float):
        """The pairs of spheres (centres ``positions`` (N, 3), ``radii`` (N,), m) and
        triangles whose gap is at most ``margin`` (m) at a local minimum of the
        distance: ``(spheres, triangles, features, points (k, 3), distances, heights)``,
        by sphere (module docstring)."""
        reach = radii + margin
        inside = np.flatnonzero(
            np.all((positions >= self.box[0] - reach[:, None]) & (positions <= self.box[1] + reach[:, None]), axis=1)
        )
        if inside.size == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty, np.zeros((0, 3)), np.zeros(0), np.zeros(0)
        if self.side is None:
            self._build(float(np.median(reach[inside])))
        return _near(
            np.ascontiguousarray(positions, dtype=float),
            np.ascontiguousarray(radii, dtype=float),
            float(margin),
            inside.astype(np.int64),
            self.corners,
            self.normals,
            self.lower,
            self.upper,
            self.box[0],
            self.side,
            self.dims,
            self.starts,
            self.members,
            *self._topology_arrays,
        )

    @property
    def _topology_arrays(self) -> tuple:
        topology = self.topology
        return (
            topology.faces,
            topology.face_edges,
            topology.edge_inward,
            topology.edge_faces,
            topology.vertices,
            topology.neighbours,
        )
