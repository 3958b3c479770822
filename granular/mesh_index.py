"""A spatial index of a mesh's triangles: the triangles that may lie within reach of each sphere.

Each triangle is bounded by the sphere about its centroid through its farthest
vertex (radius ``R_t``). A sphere of centre ``q`` and reach ``rho`` (its radius plus
the search margin) can touch triangle ``t`` only if ``|q - centroid_t| <= R_t + rho``.
The triangles are grouped by ``R_t`` in classes a factor 2 apart, each class in a
k-d tree of its centroids (scipy's ``cKDTree``; Maneewongvatana and Mount, "Analysis
of approximate nearest neighbor searching with clustered point sets", 1999, the
sliding-midpoint rule it builds with). A class is searched within its largest
``R`` plus the largest reach, by a dual-tree search against a tree of the query
spheres (``sparse_distance_matrix``), and the pairs are then cut to each one's own
bound. Grouping by size keeps a few large triangles (a floor of two triangles beside
a finely meshed lifter) from widening the search of the small ones: a candidate
lies at most twice its own bound away.

Only spheres inside the mesh's bounding box widened by their reach are searched, so
a mesh far from most spheres costs one vectorised box test.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree


class TriangleIndex:
    """The index of the triangles ``(a, b, c)`` given as ``corners`` (F, 3, 3) (m)."""

    def __init__(self, corners: np.ndarray):
        self.centroids = corners.mean(axis=1)
        self.bounds = np.linalg.norm(corners - self.centroids[:, None, :], axis=2).max(axis=1)
        self.box = np.array([corners.reshape(-1, 3).min(axis=0), corners.reshape(-1, 3).max(axis=0)])
        smallest = max(float(self.bounds.min()), 1e-300)
        classes = np.floor(np.log2(np.maximum(self.bounds, smallest) / smallest)).astype(np.int64)
        self.classes = []
        for label in np.unique(classes):
            members = np.flatnonzero(classes == label)
            self.classes.append((members, cKDTree(self.centroids[members]), float(self.bounds[members].max())))

    def candidates(self, positions: np.ndarray, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(spheres, triangles)`` int64 arrays of the pairs whose bounding spheres lie
        within ``reach`` (N,) (m) of the centres ``positions`` (N, 3), sorted by sphere
        then triangle."""
        near = np.flatnonzero(np.all((positions >= self.box[0] - reach[:, None])
                                     & (positions <= self.box[1] + reach[:, None]), axis=1))
        if near.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        spheres_tree = cKDTree(positions[near])
        largest_reach = float(reach[near].max())
        found_spheres, found_triangles = [], []
        for members, tree, bound in self.classes:
            pairs = tree.sparse_distance_matrix(spheres_tree, bound + largest_reach, output_type="ndarray")
            if pairs.size == 0:
                continue
            triangle, sphere = members[pairs["i"]], near[pairs["j"]]
            keep = pairs["v"] <= self.bounds[triangle] + reach[sphere]
            found_spheres.append(sphere[keep])
            found_triangles.append(triangle[keep])
        if not found_spheres:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        spheres = np.concatenate(found_spheres).astype(np.int64)
        triangles = np.concatenate(found_triangles).astype(np.int64)
        order = np.lexsort((triangles, spheres))
        return spheres[order], triangles[order]
