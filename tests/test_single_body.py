"""Single-body constrained systems: the 1-dof bouncing ball under the
three schemes, the impact law in the kinetic metric, and bad input.

The ball is `granular.systems.examples.bouncing_ball`: q = [z] the centre height,
gap z - r, force -m g, restitution e. Exact solution from a drop height H:
impact speed v1 = sqrt(2 g H), apexes e^(2k) H, impact times
t_1 = sqrt(2 H / g), t_{k+1} = t_k + 2 e^k v1 / g.
"""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular.systems.examples import GRAVITY, bouncing_ball
from granular.tolerances import COMPLEMENTARITY_TOLERANCE

SCHEMES = ("velocity", "dzonou-monteiro-marques", "paoli-schatzman")
HEIGHT, RESTITUTION, RADIUS, DT = 1.0, 0.9, 0.1, 1e-3
V1 = np.sqrt(2.0 * GRAVITY * HEIGHT)  # largest impact speed (m/s)


def impacting(trajectory) -> np.ndarray:
    """Frames whose step carried a contact impulse."""
    return np.array([c.impulse.sum() > 0.0 for c in trajectory.contacts])


def apex_heights(trajectory, radius: float = RADIUS) -> np.ndarray:
    """Initial gap, then the highest gap of every complete flight between two impacts (m)."""
    return apex_heights_from(trajectory.positions.reshape(len(trajectory), -1)[:, -1] - radius, impacting(trajectory))


def apex_heights_from(gap: np.ndarray, touching: np.ndarray) -> np.ndarray:
    starts = np.flatnonzero(np.diff(touching.astype(int)) == 1) + 1
    ends = np.flatnonzero(np.diff(touching.astype(int)) == -1) + 1
    apexes = [gap[0]]
    for end in ends:
        following = starts[starts > end]
        if not following.size:
            break
        apexes.append(gap[end : following[0]].max())
    return np.array(apexes)


def exact_impact_times(height: float, count: int) -> np.ndarray:
    v1 = np.sqrt(2.0 * GRAVITY * height)
    times = [np.sqrt(2.0 * height / GRAVITY)]
    for k in range(1, count):
        times.append(times[-1] + 2.0 * RESTITUTION**k * v1 / GRAVITY)
    return np.array(times)


def impact_times(scheme: str, dt: float, height: float, count: int) -> np.ndarray:
    """Impact times of the discrete ball: the free flight from the last state before
    each impact's first impulse, continued to gap 0 (removes the grid quantisation
    of the impact step, keeps every error the scheme made before)."""
    sim = gr.Simulation(bouncing_ball(height, RESTITUTION, radius=RADIUS), dt, scheme=scheme)
    times, in_contact = [], False
    state = (sim.t, sim.positions[0] - RADIUS, sim.velocities[0])
    while len(times) < count:
        result = sim.step()
        active = result.contacts.impulse.sum() > 0.0
        if active and not in_contact:
            t, z, u = state
            times.append(t + (u + np.sqrt(u * u + 2.0 * GRAVITY * z)) / GRAVITY)
        in_contact = active
        state = (result.t, result.positions[0] - RADIUS, result.velocities[0])
    return np.array(times)


@pytest.fixture(scope="module")
def ball_runs():
    """Each scheme's ball and the SphereWorld ball, dt = 1e-3, through the sixth apex."""
    runs = {
        scheme: gr.Simulation(bouncing_ball(HEIGHT, RESTITUTION, radius=RADIUS), DT, scheme=scheme).run(duration=4.5)
        for scheme in SCHEMES
    }
    world = gr.SphereWorld(
        [[0.0, 0.0, HEIGHT + RADIUS]],
        RADIUS,
        masses=1.0,
        walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
        restitution=RESTITUTION,
    )
    runs["sphere_world"] = gr.Simulation(world, DT).run(duration=4.5)
    return runs


# -- the bouncing ball ---------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_ball_apex_ratio_is_e_squared(ball_runs, scheme):
    apexes = apex_heights(ball_runs[scheme])
    assert apexes.size >= 6, f"only {apexes.size - 1} complete bounces"
    ratios = apexes[1:6] / apexes[:5]
    assert np.all(np.abs(ratios / RESTITUTION**2 - 1.0) < 0.02), ratios


