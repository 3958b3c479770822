"""What a scheme needs of a system (`granular.protocols`, `granular.schemes.registry`),
the linear `ConstrainedSystem` under Newmark, and scheme state as a value.

- Refusals happen when the simulation is built, with one line: a scheme given a
  system it cannot integrate, an explicit scheme beyond its stability limit.
- An elastic bar of a few finite elements, built with ``stiffness=`` and ``load=``,
  hits a rigid wall under the Newmark scheme of Dumont and Paoli (*Vibrations of a
  beam between obstacles. Convergence of a fully discretized approximation*, 2006):
  the tip never passes the wall, the discrete energy is conserved in free flight
  and never rises at the wall, and the contact lasts the wave's round trip 2 L / c.
- A step is ``(state, result) = scheme.advance(state)``: a value in, a value out,
  the scheme object unchanged; the state carries the previous position of a
  two-step scheme, and its restart values round-trip.
- `Simulation.run` of the beam takes the Newmark fast path and records the frames
  stepping records.
"""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular import protocols
from granular.schemes.newmark import discrete_energy
from granular.schemes.registry import highest_frequency
from granular.systems.beam import Beam
from granular.systems.examples import bouncing_ball
from granular.tolerances import COMPLEMENTARITY_TOLERANCE

WALL_GAP, SPEED, LENGTH = 0.05, 1.0, 1.0  # m, m/s, m; EA = rho A = 1: wave speed c = 1 m/s


def elastic_bar(elements: int = 6, load=None) -> gr.ConstrainedSystem:
    """A free bar of linear elements (lumped mass, EA = rho A = 1) moving at SPEED
    towards a rigid wall WALL_GAP beyond its right end."""
    nodes, h = elements + 1, LENGTH / elements
    stiffness = np.zeros((nodes, nodes))
    for e in range(elements):
        stiffness[e : e + 2, e : e + 2] += np.array([[1.0, -1.0], [-1.0, 1.0]]) / h
    masses = np.full(nodes, h)
    masses[[0, -1]] *= 0.5
    tip = np.zeros(nodes)
    tip[-1] = 1.0
    wall = gr.Constraint(gap=lambda t, q: WALL_GAP - q[-1], gradient=lambda t, q: -tip, name="wall")
    return gr.ConstrainedSystem(
        np.zeros(nodes), np.full(nodes, SPEED), mass=np.diag(masses), stiffness=stiffness, load=load, constraints=[wall]
    )


# -- what a scheme needs ---------------------------------------------------------------------


def test_the_systems_offer_the_protocols_the_schemes_need():
    world = gr.SphereWorld([[0.0, 0.0, 1.0]], 0.1)
    assert isinstance(world, protocols.NeighbourSearchSystem) and not isinstance(world, protocols.CoordinateSystem)
    assert isinstance(bouncing_ball(), protocols.CoordinateSystem) and not protocols.is_linear(bouncing_ball())
    assert protocols.is_linear(elastic_bar()) and protocols.is_linear(Beam())


def test_the_default_scheme_refuses_the_beam_at_its_scene_step_before_any_step():
    """The scene's dt = 5e-5 s is beyond 2 / w_max for the explicit schemes (the velocity
    scheme reached 1e155 J in 0.02 s there); a step under the limit is taken."""
    beam = Beam()
    limit = 2.0 / highest_frequency(beam)
    assert 1e-6 < limit < 5e-5
    for scheme in ("velocity", "dzonou-monteiro-marques", "paoli-schatzman"):
        with pytest.raises(gr.InvalidInputError, match="explicit in the stiffness and unstable") as refusal:
            gr.Simulation(beam, 5e-5, scheme=scheme)
        assert "\n" not in str(refusal.value)
    gr.Simulation(beam, 0.9 * limit)  # accepted below the limit


