"""`Simulation.run` that fails keeps what it computed: the error carries the frames
recorded before the failing step, ending with the last step that succeeded."""

import numpy as np
import pytest

import granular as gr
from support.systems import exploding_spring


def _row_that_jams():
    """Four spheres on a line between x = 0 and x = L = 0.1 m, r(t) = r0 (1 + t) with
    r0 = 0.01 m: they fit while 8 r(t) <= L, i.e. up to t = 0.25 s (see test_world)."""
    n, length, r0 = 4, 0.1, 0.01
    positions = [[length * (k + 0.5) / n, 0.05, 0.05] for k in range(n)]
    return gr.SphereWorld(
        positions,
        lambda t: np.full(n, r0 * (1.0 + t)),
        masses=1.0,
        gravity=(0, 0, 0),
        walls=[gr.Box([0, 0, 0], [length, 0.1, 0.1])],
    )


@pytest.mark.exact
def test_a_run_that_jams_raises_with_the_frames_up_to_the_last_good_step():
    h, every = 1e-3, 7
    sim = gr.Simulation(_row_that_jams(), h)
    with pytest.raises(gr.JammingError) as caught:
        sim.run(duration=1.0, record_every=every)
    partial = caught.value.trajectory
    assert isinstance(partial, gr.Trajectory)
    # the jam comes at the first step with 8 r(t) > L, t = 0.251 s; the last good step is the one before
    assert caught.value.t == pytest.approx(0.251, abs=1e-12)
    assert partial.t[-1] == pytest.approx(sim.t, abs=1e-15) and sim.t == pytest.approx(0.250, abs=1e-12)
    np.testing.assert_array_equal(partial.positions[-1], sim.positions)
    np.testing.assert_array_equal(partial.velocities[-1], sim.velocities)
    # frames every 7 steps, then the last good step
    steps = np.rint(partial.t / h).astype(int)
    assert np.all(steps[:-1] % every == 0) and steps[-1] == 250
    assert np.all(np.diff(partial.t) > 0.0)


@pytest.mark.exact
def test_a_run_that_blows_up_keeps_only_finite_frames():
    """A spring of 1e8 N/m on 1 kg stepped with dt = 1e-3 s (omega dt = 10) grows about
    100-fold a step until it overflows (see test_bad_input): the NonFiniteError carries
    the finite frames before it."""
    sim = gr.Simulation(exploding_spring(1e8), 1e-3)
    with pytest.raises(gr.NonFiniteError) as caught:
        sim.run(steps=1000, record_every=10)
    partial = caught.value.trajectory
    assert len(partial) >= 2
    assert np.all(np.isfinite(partial.positions)) and np.all(np.isfinite(partial.velocities))
    assert partial.t[-1] == pytest.approx(sim.t, abs=1e-15)
    assert sim.t <= caught.value.t <= sim.t + sim.dt  # the force is evaluated at the start of the step


def test_an_error_not_raised_by_a_run_has_no_partial_trajectory():
    """The attribute belongs to errors raised by a run; other errors have None."""
    error = gr.SolverError("not from a run")
    assert error.trajectory is None
