"""Trajectory recording (Simulation.run) and the HDF5 round trip; unreadable files
give TrajectoryFileError."""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular.records.trajectory_format import FRAME_ARRAYS

h5py = pytest.importorskip("h5py")


@pytest.fixture(scope="module")
def growing_pile():
    """12 spheres whose radii grow 10 %/s falling into a box: contacts, walls and
    time-varying radii in one short run; steps recorded every 7 (and the last)."""
    rng = np.random.default_rng(3)
    r = 0.01
    grid = np.stack(np.meshgrid(np.arange(2), np.arange(2), np.arange(3), indexing="ij"), -1).reshape(-1, 3)
    positions = grid * 2.5 * r + np.array([1.3 * r, 1.3 * r, 1.2 * r])
    world = gr.SphereWorld(
        positions,
        lambda t: np.full(12, r * (1.0 + 0.1 * t)),
        masses=rng.uniform(1, 2, 12),
        velocities=rng.normal(0.0, 0.2, (12, 3)),
        walls=[gr.Box([0, 0, 0], [5.3 * r, 5.3 * r, 1.0], open_top=True)],
        restitution=0.2,
    )
    sim = gr.Simulation(world, 1e-3)
    steps = []
    trajectory = sim.run(steps=100, record_every=7, progress=lambda k, n, result: steps.append(result))
    return world, trajectory, steps


@pytest.mark.exact
def test_run_records_every_kth_step_and_the_last_with_their_contacts(growing_pile):
    world, trajectory, steps = growing_pile
    kept = [0] + list(range(7, 101, 7)) + [100]
    assert len(trajectory) == len(kept)
    np.testing.assert_allclose(trajectory.t, 1e-3 * np.array(kept), rtol=0, atol=1e-15)
    assert trajectory.positions.shape == (len(kept), 12, 3) and trajectory.radii.shape == (len(kept), 12)
    np.testing.assert_array_equal(trajectory.positions[0], world.q0.reshape(12, 3))
    assert len(trajectory.contacts[0]) == 0
    for frame, k in enumerate(kept[1:], start=1):
        step = steps[k - 1]
        np.testing.assert_array_equal(trajectory.positions[frame], step.positions)
        np.testing.assert_array_equal(trajectory.velocities[frame], step.velocities)
        np.testing.assert_array_equal(trajectory.radii[frame], world.radii_at(step.t))
        np.testing.assert_array_equal(trajectory.contacts[frame].impulse, step.contacts.impulse)
        assert trajectory.kinetic_energy[frame] == step.kinetic_energy
    assert trajectory.radii[-1, 0] == pytest.approx(0.01 * 1.01)
    assert sum(int(np.count_nonzero(c.impulse > 0)) for c in trajectory.contacts) > 10
    assert trajectory.meta["dt"] == 1e-3 and trajectory.meta["record_every"] == 7


@pytest.mark.exact
def test_hdf5_round_trip_is_exact(growing_pile, tmp_path):
    """Positions, velocities, radii, times, energies, contacts (every field, frame by
    frame, including empty frames), system description and meta come back identical."""
    _, trajectory, _ = growing_pile
    path = trajectory.save(tmp_path / "sub" / "run.h5")
    loaded = gr.Trajectory.load(path)
    for name in ("t", "positions", "velocities", "radii", "kinetic_energy", "potential_energy", "dissipated_energy"):
        original, back = getattr(trajectory, name), getattr(loaded, name)
        assert back.dtype == original.dtype and back.shape == original.shape, name
        np.testing.assert_array_equal(back, original, err_msg=name)
    assert len(loaded.contacts) == len(trajectory.contacts)
    for original, back in zip(trajectory.contacts, loaded.contacts):
        for name in ("i", "j", "wall", "gap", "normal", "impulse", "tangential_impulse"):
            np.testing.assert_array_equal(getattr(back, name), getattr(original, name), err_msg=name)
        assert back.normal.shape[1:] == (3,)
    assert loaded.system == trajectory.system
    assert loaded.meta == trajectory.meta
    assert not list(tmp_path.glob("sub/*.tmp"))  # no temporary file left behind


def test_missing_file_is_a_trajectory_file_error(tmp_path):
    with pytest.raises(gr.TrajectoryFileError, match="no trajectory file at .*nothing.h5"):
        gr.Trajectory.load(tmp_path / "nothing.h5")