@pytest.mark.parametrize("ratio, bounded", [(0.95, True), (1.05, False)])
def test_the_explicit_limit_is_where_a_stepped_oscillator_stops_being_bounded(ratio, bounded):
    """On one spring (w = 10 rad/s) the velocity scheme is the symplectic Euler scheme:
    bounded for dt w < 2, growing beyond. The refusal sits exactly there."""
    spring = gr.ConstrainedSystem([0.1], [0.0], mass=[[1.0]], stiffness=[[100.0]])
    dt = ratio * 2.0 / 10.0
    if not bounded:
        with pytest.raises(gr.InvalidInputError, match="2 / w_max = 0.2 s"):
            gr.Simulation(spring, dt)
        spring = gr.ConstrainedSystem([0.1], [0.0], mass=[[1.0]], force=lambda t, q, u: -100.0 * q)
    simulation = gr.Simulation(spring, dt)  # the same spring as a force callable is not checked
    try:
        amplitude = np.abs(simulation.run(steps=400).positions).max()
    except gr.NonFiniteError:
        amplitude = np.inf
    assert (amplitude < 1.0) == bounded


def test_newmark_refuses_what_is_not_a_linear_system():
    with pytest.raises(gr.InvalidInputError, match="needs a linear system") as refusal:
        gr.Simulation(bouncing_ball(), 1e-3, scheme="newmark")
    assert "\n" not in str(refusal.value)
    with pytest.raises(gr.InvalidInputError, match="needs a linear system"):
        gr.Simulation(gr.SphereWorld([[0.0, 0.0, 1.0]], 0.1), 1e-3, scheme="newmark")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(stiffness=[[1.0]], force=lambda t, q, u: -q), "either force= or stiffness="),
        (dict(load=lambda t: np.ones(1)), "load= needs stiffness="),
        (dict(stiffness=[[1.0, 2.0]]), "stiffness must have shape"),
        (dict(stiffness=[[1.0]], load=3.0), "load must be a callable"),
    ],
)
def test_a_linear_system_with_bad_parts_is_refused(arguments, message):
    with pytest.raises(gr.InvalidInputError, match=message):
        gr.ConstrainedSystem([0.0], [0.0], mass=[[1.0]], **arguments)


# -- the impacting elastic bar under Newmark ---------------------------------------------------


@pytest.fixture(scope="module")
def bar_run():
    dt, beta = 5e-3, 0.25
    bar = elastic_bar()
    trajectory = gr.Simulation(bar, dt, scheme="newmark", beta=beta).run(duration=2.5)
    return bar, dt, beta, trajectory


def test_the_bar_tip_never_passes_the_wall(bar_run):
    """The projection is exact for this affine constraint, up to the solver's
    complementarity tolerance times one step's travel at the bar's speed."""
    _, dt, _, trajectory = bar_run
    assert trajectory.positions[:, -1].max() <= WALL_GAP + COMPLEMENTARITY_TOLERANCE * SPEED * dt
    assert trajectory.positions[:, -1].max() > WALL_GAP - 1e-9  # it reached the wall


@pytest.mark.exact
def test_the_bar_conserves_the_discrete_energy_in_flight_and_never_gains_any(bar_run):
    """Propositions 3.1 and 3.3 of Dumont and Paoli (2006) with no load: the discrete
    energy is invariant before the contact and never rises at it."""
    bar, dt, beta, trajectory = bar_run
    q, mass = trajectory.positions, bar.metric(0.0, bar.q0).matrix()
    energy = discrete_energy(mass, bar.stiffness, q[:-1], q[1:], dt, beta)
    in_flight = int(WALL_GAP / SPEED / dt) - 1
    assert energy[0] == pytest.approx(0.5 * SPEED**2 * LENGTH, rel=1e-12)
    assert np.abs(energy[:in_flight] - energy[0]).max() <= 1e-12 * energy[0]
    assert np.diff(energy).max() <= 1e-12 * energy[0]