def test_ball_velocity_scheme_agrees_with_sphere_world_to_round_off(ball_runs):
    """Same scheme, same arithmetic: the 1-dof ball is the SphereWorld ball."""
    z_system = ball_runs["velocity"].positions[:, 0]
    z_world = ball_runs["sphere_world"].positions[:, 0, 2]
    u_system = ball_runs["velocity"].velocities[:, 0]
    u_world = ball_runs["sphere_world"].velocities[:, 0, 2]
    assert np.abs(z_system - z_world).max() <= 1e-12 * (HEIGHT + RADIUS)
    assert np.abs(u_system - u_world).max() <= 1e-12 * V1


@pytest.mark.parametrize("scheme", ("dzonou-monteiro-marques", "paoli-schatzman"))
def test_ball_other_schemes_agree_with_sphere_world(ball_runs, scheme):
    """Apex k of two first-order schemes differs by at most 2 k h v1: each scheme
    places a bounce within one step's travel h v1 of the true contact point
    (Dzonou-Monteiro-Marques and Paoli-Schatzman past it, the velocity scheme before it)."""
    mine = apex_heights(ball_runs[scheme])[:6]
    reference = apex_heights(ball_runs["sphere_world"])[:6]
    tolerance = 2.0 * np.arange(6) * DT * V1
    assert np.all(np.abs(mine - reference) <= tolerance + 1e-12), (mine, reference)
    # Each one is within one step's travel per bounce of the exact apexes e^(2k) H.
    exact = HEIGHT * RESTITUTION ** (2 * np.arange(6))
    assert np.all(np.abs(mine - exact) <= 0.5 * tolerance + 1e-12)
    assert np.all(np.abs(reference - exact) <= 0.5 * tolerance + 1e-12)


def _impact_time_bound(count: int) -> float:
    """Error bound of the k-th impact time in steps: every scheme resolves an impact
    within two steps (Dzonou-Monteiro-Marques one late, the velocity scheme one early,
    Paoli-Schatzman reflects over two) and its rebound speed is off by at most the
    gravity increment of those steps, 2 g h, which shifts the next flight time
    2 (2 g h) / g = 4 h: (2 + 4) h per impact, plus h for the first approach."""
    return 6.0 * (count - 1) + 1.0


@pytest.mark.parametrize("scheme", SCHEMES)
def test_ball_impact_times_converge_at_first_order(scheme):
    """Over a 16-fold range of dt the impact-time error stays below C dt.

    The constant depends on where in the step each contact closes, so the error
    is not a smooth C h: a zeroth-order scheme would break the bound at the small
    steps, a first-order one cannot. The fitted slope over the range is then
    within log(C_max / C_min) / log(16) of 1; we only ask it to be positive and
    leave the precise rate to the phase-averaged long test.
    """
    dts = 4e-3 * 2.0 ** -np.arange(5)
    count = 3
    errors = np.array(
        [np.abs(impact_times(scheme, dt, HEIGHT, count) - exact_impact_times(HEIGHT, count)).max() for dt in dts]
    )
    assert np.all(errors <= _impact_time_bound(count) * dts), errors / dts
    assert errors[-1] < 0.25 * errors[:2].max()


@pytest.mark.long
@pytest.mark.parametrize("scheme", SCHEMES)
def test_ball_impact_times_phase_averaged_rate_is_one(scheme):
    """Averaging the error over 15 drop heights averages out the phase of each
    contact within its step; the mean error then falls at rate 1."""
    dts = np.array([4e-3, 2e-3, 1e-3, 5e-4])
    heights = np.linspace(0.5, 0.6, 15)
    count = 3
    mean = [
        np.mean([np.abs(impact_times(scheme, dt, h, count) - exact_impact_times(h, count)).max() for h in heights])
        for dt in dts
    ]
    slope = np.polyfit(np.log(dts), np.log(mean), 1)[0]
    assert abs(slope - 1.0) < 0.1, slope


# -- the impact law in the kinetic metric --------------------------------------------------


