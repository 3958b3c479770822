"""The Coulomb sweeps' aim as a user's option (`MauryScheme`'s ``sweep_aim``): refused
outside (0, 1], carried to every frictional solve of a step (Maury's stage and the
frictional impacts), and doing what it says: aimed at the tolerance itself, a settling
pile takes fewer sweeps, and every answer still meets the Coulomb law within the
tolerance."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import granular as gr
from granular.cli import USAGE, main
from granular.contact import coulomb_rows, friction, friction_gauss_seidel as gauss_seidel, impact

from support.scenes import tiny_scene
from test_never_stops import frictional_pile


@pytest.mark.parametrize("aim", [0.0, -0.1, 1.5, float("nan"), "fast"])
def test_an_aim_outside_zero_to_one_is_refused_saying_what_was_given(aim):
    with pytest.raises(gr.InvalidInputError, match=r"sweep_aim must (lie in \(0, 1\]|be None or one number)"):
        gr.Simulation(frictional_pile(), 1e-3, sweep_aim=aim)


def recorded_solves(monkeypatch):
    """Every call of the sweeps (their ``aim``, the level each answer reached in units of
    its tolerances, and whether it stalled), and the aims of the impact problems."""
    solves, impacts = [], []
    solve = gauss_seidel.solve

    def recording(rows, predicted, start, tolerance, *args, **kwargs):
        r, sweeps, residual = solve(rows, predicted, start, tolerance, *args, **kwargs)
        level = (coulomb_rows.natural_residual(rows, predicted, r) / tolerance).max(initial=0.0)
        solves.append((kwargs.get("aim"), kwargs.get("target"), float(level), sweeps))
        return r, sweeps, residual

    project = impact.project_frictional

    def recording_impact(problem, *args, **kwargs):
        impacts.append(problem.sweep_aim)
        return project(problem, *args, **kwargs)

    monkeypatch.setattr(friction.gauss_seidel, "solve", recording)
    monkeypatch.setattr(impact, "project_frictional", recording_impact)
    return solves, impacts


def sweeps_of_a_pour(aim, monkeypatch, steps=60, restitution=0.0):
    """The recorded solves of ``steps`` steps of a settling pile of 72 turning spheres."""
    solves, impacts = recorded_solves(monkeypatch)
    simulation = gr.Simulation(frictional_pile(n_side=6, restitution=restitution), 1e-3, sweep_aim=aim)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gr.SolverToleranceWarning)  # no step keeps a best answer
        for _ in range(steps):
            simulation.step()
    return solves, impacts


def test_the_aim_reaches_every_frictional_solve_of_a_step_impacts_included(monkeypatch):
    solves, impacts = sweeps_of_a_pour(0.5, monkeypatch, steps=30, restitution=0.5)
    assert impacts and all(aim == 0.5 for aim in impacts)
    assert solves and all(aim == 0.5 for aim, _, _, _ in solves)


@pytest.mark.parametrize("aim", [None, 0.5, 1.0])
def test_every_answer_meets_its_aim_or_the_tolerance_after_a_stall(aim, monkeypatch):
    """An answer is accepted at the aim (an eighth of the tolerance when None), or at the
    tolerance once the sweeps stall (`friction_gauss_seidel._accepts`): no answer is
    beyond the tolerance, and most first rounds end at their aim."""
    solves, _ = sweeps_of_a_pour(aim, monkeypatch)
    reach = gauss_seidel.TARGET if aim is None else aim
    levels = np.array([level for _, target, level, _ in solves if target is None])
    assert levels.size and levels.max() <= 1.0
    assert np.mean(levels <= reach) > 0.9


def test_aimed_at_the_tolerance_a_settling_pile_takes_fewer_sweeps(monkeypatch):
    eighth, _ = sweeps_of_a_pour(None, monkeypatch)
    monkeypatch.undo()
    whole, _ = sweeps_of_a_pour(1.0, monkeypatch)
    assert sum(s for *_, s in whole) < sum(s for *_, s in eighth)


@pytest.fixture
def tiny_workspace(tmp_path, monkeypatch):
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "tiny.py").write_text(tiny_scene(0.006))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRANULAR_SCENES", str(tmp_path / "scenes"))
    return tmp_path


def test_the_command_records_the_aim_with_the_run(tiny_workspace, capsys):
    assert main(["run", "tiny", "--out", "aimed.h5", "--sweep-aim", "0.5", "--quiet"]) == 0
    assert gr.Trajectory.load(tiny_workspace / "aimed.h5").meta["simulation_options"]["sweep_aim"] == 0.5


def test_the_command_refuses_an_aim_beyond_the_tolerance(tiny_workspace, capsys):
    assert main(["run", "tiny", "--out", "aimed.h5", "--sweep-aim", "2"]) == USAGE
    error = capsys.readouterr().err
    assert "--sweep-aim" in error and "(0, 1]" in error
    assert not (tiny_workspace / "aimed.h5").exists()
