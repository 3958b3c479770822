"""Wall torque and power in a turning drum, mass flow through a plane, and the tables."""

import warnings

import numpy as np
import pytest

import granular as gr
import granular.analysis as A
from support.piles import pile
from test_wall_work import drum_world

EPS = np.finfo(float).eps


@pytest.fixture(scope="module")
def drum():
    """20 frictional spheres in a drum turning at 3 rad/s about y, 0.3 s, a frame each step."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        return gr.Simulation(drum_world(), dt=1e-3).run(duration=0.3, record_every=1, progress=None)


def test_the_drums_drive_work_is_the_dissipation_and_the_energy_gained(drum):
    """The drive supplies ``-P`` (minus the power the spheres deliver to the drum), and
    ``-P = -Omega tau`` (the drum turns about its axis). Summed over the steps, the drive's
    work is the energy dissipated plus the energy the spheres gained, plus the
    explicit scheme's own terms (`granular.records.results.StepResult`): ``1/2 h^2 |g|^2 sum m``
    a step and ``h^2 sum_walls F . g`` (the walls' impulses along gravity), less the
    potential energy the gap closure gave the spheres (``closure_energy``). Averaged
    over a turn in a steady state the energy gained vanishes: the torque times Omega
    is the dissipated power. Round-off: ulps of the ~300 steps' energies."""
    h, omega = drum.meta["dt"], drum.system["walls"][0]["angular_velocity"]
    g, masses = np.asarray(drum.system["gravity"]), np.asarray(drum.meta["masses"])
    table = A.wall_table(drum, axis=(0.0, 1.0, 0.0))
    power = table.groupby("frame")["power"].sum().to_numpy()
    torque = table.groupby("frame")["torque"].sum().to_numpy()
    np.testing.assert_allclose(omega * torque, power, atol=1e3 * EPS * np.abs(power).max())
    steps = len(drum) - 1
    drive = -h * power.sum()
    explicit = steps * 0.5 * h * h * (g @ g) * masses.sum() - h * h * np.sum(drum.wall_forces[1:].sum(axis=1) @ g)
    gained = drum.total_energy[-1] - drum.total_energy[0]
    dissipated = drum.dissipated_energy[-1] - drum.dissipated_energy[0]
    closure = drum.closure_energy[-1] - drum.closure_energy[0]
    assert drive > 0.0 and dissipated > 0.0
    scale = steps * np.abs(drum.total_energy).max()
    assert drive == pytest.approx(dissipated + gained + explicit - closure, abs=64 * EPS * scale)


def test_the_mass_flow_through_a_plane_counts_the_spheres_that_fall_through_it():
    """Three spheres fall freely past z = 0.05 m: the flow rate integrated over time is
    their mass, downwards; a plane they never reach sees nothing."""
    world = gr.SphereWorld([[0.0, 0.0, 0.1], [0.1, 0.0, 0.08], [0.2, 0.0, 0.12]], 0.01, density=2500.0)
    run = gr.Simulation(world, dt=5e-4).run(duration=0.2, record_every=10, progress=None)
    t, rate = A.mass_flow(run, [0, 0, 0.05], [0, 0, -1])
    interval = np.diff(run.t)
    assert np.sum(rate * interval) == pytest.approx(np.sum(run.meta["masses"]), rel=1e3 * EPS)
    assert np.all(rate >= 0.0) and t.shape == interval.shape
    assert np.all(A.mass_flow(run, [0, 0, 1.0], [0, 0, 1])[1] == 0.0)
    with pytest.raises(ValueError, match="normal"):
        A.mass_flow(run, [0, 0, 0], [0, 0, 0])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_series_round_trips_through_its_file(tmp_path, suffix):
    import pandas

    table = A.series(pile(0.0), A.BoxRegion([0, 0, 0], [0.08, 0.08, 0.05]))
    path = A.save_table(table, tmp_path / f"series{suffix}")
    back = pandas.read_csv(path) if suffix == ".csv" else pandas.read_parquet(path)
    pandas.testing.assert_frame_equal(back, table, check_dtype=False, rtol=1e-15)
    assert {"pressure", "z_mechanical", "floor_load", "weight", "sigma_zz"} <= set(table.columns)
    with pytest.raises(ValueError, match="path"):
        A.save_table(table, tmp_path / "series.xlsx")


def _rising_floor(record_every: int):
    """A sphere of 1 cm riding a floor that accelerates upwards, ``v = a t`` (a velocity
    given as a function of time), 20 steps of 1 ms."""
    a = 0.5
    floor = gr.Plane([0, 0, 0], [0, 0, 1], velocity=lambda t: [0.0, 0.0, a * t])
    world = gr.SphereWorld([[0.0, 0.0, 0.01]], 0.01, density=1000.0, walls=[floor])
    return a, gr.Simulation(world, dt=1e-3).run(steps=20, record_every=record_every, progress=None)


def test_the_power_on_a_wall_moved_by_a_function_of_time_uses_its_step_velocity():
    """Recorded at every step, the floor's velocity over step k is its mean ``a (t_k - h/2)``
    (the run's displacements give it exactly for a linear v); the power the sphere
    delivers is the floor's force (from the solver's wall forces) times it: negative,
    the floor lifts the sphere. Round-off: displacements of 1e-4 m differenced over a
    step, ~1e-16 / 1e-3 relative to velocities of ~5e-3 m/s: 1e-9 is ample."""
    a, run = _rising_floor(1)
    table = A.wall_table(run)
    floor = table[table["surface"] == 0]
    h = run.meta["dt"]
    velocity = a * (run.t[1:] - h / 2)
    expected = run.wall_forces[1:, 0, 2] * velocity
    np.testing.assert_allclose(floor["power"], expected, rtol=1e-9)
    assert np.all(floor["power"].to_numpy()[1:] < 0.0)


def test_the_power_on_a_wall_moved_by_a_function_of_time_is_nan_when_the_run_cannot_give_it():
    """Recorded every 5 steps, the displacement a step before a frame is not in the run
    file and the function is not stored: the power is NaN, with a warning; the force
    and torque are still measured."""
    _, run = _rising_floor(5)
    with pytest.warns(A.walls.UnknownWallVelocityWarning, match="record_every=1"):
        table = A.wall_table(run)
    floor = table[table["surface"] == 0]
    assert floor["power"].isna().all()
    np.testing.assert_allclose(floor["force_z"], run.wall_forces[1:, 0, 2], rtol=1e-12)
    assert np.isfinite(floor["torque"]).all()


@pytest.mark.long
def test_over_a_turn_the_drums_drive_power_is_the_dissipated_power():
    """The drum turns at 3 rad/s for 1 s (the spheres reach a rolling regime), then one
    full turn, ``T = 2 pi / 3`` s, recorded at every step. The drive's mean power over
    the turn, ``-Omega tau`` averaged, is the dissipated power up to the energy the
    spheres gained over the turn and the explicit scheme's terms (the short test's exact
    balance): the energy of 20 spheres tumbling fluctuates, so the gain is bounded by
    the spread of the total energy over the turn; the scheme's terms are
    ``O(h |g|^2 sum m)`` (about 5 % of the power here). Measured: drive 0.0806 W,
    dissipated 0.0791 W."""
    h, omega = 1e-3, 3.0
    turn = 2.0 * np.pi / omega
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        run = gr.Simulation(drum_world(), dt=h).run(duration=1.0 + turn, record_every=1, progress=None)
    first, last = int(round(1.0 / h)), int(round(1.0 / h)) + int(round(turn / h))
    table = A.wall_table(run, axis=(0.0, 1.0, 0.0), frames=range(first + 1, last + 1))
    torque = table.groupby("frame")["torque"].sum().to_numpy()
    span = run.t[last] - run.t[first]
    drive = -omega * h * torque.sum() / span
    dissipated = (run.dissipated_energy[last] - run.dissipated_energy[first]) / span
    g, masses = np.asarray(run.system["gravity"]), np.asarray(run.meta["masses"])
    explicit = (
        (last - first) * 0.5 * h * h * (g @ g) * masses.sum()
        - h * h * np.sum(run.wall_forces[first + 1 : last + 1].sum(axis=1) @ g)
    ) / span
    energy = run.total_energy[first : last + 1]
    spread = (energy.max() - energy.min()) / span
    assert drive > 0.0 and dissipated > 0.0
    assert abs(drive - dissipated) <= spread + abs(explicit) + 1e3 * EPS * drive
    assert abs(explicit) < 0.1 * dissipated and spread < 0.2 * dissipated  # both small: a turn averages