def test_the_bar_stays_on_the_wall_for_the_round_trip_of_its_wave_and_leaves(bar_run):
    """An elastic bar hitting a rigid wall touches it for 2 L / c = 2 s (its stress wave
    goes to the free end and back), then leaves it moving backwards; the six lumped
    elements disperse the wave, so the discrete duration is within 10 %."""
    bar, dt, _, trajectory = bar_run
    pressed = np.flatnonzero([c.impulse.sum() > 0.0 for c in trajectory.contacts])
    duration = (pressed[-1] - pressed[0] + 1) * dt
    assert pressed[0] * dt == pytest.approx(WALL_GAP / SPEED, abs=2 * dt)
    assert duration == pytest.approx(2.0 * LENGTH, rel=0.1)
    momentum = trajectory.velocities[-1] @ np.diag(bar.metric(0.0, bar.q0).matrix())
    assert momentum < -0.5 * SPEED * LENGTH


def test_a_loaded_bar_balances_momentum_in_the_metric_of_A():
    """With a load F(t) the step still satisfies A (V - V') = G^T lambda."""
    dt, beta = 5e-3, 0.25
    bar = elastic_bar(load=lambda t: np.r_[np.zeros(6), -0.5 * np.cos(t)])
    A = bar.metric(0.0, bar.q0).matrix() + dt**2 * beta * bar.stiffness
    simulation = gr.Simulation(bar, dt, scheme="newmark", beta=beta)
    pushed = 0
    for _ in range(150):
        result = simulation.step()
        change = A @ (result.velocities - result.predicted)
        reaction = result.contacts.normal.T @ result.contacts.impulse
        assert np.abs(change - reaction).max() <= 1e-8 * max(1.0, np.abs(reaction).max())
        pushed += result.contacts.impulse.sum() > 0.0
    assert pushed > 10


# -- scheme state as a value -----------------------------------------------------------------


@pytest.mark.exact
@pytest.mark.parametrize("scheme", ["velocity", "dzonou-monteiro-marques", "paoli-schatzman"])
def test_advance_is_a_function_of_the_state(scheme):
    """Advancing the same state twice gives the same bits and leaves the scheme's
    own state alone."""
    simulation = gr.Simulation(bouncing_ball(height=0.01), 1e-3, scheme=scheme)
    simulation.run(steps=60)
    before = simulation.scheme.state
    first_state, first = simulation.scheme.advance(before, simulation.t)
    second_state, second = simulation.scheme.advance(before, simulation.t)
    assert simulation.scheme.state is before
    assert np.array_equal(first.positions, second.positions) and np.array_equal(first_state.u, second_state.u)


def test_a_two_step_state_carries_the_previous_position():
    """Paoli-Schatzman from the same (q, u) continues its (1.16) with U^{m-1} and restarts
    with (1.14) without it: in free fall the two differ by h^2 g / 2."""
    simulation = gr.Simulation(bouncing_ball(height=0.3), 1e-3, scheme="paoli-schatzman")
    simulation.run(steps=5)
    scheme, state = simulation.scheme, simulation.scheme.state
    assert state.previous is not None
    carried, _ = scheme.advance(state)
    fresh, _ = scheme.advance(scheme.init(state.t, state.q, state.u))
    assert fresh.q[0] - carried.q[0] == pytest.approx(0.5 * 1e-6 * 9.81, rel=1e-6)


@pytest.mark.exact
@pytest.mark.parametrize(
    "scheme, system", [("paoli-schatzman", lambda: bouncing_ball(height=0.02)), ("newmark", lambda: Beam())]
)
def test_restart_values_round_trip_and_continue_bit_for_bit(scheme, system):
    """`Simulation.warm_state` -> a fresh simulation at the same (t, q, u) -> the same steps."""
    dt = 1e-3 if scheme == "paoli-schatzman" else 5e-5
    options = {} if scheme == "paoli-schatzman" else {"beta": 0.5}
    running = gr.Simulation(system(), dt, scheme=scheme, **options)
    for _ in range(30):
        running.step()
    warm = running.warm_state()
    restarted = gr.Simulation(system(), dt, scheme=scheme, **options)
    restarted.steps_taken = running.steps_taken
    restarted.scheme.state = restarted.scheme.init(running.t, running.positions, running.velocities)
    restarted.set_warm_state(warm)
    for _ in range(30):
        a, b = running.step(), restarted.step()
        assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)