def test_corrupt_files_are_trajectory_file_errors(growing_pile, tmp_path):
    """Random bytes, a truncated trajectory, an HDF5 file of something else, and a
    trajectory missing a dataset: each a TrajectoryFileError naming the file."""
    _, trajectory, _ = growing_pile
    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(np.random.default_rng(0).bytes(4096))
    good = trajectory.save(tmp_path / "good.h5")
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as h5:
        h5.create_dataset("data", data=np.arange(3))
    incomplete = tmp_path / "incomplete.h5"
    incomplete.write_bytes(good.read_bytes())
    with h5py.File(incomplete, "a") as h5:
        del h5["velocities"]
    for path, message in [
        (garbage, "cannot read trajectory"),
        (truncated, "cannot read trajectory"),
        (foreign, "is not a granular trajectory"),
        (incomplete, "cannot read trajectory"),
    ]:
        with pytest.raises(gr.TrajectoryFileError, match=message) as caught:
            gr.Trajectory.load(path)
        assert path.name in str(caught.value)


@pytest.mark.exact
def test_round_trip_keeps_mixed_frictional_and_frictionless_frames(tmp_path):
    """A sphere falls onto another that rests on a frictionless floor; sphere-sphere
    friction 0.3. Steps with only the floor contact store (m, 0) tangential
    impulses, steps with the pair (m, 2), the first frame (0, 0): all three kinds
    must be in the run, and every frame comes back with its shape and values."""
    world = gr.SphereWorld(
        [[0.0, 0.0, 0.0105], [0.005, 0.0, 0.035]],
        0.01,
        friction=0.3,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1], friction=0.0)],
    )
    trajectory = gr.Simulation(world, 1e-3).run(steps=200)
    shapes = {c.tangential_impulse.shape[1] for c in trajectory.contacts if len(c)}
    assert shapes == {0, 2}
    assert any(np.abs(c.tangential_impulse).max(initial=0.0) > 0.0 for c in trajectory.contacts)
    loaded = gr.Trajectory.load(trajectory.save(tmp_path / "mixed.h5"))
    assert len(loaded.contacts) == len(trajectory.contacts)
    for original, back in zip(trajectory.contacts, loaded.contacts):
        for name in ("i", "j", "wall", "gap", "normal", "impulse", "tangential_impulse"):
            assert getattr(back, name).shape == getattr(original, name).shape, name
            np.testing.assert_array_equal(getattr(back, name), getattr(original, name), err_msg=name)


@pytest.mark.exact
def test_round_trip_of_the_planar_rod_keeps_the_empty_first_frame(tmp_path):
    """Painleve's rod: frame 0 has no contacts, (0, 0) tangential impulses and
    (0, 3) normals; later frames (2, 1) and (2, 3). Shapes and values come back."""
    from granular.systems.frictional import painleve_rod

    trajectory = gr.Simulation(painleve_rod(), 5e-3).run(steps=20)
    loaded = gr.Trajectory.load(trajectory.save(tmp_path / "rod.h5"))
    assert loaded.contacts[0].tangential_impulse.shape == trajectory.contacts[0].tangential_impulse.shape
    for original, back in zip(trajectory.contacts, loaded.contacts):
        for name in ("impulse", "tangential_impulse", "normal"):
            assert getattr(back, name).shape == getattr(original, name).shape, name
            np.testing.assert_array_equal(getattr(back, name), getattr(original, name), err_msg=name)
    assert np.abs(trajectory.contacts[-1].tangential_impulse).max() > 0.0


def _assert_same_frames(trajectory, expected):
    for name in FRAME_ARRAYS:
        value, wanted = getattr(trajectory, name), getattr(expected, name)
        assert (value is None) == (wanted is None), name
        if wanted is not None:
            np.testing.assert_array_equal(value, wanted, err_msg=name)
    assert len(trajectory.contacts) == len(expected.contacts)
    for contacts, wanted in zip(trajectory.contacts, expected.contacts):
        np.testing.assert_array_equal(contacts.impulse, wanted.impulse)


def test_a_run_in_two_parts_concatenates_to_the_whole_run_and_first_frames_cut_it_back(growing_pile):
    world = growing_pile[0]
    whole = gr.Simulation(world, 1e-3).run(steps=40, record_every=5)
    simulation = gr.Simulation(world, 1e-3)
    parts = [simulation.run(steps=20, record_every=5), simulation.run(steps=20, record_every=5)]
    joined = gr.Trajectory.concatenate(parts)
    _assert_same_frames(joined, whole)
    head = joined.first_frames(len(parts[0]))
    _assert_same_frames(head, parts[0])
    assert head.system is joined.system and head.meta is joined.meta
