"""The Coulomb sweeps' aim as a user's option (`MauryScheme`'s ``sweep_aim``): refused
outside (0, 1], carried to every frictional solve of a step (Maury's stage and the
frictional impacts), and doing what it says: aimed at the tolerance itself, a settling
pile takes fewer sweeps, and every answer still meets the Coulomb law within the
tolerance."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import granular as gr
from granular.app import runs
from granular.cli import USAGE, main
from granular.contact import coulomb_rows, friction, friction_gauss_seidel as gauss_seidel, impact

from support.scenes import tiny_scene
from support.systems import InverseMassDiagonal
from test_never_stops import frictional_pile


@pytest.mark.parametrize("aim", [0.0, -0.1, 1.5, float("nan"), "fast", "0.5", True])
def test_an_aim_outside_zero_to_one_is_refused_saying_what_was_given(aim):
    with pytest.raises(gr.InvalidInputError, match=r"sweep_aim must (lie in \(0, 1\]|be None or one number)"):
        gr.Simulation(frictional_pile(), 1e-3, sweep_aim=aim)


def recorded_solves(monkeypatch):
    """Every call of the sweeps (their ``aim`` and ``target``, the level each answer
    reached in units of its tolerances, and its sweeps), and the aims of the impact
    problems."""
    solves, impacts = [], []
    solve = gauss_seidel.solve

    def recording(rows, predicted, start, tolerance, *args, **kwargs):
        r, sweeps, residual = solve(rows, predicted, start, tolerance, *args, **kwargs)
        levels = coulomb_rows.natural_residual(rows, predicted, r) / tolerance
        loaded = levels[r[:, 0] > 0.0]
        typical = float(np.sqrt(np.mean(loaded**2))) if loaded.size else 0.0
        solves.append((kwargs.get("aim"), kwargs.get("target"), float(levels.max(initial=0.0)), sweeps, typical))
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
    assert solves and all(aim == 0.5 for aim, *_ in solves)


@pytest.mark.parametrize("aim", [None, 0.5, 1.0])
def test_every_answer_meets_the_tolerance_and_its_loaded_contacts_the_aim(aim, monkeypatch):
    """An answer is accepted when every contact is within its tolerance and the loaded
    contacts are within the aim (an eighth of it when None) in root mean square, or
    within the tolerance once the sweeps stall (`friction_gauss_seidel._accepts`): no
    answer is beyond the tolerance, and most first rounds end with their loaded
    contacts at the aim. Computed here from the answers, not read from the solver."""
    solves, _ = sweeps_of_a_pour(aim, monkeypatch)
    reach = gauss_seidel.TARGET if aim is None else aim
    first_rounds = [(level, typical) for _, target, level, _, typical in solves if target is None]
    levels, typical = np.array(first_rounds).T
    assert levels.size and levels.max() <= 1.0
    assert np.mean(typical <= reach) > 0.9


def test_the_default_aim_is_an_eighth_step_for_step(monkeypatch):
    """None and `TARGET` (1/8) given explicitly make the same steps, bit for bit."""
    runs_ = []
    for aim in (None, gauss_seidel.TARGET):
        simulation = gr.Simulation(frictional_pile(n_side=4), 1e-3, sweep_aim=aim)
        results = [simulation.step() for _ in range(20)]
        runs_.append((results[-1].positions, [result.solver.iterations for result in results]))
    np.testing.assert_array_equal(runs_[0][0], runs_[1][0])
    assert runs_[0][1] == runs_[1][1]


def test_the_newton_repairs_aim_at_a_quarter_of_the_aim(monkeypatch):
    """On the captured stall of a settling box (`tests/data/stall_of_a_settling_box.npz`),
    the local repairs are asked for a quarter of the solve's aim."""
    data = dict(np.load(Path(__file__).parent / "data" / "stall_of_a_settling_box.npz"))
    G = sp.csr_matrix((data["G_data"], data["G_indices"], data["G_indptr"]), shape=tuple(data["G_shape"]))
    T = sp.csr_matrix((data["T_data"], data["T_indices"], data["T_indptr"]), shape=tuple(data["T_shape"]))
    rows = coulomb_rows.sweep_rows(InverseMassDiagonal(data["inverse_mass"]), G, T, data["mu"], data["lower"])
    aims = []
    repair = gauss_seidel.newton_on_cluster

    def recording(rows_, u, r, members, tolerance, aim, *args, **kwargs):
        aims.append(aim)
        return repair(rows_, u, r, members, tolerance, aim, *args, **kwargs)

    monkeypatch.setattr(gauss_seidel, "newton_on_cluster", recording)
    monkeypatch.setattr(gauss_seidel, "NEWTON_AFTER", 10**9)  # the repairs alone
    monkeypatch.setattr(gauss_seidel, "NEWTON_CHECKS_PER_CONTACT", 10**6)
    gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], 4000, aim=0.5)
    assert aims and all(aim == 0.25 * 0.5 for aim in aims)


