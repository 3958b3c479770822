"""The Love–Weber stress and the wall loads of piles at rest balance their weight.

The piles (`tests/support/piles.py`) are stepped with a frame each step, so the discrete
momentum balance of a step, ``m_i (u_i^{n+1} - u_i^n) = h (F_i + m_i g)`` (``F_i`` the
net contact force on sphere i), holds to round-off between two frames: the
inertia that keeps a pile from being exactly at rest is measured, not assumed.
"""

import numpy as np
import pytest

import granular as gr
import granular.analysis as A
from granular.analysis.stress import sphere_moments
from support.piles import SIDE, pile

EPS = np.finfo(float).eps


def _inertia(trajectory, k):
    """``m_i (u^{n+1} - u^n) / h`` (N, 3) (N) of frame ``k``'s step."""
    dt = trajectory.meta["dt"]
    masses = np.asarray(trajectory.meta["masses"])
    return masses[:, None] * (trajectory.velocities[k] - trajectory.velocities[k - 1]) / dt


@pytest.mark.parametrize("friction", [0.0, 0.5])
def test_the_virial_of_the_love_stress_is_the_walls_and_the_weights(friction):
    """``sum_i V_i sigma_i = sum_w f_w (x) x_w - sum_i m_i g (x) q_i`` at rest: the pairs'
    branch vectors add to their centre lines and cancel. What departs from rest is
    ``sum_i m_i a_i (x) q_i``, bounded by ``sum |m a| |q|``; round-off: a few ulps of
    the summed magnitudes of the ~500 terms."""
    trajectory = pile(friction)
    forces = A.frame_forces(trajectory, -1, threshold=0.0)
    love, walls_and_weight = A.virial_balance(forces, trajectory.system["gravity"])
    inertia = _inertia(trajectory, -1)
    motion = np.sum(np.linalg.norm(inertia, axis=1) * np.linalg.norm(forces.centres, axis=1))
    scale = np.abs(A.stress.sphere_moments(forces)).sum()
    assert np.abs(love - walls_and_weight).max() <= motion + 64 * EPS * scale
    # Rows orthogonal to gravity: the walls alone (the form of the balance).
    walls_only = -np.einsum("wa,wb->ab", forces.wall_force, forces.wall_point)
    assert np.abs(love[:2] - walls_only[:2]).max() <= motion + 64 * EPS * scale
    # Not trivially true: the sides carry most of sigma_xx, the weight most of sigma_zz.
    assert love[0, 0] > 0.0 and love[2, 2] > 0.0


def test_the_floor_carries_the_weight_of_a_frictionless_pile():
    """The floor's load over the step equals the weight, up to the spheres'
    acceleration ``sum m a_z`` (frictionless side walls carry no vertical force)."""
    trajectory = pile(0.0)
    load, weight = A.tables.floor_load(trajectory, -1), A.tables.weight(trajectory, -1)
    inertia = np.abs(_inertia(trajectory, -1)[:, 2]).sum()
    assert load == pytest.approx(weight, abs=inertia + 64 * EPS * weight)
    loads = A.wall_loads(A.frame_forces(trajectory, -1, threshold=0.0), trajectory.system)
    np.testing.assert_allclose(loads["force"], trajectory.wall_forces[-1], atol=64 * EPS * weight)


@pytest.mark.parametrize("kernel", [A.Kernel("lucy", 0.004), A.Kernel("gaussian", 0.0013)], ids=["lucy", "gaussian"])
@pytest.mark.parametrize("friction", [0.0, 0.5])
def test_coarse_grained_sigma_zz_above_the_floor_is_the_floors_load_per_area(kernel, friction):
    """Between the floor and the lowest centres (z > 9 mm), only the bonds from the
    centres to the floor (Weinhart et al.'s boundary bonds) cross a plane, so the
    profile's ``sigma_zz A`` at z = 4.5 mm equals the floor's load exactly when the
    kernel reaches less than 4.5 mm (both do). Frictionless, that is the weight; with
    friction the side walls hold part of it (Janssen), and the floor less."""
    trajectory = pile(friction)
    forces = A.frame_forces(trajectory, -1, threshold=0.0)
    assert forces.centres[:, 2].min() - 0.0045 > kernel.cutoff and 0.0045 > kernel.cutoff
    sigma = A.profile(forces, "z", [0.0045], kernel, SIDE**2).contact_stress[0]
    load, weight = A.tables.floor_load(trajectory, -1), A.tables.weight(trajectory, -1)
    assert sigma[2, 2] * SIDE**2 == pytest.approx(load, rel=1e3 * EPS)
    if friction == 0.0:  # the weight, up to the spheres' vertical inertia (previous test)
        inertia = np.abs(_inertia(trajectory, -1)[:, 2]).sum()
        assert load == pytest.approx(weight, abs=inertia + 64 * EPS * weight)
    else:
        assert load < 0.9 * weight


