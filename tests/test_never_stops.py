"""A run never stops because a contact solver missed its tolerance: by default the
step keeps the solver's best answer, records its residual in `StepResult.solver`
and warns once; ``strict=True`` raises as before."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import granular as gr
import granular.contact.friction as friction


def frictional_pile(n_side=3, layers=2, friction_coefficient=0.5, restitution=0.0, rolling=0.0, seed=0):
    """``n_side^2 layers`` spheres of radius 1 cm on a jittered lattice above the floor of
    an open box, falling with random velocities."""
    rng = np.random.default_rng(seed)
    radius, pitch = 0.01, 0.0225
    grid = np.stack(np.meshgrid(np.arange(n_side), np.arange(n_side), np.arange(layers), indexing="ij"), -1).reshape(
        -1, 3
    )
    positions = (grid + 0.5) * pitch + rng.uniform(-0.001, 0.001, grid.shape)
    positions[:, 2] += 0.005
    side = n_side * pitch
    box = gr.Box([0.0, 0.0, 0.0], [side, side, 1.0], open_top=True)
    return gr.SphereWorld(
        positions,
        radius,
        velocities=rng.normal(0.0, 0.2, positions.shape),
        walls=[box],
        friction=friction_coefficient,
        restitution=restitution,
        rolling_friction=rolling,
    )


def test_sweeps_that_miss_their_tolerance_keep_the_best_answer_and_warn_once(monkeypatch):
    """With the sweeps capped at 3 (far below what a settling pile needs), every
    contact step misses: the run goes on, each such step records a residual above
    its tolerance (``missed > 1``), one warning is given, the state stays finite."""
    monkeypatch.setattr(friction, "FRICTION_SWEEPS", 3)
    sim = gr.Simulation(frictional_pile(), 1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [sim.step() for _ in range(120)]
    missed = [r.solver.missed for r in results]
    assert max(missed) > 1.0
    assert all(r.solver.residual > 0.0 for r, ratio in zip(results, missed) if ratio > 0.0)
    assert sum(isinstance(w.message, gr.SolverToleranceWarning) for w in caught) == 1
    assert np.all(np.isfinite(results[-1].positions)) and sim.t == pytest.approx(0.12)


def test_a_strict_simulation_stops_at_the_first_missed_tolerance(monkeypatch):
    """``strict=True``: the first step whose sweeps miss raises ConvergenceError with
    its time, and the simulation keeps the state before it."""
    monkeypatch.setattr(friction, "FRICTION_SWEEPS", 3)
    sim = gr.Simulation(frictional_pile(), 1e-3, strict=True)
    with pytest.raises(gr.ConvergenceError) as caught:
        for _ in range(120):
            sim.step()
    assert caught.value.t == pytest.approx(sim.t + sim.dt)
    assert caught.value.residual > caught.value.tolerance > 0.0


def test_a_converged_frictional_step_records_a_residual_within_its_tolerance():
    """Without the cap, the same pile's steps hold the law: nothing missed, and the
    recorded residual is below the sweeps' tolerance at that step's velocity scale."""
    sim = gr.Simulation(frictional_pile(), 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gr.SolverToleranceWarning)
        results = [sim.step() for _ in range(120)]
    assert all(r.solver.missed == 0.0 for r in results)
    assert any(r.solver.residual > 0.0 for r in results)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    mu=st.floats(0.1, 1.0),
    e=st.sampled_from([0.0, 0.3, 0.8]),
    rolling=st.sampled_from([0.0, 0.1]),
    sweeps=st.sampled_from([3, 50, 20000]),
    aim=st.sampled_from([None, 0.5, 1.0]),
)
def test_random_frictional_worlds_never_stop(seed, mu, e, rolling, sweeps, aim):
    """Random frictional piles (friction, restitution, rolling resistance, sweeps capped
    or not, and the sweeps' aim) run 150 steps without an error, with finite states and
    at most one warning."""
    previous = friction.FRICTION_SWEEPS
    friction.FRICTION_SWEEPS = sweeps
    try:
        world = frictional_pile(friction_coefficient=mu, restitution=e, rolling=rolling, seed=seed)
        sim = gr.Simulation(world, 1e-3, sweep_aim=aim)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(150):
                result = sim.step()
    finally:
        friction.FRICTION_SWEEPS = previous
    assert np.all(np.isfinite(result.positions)) and np.all(np.isfinite(result.velocities))
    assert sum(isinstance(w.message, gr.SolverToleranceWarning) for w in caught) <= 1


def test_a_frictionless_projection_that_every_route_misses_keeps_the_backends_answer(monkeypatch):
    """Every route simulated to fail (active set, pivoting, interior point; OSQP
    stopping short at half the required correction): a strict projection raises
    SolverError, the default keeps OSQP's answer with its violation in ``missed``."""
    import scipy.sparse as sp

    import granular.contact.active_set as active_set
    import granular.contact.backends.osqp_ as osqp_backend
    import granular.contact.projection as projection
    from granular.contact.backends import BackendResult
    from granular.contact.problem import ContactProblem
    from granular.metric import DiagonalMetric

    monkeypatch.setattr(active_set, "solve", lambda *args, **kwargs: None)
    monkeypatch.setattr(
        osqp_backend,
        "solve",
        lambda problem, warm=None, **kw: BackendResult(np.full(problem.lower.size, 0.5), "not_converged"),
    )
    monkeypatch.setattr(projection, "pivoted_impulses", lambda *args: None)
    monkeypatch.setattr(
        projection, "interior_point", lambda *args, **kwargs: (_ for _ in ()).throw(gr.SolverError("simulated"))
    )
    metric, G = DiagonalMetric(np.ones(2)), sp.csr_matrix(np.eye(2))
    lower = np.array([1.0, 1.0])  # u >= 1 from u = 0: impulses 1 would answer exactly
    with pytest.raises(gr.SolverError):
        projection.project(ContactProblem(metric, G, np.zeros(2), lower))
    kept = projection.project(ContactProblem(metric, G, np.zeros(2), lower), strict=False)
    assert kept.status == "inaccurate" and np.allclose(kept.velocities, 0.5)
    assert kept.missed.residual == pytest.approx(0.5) and kept.missed.residual > kept.missed.tolerance


def test_a_run_file_records_the_missed_steps_and_inspect_shows_them(monkeypatch, tmp_path, capsys):
    """The run's meta counts the steps that kept a best answer, names the worst with
    its residual, and `granular inspect` prints them; the file round-trips them."""
    from granular.cli import main

    monkeypatch.setattr(friction, "FRICTION_SWEEPS", 3)
    sim = gr.Simulation(frictional_pile(), 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.SolverToleranceWarning)
        run = sim.run(steps=60, record_every=20, out=tmp_path / "pile.h5")
    summary = run.meta["missed_steps"]
    assert summary["count"] == len(sim.missed_steps) > 0
    t, residual, ratio = summary["worst"]
    assert ratio == max(step[2] for step in sim.missed_steps) > 1.0 and residual > 0.0
    assert gr.Trajectory.load(tmp_path / "pile.h5").meta["missed_steps"] == summary
    assert main(["inspect", str(tmp_path / "pile.h5")]) == 0
    assert f"solver tolerance missed at {summary['count']} steps" in capsys.readouterr().out


def test_solver_messages_name_walls_as_inspect_does():
    """A wall contact in a contact solver's message is named as the user's walls name
    it ("box z-min", as `granular inspect` and `SphereWorld.surface_name` say), not
    by a surface number."""
    from granular.contact.problem import ContactProblem

    world = frictional_pile()
    q = world.initial_state()[1]
    constraints = world.constraints(0.001, q, 0.001, 1.0)
    problem = ContactProblem.from_constraints(world.metric(0.001, q), constraints, np.zeros(q.size), 0.001)
    walls = np.flatnonzero(constraints.wall >= 0)
    assert walls.size
    for k in walls:
        name = problem.contact_name(int(k))
        assert world.surface_name(int(constraints.wall[k])) in name and "wall " not in name