def _random_impact(seed: int, d: int, restitution: float, dt: float, rows: int = 1):
    """A free body in R^d with a random SPD M, ``rows`` random planar constraints
    all closing at 0.3 dt, no force. Returns (system, M, G, u0)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    M = A @ A.T + 0.5 * np.eye(d)
    while True:
        G = rng.normal(size=(rows, d))
        u0 = rng.normal(size=d)
        if np.all(G @ u0 < -0.1):
            break
    q0 = rng.normal(size=d)
    offsets = 0.3 * dt * np.abs(G @ u0) - G @ q0
    constraints = [
        gr.Constraint(gap=lambda t, q, n=n, c=c: n @ q + c, gradient=lambda t, q, n=n: n) for n, c in zip(G, offsets)
    ]
    system = gr.ConstrainedSystem(q0, u0, mass=M, constraints=constraints, restitution=restitution)
    return system, M, G, u0


def _cone_projection(M: np.ndarray, G: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Projection of u onto {v : G v >= 0} in the metric M, by enumerating active sets."""
    m = G.shape[0]
    Minv_GT = np.linalg.solve(M, G.T)
    for mask in range(1 << m):
        active = np.array([(mask >> k) & 1 for k in range(m)], dtype=bool)
        mu = np.zeros(m)
        if active.any():
            W = G[active] @ Minv_GT[:, active]
            mu[active] = np.linalg.solve(W, -G[active] @ u)
        v = u + Minv_GT @ mu
        if np.all(mu >= -1e-12) and np.all(G @ v >= -1e-12 * np.abs(u).max()):
            return v
    raise AssertionError("no active set satisfies the KKT conditions")


# e = 0 leaves a contact sliding with G u = 0: the projection must measure its
# feasibility against |G||u|, not against G u ~ 1e-17 (round-off).
_IMPACT_CASES = [(scheme, seed, e) for scheme in SCHEMES for seed in range(4) for e in (0.0, 0.5, 0.9, 1.0)]


@pytest.mark.parametrize("scheme, seed, restitution", _IMPACT_CASES)
def test_impact_law_in_the_kinetic_metric(scheme, seed, restitution):
    """One impact: the M-orthogonal tangential part of u is kept, the normal part
    becomes -e times itself (Dzonou, Monteiro Marques and Paoli, 2009, (3); Paoli and
    Schatzman, 1999, (1.6)), and 1/2 u^T M u never rises; the energy lost is
    (1 - e^2) (n.u)^2 / (2 n M^-1 n)."""
    dt, d = 1e-3, 4
    system, M, G, u0 = _random_impact(seed, d, restitution, dt)
    sim = gr.Simulation(system, dt, scheme=scheme)
    results = [sim.step() for _ in range(8)]
    assert any(r.contacts.impulse.sum() > 0.0 for r in results), "no impact happened"
    u = results[-1].velocities
    n = G[0]
    direction = np.linalg.solve(M, n)
    w = n @ direction
    tangential = lambda v: v - (n @ v) / w * direction  # noqa: E731  M-orthogonal to the normal
    scale = np.abs(u0).max()
    # Solver-based steps are accurate to the projection's complementarity tolerance.
    tolerance = 10.0 * COMPLEMENTARITY_TOLERANCE * scale
    assert np.abs(tangential(u) - tangential(u0)).max() <= tolerance
    assert abs(n @ u + restitution * (n @ u0)) <= tolerance * np.abs(n).sum()
    kinetic = lambda v: 0.5 * v @ M @ v  # noqa: E731
    lost = 0.5 * (1.0 - restitution**2) * (n @ u0) ** 2 / w
    assert kinetic(u) <= kinetic(u0) * (1.0 + 2.0 * tolerance / scale)
    assert kinetic(u0) - kinetic(u) == pytest.approx(lost, abs=2.0 * tolerance * scale * np.abs(M).max() * d)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("seed", range(3))
def test_impact_law_for_two_simultaneous_constraints(scheme, seed):
    """Two constraints closing in the same step: Moreau's law for the cone,
    u+ = P_C u- - e (u- - P_C u-) in the metric M, with the common e (the schemes
    call `granular.contact.projection.project` here)."""
    dt, d, e = 1e-3, 4, 0.5
    system, M, G, u0 = _random_impact(100 + seed, d, e, dt, rows=2)
    tangent = _cone_projection(M, G, u0)
    expected = tangent - e * (u0 - tangent)
    if np.any(G @ expected < 0.0):
        pytest.skip("the rebound of this draw enters a constraint again (a second impact)")
    sim = gr.Simulation(system, dt, scheme=scheme)
    u = [sim.step() for _ in range(8)][-1].velocities
    assert np.abs(u - expected).max() <= 10.0 * COMPLEMENTARITY_TOLERANCE * np.abs(u0).max()
    assert 0.5 * u @ M @ u <= 0.5 * u0 @ M @ u0


