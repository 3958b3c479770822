"""The gap closure of frictional steps (`granular.contact.gap_closure`): the Coulomb sweeps
meet Maury's constraint only to their tolerance, and the positions are then moved by the
smallest displacement in the mass metric that closes the gaps they leave, the
velocities kept."""

import warnings
from dataclasses import replace

import numpy as np
import pytest

import granular as gr
from granular.tolerances import OVERLAP_TOLERANCE
from test_world import smallest_gap

EPS = np.finfo(float).eps
RADIUS = 0.01  # m


def settling_box(friction: float = 0.5, close_gaps: bool = True) -> gr.Simulation:
    """64 spheres (r = 1 cm, 1 kg) thrown at 0.5 m/s into an open box, 4 x 4 x 4 sites of
    Siconos' lattice (spacing 2.1 cm), e = 0, with Coulomb friction and turning spheres."""
    side, spacing = 4, 0.021
    index = np.arange(side**3)
    grid = np.stack([index % side, (index // side) % side, index // side**2], axis=1)
    offset = (side - 1) * spacing / 2.0
    positions = np.column_stack(
        [grid[:, 0] * spacing - offset, grid[:, 1] * spacing - offset, 0.02 + grid[:, 2] * spacing]
    )
    velocities = np.random.default_rng(0).normal(0.0, 0.5, positions.shape)
    half = (side * spacing + 0.02) / 2.0
    box = gr.Box([-half, -half, 0.0], [half, half, 10.0], open_top=True)
    world = gr.SphereWorld(
        positions, RADIUS, masses=1.0, velocities=velocities, walls=[box], restitution=0.0, friction=friction
    )
    return gr.Simulation(world, dt=1e-3, close_gaps=close_gaps)


def smallest_gaps(simulation: gr.Simulation, steps: int) -> float:
    """The smallest gap (m) after any of ``steps`` steps."""
    worst = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        for _ in range(steps):
            result = simulation.step()
            worst = min(worst, smallest_gap(simulation.system, result.positions, result.t))
    return worst


def test_a_frictional_pile_ends_every_step_touching_only_when_its_gaps_are_closed():
    """The settling box's contacts end every step at gaps the library calls touching
    (``-OVERLAP_TOLERANCE r``, as the exact frictionless projection does); without the
    closure the sweeps' tolerance leaves them overlapping by far more."""
    closed = smallest_gaps(settling_box(close_gaps=True), 150)
    swept = smallest_gaps(settling_box(close_gaps=False), 150)
    assert closed >= -OVERLAP_TOLERANCE * RADIUS
    assert swept < -100.0 * OVERLAP_TOLERANCE * RADIUS


def test_the_closure_moves_positions_only_and_records_the_potential_energy_it_gives():
    """From one state, the step with and without the closure: the same velocities,
    angular velocities, orientations and contact impulses, bit for bit; the positions
    differ, and only they; the closure's energy is the potential energy of that
    difference, ``-sum m g . dq``, positive here (the sweeps let the pile sink into the
    floor and the closure lifts it back). The state carried on differs likewise."""
    simulation = settling_box()
    smallest_gaps(simulation, 80)
    scheme, state = simulation.scheme, simulation.scheme.state
    closed_state, closed = scheme.advance(state)
    scheme.close_gaps = False
    swept_state, swept = scheme.advance(state)
    for name in ("velocities", "angular_velocities", "orientations"):
        assert np.array_equal(getattr(closed, name), getattr(swept, name)), name
    assert np.array_equal(closed.contacts.impulse, swept.contacts.impulse)
    assert np.array_equal(closed.contacts.tangential_impulse, swept.contacts.tangential_impulse)
    assert closed.kinetic_energy == swept.kinetic_energy and closed.dissipated_energy == swept.dissipated_energy
    moved = closed.positions - swept.positions
    assert np.any(moved != 0.0)
    world = simulation.system
    difference = closed.potential_energy - swept.potential_energy
    # both potentials are sums over 64 spheres of terms up to m g z ~ 1 J: a few ulps of that
    assert closed.closure_energy == pytest.approx(difference, abs=64 * 64 * EPS)
    assert closed.closure_energy == pytest.approx(world.potential_energy(closed.t, moved.reshape(-1)), rel=1e-12)
    assert closed.closure_energy > 0.0 and swept.closure_energy == 0.0
    # the states carried to the next step differ in the positions and the closure's multipliers only
    assert closed_state.previous_closure is not None and swept_state.previous_closure is None
    same = replace(closed_state, q=swept_state.q, previous_closure=None)
    for name in ("u", "previous_keys", "previous_impulses", "previous_tangential", "omega", "orientations"):
        assert np.array_equal(getattr(same, name), getattr(swept_state, name)), name


def test_a_frictionless_pile_is_not_closed_its_projection_being_exact():
    """Without friction the exact projection leaves nothing to close: the step is
    ``q + h u`` to the bit, no closure energy, and run files carry none."""
    simulation = settling_box(friction=0.0)
    assert not simulation.closes_gaps
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        for _ in range(60):
            q = simulation.scheme.state.q.copy()
            result = simulation.step()
            assert np.array_equal(result.positions.reshape(-1), q + simulation.dt * result.velocities.reshape(-1))
            assert result.closure_energy == 0.0
    run = settling_box(friction=0.0).run(duration=0.005, record_every=1, progress=None)
    assert run.closure_energy is None


def test_the_run_records_the_closure_energy_frame_by_frame():
    """A frictional run's frames carry the closure's potential energy since the start,
    the sum of its steps'."""
    simulation = settling_box()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        run = simulation.run(duration=0.06, record_every=20, progress=None)
    assert run.closure_energy is not None and run.closure_energy.shape == run.t.shape
    assert run.closure_energy[0] == 0.0 and run.closure_energy[-1] == simulation.closure_energy > 0.0
    assert np.all(np.diff(run.closure_energy) != 0.0)
