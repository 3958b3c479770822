"""Small defects met in long runs, each with the command or call that showed it."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import granular as gr
from granular.cli import main
from granular.walls import surface_names

from support.scenes import load_scene, repository_scenes

ROOT = Path(__file__).resolve().parents[1]
TWO = [[0.05, 0.05, 0.05], [0.05, 0.08, 0.05]]


@pytest.mark.parametrize("keyword, value", [("friction", "high"), ("friction", "0.3"), ("restitution", "0.5")])
def test_a_string_coefficient_is_an_invalid_input_naming_it(keyword, value):
    with pytest.raises(gr.InvalidInputError, match=f"{keyword} must be a number.*{value!r}"):
        gr.SphereWorld(TWO, 0.01, **{keyword: value})


@pytest.mark.parametrize("radii", ["0.01", ["0.01", "0.01"]])
def test_string_radii_are_refused_not_converted(radii):
    with pytest.raises(gr.InvalidInputError, match="radii must be a number"):
        gr.SphereWorld(TWO, radii)


def test_a_trajectory_is_not_saved_as_hdf5_under_another_extension(tmp_path):
    trajectory = gr.Simulation(gr.SphereWorld(TWO, 0.01), dt=1e-3).run(steps=2)
    with pytest.raises(gr.InvalidInputError, match=r"out\.csv must end in \.h5 or \.hdf5"):
        trajectory.save(tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()
    trajectory.save(tmp_path / "out.hdf5")
    assert len(gr.Trajectory.load(tmp_path / "out.hdf5")) == 3


def test_sand_pile_builds_for_ten_spheres(tmp_path, monkeypatch):
    """With n = 10 the column's height (the spheres' area over its width) was under one
    diameter, and numpy refused the placement interval ("high - low < 0")."""
    world = load_scene("sand_pile").build(n=10)
    assert world.n == 10
    monkeypatch.chdir(tmp_path)
    assert main(["run", "sand_pile", "--set", "n=10", "--duration", "0.003", "--quiet"]) == 0


@pytest.mark.parametrize(
    "wall",
    [
        gr.Cylinder([0.05, 0.05, 0], [0, 0, 1], 0.1, angular_velocity=3.0),
        gr.Plane([0, 0, 0], [0, 0, 1], angular_velocity=2.0),
    ],
)
def test_a_turning_wall_without_friction_says_it_moves_nothing(wall):
    with pytest.warns(gr.errors.IneffectiveWallWarning, match=r"turns at .* rad/s but its contacts have no friction"):
        gr.SphereWorld(TWO, 0.01, walls=[wall])
    with warnings.catch_warnings():
        warnings.simplefilter("error", gr.errors.IneffectiveWallWarning)
        gr.SphereWorld(TWO, 0.01, walls=[wall], friction=0.3)  # the world's friction reaches it


def test_rolling_resistance_without_friction_brakes_the_rolling_only():
    """A sphere spinning about a horizontal axis on a frictionless floor with mu_r = 0.1:
    the rolling torque mu_r r m g slows omega_x at 5 mu_r g / (2 r) (J = 2/5 m r^2),
    omega_z (spin about the normal) is not resisted, and no tangential force moves
    it. The user guide states this rule."""
    r, g, mu_r = 0.01, 9.81, 0.1
    world = gr.SphereWorld(
        [[0.0, 0.0, r]],
        r,
        density=2500.0,
        friction=0.0,
        rolling_friction=mu_r,
        angular_velocities=[[10.0, 0.0, 3.0]],
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
    )
    simulation = gr.Simulation(world, dt=1e-3)
    trajectory = simulation.run(steps=20, record_every=20)
    omega = trajectory.angular_velocities[-1, 0]
    assert omega[0] == pytest.approx(10.0 - 2.5 * mu_r * g / r * 0.020, rel=1e-6)
    assert omega[2] == 3.0
    assert np.all(trajectory.velocities[-1, 0, :2] == 0.0)
    guide = " ".join((ROOT / "docs" / "guide" / "friction.md").read_text().split())
    assert "Rolling resistance without sliding friction (`μ = 0`, `μ_r > 0`) still brakes" in guide


def test_growing_spheres_jam_is_the_scenes_end_not_a_failure(tmp_path, monkeypatch, capsys):
    """The scene declares EXPECTED_ERRORS = (JammingError,): the run is saved as complete
    (RUN.h5, its end in the meta) and the command exits 0."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "growing_spheres", "--quiet", "--out", "grow.h5"]) == 0
    out = capsys.readouterr().out
    assert "ended as the scene expects" in out and "jam" in out.lower()
    run = gr.Trajectory.load(tmp_path / "grow.h5")
    assert "ended" in run.meta and "failure" not in run.meta
    assert not (tmp_path / "grow.partial.h5").exists()


def test_scenes_and_make_demo_write_outside_the_tracked_renders():
    """Scene scripts write their pictures to outputs/ (ignored by git), never into
    renders/, which holds the README's pictures."""
    for name in repository_scenes():
        source = (ROOT / "granular" / "scenes" / f"{name}.py").read_text()
        assert not re.search(r"[\"']renders[\"'/]|renders/", source), name
    assert "outputs/" in (ROOT / ".gitignore").read_text().split()


def test_counts_are_plural_only_when_not_one(tmp_path, monkeypatch, capsys):
    from granular.app.runs import plural

    assert (plural(1, "sphere"), plural(2, "run"), plural(0, "worker")) == ("1 sphere", "2 runs", "0 workers")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.py").write_text(
        '"""One sphere falls (a test scene)."""\nimport granular as gr\n'
        "DEFAULTS = dict(duration=0.003, dt=1e-3, record_every=3)\n"
        "def build():\n    return gr.SphereWorld([[0, 0, 0.5]], 0.01)\n"
    )
    assert main(["run", "one.py", "--quiet", "--out", "one.h5"]) == 0
    out = capsys.readouterr().out
    assert "one: 1 sphere, 3 steps" in out and "1 spheres" not in out


def test_the_scene_list_keeps_a_summary_line_that_wraps(capsys):
    """beam_between_obstacles' first docstring line breaks mid-title; the list showed
    "... (*Vibrations of a beam between"."""
    assert main(["scenes"]) == 0
    line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("beam_between_obstacles"))
    assert line.rstrip().endswith(".") or line.rstrip().endswith(")")
    assert "Vibrations of a beam between obstacles" in line.replace("  ", " ")


def test_an_overlap_names_the_wall_as_inspect_does():
    box = gr.Box([0, 0, 0], [0.1, 0.1, 0.1])
    names = surface_names([box.describe()])
    with pytest.raises(gr.OverlapError) as caught:
        gr.SphereWorld([[0.095, 0.05, 0.05]], 0.01, walls=[box])
    assert "box x-max" in str(caught.value) and names[1] == "box x-max"