# -- bad input -----------------------------------------------------------------------------


def _floor(gradient=lambda t, q: np.array([1.0, 0.0])):
    return [gr.Constraint(gap=lambda t, q: q[0], gradient=gradient)]


def test_mass_matrix_not_positive_definite_is_rejected():
    with pytest.raises(gr.MassMatrixError, match="not positive definite"):
        gr.ConstrainedSystem([1.0, 0.0], [0.0, 0.0], mass=[[1.0, 0.0], [0.0, -1.0]], constraints=_floor())


def test_mass_matrix_not_symmetric_is_rejected():
    with pytest.raises(gr.MassMatrixError, match="not symmetric"):
        gr.ConstrainedSystem([1.0, 0.0], [0.0, 0.0], mass=[[1.0, 0.5], [0.0, 1.0]], constraints=_floor())


def test_mass_matrix_not_square_is_rejected():
    with pytest.raises(gr.MassMatrixError, match="square"):
        gr.ConstrainedSystem([1.0, 0.0], [0.0, 0.0], mass=np.ones((2, 3)), constraints=_floor())


def test_configuration_dependent_mass_of_wrong_shape_is_rejected():
    with pytest.raises(gr.MassMatrixError, match="shape"):
        gr.ConstrainedSystem([1.0, 0.0], [0.0, 0.0], mass=lambda q: np.eye(3), constraints=_floor())


def test_mass_matrix_losing_definiteness_during_a_run_names_the_configuration():
    """M(q) = diag(q0, 1) stops being SPD when q0 reaches 0: the step says so."""
    system = gr.ConstrainedSystem(
        [0.01, 0.0],
        [-1.0, 0.0],
        mass=lambda q: np.diag([q[0], 1.0]),
        constraints=[gr.Constraint(gap=lambda t, q: q[1] + 1.0, gradient=lambda t, q: np.array([0.0, 1.0]))],
    )
    for scheme in SCHEMES:
        sim = gr.Simulation(system, 1e-2, scheme=scheme)
        with pytest.raises(gr.MassMatrixError, match="mass matrix at q"):
            for _ in range(5):
                sim.step()


def test_constant_mass_matrix_of_the_wrong_dimension_is_rejected():
    with pytest.raises(gr.MassMatrixError, match="shape"):
        gr.ConstrainedSystem([1.0, 0.0], [0.0, 0.0], mass=np.eye(3), constraints=_floor())


def test_gradient_of_the_wrong_shape_is_rejected():
    with pytest.raises(gr.InvalidInputError, match=r"gradient of constraint 0 has shape \(3,\)"):
        gr.ConstrainedSystem(
            [1.0, 0.0], [0.0, 0.0], mass=np.eye(2), constraints=_floor(gradient=lambda t, q: np.zeros(3))
        )


def test_initial_state_outside_the_admissible_set_is_rejected():
    with pytest.raises(gr.OverlapError, match="violates constraint 0") as caught:
        gr.ConstrainedSystem([-0.01, 0.0], [0.0, 0.0], mass=np.eye(2), constraints=_floor())
    assert caught.value.overlap == pytest.approx(0.01)


def test_inadmissible_velocity_at_contact_is_rejected():
    """Paoli and Schatzman (1999), (1.7): at g = 0 the initial velocity must not point out of K."""
    with pytest.raises(gr.InvalidInputError, match=r"\(1.7\)"):
        gr.ConstrainedSystem([0.0, 0.0], [-1.0, 0.0], mass=np.eye(2), constraints=_floor())
    # Leaving the contact or sliding along it is admissible.
    gr.ConstrainedSystem([0.0, 0.0], [0.0, 1.0], mass=np.eye(2), constraints=_floor())
    gr.ConstrainedSystem([0.0, 0.0], [1.0, 0.0], mass=np.eye(2), constraints=_floor())


@pytest.mark.parametrize("scheme", ("dzonou-monteiro-marques", "paoli-schatzman"))
def test_the_vibro_impact_schemes_need_a_constrained_system(scheme):
    world = gr.SphereWorld([[0.0, 0.0, 1.0]], 0.1, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
    with pytest.raises(gr.InvalidInputError, match="needs a ConstrainedSystem"):
        gr.Simulation(world, 1e-3, scheme=scheme)
