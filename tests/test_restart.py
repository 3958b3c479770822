"""Continuing a run from its file: ``granular run --from RUN.h5`` and
`Simulation.from_trajectory` give the frames an uninterrupted run gives, bit for bit.

The scene rains 27 spheres with restitution 0.6 on a floor and on each other, so that
impacts and resting contacts straddle the restart: the velocity scheme's warm state
(the previous step's impulses and sustained-contact kick, which set the next
impact threshold) matters, and a restart without it differs (checked below).
"""

from __future__ import annotations

import warnings
from decimal import Decimal

import numpy as np
import pytest

import granular as gr
from granular.cli import USAGE, main
from granular.app.runs import load_run

BOUNCY_SCENE = '''\
"""Bouncy: spheres rain on a floor and on each other with restitution 0.6 (a test scene)."""
import numpy as np

import granular as gr

DEFAULTS = dict(duration=0.04, dt=1e-3, record_every=4)


def build():
    rng = np.random.default_rng(3)
    grid = np.array([[x, y, z] for x in range(3) for y in range(3) for z in range(3)], dtype=float)
    positions = np.array([0.012, 0.012, 0.0101]) + grid * 0.0215 + rng.uniform(-5e-4, 5e-4, (27, 3)) * [1, 1, 0]
    velocities = rng.normal(0.0, 0.3, (27, 3)) - [0.0, 0.0, 0.5]
    return gr.SphereWorld(positions, 0.01, velocities=velocities, density=2500.0, restitution=0.6,
                          walls=[gr.Box([0, 0, 0], [0.068, 0.068, 0.3], open_top=True)])
'''
FIELDS = ("t", "positions", "velocities", "radii", "kinetic_energy", "potential_energy", "dissipated_energy")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``full.h5`` (0.04 s at once) and ``half.h5`` (its first 0.02 s)."""
    root = tmp_path_factory.mktemp("restart")
    (root / "scenes").mkdir()
    (root / "scenes" / "bouncy.py").write_text(BOUNCY_SCENE)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setenv("GRANULAR_SCENES", str(root / "scenes"))
        assert main(["run", "bouncy", "--quiet", "--out", "full.h5"]) == 0
        assert main(["run", "bouncy", "--quiet", "--duration", "0.02", "--out", "half.h5"]) == 0
    return root


@pytest.fixture
def here(runs, monkeypatch):
    monkeypatch.chdir(runs)
    monkeypatch.setenv("GRANULAR_SCENES", str(runs / "scenes"))
    return runs


def assert_identical(a, b):
    for name in FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert len(a.contacts) == len(b.contacts)
    for ca, cb in zip(a.contacts, b.contacts):
        for name in ("i", "j", "wall", "gap", "normal", "impulse"):
            assert np.array_equal(getattr(ca, name), getattr(cb, name)), name


@pytest.mark.exact
def test_run_from_a_file_continues_it_bit_for_bit(here, capsys):
    assert main(["run", "--from", "half.h5", "--duration", "0.02", "--quiet", "--out", "continued.h5"]) == 0
    assert "continuing half.h5 from t = 0.02 s" in capsys.readouterr().out
    full, continued = load_run("full.h5"), load_run("continued.h5")
    assert_identical(full, continued)
    assert continued.meta["duration"] == pytest.approx(0.04)
    assert len(load_run("half.h5")) == 6  # --out elsewhere leaves the source alone


@pytest.mark.exact
def test_run_from_without_out_extends_the_file_itself(here, tmp_path):
    (tmp_path / "copy.h5").write_bytes((here / "half.h5").read_bytes())
    assert main(["run", "--from", str(tmp_path / "copy.h5"), "--duration", "0.02", "--quiet"]) == 0
    assert_identical(load_run("full.h5"), load_run(tmp_path / "copy.h5"))


@pytest.mark.exact
def test_simulation_from_trajectory_continues_bit_for_bit_and_needs_the_warm_state(here):
    from granular.app.runs import concatenate

    half, full = load_run("half.h5"), load_run("full.h5")
    assert half.warm_state["scheme"] == "velocity" and half.warm_state["t"] == half.t[-1]
    simulation = gr.Simulation.from_trajectory(half)
    assert simulation.t == half.t[-1] and simulation.steps_taken == 20
    assert_identical(full, concatenate([half, simulation.run(steps=20, record_every=4)]))
    # without the scheme's warm state the first step after the restart starts cold
    # and the frames are not the same bits (here by round-off; in a pour by 0.2 %,
    # the impact threshold moving: Simulation.from_trajectory)
    del half.warm_state
    cold = concatenate([half, gr.Simulation.from_trajectory(half).run(steps=20, record_every=4)])
    assert not np.array_equal(cold.velocities, full.velocities)


@pytest.mark.exact
def test_an_earlier_frame_restarts_at_its_time(here):
    half = load_run("half.h5")
    simulation = gr.Simulation.from_trajectory(half, frame=2)
    assert simulation.t == half.t[2] and np.array_equal(simulation.positions, half.positions[2])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--from", "half.h5"], "--from needs --duration"),
        (["run", "--from", "half.h5", "--duration", "0.01", "--dt", "1e-4"], "--dt cannot change a continued run"),
        (
            ["run", "bouncy", "--scene", "scenes/bouncy.py", "--from", "half.h5", "--duration", "0.01"],
            "give the scene once",
        ),
        (["run", "bouncy", "--scene", "scenes/bouncy.py"], "--scene FILE goes with --from"),
        (["run", "--duration", "0.01"], "give a SCENE"),
    ],
)
def test_run_from_refuses_what_it_cannot_honour(here, capsys, argv, message):
    assert main(argv) == USAGE
    assert message in capsys.readouterr().err


def test_run_from_a_run_without_provenance_is_refused(here, capsys, tmp_path):
    trajectory = load_run("half.h5")
    trajectory.meta.pop("scene")
    trajectory.save(tmp_path / "anonymous.h5")
    assert main(["run", "--from", str(tmp_path / "anonymous.h5"), "--duration", "0.01", "--quiet"]) == USAGE
    assert "which scene" in capsys.readouterr().err


@pytest.mark.exact
@pytest.mark.parametrize(
    "laws, rolls", [("friction=0.5, rotation=True,", False), ("friction=0.5, rolling_friction=0.1,", True)]
)
def test_a_turning_world_continues_bit_for_bit(tmp_path, monkeypatch, laws, rolls):
    """Friction turns the spheres: their angular velocities and orientations, which
    the frames need not record, come back from the run file's warm state, and so do
    the friction and rolling impulses that start the next step's sweeps."""
    scene = BOUNCY_SCENE.replace("restitution=0.6,", "restitution=0.6, " + laws)
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "turning.py").write_text(scene)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRANULAR_SCENES", str(tmp_path / "scenes"))
    assert main(["run", "turning", "--quiet", "--duration", "0.032", "--out", "full.h5"]) == 0
    assert main(["run", "turning", "--quiet", "--duration", "0.024", "--out", "half.h5"]) == 0
    warm = load_run("half.h5").warm_state["values"]
    assert np.any(warm["_omega"] != 0)  # the spheres turn
    if rolls:  # the rolling resistance acts, and its impulses are carried
        assert np.any(warm["_previous_rolling"] != 0)
    # the sweeps of the last steps, which set the next stall's floor, are carried too
    assert warm["_recent_sweeps"] is not None and warm["_recent_sweeps"].size > 0
    # and the multipliers of the last gap closure, which start the next one (with rolling
    # resistance the last steps' pushing rows are floor rows at gaps of exactly 0: None)
    assert "_previous_closure" in warm
    if not rolls:
        assert warm["_previous_closure"] is not None and np.any(warm["_previous_closure"] != 0)
    assert main(["run", "--from", "half.h5", "--duration", "0.008", "--quiet"]) == 0
    full, continued = load_run("full.h5"), load_run("half.h5")
    assert_identical(full, continued)
    # the recorded spin survives the join (Trajectory.concatenate once dropped it)
    assert full.angular_velocities is not None and np.any(full.angular_velocities != 0)
    for name in ("angular_velocities", "orientations"):
        assert np.array_equal(getattr(full, name), getattr(continued, name)), name
    # the gap closure's running energy goes on from the frame, not from zero (the
    # rolling pour's pushing rows lie exactly on the floor: it closes nothing)
    assert full.closure_energy is not None and (rolls or np.any(full.closure_energy[4:] != 0.0))
    assert np.array_equal(full.closure_energy, continued.closure_energy)


