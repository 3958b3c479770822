"""Bad input gets a specific error naming the offending index, pair, time or value;
nothing is silent, and a step that raises leaves the simulation where it was."""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from support.systems import exploding_spring

ROW = [[0.0, 0.0, 0.5], [0.1, 0.0, 0.5], [0.2, 0.0, 0.5]]  # three spheres 0.1 m apart


def world(**changes) -> gr.SphereWorld:
    arguments = dict(positions=ROW, radii=0.01)
    arguments.update(changes)
    return gr.SphereWorld(**arguments)


# -- the world's arguments -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name, value, message",
    [
        (
            "positions",
            [[0, 0, 0], [1, np.nan, 0], [2, 0, 0]],
            r"positions has a non-finite entry at index \(1, 1\): nan",
        ),
        (
            "positions",
            [[0, 0, 0], [1, 0, 0], [2, 0, -np.inf]],
            r"positions has a non-finite entry at index \(2, 2\): -inf",
        ),
        (
            "velocities",
            [[0, 0, 0], [np.inf, 0, 0], [0, 0, 0]],
            r"velocities has a non-finite entry at index \(1, 0\): inf",
        ),
        (
            "velocities",
            [[0, 0, 0], [0, 0, 0], [0, np.nan, 0]],
            r"velocities has a non-finite entry at index \(2, 1\): nan",
        ),
        ("radii", [0.01, 0.0, 0.01], r"radii must be positive: entry 1 is 0.0 m"),
        ("radii", [0.01, 0.01, -0.02], r"radii must be positive: entry 2 is -0.02 m"),
        ("radii", [0.01, np.nan, 0.01], r"radii has a non-finite entry at index 1"),
        ("radii", np.nan, r"radii must be finite, got nan"),
        ("radii", np.inf, r"radii must be finite, got inf"),
        ("masses", [1.0, 2.0, -1.0], r"masses must be positive: entry 2 is -1.0 kg"),
        ("masses", [0.0, 2.0, 1.0], r"masses must be positive: entry 0 is 0.0 kg"),
        ("masses", np.nan, r"masses must be finite, got nan"),
        ("gravity", (0.0, np.nan, -9.81), r"gravity has a non-finite entry at index 1"),
        ("restitution", [0.5, 1.5, 0.0], r"restitution must lie in \[0, 1(\.0)?\]: entry 1 is 1.5"),
        ("restitution", np.nan, r"restitution must be finite"),
    ],
)
def test_non_finite_or_non_positive_values_are_named_by_index(name, value, message):
    with pytest.raises(gr.InvalidInputError, match=message):
        world(**{name: value})


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("positions", np.zeros((3, 2)), r"positions must have shape \(N, 3\) with N >= 1, got \(3, 2\)"),
        ("positions", np.zeros((0, 3)), r"positions must have shape \(N, 3\) with N >= 1, got \(0, 3\)"),
        ("radii", [0.01, 0.01], r"radii must be a scalar or have shape \(3,\), got \(2,\)"),
        ("masses", [1.0, 1.0, 1.0, 1.0], r"masses must be a scalar or have shape \(3,\), got \(4,\)"),
        ("velocities", np.zeros((2, 3)), r"velocities must have shape \(3, 3\), got \(2, 3\)"),
        ("velocities", np.zeros(9), r"velocities must have shape \(3, 3\), got \(9,\)"),
        ("gravity", (0.0, -9.81), r"gravity must have shape \(3,\), got \(2,\)"),
    ],
)
def test_mismatched_shapes_are_reported_with_both_shapes(name, value, message):
    with pytest.raises(gr.InvalidInputError, match=message):
        world(**{name: value})


def test_overlapping_spheres_at_t0_name_the_pair_and_the_overlap():
    """Spheres 1 and 2 overlap by 0.01 m (the worst pair is named, not just any)."""
    positions = [[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.15, 0.0, 0.0], [0.3, 0.0, 0.0], [0.355, 0.0, 0.0]]
    with pytest.raises(gr.OverlapError, match=r"spheres 1 and 2 overlap by 0.01 m at t = 0 s") as caught:
        gr.SphereWorld(positions, 0.03)
    assert caught.value.pair == (1, 2)
    assert caught.value.overlap == pytest.approx(0.01)


def test_touching_spheres_are_admissible_but_a_tiny_overlap_is_not():
    """Gap 0 is admissible; the tolerance is 1e-9 (r_i + r_j), an overlap of 1e-6 r is named."""
    gr.SphereWorld([[0.0, 0.0, 0.0], [0.02, 0.0, 0.0]], 0.01)
    with pytest.raises(gr.OverlapError, match="spheres 0 and 1 overlap by 1e-08 m"):
        gr.SphereWorld([[0.0, 0.0, 0.0], [0.02 - 1e-8, 0.0, 0.0]], 0.01)