def test_aimed_at_the_tolerance_a_settling_pile_takes_fewer_sweeps(monkeypatch):
    eighth, _ = sweeps_of_a_pour(None, monkeypatch)
    monkeypatch.undo()
    whole, _ = sweeps_of_a_pour(1.0, monkeypatch)
    assert sum(solve[3] for solve in whole) < sum(solve[3] for solve in eighth)


@pytest.fixture
def tiny_workspace(tmp_path, monkeypatch):
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "tiny.py").write_text(tiny_scene(0.006))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRANULAR_SCENES", str(tmp_path / "scenes"))
    return tmp_path


def test_the_command_records_the_aim_from_the_first_frame_and_a_continued_run_keeps_it(
    tiny_workspace, capsys, monkeypatch
):
    """The run file holds the aim from its opening (a killed run is continued from what
    it holds then), and ``--from`` runs on with it."""
    opened = []
    writer = runs.FrameWriter

    class Recording(writer):
        def __init__(self, path, system, meta, *args, **kwargs):
            opened.append(meta.get("simulation_options", {}).get("sweep_aim"))
            super().__init__(path, system, meta, *args, **kwargs)

    monkeypatch.setattr(runs, "FrameWriter", Recording)
    assert main(["run", "tiny", "--out", "aimed.h5", "--sweep-aim", "0.5", "--quiet"]) == 0
    assert main(["run", "--from", "aimed.h5", "--duration", "0.003", "--out", "more.h5", "--quiet"]) == 0
    assert opened == [0.5, 0.5]
    assert gr.Trajectory.load(tiny_workspace / "more.h5").meta["simulation_options"]["sweep_aim"] == 0.5


def test_the_command_refuses_an_aim_beyond_the_tolerance(tiny_workspace, capsys):
    assert main(["run", "tiny", "--out", "aimed.h5", "--sweep-aim", "2"]) == USAGE
    error = capsys.readouterr().err
    assert "--sweep-aim" in error and "(0, 1]" in error
    assert not (tiny_workspace / "aimed.h5").exists()


def test_the_loaded_level_is_the_root_mean_square_over_the_contacts_that_push():
    """Three loaded contacts at 0.3, 0.4 and 0 tolerances and two open ones (one of
    them approaching, at 2 tolerances): sqrt((0.09 + 0.16 + 0) / 3) = sqrt(1/12); the
    open contacts count in the largest residual, not in the loaded level."""
    levels = np.array([0.3, 0.4, 0.0, 0.0, 2.0])
    r = np.array([[1.0, 0.1, 0.0], [2.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    # three squares, a sum, a mean and a root: a few roundings of eps each
    assert np.isclose(gauss_seidel.loaded_level(levels, r), np.sqrt(1.0 / 12.0), rtol=4 * np.finfo(float).eps, atol=0.0)
    assert gauss_seidel.loaded_level(levels, np.zeros((5, 3))) == 0.0
    # Every contact within its tolerance is needed besides the loaded level (`_accepts`).
    assert not gauss_seidel._accepts([None, 2.0], levels, r, 0.5)
    assert gauss_seidel._accepts([None, 0.4], levels[:4], r[:4], 0.3)
    assert not gauss_seidel._accepts([None, 0.4], levels[:4], r[:4], 0.25)
