"""The gap closure of frictional steps (`granular.contact.gap_closure`): the Coulomb sweeps
meet Maury's constraint only to their tolerance, and the positions are then moved by the
smallest displacement in the mass metric that closes the gaps they leave, the
velocities kept."""

import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import granular as gr
from granular.contact import active_set, gap_closure
from granular.contact.gap_closure import close_gaps
from granular.metric import DiagonalMetric
from granular.records.configurations import read_configuration
from granular.tolerances import OVERLAP_TOLERANCE, VELOCITY_TOLERANCE
from support import piles
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
    difference, ``-sum m g . dq``. The state carried on differs likewise."""
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
    assert closed.closure_energy != 0.0 and swept.closure_energy == 0.0
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
    assert run.closure_energy[0] == 0.0 and run.closure_energy[-1] == simulation.closure_energy != 0.0
    assert np.all(np.diff(run.closure_energy) != 0.0)


class Rows:
    """A stand-in for a step's `ConstraintSet`: normal rows ``jacobian`` (m, d) and gaps
    ``gap`` (m,) (m) at the step's start, with Maury's bounds ``-D/h``."""

    def __init__(self, jacobian, gap):
        self.jacobian = sp.csr_matrix(np.asarray(jacobian, float))
        self.gap = np.asarray(gap, float)

    def lower(self, h):
        return -self.gap / h


def one_sphere_between_planes(floor_gap, ceiling_gap):
    """A 2 kg sphere at rest (u = 0) between a floor (normal +z) and a ceiling (normal -z)
    whose gaps after the step are ``floor_gap`` and ``ceiling_gap`` (m): ``(metric, rows)``."""
    return DiagonalMetric(np.full(3, 2.0)), Rows([[0, 0, 1.0], [0, 0, -1.0]], [floor_gap, ceiling_gap])


def closure(metric, rows, pushing):
    h = 1e-3
    velocity, multipliers = close_gaps(
        metric, rows, np.zeros(3), h, np.arange(2, dtype=np.int64), active_set.Workspace(), pushing=np.array(pushing)
    )
    return None if velocity is None else h * velocity, multipliers


def test_a_pushing_contact_ends_touching_whether_it_was_left_overlapping_or_open():
    """Signorini at the position level: a contact that pushes is closed. The floor row,
    left 1e-7 m inside the floor, is pushed out to touch; left 5e-8 m open while pushing,
    it is pulled in to touch (a multiplier of the other sign); the ceiling, far and not
    pushing, takes no part. The displacement is ``M^{-1} G^T l``: 1e-7 m needs
    ``l = m dq / h``."""
    metric, rows = one_sphere_between_planes(-1e-7, 0.01)
    moved, multipliers = closure(metric, rows, [True, False])
    np.testing.assert_allclose(moved, [0.0, 0.0, 1e-7], rtol=1e-12)
    np.testing.assert_allclose(multipliers, [2.0 * 1e-7 / 1e-3, 0.0], rtol=1e-12)
    metric, rows = one_sphere_between_planes(5e-8, 0.01)
    moved, multipliers = closure(metric, rows, [True, False])
    np.testing.assert_allclose(moved, [0.0, 0.0, -5e-8], rtol=1e-12)
    assert multipliers[0] < 0.0
    metric, rows = one_sphere_between_planes(5e-8, 0.01)
    assert closure(metric, rows, [False, False]) == (None, None)  # open, not pushing: nothing to close


def test_gaps_no_displacement_can_hold_touching_fall_back_on_the_projection():
    """The floor is 1e-7 m inside and the pushing ceiling 3e-7 m away: no displacement
    touches both (``W_EE`` is singular and the targets lie outside its range), so the
    closure is the metric projection instead, the floor pushed out to touch and the
    ceiling left 2e-7 m open. Squeezed from both sides, the sphere cannot be placed at
    all: the step keeps its positions rather than stop the run."""
    metric, rows = one_sphere_between_planes(-1e-7, 3e-7)
    moved, multipliers = closure(metric, rows, [False, True])
    np.testing.assert_allclose(moved, [0.0, 0.0, 1e-7], rtol=1e-9)
    assert multipliers[0] > 0.0 and multipliers[1] == 0.0
    metric, rows = one_sphere_between_planes(-1e-7, -1e-7)
    assert closure(metric, rows, [True, True]) == (None, None)


def ball_in_a_drum(close_gaps: bool) -> float:
    """A ball (r = 1 cm) thrown at 1 m/s along the inside of a still drum (R = 5 cm, axis
    y) from its lowest point, mu = 0.5, 100 steps of 1 ms: the smallest gap to the drum's
    side (m)."""
    drum = gr.Cylinder([0, 0, 0], [0, 1, 0], DRUM, height=0.04, friction=0.5)
    world = gr.SphereWorld(
        [[0.0, 0.0, -(DRUM - RADIUS)]], RADIUS, density=1000.0, walls=[drum], friction=0.5, velocities=[[1.0, 0, 0]]
    )
    simulation = gr.Simulation(world, dt=1e-3, close_gaps=close_gaps)
    smallest = np.inf
    for _ in range(100):
        centre = simulation.step().positions[0]
        smallest = min(smallest, DRUM - np.hypot(centre[0], centre[2]) - RADIUS)
    return smallest


DRUM = 0.05  # m


def test_a_ball_sliding_inside_a_drum_ends_every_step_touching_its_side():
    """Maury's constraint is linearised at the step's start: a ball that travels
    ``delta = h v`` along the inside of a drum ends the step ``sqrt((R - r)^2 + delta^2)
    - (R - r) ~ delta^2 / (2 (R - r))`` beyond its side (1.25e-5 m at the first step,
    1.25e-3 of its radius), which the gap closure, closing the actual gap along the
    normal where the ball ends, takes away to the tolerance of touching."""
    delta = 1e-3 * 1.0
    expected = np.sqrt((DRUM - RADIUS) ** 2 + delta**2) - (DRUM - RADIUS)
    assert ball_in_a_drum(close_gaps=False) == pytest.approx(-expected, rel=0.05)
    assert ball_in_a_drum(close_gaps=True) >= -OVERLAP_TOLERANCE * RADIUS


def test_a_frictional_pile_at_rest_keeps_its_held_contacts_and_their_factor():
    """The stored frictional pile at rest (`tests/support/piles.py`, 120 spheres, mu =
    0.5): from the 20th step on, the contacts held touching change by one contact at a
    time and at no more than one step in ten (a contact whose load flickers about zero,
    among loads the law leaves undetermined in a hyperstatic pile), the closure
    refactorises only at such a step (conjugate gradients on the factor of an earlier
    step otherwise), and the pile keeps touching."""
    configuration = read_configuration(piles.path(0.5))
    world = piles.world(configuration.positions, configuration.radii, 0.5, configuration.velocities)
    simulation = gr.Simulation(world, dt=piles.DT)
    held, changes, worst = None, [], np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        for step in range(60):
            result = simulation.step()
            state, last = simulation.scheme.state, simulation.scheme.closure_workspace.last
            keys = frozenset(state.previous_keys[state.previous_closure != 0.0].tolist())
            if step >= 20:
                changes.append(len(keys ^ held))
                assert last.factorisations == 0 or changes[-1] > 0
                worst = min(worst, smallest_gap(world, result.positions, result.t) / configuration.radii.min())
            held = keys
    assert len(held) > 100
    assert max(changes) <= 1 and sum(change > 0 for change in changes) <= len(changes) // 10
    assert worst >= -OVERLAP_TOLERANCE


def test_a_contact_held_before_stays_held_while_open_by_less_than_the_gap_errors():
    """Two 2 kg spheres on a floor: sphere 0 pushes and ends 1e-7 m inside the floor;
    sphere 1, held touching at the previous step, no longer pushes. Open by 5e-8 m,
    less than the largest gap error of the rows held now (1e-7 m), it stays held and
    is pulled down to touch; open by 2e-7 m it is let go. A row not held before is let
    go either way."""
    metric = DiagonalMetric(np.full(6, 2.0))
    h, keys = 1e-3, np.arange(2, dtype=np.int64)

    def moved(open_by, warm):
        rows = Rows([[0, 0, 1.0, 0, 0, 0], [0, 0, 0, 0, 0, 1.0]], [-1e-7, open_by])
        velocity, _ = close_gaps(
            metric,
            rows,
            np.zeros(6),
            h,
            keys,
            active_set.Workspace(),
            warm=np.array(warm),
            pushing=np.array([True, False]),
        )
        return h * velocity

    np.testing.assert_allclose(moved(5e-8, [1e-4, 1e-4]), [0, 0, 1e-7, 0, 0, -5e-8], rtol=1e-9)
    np.testing.assert_allclose(moved(2e-7, [1e-4, 1e-4]), [0, 0, 1e-7, 0, 0, 0], rtol=1e-9)
    np.testing.assert_allclose(moved(5e-8, [1e-4, 0.0]), [0, 0, 1e-7, 0, 0, 0], rtol=1e-9)


def test_rows_closed_in_turn_along_a_chain_join_round_after_round(monkeypatch):
    """A column of 11 spheres of 1 kg (their heights only): the lowest is left 1e-7 m
    inside the floor, the next nine gaps are 1e-8 m and the last 5e-8 m. Pushing the
    lowest sphere out closes the gap above it, which joins the rows held touching,
    and so on up the column: ten rounds, one row joining in each, beyond the
    projection the closure otherwise falls back on (made to fail here). The column
    ends touching, ``dz_k = 1e-7 - k 1e-8`` m for the ten lowest spheres, and the top
    sphere stays put, 4e-8 m above its neighbour."""

    def no_fallback(*arguments):
        raise AssertionError("the joining rounds gave up")

    monkeypatch.setattr(gap_closure, "_projected", no_fallback)
    n, h = 11, 1e-3
    jacobian = np.zeros((n, n))
    jacobian[0, 0] = 1.0  # the floor under sphere 0
    for k in range(n - 1):
        jacobian[k + 1, k], jacobian[k + 1, k + 1] = -1.0, 1.0  # the gap between spheres k and k + 1
    gaps = np.r_[-1e-7, np.full(n - 2, 1e-8), 5e-8]
    velocity, _ = close_gaps(
        DiagonalMetric(np.ones(n)),
        Rows(jacobian, gaps),
        np.zeros(n),
        h,
        np.arange(n, dtype=np.int64),
        active_set.Workspace(),
        pushing=np.r_[True, np.zeros(n - 1, dtype=bool)],
    )
    # Each held row is met to VELOCITY_TOLERANCE times the largest shortfall (1e-7 m / h);
    # a sphere's height sums the errors of the rows below it, at most ten.
    accuracy = 10 * h * VELOCITY_TOLERANCE * 1e-7 / h
    expected = np.r_[1e-7 - 1e-8 * np.arange(n - 1), 0.0]
    np.testing.assert_allclose(h * velocity, expected, rtol=0.0, atol=accuracy)
