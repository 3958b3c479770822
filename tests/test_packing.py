"""Packings and initial configurations (`granular.spheres.packing`, ``granular pack``).

Filled regions are checked independently of the packing code: every pair by a
brute-force distance, every sphere against the walls by its coordinates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import granular as gr
from granular.cli import USAGE, main
from granular.records.configurations import read_configuration, world_from_file, write_configuration
from granular.spheres.packing import fill_box, fill_cylinder, packing_fraction

LOWER, UPPER = np.zeros(3), np.full(3, 0.2)


def smallest_pair_gap(positions, radii) -> float:
    """min over i < j of |q_i - q_j| - r_i - r_j, by brute force (m)."""
    i, j = np.triu_indices(len(radii), 1)
    return float(np.min(np.linalg.norm(positions[i] - positions[j], axis=1) - radii[i] - radii[j]))


def smallest_box_gap(positions, radii, lower, upper) -> float:
    return float(min(np.min(positions - radii[:, None] - lower), np.min(upper - positions - radii[:, None])))


def one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


# -- filling ---------------------------------------------------------------------------
def test_box_fill_has_no_overlap_and_no_sphere_outside():
    positions, radii = fill_box(300, LOWER, UPPER, (0.008, 0.012), seed=1)
    assert positions.shape == (300, 3) and radii.shape == (300,)
    assert smallest_pair_gap(positions, radii) >= 0.0
    assert smallest_box_gap(positions, radii, LOWER, UPPER) >= 0.0


def test_cylinder_fill_with_a_tilted_axis_has_no_overlap_and_stays_inside():
    centre, axis, radius, height = np.array([1.0, -2.0, 0.5]), np.array([1.0, 1.0, 0.5]), 0.1, 0.3
    positions, radii = fill_cylinder(250, centre, axis, radius, height, 0.012, seed=2)
    unit = axis / np.linalg.norm(axis)
    along = (positions - centre) @ unit
    across = np.linalg.norm(positions - centre - np.outer(along, unit), axis=1)
    assert smallest_pair_gap(positions, radii) >= 0.0
    assert np.all(across + radii <= radius) and np.all(np.abs(along) + radii <= height / 2)
    # the spheres fill the whole cylinder, not a part of it: both ends and the rim are reached
    assert along.min() < -height / 2 + 3 * 0.012 and along.max() > height / 2 - 3 * 0.012
    assert across.max() > radius - 3 * 0.012


def test_uniform_radius_range_follows_its_distribution():
    low, high, n = 0.004, 0.008, 600
    _, radii = fill_box(n, LOWER, UPPER, (low, high), seed=3)
    assert radii.min() >= low and radii.max() <= high
    # mean of n uniform draws: standard deviation (high - low) / sqrt(12 n); 4 of them
    # fail by chance with probability 6e-5
    assert abs(radii.mean() - (low + high) / 2) < 4 * (high - low) / math.sqrt(12 * n)
    # spread over the range, not a constant
    assert radii.min() < low + 0.05 * (high - low) and radii.max() > high - 0.05 * (high - low)


@pytest.mark.exact
def test_per_sphere_radii_keep_their_order_and_a_callable_draws_each_radius():
    given = np.linspace(0.005, 0.012, 40)[::-1].copy()
    np.random.default_rng(0).shuffle(given)
    positions, radii = fill_box(40, LOWER, UPPER, given, seed=4)
    assert np.array_equal(radii, given)  # sphere k has the radius asked for it
    assert smallest_pair_gap(positions, radii) >= 0.0
    _, drawn = fill_box(50, LOWER, UPPER, lambda rng: rng.choice([0.006, 0.009]), seed=4)
    assert set(np.unique(drawn)) == {0.006, 0.009}


@pytest.mark.exact
def test_same_seed_same_packing_other_seed_another():
    first = fill_box(100, LOWER, UPPER, (0.008, 0.01), seed=7)
    again = fill_box(100, LOWER, UPPER, (0.008, 0.01), seed=7)
    other = fill_box(100, LOWER, UPPER, (0.008, 0.01), seed=8)
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert not np.allclose(first[0], other[0])


def test_random_sequential_addition_reaches_a_packing_fraction_of_030():
    """The documented reach: 572 equal spheres (fraction 0.30) in a box of 10 diameters."""
    positions, radii = fill_box(572, LOWER, UPPER, 0.01, seed=1)
    assert packing_fraction(radii, 0.2**3) > 0.299
    assert smallest_pair_gap(positions, radii) >= 0.0
    assert smallest_box_gap(positions, radii, LOWER, UPPER) >= 0.0


def test_growth_reaches_045_without_overlap():
    """grow=True: 185 equal spheres (fraction 0.45, beyond RSA) in a box of 6 diameters."""
    lower, upper = np.zeros(3), np.full(3, 0.12)
    positions, radii = fill_box(185, lower, upper, 0.01, seed=0, grow=True)
    assert np.all(radii == 0.01) and packing_fraction(radii, 0.12**3) > 0.448
    assert smallest_pair_gap(positions, radii) >= 0.0
    assert smallest_box_gap(positions, radii, lower, upper) >= 0.0
    with pytest.raises(gr.InvalidInputError) as error:
        fill_box(185, lower, upper, 0.01, seed=0)  # the same request is beyond RSA
    assert "asked" in one_line(error)
    with pytest.raises(gr.InvalidInputError) as error:
        fill_box(300, lower, upper, 0.01, grow=True)  # 0.73: refused at once
    assert "packing fraction 0.727 asked, more than 0.6" in one_line(error)


def test_a_too_full_region_is_refused_in_one_line():
    n = int(0.5 * 0.2**3 / (4 / 3 * math.pi * 0.01**3))  # packing fraction 0.5
    with pytest.raises(gr.InvalidInputError) as error:
        fill_box(n, LOWER, UPPER, 0.01, seed=0)
    message = one_line(error)
    assert "packing fraction 0.5 asked" in message and f"of {n} spheres placed" in message


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: fill_box(3, LOWER, UPPER, 0.15), "does not fit"),
        (lambda: fill_box(3, UPPER, LOWER, 0.01), "lower < upper"),
        (lambda: fill_box(3, LOWER, UPPER, -0.01), "radii must be positive"),
        (lambda: fill_box(3, LOWER, UPPER, (0.02, 0.01)), "low <= high"),
        (lambda: fill_box(0, LOWER, UPPER, 0.01), "positive integer"),
        (lambda: fill_cylinder(3, LOWER, "w", 0.1, 0.1, 0.01), "axis must be"),
        (lambda: fill_box(3, LOWER, UPPER, 0.01, seed=-1), "seed must be"),
        (lambda: fill_box(3, LOWER, UPPER, lambda rng: "big"), "radius callable must return numbers"),
    ],
)
def test_bad_fill_arguments_are_refused_in_one_line(call, words):
    with pytest.raises(gr.InvalidInputError) as error:
        call()
    assert words in one_line(error)


# -- files -----------------------------------------------------------------------------
def configuration(n=30, seed=5):
    positions, radii = fill_box(n, LOWER, UPPER, (0.008, 0.012), seed=seed)
    rng = np.random.default_rng(seed)
    return positions, radii, rng.normal(size=(n, 3)) / 3, rng.uniform(0.001, 0.01, n)


@pytest.mark.exact
@pytest.mark.parametrize("suffix", [".csv", ".xyz"])
def test_round_trip_is_exact_to_the_bit(tmp_path, suffix):
    positions, radii, velocities, masses = configuration()
    path = write_configuration(tmp_path / f"spheres{suffix}", positions, radii, velocities, masses)
    read = read_configuration(path)
    assert np.array_equal(read.positions, positions) and np.array_equal(read.radii, radii)
    assert np.array_equal(read.velocities, velocities) and np.array_equal(read.masses, masses)
    bare = read_configuration(write_configuration(tmp_path / f"bare{suffix}", positions, radii))
    assert np.array_equal(bare.positions, positions) and bare.velocities is None and bare.masses is None


@pytest.mark.exact
def test_csv_header_names_the_columns_in_any_order(tmp_path):
    path = tmp_path / "hand.csv"
    path.write_text("r,z,y,x,m\n0.01,3,2,1,0.5\n0.02,6,5,4,0.25\n")
    read = read_configuration(path)
    assert np.array_equal(read.positions, [[1, 2, 3], [4, 5, 6]])
    assert np.array_equal(read.radii, [0.01, 0.02]) and np.array_equal(read.masses, [0.5, 0.25])


@pytest.mark.exact
def test_xyz_without_properties_is_read_by_its_number_of_columns(tmp_path):
    path = tmp_path / "plain.xyz"
    path.write_text("2\nmade by hand\nC 1 2 3 0.1 0 0 -1\nO 4 5 6 0.2 0 1 0\n")
    read = read_configuration(path)
    assert np.array_equal(read.positions, [[1, 2, 3], [4, 5, 6]]) and np.array_equal(read.radii, [0.1, 0.2])
    assert np.array_equal(read.velocities, [[0, 0, -1], [0, 1, 0]]) and read.masses is None


@pytest.mark.parametrize(
    "name, text, words",
    [
        ("a.csv", "x,y,z\n1,2,3\n", "missing column r"),
        ("a.csv", "x,y,z,r,vx\n1,2,3,0.1,0\n", "all of vx, vy, vz"),
        ("a.csv", "x,y,z,r\n1,2,3\n", "line 2: 3 values for 4 columns"),
        ("a.csv", "x,y,z,r\n1,2,nan,0.1\n", "non-finite"),
        ("a.csv", "x,y,z,r\n1,2,3,-0.1\n", "radii must be positive: sphere 0"),
        ("a.csv", "x,y,z,radius\n1,2,3,0.1\n", "unknown column 'radius'"),
        ("a.csv", "x,y,z,r\n1,2,three,0.1\n", "not a number"),
        ("a.xyz", "3\ncomment\nS 1 2 3 0.1\nS 4 5 6 0.1\n", "announces 3 spheres, the file has 2"),
        ("a.xyz", "1\nProperties=species:S:1:pos:R:3\nS 1 2 3\n", "missing column r"),
        ("a.xyz", "1\n\nS 1 2 3 inf\n", "non-finite"),
        ("a.txt", "x,y,z,r\n", "not '.txt'"),
    ],
)
def test_bad_configuration_files_are_refused_in_one_line(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(gr.InvalidInputError) as error:
        read_configuration(path)
    message = one_line(error)
    assert words in message and name in message


def settled_run(tmp_path):
    """A run of 20 spheres falling in a box for 5 steps, saved to a file."""
    positions, radii = fill_box(20, LOWER, UPPER, 0.015, seed=6)
    world = gr.SphereWorld(positions, radii, masses=np.linspace(0.01, 0.02, 20), walls=[gr.Box(LOWER, UPPER)])
    trajectory = gr.Simulation(world, 1e-3).run(steps=5)
    return trajectory, trajectory.save(tmp_path / "run.h5")


@pytest.mark.exact
def test_a_run_file_gives_the_frame_asked(tmp_path):
    trajectory, path = settled_run(tmp_path)
    last, first = read_configuration(path), read_configuration(path, frame=0)
    assert np.array_equal(last.positions, trajectory.positions[-1])
    assert np.array_equal(last.velocities, trajectory.velocities[-1]) and np.any(last.velocities != 0)
    assert np.array_equal(first.positions, trajectory.positions[0]) and not np.array_equal(
        first.positions, last.positions
    )
    assert np.array_equal(last.radii, trajectory.radii[-1]) and np.allclose(last.masses, np.linspace(0.01, 0.02, 20))
    assert last.t == trajectory.t[-1]
    with pytest.raises(gr.InvalidInputError) as error:
        read_configuration(path, frame=len(trajectory))
    assert "out of range" in one_line(error)


@pytest.mark.exact
@pytest.mark.parametrize("suffix", [".csv", ".xyz", ".h5"])
def test_world_from_file_matches_the_file_and_steps(tmp_path, suffix):
    if suffix == ".h5":
        _, path = settled_run(tmp_path)
    else:
        positions, radii, velocities, masses = configuration(n=40)
        path = write_configuration(tmp_path / f"start{suffix}", positions, radii, velocities, masses)
    read = read_configuration(path)
    world = gr.world_from_file(path, walls=[gr.Box(LOWER, UPPER)])
    assert np.array_equal(world.q0.reshape(-1, 3), read.positions)
    assert np.array_equal(world.radii_at(0.0), read.radii) and np.array_equal(world.masses_at(0.0), read.masses)
    assert np.array_equal(world.u0.reshape(-1, 3), read.velocities)
    result = gr.Simulation(world, 1e-3).step()
    tolerance = 1e-9 * 2 * read.radii.max()
    assert smallest_pair_gap(result.positions, read.radii) >= -tolerance
    assert smallest_box_gap(result.positions, read.radii, LOWER, UPPER) >= -tolerance
    assert not np.array_equal(result.positions, read.positions)  # it moved


def test_world_from_file_keyword_overrides_and_density_refusal(tmp_path):
    positions, radii, velocities, masses = configuration(n=10)
    path = write_configuration(tmp_path / "start.csv", positions, radii, velocities, masses)
    at_rest = world_from_file(path, velocities=np.zeros((10, 3)))
    assert np.all(at_rest.u0 == 0.0)
    with pytest.raises(gr.InvalidInputError) as error:
        world_from_file(path, density=2500.0)
    assert "density would be ignored" in one_line(error)


# -- the command -----------------------------------------------------------------------
def test_pack_command_writes_a_file_of_n_spheres(tmp_path, capsys):
    out = tmp_path / "packing.csv"
    status = main(
        [
            "pack",
            "box",
            "--n",
            "120",
            "--radius",
            "0.01",
            "--radius-max",
            "0.012",
            "--lower",
            "0,0,0",
            "--upper",
            "0.2,0.2,0.2",
            "--seed",
            "0",
            "--out",
            str(out),
        ]
    )
    assert status == 0 and "wrote 120 spheres" in capsys.readouterr().out
    read = read_configuration(out)
    assert len(read) == 120 and read.radii.min() >= 0.01 and read.radii.max() <= 0.012
    assert smallest_pair_gap(read.positions, read.radii) >= 0.0
    assert smallest_box_gap(read.positions, read.radii, LOWER, UPPER) >= 0.0
    out = tmp_path / "dense.csv"
    assert (
        main(
            [
                "pack",
                "box",
                "--grow",
                "--n",
                "185",
                "--radius",
                "0.01",
                "--lower",
                "0,0,0",
                "--upper",
                "0.12,0.12,0.12",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert len(read_configuration(out)) == 185 and "packing fraction 0.448" in capsys.readouterr().out
    out = tmp_path / "tube.xyz"
    status = main(
        [
            "pack",
            "cylinder",
            "--n",
            "50",
            "--radius",
            "0.01",
            "--centre",
            "0,0,0.1",
            "--axis",
            "z",
            "--cylinder-radius",
            "0.05",
            "--height",
            "0.2",
            "--out",
            str(out),
        ]
    )
    read = read_configuration(out)
    assert status == 0 and len(read) == 50
    assert np.all(np.hypot(read.positions[:, 0], read.positions[:, 1]) + read.radii <= 0.05)


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--n", "2000", "--radius", "0.01", "--lower", "0,0,0", "--upper", "0.2,0.2,0.2"],
            "packing fraction 1.05 asked",
        ),
        (["--n", "5", "--radius", "0.01", "--lower", "0,0", "--upper", "1,1,1"], "three finite numbers"),
        (
            ["--n", "5", "--radius", "0.02", "--radius-max", "0.01", "--lower", "0,0,0", "--upper", "1,1,1"],
            "smaller than --radius",
        ),
    ],
)
def test_pack_command_errors_are_one_line_with_status_2(tmp_path, capsys, args, words):
    out = tmp_path / "never.csv"
    assert main(["pack", "box", *args, "--out", str(out)]) == USAGE
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and words in error
    assert not out.exists()
