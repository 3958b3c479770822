"""The compiled tangential rows of turning spheres (`granular.spheres.assembly_kernels`)
against the same rows built with numpy from `tangent_basis`, entry for entry."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from granular.spheres.assembly import sphere_tangents, tangent_basis


def numpy_tangents(i, j, normals, wall_sphere, wall_normals, n, radii) -> sp.csr_matrix:
    """The rows of `sphere_tangents` for turning spheres, from its docstring: row ``2k + a``
    of a pair ``-t_a`` on ``u_i``, ``+t_a`` on ``u_j``, ``-r_i (n x t_a)`` on ``omega_i``,
    ``-r_j (n x t_a)`` on ``omega_j``; of a wall ``+t_a`` on ``u_i`` and ``-r_i (n x
    t_a)`` on ``omega_i``."""
    pair_basis, wall_basis = tangent_basis(normals), tangent_basis(wall_normals)
    p, w = i.size, wall_sphere.size
    three = np.arange(3)
    first, second = 3 * i[:, None] + three, 3 * j[:, None] + three
    pair_cols = np.concatenate([first, second, 3 * n + first, 3 * n + second], axis=1)
    wall_cols = np.concatenate([3 * wall_sphere[:, None] + three, 3 * n + 3 * wall_sphere[:, None] + three], axis=1)
    arm_pair = np.cross(normals[:, None, :], pair_basis)
    arm_wall = np.cross(wall_normals[:, None, :], wall_basis)
    pair_data = np.concatenate(
        [-pair_basis, pair_basis, -radii[i, None, None] * arm_pair, -radii[j, None, None] * arm_pair], axis=2
    )
    wall_data = np.concatenate([wall_basis, -radii[wall_sphere, None, None] * arm_wall], axis=2)
    indices = np.concatenate(
        [np.repeat(pair_cols[:, None, :], 2, axis=1).ravel(), np.repeat(wall_cols[:, None, :], 2, axis=1).ravel()]
    )
    data = np.concatenate([pair_data.ravel(), wall_data.ravel()])
    indptr = np.concatenate([np.arange(0, 24 * p + 1, 12), 24 * p + np.arange(6, 12 * w + 1, 6)])
    return sp.csr_matrix((data, indices, indptr), shape=(2 * (p + w), 6 * n))


def unit(rng, k):
    vectors = rng.normal(size=(k, 3))
    return vectors / np.linalg.norm(vectors, axis=1)[:, None]


@pytest.mark.exact
@pytest.mark.parametrize("seed", range(3))
def test_compiled_tangent_rows_equal_the_numpy_rows_bit_for_bit(seed):
    """The same arithmetic, term for term, so every entry is the same double; the normals
    include the axes and the diagonals, where the least aligned axis is a tie."""
    rng = np.random.default_rng(seed)
    n = 40
    i = rng.integers(0, n - 1, 60)
    j = i + 1 + rng.integers(0, n - 1 - i)
    special = np.array([[1, 0, 0], [0, -1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1]], dtype=float)
    special /= np.linalg.norm(special, axis=1)[:, None]
    normals = np.concatenate([unit(rng, 54), special])
    wall_sphere = rng.integers(0, n, 15)
    wall_normals = np.concatenate([unit(rng, 12), special[:3]])
    radii = rng.uniform(0.005, 0.02, n)
    compiled = sphere_tangents(i, j, normals, wall_sphere, wall_normals, n, radii)
    reference = numpy_tangents(i, j, normals, wall_sphere, wall_normals, n, radii)
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(getattr(compiled, name), getattr(reference, name)), name
    assert compiled.shape == reference.shape


def test_no_pairs_or_no_walls_give_the_other_rows_alone():
    rng = np.random.default_rng(5)
    radii = np.full(4, 0.01)
    none = np.zeros(0, dtype=np.int64)
    walls_only = sphere_tangents(none, none, np.zeros((0, 3)), np.array([0, 3]), unit(rng, 2), 4, radii)
    assert walls_only.shape == (4, 24) and walls_only.nnz == 24
    pairs_only = sphere_tangents(np.array([0]), np.array([2]), unit(rng, 1), none, np.zeros((0, 3)), 4, radii)
    assert pairs_only.shape == (2, 24) and pairs_only.nnz == 24


def test_tangent_rows_give_the_sliding_velocity_of_the_material_points():
    """Row ``2k + a`` times ``(u, omega)`` is the velocity, along the unit tangent ``t_a``
    orthogonal to ``n``, of sphere j's material point at the contact (``x_j - r_j n``)
    relative to sphere i's (``x_i + r_i n``), and for a wall of sphere i's material point
    (``x_i - r_i n``), computed here from rigid-body kinematics ``v + omega x arm``.
    Tolerance: a row's value sums at most 12 products of unit entries with terms up to
    ``s = max(|u|, r |omega|)``, within 12 epsilon s; the kinematics here (a cross
    product, a sum and a dot product of three terms) add as much again: 24 epsilon s. A
    unit vector's norm and its dot product with another are within 4 epsilon."""
    rng = np.random.default_rng(11)
    n = 30
    i = rng.integers(0, n - 1, 50)
    j = i + 1 + rng.integers(0, n - 1 - i)
    normals, wall_normals = unit(rng, 50), unit(rng, 20)
    wall_sphere = rng.integers(0, n, 20)
    radii = rng.uniform(0.005, 0.02, n)
    u, omega = rng.normal(size=(n, 3)), rng.normal(0.0, 100.0, (n, 3))
    rows = sphere_tangents(i, j, normals, wall_sphere, wall_normals, n, radii)
    sliding = (rows @ np.concatenate([u.ravel(), omega.ravel()])).reshape(-1, 2)
    pair_j = u[j] + np.cross(omega[j], -radii[j, None] * normals)
    pair_i = u[i] + np.cross(omega[i], radii[i, None] * normals)
    wall_i = u[wall_sphere] + np.cross(omega[wall_sphere], -radii[wall_sphere, None] * wall_normals)
    relative = np.concatenate([pair_j - pair_i, wall_i])
    tangents = np.concatenate([tangent_basis(normals), tangent_basis(wall_normals)])
    expected = np.einsum("kac,kc->ka", tangents, relative)
    eps = np.finfo(float).eps
    scale = max(np.abs(u).max(), (radii[:, None] * np.abs(omega)).max())
    assert np.all(np.abs(sliding - expected) <= 24 * eps * scale)
    all_normals = np.concatenate([normals, wall_normals])
    assert np.all(np.abs(np.einsum("kac,kc->ka", tangents, all_normals)) <= 4 * eps)
    assert np.all(np.abs(np.linalg.norm(tangents, axis=2) - 1.0) <= 4 * eps)
