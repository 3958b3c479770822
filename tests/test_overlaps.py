"""Initial overlaps: the default error, Maury's capped separation during a run, and
`remove_overlaps`, the projection of positions onto the non-overlap set."""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular.spheres.neighbors import candidate_pairs, pair_gaps
from granular.tolerances import COMPLEMENTARITY_TOLERANCE, OVERLAP_TOLERANCE


def smallest_relative_gap(positions, radii, walls=()) -> float:
    """The smallest gap over the sum of the radii (pairs) or the radius (walls)."""
    i, j = candidate_pairs(positions, radii, 0.0)
    gaps = [pair_gaps(positions, radii, i, j) / (radii[i] + radii[j])]
    planes = [plane for wall in walls for plane in wall.planes()]
    gaps += [((positions - plane.point) @ plane.normal - radii) / radii for plane in planes]
    return float(np.concatenate(gaps).min(initial=np.inf))


def overlapping_cloud(n: int = 150, seed: int = 0):
    """n spheres of radius 4-6 mm dropped at random into a 6 cm box (packing
    fraction 0.37): many overlaps."""
    rng = np.random.default_rng(seed)
    radii = rng.uniform(0.004, 0.006, n)
    box = gr.Box([0, 0, 0], [0.06, 0.06, 0.06])
    positions = rng.uniform(0.0, 0.06, (n, 3))
    return positions, radii, box


# -- the default ----------------------------------------------------------------------------


def test_overlapping_positions_are_an_error_by_default_and_bad_choices_are_refused():
    with pytest.raises(gr.OverlapError):
        gr.SphereWorld([[0, 0, 0], [0.015, 0, 0]], 0.01)
    with pytest.raises(gr.InvalidInputError, match="initial_overlaps"):
        gr.SphereWorld([[0, 0, 0]], 0.01, initial_overlaps="ignore")
    with pytest.raises(gr.InvalidInputError, match="separation_speed"):
        gr.SphereWorld([[0, 0, 0]], 0.01, initial_overlaps="separate", separation_speed=-1.0)


# -- remove_overlaps ---------------------------------------------------------------------------


def test_two_overlapping_spheres_move_apart_inversely_to_their_masses():
    """Overlap 4 mm along x, masses 1 and 3: the projection in the mass metric moves
    them along the line of centres by 3 mm and 1 mm, and nothing else."""
    positions = np.array([[0.0, 0.0, 0.0], [0.016, 0.0, 0.0]])
    moved = gr.remove_overlaps(positions, 0.01, masses=[1.0, 3.0])
    expected = np.array([[-0.003, 0.0, 0.0], [0.017, 0.0, 0.0]])
    np.testing.assert_allclose(moved, expected, rtol=0, atol=1e-12)


def test_a_sphere_through_a_wall_is_moved_onto_it():
    """A sphere 3 mm into the floor comes to rest exactly on it, without moving sideways."""
    floor = gr.Plane([0, 0, 0], [0, 0, 1])
    moved = gr.remove_overlaps([[0.02, -0.01, 0.007]], 0.01, walls=[floor])
    np.testing.assert_allclose(moved, [[0.02, -0.01, 0.01]], rtol=0, atol=1e-12)


@pytest.mark.exact
def test_positions_without_overlaps_come_back_unchanged():
    positions = np.array([[0.0, 0.0, 0.0], [0.025, 0.0, 0.0], [0.0, 0.03, 0.0]])
    moved = gr.remove_overlaps(positions, 0.01)
    assert moved.tobytes() == positions.tobytes()