def test_the_stress_of_a_frictionless_pile_is_symmetric():
    """Frictionless forces lie along the branch vectors, so ``f (x) l`` is symmetric up
    to the round-off of ``l = x_c - q`` (``|q| / |l|`` ~ 20 ulps of ``l``)."""
    trajectory = pile(0.0)
    forces = A.frame_forces(trajectory, -1, threshold=0.0)
    sigma = A.sphere_stress(forces)
    magnitude = np.abs(sigma).max(axis=(1, 2))
    ratio = np.linalg.norm(forces.centres, axis=1).max() / forces.radii.min()
    assert np.all(np.abs(sigma - np.swapaxes(sigma, 1, 2)).max(axis=(1, 2)) <= 16 * ratio * EPS * magnitude)
    region = A.region_stress(forces, A.BoxRegion([0, 0, 0], [SIDE, SIDE, 0.05]), kinetic=True)
    assert np.abs(region - region.T).max() <= 1e-12 * np.abs(region).max()
    values, vectors = A.principal(region)
    np.testing.assert_allclose(vectors @ np.diag(values) @ vectors.T, region, atol=1e-12 * values[0])
    assert values[0] >= values[1] >= values[2] > 0.0  # a pile is compressed in every direction
    assert A.pressure(region) == pytest.approx(values.mean(), rel=1e-12)


def test_the_region_stress_of_the_whole_pile_is_its_virial_over_the_volume():
    """A box holding every centre averages every sphere's moment: the two sums agree."""
    trajectory = pile(0.0)
    forces = A.frame_forces(trajectory, -1, threshold=0.0)
    box = A.BoxRegion([0, 0, 0], [SIDE, SIDE, 0.4])
    love, _ = A.virial_balance(forces, trajectory.system["gravity"])
    np.testing.assert_allclose(A.region_stress(forces, box) * box.volume, love, atol=1e-12 * np.abs(love).max())
    slab = A.SlabRegion("z", 0.0, 0.4, SIDE**2)
    np.testing.assert_allclose(A.region_stress(forces, slab), A.region_stress(forces, box), rtol=1e-12)


def test_bad_regions_and_kernels_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match="upper"):
        A.BoxRegion([0, 0, 0], [1, -1, 1])
    with pytest.raises(ValueError, match="width"):
        A.Kernel("lucy", 0.0)
    with pytest.raises(ValueError, match="kernel"):
        A.Kernel("tophat", 1.0)
    with pytest.raises(ValueError, match="region"):
        A.parse_region("sphere:1,2,3")
    assert A.parse_region("slab:z,0,0.1,0.0064").volume == pytest.approx(0.1 * 0.0064)


def test_a_collision_across_a_periodic_face_has_branch_vectors_of_a_radius():
    """Two spheres (r = 1 cm) meeting across the x face of a periodic cell 0.1 m long:
    each branch vector reaches from its own centre to the contact point, one radius
    long and opposite to the other's (a centre-to-centre difference would span the
    cell), and the pair's Love stress is that of a head-on collision along x."""
    cell = gr.PeriodicBox([0.0, 0.0, 0.0], [0.1, 0.1, 0.1], axes=(0,))
    world = gr.SphereWorld(
        [[0.0895, 0.05, 0.05], [0.0105, 0.05, 0.05]],
        0.01,
        density=1000.0,
        velocities=[[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]],
        gravity=(0.0, 0.0, 0.0),
        periodic=cell,
    )
    run = gr.Simulation(world, dt=1e-3).run(steps=2, record_every=1, progress=None)
    hit = next(k for k in range(len(run)) if len(A.frame_forces(run, k).pair_i))
    forces = A.frame_forces(run, hit)
    sphere, force, branch = forces.sphere_rows()
    # The gap D of the row is at most the approach of one step (2 m/s x 1 ms): the
    # branch vectors are r + D/2 long, to round-off of the cell's coordinates.
    lengths = np.linalg.norm(branch, axis=1)
    assert np.all(np.abs(lengths - 0.01) <= 0.5 * 2.0 * 1e-3 + 1e-12)
    assert np.allclose(branch[0], -branch[1], atol=1e-15 + 1e-3)
    assert abs(branch[0, 0]) == pytest.approx(lengths[0], rel=1e-9)  # along x, across the face
    # Love's moments of the pair, summed over both spheres: F (x) (l_j - l_i) = -F (x)
    # pair_vector, |F| (2 r + D) along xx and nothing else.
    total = sphere_moments(forces).sum(axis=0)
    size = np.abs(force[0, 0]) * np.linalg.norm(forces.pair_vector[0])
    assert abs(total[0, 0]) == pytest.approx(size, rel=1e-9)
    assert np.abs(total).sum() - abs(total[0, 0]) <= 1e-12 * size