def test_concatenate_refuses_parts_that_do_not_meet(here):
    half, full = load_run("half.h5"), load_run("full.h5")
    with pytest.raises(ValueError, match="must start at the time the previous one ends"):
        gr.Trajectory.concatenate([full, half])


def test_numpy_options_are_stored_as_numbers_and_a_continued_run_takes_them(tmp_path):
    """Options given as numpy scalars (not JSON themselves) are stored as numbers, so a run
    continued from the file gets them back; an option no run file can hold is left out
    with a warning, not silently with every other option."""
    world = gr.SphereWorld([[0.0, 0.0, 0.02]], 0.01, walls=[gr.Plane([0, 0, 0], [0, 0, 1])], friction=0.5)
    simulation = gr.Simulation(world, 1e-3, sweep_aim=np.float32(0.5), fixed_point_iterations=np.int64(40))
    simulation.run(steps=4, out=tmp_path / "numpy.h5")
    stored = load_run(tmp_path / "numpy.h5")
    assert stored.meta["simulation_options"] == {"sweep_aim": 0.5, "fixed_point_iterations": 40}
    continued = gr.Simulation.from_trajectory(stored, world=world)
    assert continued.scheme.sweep_aim == 0.5 and continued.scheme.fixed_point_iterations == 40
    odd = gr.Simulation(world, 1e-3, sweep_aim=0.5, fixed_point_tolerance=Decimal("1e-10"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        meta = odd.run_meta(1)
        odd.run_meta(1)  # a run file's meta is read at its start and again at its end
    assert meta["simulation_options"] == {"sweep_aim": 0.5}
    assert [str(w.message) for w in caught if "cannot hold" in str(w.message)] == [
        "the run file cannot hold the option(s) fixed_point_tolerance: a run continued from it takes their "
        "defaults unless they are given again"
    ]
