"""Polygons of the walls for pictures and the ParaView export (plain numpy; no graphics library).

Conventions: world coordinates (m); a polygon is a (v, 3) array of its corners in order.
"""

from __future__ import annotations

import numpy as np


def unit(vector) -> np.ndarray:
    vector = np.asarray(vector, float)
    return vector / np.linalg.norm(vector)


def tangent_basis(normal) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors spanning the plane normal to ``normal``."""
    n = unit(normal)
    helper = np.eye(3)[int(np.argmin(np.abs(n)))]
    u = np.cross(n, helper)
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


def polygon_edges(polygon: np.ndarray) -> np.ndarray:
    """(v, 2, 3) closed outline of a polygon."""
    return np.stack([polygon, np.roll(polygon, -1, axis=0)], axis=1)


def outlines(polygons) -> np.ndarray:
    """(e, 2, 3) the closed outlines of ``polygons`` together."""
    edges = [polygon_edges(np.asarray(p, float)) for p in polygons]
    return np.concatenate(edges) if edges else np.zeros((0, 2, 3))


def box_corners(bounds: np.ndarray) -> np.ndarray:
    """(8, 3) corners of the box ``bounds`` (2, 3)."""
    return np.array([[bounds[i, 0], bounds[j, 1], bounds[k, 2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)])


def plane_patch(point, normal, bounds: np.ndarray) -> np.ndarray:
    """(4, 3) corners of the rectangle of the plane through ``point`` (normal
    ``normal``) that covers the projection of the box ``bounds`` (2, 3) onto it: an
    infinite plane drawn as far as the scene reaches."""
    point = np.asarray(point, float)
    u, v = tangent_basis(normal)
    corners = box_corners(np.asarray(bounds, float))
    a, b = (corners - point) @ u, (corners - point) @ v
    return point + np.array(
        [[a.min(), b.min()], [a.max(), b.min()], [a.max(), b.max()], [a.min(), b.max()]]
    ) @ np.array([u, v])


def box_faces(lower, upper) -> list[tuple[np.ndarray, np.ndarray]]:
    """The six faces of an axis-aligned box as ((4, 3) corners, inward normal), per
    axis the lower face then the upper one (the order of `granular.walls.Box.surfaces`)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    faces = []
    for axis in range(3):
        a, b = [x for x in range(3) if x != axis]
        for side, sign in ((lower, 1.0), (upper, -1.0)):
            corners = np.empty((4, 3))
            for c, (ua, ub) in enumerate(((0, 0), (1, 0), (1, 1), (0, 1))):
                corners[c, axis] = side[axis]
                corners[c, a] = (lower, upper)[ua][a]
                corners[c, b] = (lower, upper)[ub][b]
            normal = np.zeros(3)
            normal[axis] = sign
            faces.append((corners, normal))
    return faces


def rings(centre, axis, radii, ends, segments: int) -> np.ndarray:
    """(2, segments, 3) circles of radii ``radii`` (2,) about ``axis`` through
    ``centre`` at the distances ``ends`` (2,) along it (m)."""
    centre, axis = np.asarray(centre, float), unit(axis)
    first, second = tangent_basis(axis)
    angles = 2.0 * np.pi * np.arange(segments) / segments
    circle = np.cos(angles)[:, None] * first + np.sin(angles)[:, None] * second
    return np.stack([centre + end * axis + radius * circle for end, radius in zip(ends, radii)])


def band_quads(ring_pair: np.ndarray) -> list[np.ndarray]:
    """The quads (4, 3) between two rings (2, s, 3): the side of a cylinder or a cone."""
    segments = ring_pair.shape[1]
    following = np.roll(np.arange(segments), -1)
    return [
        np.array([ring_pair[0, k], ring_pair[0, following[k]], ring_pair[1, following[k]], ring_pair[1, k]])
        for k in range(segments)
    ]


def axis_extent(centre, axis, bounds: np.ndarray) -> np.ndarray:
    """(2,) the smallest and largest distances along ``axis`` from ``centre`` of the
    corners of ``bounds`` (2, 3): how far an infinite wall along it is drawn."""
    along = (box_corners(np.asarray(bounds, float)) - np.asarray(centre, float)) @ unit(axis)
    return np.array([along.min(), along.max()])
