"""Compiled loops of the sphere rows (`granular.spheres.assembly`): the tangential rows
of turning spheres, written straight into CSR arrays.

Why compiled: the same rows built with numpy (cross products, concatenations and
repeats of (k, 2, 12) arrays) cost a tenth of a settled frictional pile's step, in
temporaries; one pass over the contacts writes each entry once. The arithmetic is that
of `granular.spheres.assembly.tangent_basis` term for term (cross products, then the
norm as the square root of the sum of the three squares in order), so both give the
same tangents.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def _basis(nx, ny, nz):
    """Two unit tangents ``(t_1, t_2)`` of the unit normal ``n``: ``t_1 = n x e / |n x e|``
    for the axis ``e`` least aligned with ``n`` (the first such in x, y, z order), ``t_2 =
    n x t_1``."""
    ax, ay, az = abs(nx), abs(ny), abs(nz)
    ex = ey = ez = 0.0
    if ax <= ay and ax <= az:
        ex = 1.0
    elif ay <= az:
        ey = 1.0
    else:
        ez = 1.0
    fx, fy, fz = ny * ez - nz * ey, nz * ex - nx * ez, nx * ey - ny * ex
    size = math.sqrt(fx * fx + fy * fy + fz * fz)
    fx, fy, fz = fx / size, fy / size, fz / size
    return fx, fy, fz, ny * fz - nz * fy, nz * fx - nx * fz, nx * fy - ny * fx


@numba.njit(cache=True)
def turning_tangent_rows(i, j, normals, wall_sphere, wall_normals, radii, n):
    """``(data, indices, indptr)`` of the tangential rows (2m, 6N) of turning spheres,
    pairs first (row ``2k + a``: ``-t_a`` on ``u_i``, ``+t_a`` on ``u_j``, ``-r_i (n x
    t_a)`` on ``omega_i``, ``-r_j (n x t_a)`` on ``omega_j``), then walls (``+t_a`` on
    ``u_i``, ``-r_i (n x t_a)`` on ``omega_i``); the columns of a row in increasing
    order for ``i < j``, as `granular.spheres.assembly.sphere_tangents` documents."""
    p, w = i.size, wall_sphere.size
    data = np.empty(24 * p + 12 * w)
    indices = np.empty(24 * p + 12 * w, dtype=np.int64)
    indptr = np.empty(2 * (p + w) + 1, dtype=np.int64)
    indptr[0] = 0
    at, row = 0, 0
    for k in range(p + w):
        pair = k < p
        if pair:
            nx, ny, nz = normals[k, 0], normals[k, 1], normals[k, 2]
            first, second = i[k], j[k]
        else:
            nx, ny, nz = wall_normals[k - p, 0], wall_normals[k - p, 1], wall_normals[k - p, 2]
            first, second = wall_sphere[k - p], -1
        t1x, t1y, t1z, t2x, t2y, t2z = _basis(nx, ny, nz)
        for a in range(2):
            tx, ty, tz = (t1x, t1y, t1z) if a == 0 else (t2x, t2y, t2z)
            arm_x, arm_y, arm_z = ny * tz - nz * ty, nz * tx - nx * tz, nx * ty - ny * tx  # n x t_a
            sign = -1.0 if pair else 1.0
            for c, value in enumerate((tx, ty, tz)):
                indices[at + c], data[at + c] = 3 * first + c, sign * value
            at += 3
            if pair:
                for c, value in enumerate((tx, ty, tz)):
                    indices[at + c], data[at + c] = 3 * second + c, value
                at += 3
            scale = -radii[first]
            for c, value in enumerate((arm_x, arm_y, arm_z)):
                indices[at + c], data[at + c] = 3 * n + 3 * first + c, scale * value
            at += 3
            if pair:
                scale = -radii[second]
                for c, value in enumerate((arm_x, arm_y, arm_z)):
                    indices[at + c], data[at + c] = 3 * n + 3 * second + c, scale * value
                at += 3
            row += 1
            indptr[row] = at
    return data, indices, indptr
