"""Neighbour search (granular.spheres.neighbors) against the brute-force oracle, the
constraint rows a SphereWorld builds, and the search margin of the step.

The oracle itself is checked first on hand-made cases (a pair across a periodic
face, a pair exactly at the margin), so that agreement with it means something.
"""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular.spheres.neighbors import brute_force_pairs, candidate_pairs, pair_gaps
from granular.tolerances import COMPLEMENTARITY_TOLERANCE, SEARCH_SKIN


def random_cloud(seed: int, n: int, side: float, radius: float, polydisperse: bool = False):
    """Uniform centres in a cube (overlaps allowed: the search does not care)."""
    rng = np.random.default_rng(seed)
    positions = rng.uniform(0.0, side, (n, 3))
    radii = np.full(n, radius)
    if polydisperse:
        radii = radius * rng.uniform(0.5, 1.5, n)
        big = rng.choice(n, max(1, n // 50), replace=False)
        radii[big] = radius * rng.uniform(3.0, 6.0, big.size)  # the "large sphere" search path
    return positions, radii


def assert_same_pairs(found, expected):
    assert found[0].dtype == np.int64 and found[1].dtype == np.int64
    np.testing.assert_array_equal(found[0], expected[0])
    np.testing.assert_array_equal(found[1], expected[1])


# -- the oracle on hand-made cases -------------------------------------------------------


def test_oracle_on_hand_made_pairs():
    """Two spheres 0.9 apart near opposite faces of a 1-periodic cell along x: at
    distance 0.1 (gap 0.05) through the face, so a pair periodically, not otherwise."""
    positions = np.array([[0.05, 0.5, 0.5], [0.95, 0.5, 0.5], [0.5, 0.5, 0.5]])
    radii = np.array([0.02, 0.03, 0.01])
    periodic = gr.PeriodicBox([0, 0, 0], [1, 1, 1], axes=(0,))
    i, j = brute_force_pairs(positions, radii, 0.0501, periodic)
    assert list(zip(i, j)) == [(0, 1)]
    assert pair_gaps(positions, radii, i, j, periodic) == pytest.approx([0.05])
    assert brute_force_pairs(positions, radii, 0.0501)[0].size == 0
    assert brute_force_pairs(positions, radii, 0.0499, periodic)[0].size == 0


# -- candidate_pairs == brute_force_pairs ------------------------------------------------------

CLOUDS = [
    # (seed, n, side, polydisperse, periodic axes or None, margin in radii)
    (0, 600, 1.0, False, None, 0.0),
    (1, 600, 1.0, False, None, 0.7),
    (2, 600, 1.0, True, None, 0.3),
    (3, 600, 1.0, False, (0, 1, 2), 0.0),
    (4, 600, 1.0, False, (0, 1, 2), 0.5),
    (5, 600, 1.0, True, (0, 1, 2), 0.3),
    (6, 600, 1.0, True, (0, 2), 0.3),
    (7, 600, 1.0, False, (1,), 1.0),
    (8, 2, 1.0, False, None, 0.0),
]


@pytest.mark.exact
@pytest.mark.parametrize("seed, n, side, polydisperse, axes, margin", CLOUDS)
def test_candidate_pairs_are_exactly_the_brute_force_pairs(seed, n, side, polydisperse, axes, margin):
    radius = 0.03
    positions, radii = random_cloud(seed, n, side, radius, polydisperse)
    periodic = None if axes is None else gr.PeriodicBox([0, 0, 0], [side] * 3, axes=axes)
    if periodic is not None:
        positions = periodic.wrap(positions)
    expected = brute_force_pairs(positions, radii, margin * radius, periodic)
    assert_same_pairs(candidate_pairs(positions, radii, margin * radius, periodic), expected)
    if n > 2:
        assert expected[0].size > 50  # a test with pairs to find
        if periodic is not None:  # some pairs exist only through a periodic face
            direct = np.linalg.norm(positions[expected[1]] - positions[expected[0]], axis=1)
            assert np.any(direct > radii[expected[0]] + radii[expected[1]] + margin * radius)


@pytest.mark.exact
def test_candidate_pairs_of_a_periodic_cloud_outside_the_cell_and_of_one_sphere():
    """Positions not wrapped into the cell (the search wraps them itself), and N = 1."""
    positions, radii = random_cloud(9, 400, 1.0, 0.03)
    periodic = gr.PeriodicBox([0, 0, 0], [1, 1, 1], axes=(0, 1, 2))
    shifted = positions + np.array([3.0, -2.0, 1.0])
    assert_same_pairs(
        candidate_pairs(shifted, radii, 0.01, periodic), brute_force_pairs(shifted, radii, 0.01, periodic)
    )
    i, j = candidate_pairs(positions[:1], radii[:1], 0.1)
    assert i.size == 0 and j.size == 0


# -- the cell list of open scenes (granular.spheres.cell_lists) --------------------------------------


@pytest.mark.exact
def test_the_cell_list_finds_every_pair_within_its_cutoff_and_no_other():
    """Centres at most ``cutoff`` apart, against all N(N-1)/2 distances; the grid's
    cubes are exactly ``cutoff`` wide, so many pairs straddle cube faces."""
    from granular.spheres.cell_lists import pairs_within

    positions, _ = random_cloud(10, 700, 1.0, 0.03)
    cutoff = 0.1
    i, j = np.triu_indices(len(positions), k=1)
    close = np.linalg.norm(positions[j] - positions[i], axis=1) <= cutoff
    found = pairs_within(positions, cutoff)
    assert_same_pairs(found, (i[close].astype(np.int64), j[close].astype(np.int64)))
    assert close.sum() > 500


@pytest.mark.exact
def test_pairs_exactly_at_the_margin_on_a_lattice_are_found_by_the_cell_list():
    """A cubic lattice whose neighbours are exactly ``2 r + margin`` apart (the
    search distance of equal spheres): every lattice bond is at the margin up to
    rounding, so both finders must make the same call on each of them."""
    r, margin = 0.01, 0.004
    spacing = 2 * r + margin
    grid = np.stack(np.meshgrid(*[np.arange(9)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = grid * spacing + 0.3
    radii = np.full(len(positions), r)
    expected = brute_force_pairs(positions, radii, margin)
    assert_same_pairs(candidate_pairs(positions, radii, margin), expected)
    bonds = 3 * 9 * 9 * 8
    assert 100 < expected[0].size < bonds  # rounding puts bonds on both sides of the margin


@pytest.mark.exact
@pytest.mark.parametrize("case", ["cloud", "margin lattice", "crowd", "large spheres"])
def test_candidate_contacts_are_the_brute_force_pairs_with_their_vectors_and_distances(case):
    """`candidate_contacts` (the one-pass cell list for open scenes of similar
    spheres, the tree otherwise) gives the brute-force pairs, and for each the
    vector ``q_j - q_i`` and its length exactly as `pair_vectors` and
    ``np.linalg.norm`` compute them: the constraint rows are built from them."""
    from granular.spheres.neighbors import candidate_contacts, pair_vectors

    margin = 0.01
    if case == "margin lattice":
        r, margin = 0.01, 0.004
        grid = np.stack(np.meshgrid(*[np.arange(7)] * 3, indexing="ij"), -1).reshape(-1, 3)
        positions, radii = grid * (2 * r + margin) + 0.3, np.full(7**3, r)
    elif case == "crowd":  # more than eight pairs a sphere: the pair arrays grow
        positions, radii = random_cloud(4, 600, 0.12, 0.02)
    else:
        positions, radii = random_cloud(5, 800, 1.0, 0.02, polydisperse=case == "large spheres")
    i, j, vectors, distances = candidate_contacts(positions, radii, margin)
    expected = brute_force_pairs(positions, radii, margin)
    assert_same_pairs((i, j), expected)
    assert expected[0].size > (8 * len(positions) if case == "crowd" else 100)
    np.testing.assert_array_equal(vectors, pair_vectors(positions, i, j))
    np.testing.assert_array_equal(distances, np.linalg.norm(vectors, axis=1))


@pytest.mark.exact
def test_a_sphere_thrown_far_away_falls_back_on_the_tree_with_the_same_pairs():
    """A bounding box of far more cubes than spheres: the cell list declines, and
    the k-d tree gives the brute-force pairs."""
    from granular.spheres.cell_lists import pairs_within

    positions, radii = random_cloud(11, 300, 1.0, 0.03)
    positions[7] = [1e4, -3e3, 50.0]
    assert pairs_within(positions, 0.1) is None
    assert_same_pairs(candidate_pairs(positions, radii, 0.02), brute_force_pairs(positions, radii, 0.02))


@pytest.mark.exact
@pytest.mark.parametrize("period_in_cutoffs", [3.05, 3.9, 2.5])
def test_a_periodic_cell_a_few_search_distances_wide_gives_the_brute_force_pairs(period_in_cutoffs):
    """Periodic along x and y, the cell list needs at least three cubes a period, so
    that a cube's neighbours through the faces are distinct cubes: a period of
    3.05 and 3.9 cutoffs takes three cubes (pairs wrap through both faces), 2.5
    falls back on the tree. Both give the brute-force pairs."""
    from granular.spheres.cell_lists import pairs_within

    rng = np.random.default_rng(12)
    radius, margin = 0.03, 0.01
    cutoff = 2 * radius + margin
    length = period_in_cutoffs * cutoff
    positions = rng.uniform(0.0, length, (120, 3)) * [1.0, 1.0, 3.0]
    radii = np.full(len(positions), radius)
    periodic = gr.PeriodicBox([0, 0, 0], [length, length, 1.0], axes=(0, 1))
    expected = brute_force_pairs(positions, radii, margin, periodic)
    assert_same_pairs(candidate_pairs(positions, radii, margin, periodic), expected)
    assert (pairs_within(positions, cutoff, periodic) is None) == (period_in_cutoffs < 3)
    direct = np.linalg.norm(positions[expected[1]] - positions[expected[0]], axis=1)
    assert np.any(direct > 2 * radius + margin)  # some pairs exist only through a face


@pytest.mark.exact
@pytest.mark.parametrize("axes, margin", [(None, 0.2), ((0, 1, 2), 0.12)])
def test_a_crowd_with_more_pairs_than_the_cell_list_first_makes_room_for(axes, margin):
    """The kernels start with room for 16 pairs a sphere and double it when full:
    300 spheres with more candidate pairs than that give the brute-force pairs (the
    periodic margin keeps three cubes a period, so the cell list is used)."""
    from granular.spheres.cell_lists import pairs_within

    rng = np.random.default_rng(13)
    positions, radii = rng.uniform(0.0, 1.0, (300, 3)), np.full(300, 0.1)
    periodic = None if axes is None else gr.PeriodicBox([0, 0, 0], [1, 1, 1], axes=axes)
    assert pairs_within(positions, 0.2 + margin, periodic) is not None
    expected = brute_force_pairs(positions, radii, margin, periodic)
    assert expected[0].size > 16 * 300 + 16
    assert_same_pairs(candidate_pairs(positions, radii, margin, periodic), expected)


# -- the constraint rows of a world ------------------------------------------------------------


def packed_box_world(seed: int = 0, periodic: bool = False):
    """Spheres on a jittered lattice in a closed box (or a box periodic in x, y)."""
    rng = np.random.default_rng(seed)
    r = 0.01
    grid = np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = (grid + 0.5) * 2.2 * r + rng.uniform(-0.08, 0.08, grid.shape) * r
    radii = r * rng.uniform(0.85, 1.0, len(positions))
    side = 8 * 2.2 * r
    velocities = rng.normal(0.0, 0.5, positions.shape)
    if periodic:
        return gr.SphereWorld(
            positions,
            radii,
            masses=1.0,
            velocities=velocities,
            walls=[gr.Plane([0, 0, 0], [0, 0, 1]), gr.Plane([0, 0, side], [0, 0, -1])],
            periodic=gr.PeriodicBox([0, 0, 0], [side] * 3, axes=(0, 1)),
        )
    return gr.SphereWorld(positions, radii, masses=1.0, velocities=velocities, walls=[gr.Box([0, 0, 0], [side] * 3)])


@pytest.mark.exact
@pytest.mark.parametrize("periodic", [False, True], ids=["box", "periodic-xy"])
def test_world_constraint_rows_are_the_brute_force_pairs_and_wall_contacts(periodic):
    """Sphere pairs with gap <= 2 h s + skin and sphere-wall gaps <= h s + skin,
    where skin = SEARCH_SKIN r_min (the contract in `SphereWorld.constraints`);
    gaps, normals and Jacobian rows as in DESIGN section 1."""
    world = packed_box_world(periodic=periodic)
    h, speed = 1e-3, 2.0
    t, q, _ = world.initial_state()
    radii = world.radii_at(t + h)
    positions = q.reshape(-1, 3)
    skin = SEARCH_SKIN * radii.min()
    rows = world.constraints(t + h, q, h, speed)
    pair = rows.wall < 0
    expected = brute_force_pairs(positions, radii, 2 * h * speed + skin, world.periodic)
    assert_same_pairs((rows.i[pair], rows.j[pair]), expected)
    assert np.all(rows.j[~pair] == -1)
    found_walls = set(zip(rows.i[~pair].tolist(), rows.wall[~pair].tolist()))
    expected_walls = {
        (s, k)
        for k, plane in enumerate(world.planes)
        for s in np.flatnonzero((positions - plane.point) @ plane.normal - radii <= h * speed + skin)
    }
    assert found_walls == expected_walls and len(found_walls) == np.count_nonzero(~pair)
    assert np.count_nonzero(pair) > 500 and len(found_walls) > 50
    # gaps and normals of the rows
    vectors = positions[rows.j[pair]] - positions[rows.i[pair]]
    if periodic:
        vectors = world.periodic.minimum_image(vectors)
    np.testing.assert_allclose(
        rows.gap[pair], pair_gaps(positions, radii, rows.i[pair], rows.j[pair], world.periodic), rtol=0, atol=1e-15
    )
    np.testing.assert_allclose(rows.normal[pair], vectors / np.linalg.norm(vectors, axis=1)[:, None], atol=1e-15)
    walls = np.flatnonzero(~pair)
    for k in walls:
        plane = world.planes[rows.wall[k]]
        assert rows.gap[k] == pytest.approx(
            plane.normal @ (positions[rows.i[k]] - plane.point) - radii[rows.i[k]], abs=1e-15
        )
        np.testing.assert_array_equal(rows.normal[k], plane.normal)
    # Jacobian: -n on sphere i, +n on sphere j; +n on the sphere of a wall row
    G = rows.jacobian.toarray()
    expected_G = np.zeros_like(G)
    for k in range(rows.size):
        if rows.wall[k] < 0:
            expected_G[k, 3 * rows.i[k] : 3 * rows.i[k] + 3] = -rows.normal[k]
            expected_G[k, 3 * rows.j[k] : 3 * rows.j[k] + 3] = rows.normal[k]
        else:
            expected_G[k, 3 * rows.i[k] : 3 * rows.i[k] + 3] = rows.normal[k]
    np.testing.assert_array_equal(G, expected_G)


# -- the margin never misses a contact ------------------------------------------------------------


def test_a_fast_sphere_crossing_the_whole_gap_in_one_step_does_not_tunnel():
    """Sphere 0 at 100 m/s toward sphere 1 at rest, gap 0.05 m = half its travel in a
    step (h = 1e-3): the pair is far outside any fixed contact distance (2.5 radii
    apart) but inside the speed margin. Maury's step lets the pair close exactly
    (relative speed D/h = 50 m/s, momentum kept: 75 and 25 m/s), the next step ends
    the plastic impact at the common 50 m/s. Without the pair the spheres would
    pass through each other."""
    r, h = 0.02, 1e-3
    world = gr.SphereWorld(
        [[0.0, 0.0, 0.0], [0.09, 0.0, 0.0]],
        r,
        masses=1.0,
        velocities=[[100.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
        gravity=(0, 0, 0),
    )
    sim = gr.Simulation(world, h)
    first = sim.step()
    # to the projection's complementarity tolerance, on the velocity scale 100 m/s
    tolerance = COMPLEMENTARITY_TOLERANCE * 100.0
    assert first.velocities[:, 0] == pytest.approx([75.0, 25.0], abs=tolerance)
    for _ in range(20):
        result = sim.step()
        gap = result.positions[1, 0] - result.positions[0, 0] - 2 * r
        assert gap >= -1e-9 * r
    assert result.velocities[:, 0] == pytest.approx([50.0, 50.0], abs=tolerance)
    assert np.abs(result.velocities[:, 1:]).max() == 0.0


def test_a_sphere_sped_up_by_the_projection_is_searched_again():
    """A heavy sphere (1000 kg) hits a light one (1 kg) elastically at 10 m/s: the
    light one leaves at ~20 m/s, twice the speed bound the first search used, toward
    a third sphere coming the other way at 10 m/s. Their gap (0.026 m) is beyond the
    first search margin (2 h s + skin = 0.0205 m) but closes within the step at 30 m/s:
    the scheme must notice the faster sphere, widen the margin and redo the step.
    No overlap at any step."""
    r, h = 0.01, 1e-3
    positions = [[0.0, 0.0, 0.0], [2 * r, 0.0, 0.0], [4 * r + 0.026, 0.0, 0.0]]
    velocities = [[10.0, 0.0, 0.0], [0.0, 0.0, 0.0], [-10.0, 0.0, 0.0]]
    world = gr.SphereWorld(
        positions, r, masses=[1000.0, 1.0, 1.0], velocities=velocities, gravity=(0, 0, 0), restitution=1.0
    )
    sim = gr.Simulation(world, h)
    first_margin = 2 * h * 10.0 + SEARCH_SKIN * r
    assert 0.026 > first_margin and 0.026 < h * (2 * 1000 / 1001 * 10.0 + 10.0)
    first = sim.step()
    # the pair (1, 2) is among the step's rows: the search was redone with a wider margin
    assert np.any((first.contacts.i == 1) & (first.contacts.j == 2))
    x = first.positions[:, 0]
    assert x[2] - x[1] - 2 * r >= -1e-9 * r and x[1] - x[0] - 2 * r >= -1e-9 * r
    for _ in range(10):
        x = sim.step().positions[:, 0]
        assert np.diff(x).min() - 2 * r >= -1e-9 * r