@pytest.mark.exact
def test_a_random_overlapping_cloud_becomes_admissible_and_far_spheres_stay_put():
    """150 spheres thrown at random into the left half of a box (hundreds of
    overlapping pairs) and four spheres far apart in the right half: the result is accepted by
    SphereWorld (no overlap beyond OVERLAP_TOLERANCE), and the four far spheres,
    which no constraint touches, have not moved by a single bit."""
    positions, radii, box = overlapping_cloud()
    positions[:, 0] *= 0.5
    far = np.array([[0.08, 0.015, 0.015], [0.08, 0.045, 0.015], [0.08, 0.015, 0.045], [0.08, 0.045, 0.045]])
    positions = np.vstack([positions, far])
    radii = np.concatenate([radii, np.full(4, 0.005)])
    box = gr.Box([0, 0, 0], [0.1, 0.06, 0.06])
    assert smallest_relative_gap(positions, radii, [box]) < -0.5  # deep overlaps to start with
    moved = gr.remove_overlaps(positions, radii, walls=[box])
    assert smallest_relative_gap(moved, radii, [box]) >= -OVERLAP_TOLERANCE
    gr.SphereWorld(moved, radii, walls=[box])  # raises OverlapError otherwise
    assert moved[-4:].tobytes() == far.tobytes()


def test_spheres_that_cannot_fit_raise_jamming_error():
    """Three spheres of 1 cm radius in a 5 x 2 x 2 cm box: pinned in y and z, they need
    6 cm along x. The linearised set is empty."""
    box = gr.Box([0, 0, 0], [0.05, 0.02, 0.02])
    positions = [[0.01, 0.01, 0.01], [0.02, 0.01, 0.01], [0.03, 0.01, 0.01]]
    with pytest.raises(gr.JammingError):
        gr.remove_overlaps(positions, 0.01, walls=[box])


# -- separation during a run ----------------------------------------------------------------------


def test_overlapping_spheres_separate_at_most_at_the_separation_speed():
    """Two spheres overlapping by 6 mm, no gravity, separation capped at 0.5 m/s with
    h = 1 ms: the overlap shrinks by exactly 0.5 mm a step (the cap binds) until it is
    gone, the step result shows it, momentum stays zero, and they then fly apart at
    the cap."""
    h, cap = 1e-3, 0.5
    world = gr.SphereWorld(
        [[0.0, 0.0, 0.0], [0.014, 0.0, 0.0]], 0.01, gravity=(0, 0, 0), initial_overlaps="separate", separation_speed=cap
    )
    sim = gr.Simulation(world, h)
    overlaps = []
    for _ in range(16):
        result = sim.step()
        overlaps.append(result.overlap)
        assert np.abs(result.velocities.sum(axis=0)).max() <= 1e-15  # equal masses, zero momentum
        separation = result.velocities[1, 0] - result.velocities[0, 0]
        # A pushing contact may separate faster than its bound by the complementarity
        # tolerance of the projection (velocity scale: the cap).
        assert separation <= cap * (1.0 + COMPLEMENTARITY_TOLERANCE)
    # Each step may separate faster than the cap by the complementarity tolerance.
    tolerance = 12 * h * COMPLEMENTARITY_TOLERANCE * cap
    np.testing.assert_allclose(overlaps[:12], 0.006 - cap * h * np.arange(12), rtol=0, atol=tolerance)
    assert max(overlaps[12:]) <= tolerance
    gap = sim.positions[1, 0] - sim.positions[0, 0] - 0.02
    assert gap > 0.0
    assert result.velocities[1, 0] - result.velocities[0, 0] == pytest.approx(cap, rel=COMPLEMENTARITY_TOLERANCE)


@pytest.mark.exact
def test_the_default_cap_is_a_tenth_of_the_smallest_radius_per_step():
    """Default separation speed 0.1 r_min / h: a 2 mm overlap of 1 cm spheres with
    h = 1 ms closes in two steps (1 mm each)."""
    h = 1e-3
    world = gr.SphereWorld([[0.0, 0.0, 0.0], [0.018, 0.0, 0.0]], 0.01, gravity=(0, 0, 0), initial_overlaps="separate")
    sim = gr.Simulation(world, h)
    first, second, third = (sim.step().overlap for _ in range(3))
    assert first == pytest.approx(0.002, abs=1e-12)
    assert second == pytest.approx(0.001, abs=1e-12)
    assert third <= 1e-12
