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
