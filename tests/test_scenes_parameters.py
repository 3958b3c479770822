"""Scene parameters: ``--set``, ``granular scenes NAME``, run files
that store their parameters and repeat their run, and the repository scenes' parameters
and summaries."""

from __future__ import annotations

import json

import numpy as np
import pytest

import granular as gr
from granular import scenes
from granular.cli import USAGE, main

from support.scenes import load_scene as load_repository_scene

SCENE = '''\
"""Param: a few spheres dropped into a box (a test scene with parameters)."""
import numpy as np

import granular as gr

DEFAULTS = dict(duration=0.03, dt=1e-3, record_every=3)
PARAMETERS = dict(n=4, restitution=0.5, seed=0, label="plain")
PARAMETER_HELP = dict(n="number of spheres", restitution="coefficient of restitution (1)",
                      seed="random seed of the jitter")


def build(n=4, restitution=0.5, seed=0, label="plain"):
    rng = np.random.default_rng(seed)
    positions = np.array([[0.03 + 0.025 * (k % 2), 0.03 + 0.025 * (k // 2 % 2), 0.012 + 0.025 * (k // 4)]
                          for k in range(n)])
    positions[:, :2] += rng.uniform(-0.002, 0.002, (n, 2))
    return gr.SphereWorld(positions, 0.01, density=2500.0, restitution=restitution,
                          velocities=rng.normal(0.0, 0.1, (n, 3)),
                          walls=[gr.Box([0, 0, 0], [0.09, 0.09, 0.3], open_top=True)])


def summary(trajectory):
    return dict(mean_height=float(np.mean(trajectory.positions[-1][:, 2])),
                n_seen=int(trajectory.positions.shape[1]))
'''


@pytest.fixture
def place(tmp_path, monkeypatch):
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "param.py").write_text(SCENE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRANULAR_SCENES", str(tmp_path / "scenes"))
    return tmp_path


def error_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_set_overrides_the_parameters_and_they_are_stored(place, capsys):
    status = main(
        [
            "run",
            "param",
            "--set",
            "n=6",
            "--set",
            "restitution=0.8",
            "--set",
            "label=x y",
            "--out",
            "runs/a.h5",
            "--quiet",
        ]
    )
    assert status == 0
    run = gr.Trajectory.load(place / "runs" / "a.h5")
    assert run.positions.shape[1] == 6
    assert run.meta["parameters"] == dict(n=6, restitution=0.8, seed=0, label="x y")
    assert run.meta["scene"] == "param"
    assert run.meta["summary"]["n_seen"] == 6
    printed = capsys.readouterr().out
    assert "n_seen = 6" in printed  # granular run prints the scene's summary


def test_unknown_parameter_is_one_line_listing_the_valid_ones(place, capsys):
    assert main(["run", "param", "--set", "restitutoin=0.8", "--out", "runs/b.h5"]) == USAGE
    line = error_line(capsys)
    assert "restitutoin" in line and "did you mean 'restitution'" in line
    for name in ("n=4", "restitution=0.5", "seed=0", "label='plain'"):
        assert name in line
    assert not (place / "runs" / "b.h5").exists()


@pytest.mark.parametrize(
    "assignment, expected",
    [
        ("n=four", "integer"),
        ("n=2.5", "integer"),
        ("restitution=fast", "number"),
        ("seed", "NAME=VALUE"),
        ("restitution=nan", "number"),
    ],
)
def test_mistyped_values_are_one_line_errors(place, capsys, assignment, expected):
    assert main(["run", "param", "--set", assignment, "--out", "runs/c.h5"]) == USAGE
    line = error_line(capsys)
    assert expected in line
    assert not (place / "runs" / "c.h5").exists()


def test_a_value_the_system_refuses_is_a_usage_error(place, capsys):
    assert main(["run", "param", "--set", "restitution=1.5", "--out", "runs/d.h5"]) == USAGE
    line = error_line(capsys)
    assert "restitution=1.5" in line


def test_integers_accept_an_integral_exponent_form(place):
    declared = scenes.declared_parameters(scenes.load_scene(place / "scenes" / "param.py"), "param")
    assert scenes.convert("param", declared, "n", "1e3") == 1000
    assert scenes.parse_settings("param", declared, ["restitution=0.5,0.7"], several=True) == {
        "restitution": [0.5, 0.7]
    }


def test_scenes_name_prints_parameters_with_help_and_defaults(place, capsys):
    assert main(["scenes", "param"]) == 0
    out = capsys.readouterr().out
    assert "Param: a few spheres" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("    ")}
    assert set(rows) == {"n", "restitution", "seed", "label"}
    assert "4" in rows["n"].split() and "number of spheres" in rows["n"]
    assert "0.5" in rows["restitution"].split() and "(1)" in rows["restitution"]
    assert "'plain'" in rows["label"]


def test_scenes_name_of_an_unknown_scene_is_a_usage_error(place, capsys):
    assert main(["scenes", "nothing_here"]) == USAGE
    assert "unknown scene 'nothing_here'" in error_line(capsys)