def test_overlaps_through_a_periodic_face_are_found():
    with pytest.raises(gr.OverlapError, match=r"spheres 0 and 1 overlap") as caught:
        gr.SphereWorld(
            [[0.005, 0.5, 0.5], [0.99, 0.5, 0.5]], 0.01, periodic=gr.PeriodicBox([0, 0, 0], [1, 1, 1], axes=(0,))
        )
    assert caught.value.overlap == pytest.approx(0.005)


def test_a_sphere_overlapping_a_wall_names_the_sphere_the_wall_and_the_overlap():
    box = gr.Box([0.0, -0.1, 0.0], [0.3, 0.1, 1.0], open_top=True)
    message = r"sphere 2 overlaps the box x-max \(surface 1: .*\) by 0.003 m at t = 0 s"  # named as inspect does
    with pytest.raises(gr.OverlapError, match=message) as caught:
        gr.SphereWorld([[0.05, 0, 0.5], [0.15, 0, 0.5], [0.293, 0, 0.5]], 0.01, walls=[box])
    assert caught.value.pair == (2, "wall 1")  # faces: x-low, x-high, y-low, y-high, floor
    assert caught.value.overlap == pytest.approx(0.003)


def test_radius_callable_of_the_wrong_shape_names_the_time():
    expected = r"radius callable returned shape \(2,\) at t = 0.5 s, expected \(3,\)"
    with pytest.raises(gr.RadiusError, match=expected) as caught:
        world(radii=lambda t: np.full(2, 0.01), t0=0.5)
    assert caught.value.t == 0.5


@pytest.mark.exact
def test_radius_callable_going_non_positive_during_a_run_names_time_and_sphere():
    """Sphere 1 shrinks to zero at t = 0.01 s: the step ending there raises
    RadiusError with that time and index, and the simulation stays at t = 0.009 s."""

    def radii(t):
        return np.array([0.01, 0.01 * (1.0 - 100.0 * t), 0.01])

    sim = gr.Simulation(world(radii=radii, gravity=(0, 0, 0)), 1e-3)
    for _ in range(9):
        sim.step()
    positions = sim.positions
    with pytest.raises(gr.RadiusError, match=r"radius of sphere 1 is .* m at t = 0.01 s") as caught:
        sim.step()
    assert caught.value.index == 1
    assert caught.value.t == pytest.approx(0.01, abs=1e-15)
    assert sim.t == pytest.approx(0.009) and sim.steps_taken == 9
    np.testing.assert_array_equal(sim.positions, positions)


def test_radius_callable_returning_nan_is_a_radius_error():
    with pytest.raises(gr.RadiusError, match=r"radius of sphere 2 is nan m at t = 0 s"):
        world(radii=lambda t: np.array([0.01, 0.01, np.nan]))


def test_force_callable_of_the_wrong_shape_or_non_finite_names_the_time():
    sim = gr.Simulation(world(force=lambda t, q, u: np.zeros((3, 2))), 1e-3)
    with pytest.raises(gr.InvalidInputError, match=r"force returned shape \(3, 2\) at t = 0 s, expected \(3, 3\)"):
        sim.step()
    assert sim.steps_taken == 0
    sim = gr.Simulation(world(force=lambda t, q, u: np.full((3, 3), np.nan if t > 0.0015 else 0.0)), 1e-3)
    sim.step(), sim.step()
    # A non-finite force at run time is a blow-up, not a usage error: NonFiniteError.
    with pytest.raises(gr.NonFiniteError, match=r"force returned a non-finite value at t = 0.002 s"):
        sim.step()


def test_force_callable_of_a_constrained_system_is_checked_as_a_worlds():
    def system(force):
        return gr.ConstrainedSystem([1.0], [0.0], mass=[[1.0]], force=force)

    with pytest.raises(gr.InvalidInputError, match=r"force returned shape \(2,\) at t = 0 s, expected \(1,\)"):
        system(lambda t, q, u: np.zeros(2)).force(0.0, np.ones(1), np.zeros(1))
    with pytest.raises(gr.NonFiniteError, match=r"force returned a non-finite value at t = 0.5 s"):
        system(lambda t, q, u: np.array([np.inf])).force(0.5, np.ones(1), np.zeros(1))


def test_walls_must_be_walls():
    with pytest.raises(gr.InvalidInputError, match=r"walls\[1\] must be a wall .*Surface\), got tuple"):
        world(walls=[gr.Plane([0, 0, 0], [0, 0, 1]), (0, 0, 1)])
    with pytest.raises(gr.InvalidInputError, match="Plane normal must be non-zero"):
        gr.Plane([0, 0, 0], [0, 0, 0])
    with pytest.raises(gr.InvalidInputError, match="Box needs lower < upper"):
        gr.Box([0, 0, 0], [1, -1, 1])


