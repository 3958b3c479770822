"""Coordination numbers, rattlers, fabric and the force distribution, on hand-built
contact networks whose answers are known and on a settled pile."""

import numpy as np
import pytest

import granular.analysis as A
from granular.analysis.forces import FrameForces
from support.piles import pile

EPS = np.finfo(float).eps


def _network(pairs, walls=(), n=None, directions=None):
    """A `FrameForces` of unit spheres with unit forces along the given pairs and wall contacts."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    walls = np.asarray(walls, dtype=np.int64).reshape(-1)
    n = int(n if n is not None else max(pairs.max(initial=-1), walls.max(initial=-1)) + 1)
    centres = np.zeros((n, 3)) if directions is None else directions
    return FrameForces(
        frame=1,
        centres=centres,
        radii=np.ones(n),
        masses=np.ones(n),
        velocities=np.zeros((n, 3)),
        pair_i=pairs[:, 0],
        pair_j=pairs[:, 1],
        pair_force=np.tile([0.0, 0.0, 1.0], (len(pairs), 1)),
        pair_point=np.zeros((len(pairs), 3)),
        pair_vector=centres[pairs[:, 1]] - centres[pairs[:, 0]],
        wall_sphere=walls,
        wall_surface=np.zeros_like(walls),
        wall_force=np.tile([0.0, 0.0, 1.0], (len(walls), 1)),
        wall_point=np.zeros((len(walls), 3)),
    )


def test_a_star_of_rattlers_rattles_entirely():
    """A sphere touching four spheres that touch nothing else has four contacts, but
    its four neighbours rattle; once they are removed it has none: all five rattle."""
    star = _network([(0, 1), (0, 2), (0, 3), (0, 4)])
    assert A.rattlers(star).all()
    numbers = A.coordination(star)
    assert numbers.z == pytest.approx(8 / 5) and numbers.rattler_fraction == 1.0 and np.isnan(numbers.z_mechanical)


def test_a_complete_network_of_five_has_no_rattler():
    """Five mutually touching spheres: four contacts each, none rattles, Z = Z* = 4;
    a sixth hanging on one of them by one contact rattles alone."""
    complete = [(i, j) for i in range(5) for j in range(i + 1, 5)]
    numbers = A.coordination(_network(complete + [(0, 5)]))
    assert numbers.rattler_fraction == pytest.approx(1 / 6)
    assert numbers.z_mechanical == 4.0 and numbers.z == pytest.approx((20 + 2) / 6)


def test_the_fabric_of_contacts_along_the_three_axes_is_isotropic():
    centres = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, 2.0]])
    phi = A.fabric(_network([(0, 1), (0, 2), (0, 3)], directions=centres))
    np.testing.assert_allclose(phi, np.eye(3) / 3, atol=4 * EPS)


def test_the_coordination_and_fabric_of_a_pile():
    """Z counts each pair twice and each wall contact once; the fabric has trace 1;
    every sphere left after removing rattlers has at least four contacts among them."""
    forces = A.frame_forces(pile(0.0), -1)
    numbers = A.coordination(forces)
    assert numbers.z == pytest.approx((2 * len(forces.pair_i) + len(forces.wall_sphere)) / forces.n, rel=4 * EPS)
    loose = A.rattlers(forces)
    kept = A.structure.contact_counts(forces, ~loose)[~loose]
    assert kept.min() >= 4 and 0.0 < loose.mean() < 1.0
    phi = A.fabric(forces)
    assert np.trace(phi) == pytest.approx(1.0, rel=8 * EPS)
    assert np.all(np.linalg.eigvalsh(phi) > 0.0)


@pytest.mark.parametrize("bins", [10, 40])
def test_the_force_distribution_is_normalised_with_mean_one(bins):
    """``P(f/<f>)`` integrates to 1 (round-off); its mean read from the bins' middles
    is 1 up to half a bin's width (each force moved to its bin's middle)."""
    density, edges = A.force_distribution(A.frame_forces(pile(0.0), -1), bins=bins)
    widths, middles = np.diff(edges), 0.5 * (edges[1:] + edges[:-1])
    assert np.sum(density * widths) == pytest.approx(1.0, rel=64 * EPS)
    assert abs(np.sum(density * widths * middles) - 1.0) <= 0.5 * widths.max()