def test_the_old_module_name_is_the_maury_module():
    import granular.schemes.maury as maury
    import granular.schemes.velocity as velocity

    assert velocity is maury and velocity.MauryScheme.name == "velocity"


# -- the beam's fast path ----------------------------------------------------------------------


@pytest.mark.exact
@pytest.mark.parametrize("penalty", [None, 1e6])
def test_the_beam_run_takes_the_fast_path_and_records_the_stepped_frames(penalty):
    """Same frames as stepping up to round-off amplified by the impacts (measured 2e-10 m
    over 0.12 s with beta = 1/2 and dt = 2e-5 s), the same cumulative dissipation, and
    the last frame is the simulation's state, from which stepping goes on."""
    beam = Beam() if penalty is None else Beam().penalised(penalty)
    dt, steps, every, beta = 5e-5, 2400, 200, 0.5 if penalty is None else 0.25
    fast = gr.Simulation(beam, dt, scheme="newmark", beta=beta)
    trajectory = fast.run(steps=steps, record_every=every)
    stepped = gr.Simulation(beam, dt, scheme="newmark", beta=beta)
    results = [stepped.step() for _ in range(steps)]
    reference = np.array([results[k - 1].positions for k in range(every, steps + 1, every)])
    assert isinstance(trajectory, gr.Trajectory) and len(trajectory) == steps // every + 1
    assert np.abs(trajectory.positions[1:] - reference).max() < 1e-8
    assert np.abs(trajectory.positions[:, beam.tip]).max() >= 0.1  # the tip reached an obstacle
    assert trajectory.dissipated_energy[-1] == pytest.approx(stepped.dissipated_energy, rel=1e-6, abs=1e-12)
    assert (trajectory.meta["violation"] == 0.0) == (penalty is None)
    assert fast.t == stepped.t and np.array_equal(fast.positions, trajectory.positions[-1])
    assert np.abs(fast.step().positions - stepped.step().positions).max() < 1e-8


@pytest.mark.exact
def test_a_fast_beam_run_continued_from_its_last_frame_repeats_the_whole_run_bit_for_bit():
    """The fast path restarts its blocks at every recorded step, so a run continued from
    a recorded frame with its warm state (`Simulation.from_trajectory`) computes the
    same products in the same shapes as the uninterrupted run, and adds the same step
    losses to the same total in the same order: its frames, dissipated energy included, are the uninterrupted run's
    bit for bit, whichever BLAS kernel computes them. The restart at 0.1 s falls
    inside the first contact period (from 0.0878 s)."""
    dt, every = 5e-5, 250
    whole = gr.Simulation(Beam(), dt, scheme="newmark", beta=0.5).run(steps=3000, record_every=every)
    first = gr.Simulation(Beam(), dt, scheme="newmark", beta=0.5)
    half = first.run(steps=2000, record_every=every)
    half.warm_state = first.warm_state()
    continued = gr.Simulation.from_trajectory(half, world=Beam())
    joined = gr.Trajectory.concatenate([half, continued.run(steps=1000, record_every=every)])
    # the obstacles acted (the projection dissipated) before and after the restart
    assert 0.0 < half.dissipated_energy[-1] < whole.dissipated_energy[-1]
    for name in ("t", "positions", "velocities", "kinetic_energy", "dissipated_energy"):
        assert np.array_equal(getattr(whole, name), getattr(joined, name)), name