# -- the simulation's arguments --------------------------------------------------------------


@pytest.mark.parametrize("dt", [0.0, -1e-3, np.nan, np.inf])
def test_non_positive_or_non_finite_dt(dt):
    with pytest.raises(gr.InvalidInputError, match=r"dt must be a positive finite number, got"):
        gr.Simulation(world(), dt)


def test_unknown_solver_is_named():
    with pytest.raises(gr.InvalidInputError, match=r"solver must be one of \('osqp', 'cvxpy'\), got 'gurobi'"):
        gr.Simulation(world(), 1e-3, solver="gurobi")


def test_run_arguments():
    sim = gr.Simulation(world(), 1e-3)
    with pytest.raises(gr.InvalidInputError, match="give exactly one of duration"):
        sim.run(duration=1.0, steps=10)
    with pytest.raises(gr.InvalidInputError, match="record_every must be a positive integer, got 0"):
        sim.run(steps=10, record_every=0)
    with pytest.raises(gr.InvalidInputError, match="duration must be a non-negative number of seconds, got nan"):
        sim.run(duration=np.nan)


# -- a projection that cannot be solved -------------------------------------------------------


@pytest.mark.exact
def test_a_projection_that_does_not_converge_raises_solver_error_and_keeps_the_state(monkeypatch):
    """The active-set method, pivoting, OSQP and the interior-point refinement all fail
    (simulated): SolverError saying "did not converge", with the time; the state is
    not advanced."""
    import granular.contact.active_set as active_set
    import granular.contact.backends.osqp_ as osqp_backend
    import granular.contact.projection as projection
    from granular.contact.backends import BackendResult

    sim = gr.Simulation(
        gr.SphereWorld([[0.0, 0.0, 0.01]], 0.01, walls=[gr.Plane([0, 0, 0], [0, 0, 1])]), 1e-3, strict=True
    )  # a kept best answer would not raise
    sim.step()
    positions, velocities = sim.positions, sim.velocities

    def fails(*args, **kwargs):
        raise gr.SolverError("interior-point refinement did not converge in 80 iterations")

    monkeypatch.setattr(
        osqp_backend,
        "solve",
        lambda problem, warm=None, **kw: BackendResult(np.zeros(problem.lower.size), "not_converged"),
    )
    monkeypatch.setattr(projection, "interior_point", fails)
    monkeypatch.setattr(projection, "pivoted_impulses", lambda *args: None)  # pivoting fails too
    monkeypatch.setattr(active_set, "solve", lambda *args, **kwargs: None)
    expected = r"did not converge at t = 0.002 s \(solver 'osqp', status 'not_converged'"
    with pytest.raises(gr.SolverError, match=expected) as caught:
        sim.step()
    assert not isinstance(caught.value, gr.JammingError)
    assert caught.value.t == pytest.approx(0.002)
    assert sim.steps_taken == 1
    np.testing.assert_array_equal(sim.positions, positions)
    np.testing.assert_array_equal(sim.velocities, velocities)


# -- a numerical blow-up -------------------------------------------------------------------------------


def test_a_blow_up_raises_non_finite_error_with_the_time_and_keeps_the_last_finite_state():
    """A spring of stiffness 1e8 N/m on 1 kg stepped explicitly with dt = 1e-3 s
    (omega dt = 10, far past the stability limit 2) grows by about omega^2 dt^2 = 100
    a step until it overflows. The step where the prediction stops being finite
    raises NonFiniteError (a SolverError, so a GranularError) naming its time; the
    simulation keeps the last finite state. It used to die with a numpy ValueError."""
    sim = gr.Simulation(exploding_spring(1e8), 1e-3)
    with pytest.raises(gr.NonFiniteError) as caught:
        for _ in range(1000):
            sim.step()
    assert isinstance(caught.value, gr.GranularError)
    # The force is evaluated at the start of the step, the prediction checked at its end.
    assert sim.t <= caught.value.t <= sim.t + sim.dt
    assert f"t = {caught.value.t:.6g} s" in str(caught.value)
    assert np.all(np.isfinite(sim.positions)) and np.all(np.isfinite(sim.velocities))
    assert 0.05 < sim.t < 0.2  # growth by ~100 a step overflows 1e308 within ~150 steps


@pytest.mark.parametrize(
    "build",
    [
        lambda: gr.Plane([0, 0, 0], [0, 0, 1], 0.3, 0.5),
        lambda: gr.Box([0, 0, 0], [1, 1, 1], False, 0.3),
        lambda: gr.Panel([0, 0, 0], [1, 0, 0], [0, 1, 0], 0.3),
    ],
)
def test_a_walls_law_and_motion_are_keywords_never_read_by_position(build):
    """A coefficient given by position is refused, not read as the wall's motion."""
    with pytest.raises(TypeError):
        build()