@pytest.mark.exact
def test_the_run_file_alone_repeats_the_run_bit_for_bit(place, capsys):
    assert main(["run", "param", "--set", "seed=7", "--set", "restitution=0.7", "--out", "runs/e.h5", "--quiet"]) == 0
    saved = gr.Trajectory.load(place / "runs" / "e.h5")
    meta = json.loads(json.dumps(saved.meta))  # only what the file holds
    simulation, same_scene = scenes.rebuild_simulation(meta)
    assert same_scene
    steps = int(round(meta["duration"] / meta["dt"]))
    again = simulation.run(steps=steps, record_every=meta["record_every"])
    assert len(again) == len(saved)
    assert np.array_equal(again.positions, saved.positions)
    assert np.array_equal(again.velocities, saved.velocities)
    # and another seed would not have matched: the comparison can fail
    other, _ = scenes.rebuild_simulation({**meta, "parameters": {**meta["parameters"], "seed": 8}})
    assert not np.array_equal(other.run(steps=steps, record_every=meta["record_every"]).positions, saved.positions)


def test_rebuild_reports_a_changed_scene_file(place, capsys):
    assert main(["run", "param", "--out", "runs/f.h5", "--quiet"]) == 0
    meta = gr.Trajectory.load(place / "runs" / "f.h5").meta
    (place / "scenes" / "param.py").write_text(SCENE + "\n# edited\n")
    _, same_scene = scenes.rebuild_simulation(meta)
    assert not same_scene


# -- the repository's scenes ---------------------------------------------------------------
def test_box_pour_parameters_keep_the_demo_and_set_n_and_friction():
    box_pour = load_repository_scene("box_pour")
    demo = box_pour.build()
    assert demo.n == 300 and demo.friction == 0.0
    small = box_pour.build(n=37, friction=0.4, restitution=0.6, seed=1)
    assert small.n == 37 and small.friction == pytest.approx(0.4)
    # the default pour is the 5 x 5 x 12 lattice in its former order (make demo unchanged)
    sites = demo.q0.reshape(-1, 3)
    assert np.allclose(np.diff(sites[:12, 2]), 2.4 * box_pour.RADIUS)  # a column of 12 layers first
    # 37 spheres: one full layer of 25 and 12 in the second, none higher
    heights = np.round(small.q0.reshape(-1, 3)[:, 2] / (2.4 * box_pour.RADIUS), 6)
    assert np.unique(heights, return_counts=True)[1].tolist() == [25, 12]
    assert set(box_pour.PARAMETERS) == {"n", "restitution", "friction", "seed"}


@pytest.mark.exact
def test_growing_spheres_summary_is_the_worlds_packing_fraction():
    growing = load_repository_scene("growing_spheres")
    world = growing.build(seed=5)
    trajectory = gr.Simulation(world, dt=1e-3).run(steps=20, record_every=10)
    figures = growing.summary(trajectory)
    assert figures["packing_fraction"] == pytest.approx(world.packing_fraction(trajectory.t[-1]), rel=1e-12)
    assert figures["packing_fraction"] > world.packing_fraction(0.0)  # the radii grew


def test_bouncing_ball_summary_gives_the_apex_ratio_of_the_set_restitution(place, capsys, monkeypatch):
    monkeypatch.delenv("GRANULAR_SCENES")  # the repository's scenes
    assert (
        main(
            [
                "run",
                str(load_repository_scene("bouncing_ball_1dof").__file__),
                "--set",
                "restitution=0.7",
                "--duration",
                "2.5",
                "--out",
                "runs/ball.h5",
                "--quiet",
            ]
        )
        == 0
    )
    figures = gr.Trajectory.load(place / "runs" / "ball.h5").meta["summary"]
    assert figures["bounces"] >= 4
    assert figures["apex_ratio"] == pytest.approx(0.7**2, rel=0.03)
    assert figures["apex_ratio_over_e2"] == pytest.approx(1.0, abs=0.03)


def test_sand_pile_summary_reads_a_heap_angle():
    sand_pile = load_repository_scene("sand_pile")
    assert set(sand_pile.PARAMETERS) <= set(sand_pile.build.__code__.co_varnames)
    # a 45-degree ridge of spheres: the fitted flanks give 45 degrees
    x = np.linspace(-0.1, 0.1, 81)
    top = 0.1 - np.abs(x)
    positions = np.stack([x, np.zeros_like(x), top - 0.005], axis=1)
    radii = np.full(x.size, 0.005)
    trajectory = gr.Trajectory(
        t=np.array([0.0]),
        positions=positions[None],
        velocities=np.zeros((1, 81, 3)),
        radii=radii[None],
        kinetic_energy=np.zeros(1),
        potential_energy=np.zeros(1),
        dissipated_energy=np.zeros(1),
        contacts=[gr.Contacts.empty()],
        system={},
        meta={},
    )
    assert sand_pile.summary(trajectory)["angle_of_repose"] == pytest.approx(45.0, abs=2.0)
