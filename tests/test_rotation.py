"""Spheres that turn: angular velocities, moments of inertia, orientations,
and Coulomb friction acting at the contact point (`granular.spheres.world`).

The analytic references are those of a rigid sphere of mass m, radius r and moment
of inertia J = 2/5 m r^2 on a plane inclined by theta (g = 9.81 m/s^2):

- rolling without slipping needs a friction force m g sin(theta) 2/7 (from m a = m g
  sin(theta) - F and J a / r = F r): it happens when mu >= 2/7 tan(theta), with
  a = 5/7 g sin(theta);
- otherwise the sphere slides with a = g (sin(theta) - mu cos(theta)) and turns up at
  alpha = mu m g cos(theta) r / J = 5 mu g cos(theta) / (2 r).

What the scheme does with them: a contact that persists takes each step the
impulse of the exact discrete Coulomb law, which for a constant force is the
constant-acceleration one (stick: ``lambda_T = -2/7 m h g sin(theta)``; slide:
``|lambda_T| = mu lambda_N``), so the velocities are exact to the solver's
tolerance at every step. The positions ``q^{n+1} = q^n + h u^{n+1}`` then run ahead
of ``1/2 a t^2`` by exactly ``1/2 a h t`` (the sum ``h^2 a (1 + 2 + ... + n)``): first
order in h, with that constant. The tests measure the error at three step sizes
and its slope in log-log.
"""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from granular.tolerances import FRICTION_SWEEP_TOLERANCE
from granular.spheres.rotation import rotate_quaternions
from support.spinning import spinning_gas

G_EARTH = 9.81
#: Velocities a single persisting contact gets from the Gauss-Seidel sweeps: the
#: local answer is exact after one sweep, so they are exact to round-off of the
#: accumulated sums (1e-12 m/s over a few hundred steps at ~1 m/s).
ROUNDOFF = 1e-10


def incline(theta: float, mu: float, radius: float = 0.05, mass: float = 1.0, **options):
    """A sphere resting on a plane through the origin tilted by ``theta`` about y
    (normal ``(-sin, 0, cos)``), gravity ``(0, 0, -g)``; returns the world and the
    unit downhill direction."""
    normal = np.array([-np.sin(theta), 0.0, np.cos(theta)])
    downhill = -np.array([np.cos(theta), 0.0, np.sin(theta)])
    world = gr.SphereWorld(
        [radius * normal], radius, masses=mass, walls=[gr.Plane([0, 0, 0], normal, friction=mu)], **options
    )
    return world, normal, downhill


def contact_point_velocity(velocity, omega, radius, normal):
    """Velocity (3,) of the sphere's material point touching a plane of unit ``normal``:
    ``u + omega x (-r n)`` (rigid-body kinematics)."""
    return velocity + np.cross(omega, -radius * normal)


def run_incline(theta, mu, h, duration, radius=0.05):
    world, normal, downhill = incline(theta, mu, radius)
    simulation = gr.Simulation(world, h)
    for _ in range(int(round(duration / h))):
        result = simulation.step()
    travelled = (result.positions[0] - world.q0) @ downhill
    return result, travelled, normal, downhill


def slope(step_sizes, errors) -> float:
    return float(np.polyfit(np.log(step_sizes), np.log(errors), 1)[0])


STEP_SIZES = (4e-3, 2e-3, 1e-3)
DURATION = 0.4


def test_sphere_rolls_down_an_incline_without_slipping_at_five_sevenths_g_sin_theta():
    """tan(theta) = 0.36 (20 degrees) and mu = 0.3 >= 2/7 tan(theta) = 0.104: the
    sphere rolls. Its speed is a t to round-off, its contact point does not move,
    omega = v / r about the axis n x downhill, and the distance's error is 1/2 a h t,
    first order (slope 1 within 0.05: the error is exactly linear in h)."""
    theta, radius = np.radians(20.0), 0.05
    a = 5.0 / 7.0 * G_EARTH * np.sin(theta)
    errors = []
    for h in STEP_SIZES:
        result, travelled, normal, downhill = run_incline(theta, 0.3, h, DURATION, radius)
        t = result.t
        velocity, omega = result.velocities[0], result.angular_velocities[0]
        assert velocity @ downhill == pytest.approx(a * t, abs=ROUNDOFF)
        assert np.linalg.norm(contact_point_velocity(velocity, omega, radius, normal)) <= ROUNDOFF
        axis = np.cross(normal, downhill)
        assert np.allclose(omega, a * t / radius * axis, atol=ROUNDOFF / radius)
        errors.append(abs(travelled - 0.5 * a * t**2))
        assert errors[-1] == pytest.approx(0.5 * a * h * t, rel=1e-6)
    assert slope(STEP_SIZES, errors) == pytest.approx(1.0, abs=0.05)


def test_sphere_slides_down_a_steep_slippery_incline_and_spins_up_at_five_mu_g_cos_over_2r():
    """theta = 40 degrees, mu = 0.1 < 2/7 tan(theta) = 0.24: the sphere slides with
    a = g (sin - mu cos) while its angular velocity grows at 5 mu g cos(theta) / (2 r)
    (both to round-off); its contact point slips downhill at (a - alpha r) t; the
    distance's error is first order (slope 1 within 0.05)."""
    theta, mu, radius = np.radians(40.0), 0.1, 0.05
    a = G_EARTH * (np.sin(theta) - mu * np.cos(theta))
    alpha = 5.0 * mu * G_EARTH * np.cos(theta) / (2.0 * radius)
    errors = []
    for h in STEP_SIZES:
        result, travelled, normal, downhill = run_incline(theta, mu, h, DURATION, radius)
        t = result.t
        velocity, omega = result.velocities[0], result.angular_velocities[0]
        assert velocity @ downhill == pytest.approx(a * t, abs=ROUNDOFF)
        assert omega @ np.cross(normal, downhill) == pytest.approx(alpha * t, abs=ROUNDOFF / radius)
        slip = contact_point_velocity(velocity, omega, radius, normal)
        assert np.allclose(slip, (a - alpha * radius) * t * downhill, atol=ROUNDOFF)
        contact = result.contacts
        assert np.linalg.norm(contact.tangential_impulse[0]) == pytest.approx(mu * contact.impulse[0], rel=1e-9)
        errors.append(abs(travelled - 0.5 * a * t**2))
    assert slope(STEP_SIZES, errors) == pytest.approx(1.0, abs=0.05)


def test_ball_launched_sliding_without_spin_ends_rolling_at_five_sevenths_of_its_speed():
    """A ball thrown at v0 = 3 m/s without spin on a table (mu = 0.2) slides, friction
    turning it, until u = r omega; friction acts at the contact point, so the angular
    momentum about that point, m r v + J omega, is kept: the final speed is
    v0 / (1 + J / (m r^2)) = 5/7 v0 (to the sweeps' round-off), reached at
    t* = 2 v0 / (7 mu g) within a step, and the ball then rolls on at that speed."""
    v0, mu, radius, h = 3.0, 0.2, 0.04, 1e-3
    world = gr.SphereWorld(
        [[0, 0, radius]],
        radius,
        masses=0.17,
        velocities=[[v0, 0, 0]],
        walls=[gr.Plane([0, 0, 0], [0, 0, 1], friction=mu)],
    )
    trajectory_speed, times, slips = [], [], []
    simulation = gr.Simulation(world, h)
    for _ in range(600):
        result = simulation.step()
        trajectory_speed.append(result.velocities[0, 0])
        slips.append(result.velocities[0, 0] - radius * result.angular_velocities[0, 1])
        times.append(result.t)
    speed, slips, times = np.array(trajectory_speed), np.array(slips), np.array(times)
    assert speed[-1] / v0 == pytest.approx(5.0 / 7.0, abs=ROUNDOFF)
    rolling_from = times[np.flatnonzero(np.abs(slips) <= ROUNDOFF)[0]]
    assert abs(rolling_from - 2.0 * v0 / (7.0 * mu * G_EARTH)) <= h
    assert np.allclose(speed[times >= rolling_from], 5.0 / 7.0 * v0, atol=ROUNDOFF)
    assert np.all(np.diff(speed) <= 0.0)


@pytest.mark.exact
def test_frictionless_head_on_collision_exchanges_no_spin():
    """Two equal spinning spheres hit head on (restitution 1, no friction between
    them) in a world that rotates (a rough wall far away): they swap velocities and
    keep their spins exactly, because a normal row has no rotational part."""
    spins = np.array([[3.0, -1.0, 7.0], [-2.0, 5.0, 0.5]])
    world = gr.SphereWorld(
        [[0.0, 0, 0], [0.1, 0, 0]],
        0.04,
        velocities=[[1.0, 0, 0], [-1.0, 0, 0]],
        angular_velocities=spins,
        gravity=(0, 0, 0),
        restitution=1.0,
        friction=0.0,
        walls=[gr.Plane([0, 0, -1.0], [0, 0, 1], friction=0.5)],
    )
    assert world.rotates
    simulation = gr.Simulation(world, 1e-3)
    for _ in range(40):
        result = simulation.step()
    assert np.allclose(result.velocities, [[-1.0, 0, 0], [1.0, 0, 0]], atol=1e-12)
    assert np.array_equal(result.angular_velocities, spins)
    assert np.count_nonzero(result.contacts.impulse) == 0 and simulation.t > 0.011  # they met and parted


def angular_momentum(world, result):
    """Total angular momentum about the origin (kg m^2/s): sum q x m u + J omega."""
    m, J = world.masses_at(result.t), world.inertia_at(result.t)
    return np.cross(result.positions, m[:, None] * result.velocities).sum(axis=0) + (
        J[:, None] * result.angular_velocities
    ).sum(axis=0)


def spinning_pair(restitution: float):
    """Two spheres (radius 0.05 m, 1 and 3 kg) touching (gap 0) and pressed together,
    sliding past each other and spinning, with Coulomb friction 0.4 and no gravity."""
    normal = np.array([1.0, 2.0, 0.5]) / np.linalg.norm([1.0, 2.0, 0.5])
    positions = np.array([[0.1, -0.2, 0.3], [0.1, -0.2, 0.3] + 0.1 * normal])
    velocities = np.array([[0.5, 0.3, -1.0], [-0.4, 0.1, 0.8]])
    velocities[1] -= 1.0 * normal  # approach along the normal
    spins = np.array([[20.0, -5.0, 3.0], [-4.0, 10.0, -15.0]])
    return gr.SphereWorld(
        positions,
        0.05,
        masses=[1.0, 3.0],
        velocities=velocities,
        angular_velocities=spins,
        gravity=(0, 0, 0),
        restitution=restitution,
        friction=0.4,
    )


@pytest.mark.parametrize("restitution", [0.0, 1.0])
def test_angular_momentum_is_kept_in_a_frictional_collision_of_spinning_spheres(restitution):
    """Sum q x m u + J omega about the origin, before and after a gravity-free
    collision with mu = 0.4: kept to round-off. With e = 0 friction acts (the
    spins change by more than 1 rad/s); the impulses act at the contact point of
    spheres that touch (gap 0 at the start of the step), where the torque of the
    pair of impulses about the origin cancels. (A contact closed from a gap D > 0
    would change it by ``D n x lambda_T``, Maury's anticipation.) With e = 1
    friction acts during the bounce too (Newton's law with Coulomb friction,
    `granular.contact.impact`), so the spins change as well."""
    world = spinning_pair(restitution)
    simulation = gr.Simulation(world, 1e-3)
    first = simulation.step()
    spins = world.omega0
    before = np.cross(world.q0.reshape(2, 3), world.masses_at(0)[:, None] * world.u0.reshape(2, 3)).sum(axis=0) + (
        world.inertia_at(0)[:, None] * spins
    ).sum(axis=0)
    assert first.contacts.impulse.max() > 0.0
    results = [first] + [simulation.step() for _ in range(20)]
    scale = np.abs(before).max()
    for result in results:
        assert np.allclose(angular_momentum(world, result), before, atol=1e-12 * scale, rtol=0.0)
    change = np.abs(results[-1].angular_velocities - spins).max()
    assert change > 1.0 and np.linalg.norm(first.contacts.tangential_impulse) > 0.0


def test_energy_never_rises_in_frictional_collisions_without_external_forces():
    """Twenty spinning spheres thrown about in a closed rough box without gravity
    (mu 0.5 between spheres, 0.3 on the walls, e = 0: every contact goes through the
    frictional stage): the kinetic energy with the rotational part 1/2 J |omega|^2
    never rises from one step to the next beyond what
    the sweeps' tolerance allows (a contact within ``tau`` m/s of its law does work at
    most ``tau |lambda|``: bound ``FRICTION_SWEEP_TOLERANCE x velocity scale x sum
    |lambda|``), and it falls by more than half: the contacts turn and dissipate."""
    world = spinning_gas(restitution=0.0, friction=0.5)
    simulation = gr.Simulation(world, 1e-3)
    energy = [world.kinetic_energy(0.0, world.q0, world.u0)]
    rotational = 0.5 * np.sum(world.inertia_at(0.0) * np.sum(world.omega0**2, axis=1))
    assert rotational > 0.3 * energy[0]
    allowed, sliding = [], 0
    for _ in range(300):
        result = simulation.step()
        energy.append(result.kinetic_energy)
        speed = np.abs(result.predicted).max() + 0.018 * np.abs(result.angular_velocities).max()
        contacts = result.contacts
        impulses = contacts.impulse.sum() + np.abs(contacts.tangential_impulse).sum()
        allowed.append(2.0 * np.sqrt(3.0) * FRICTION_SWEEP_TOLERANCE * speed * impulses)
        if contacts.tangential_impulse.shape[1]:
            mu = np.where(contacts.wall >= 0, 0.3, 0.5)
            size = np.linalg.norm(contacts.tangential_impulse, axis=1)
            sliding += int(np.sum((contacts.impulse > 0) & (size >= mu * contacts.impulse * (1 - 1e-9))))
    rises = np.diff(energy)
    assert np.all(rises <= np.array(allowed) + 1e-12 * energy[0])
    assert sliding > 10  # friction acted, and at its bound
    assert energy[-1] < 0.5 * energy[0]


@pytest.mark.exact
def test_orientation_turns_by_the_exact_angle_about_omega():
    """A sphere spinning at constant omega (frictionless world) for 1.234 s: its
    orientation is the rotation of angle |omega| t about omega (composition of the
    exact per-step rotations about one axis), to round-off; unit length kept."""
    omega = np.array([1.0, -2.0, 2.0])  # |omega| = 3 rad/s
    world = gr.SphereWorld([[0, 0, 0]], 0.1, angular_velocities=[omega], gravity=(0, 0, 0))
    simulation = gr.Simulation(world, 1e-3)
    for _ in range(1234):
        result = simulation.step()
    angle = 3.0 * 1.234
    expected = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * omega / 3.0])
    assert np.allclose(result.orientations[0], expected, atol=1e-11)
    assert np.array_equal(result.angular_velocities[0], omega)
    kinetic = 0.5 * world.inertia_at(0.0)[0] * 9.0
    assert result.kinetic_energy == pytest.approx(kinetic, rel=1e-14)


def test_quaternion_rotation_turns_vectors_like_rodrigues_formula():
    """The quaternion of a turn by angle a about axis k turns a vector v into
    v cos a + (k x v) sin a + k (k . v)(1 - cos a) (Rodrigues), checked by q v q*."""
    rng = np.random.default_rng(2)
    omega = rng.normal(size=(5, 3))
    identity = np.tile([1.0, 0, 0, 0], (5, 1))
    q = rotate_quaternions(identity, omega, 0.7)
    v = rng.normal(size=(5, 3))
    w, x = q[:, 0], q[:, 1:]
    turned = v + 2.0 * w[:, None] * np.cross(x, v) + 2.0 * np.cross(x, np.cross(x, v))
    angle = 0.7 * np.linalg.norm(omega, axis=1)
    k = omega / np.linalg.norm(omega, axis=1)[:, None]
    rodrigues = (
        v * np.cos(angle)[:, None]
        + np.cross(k, v) * np.sin(angle)[:, None]
        + k * np.einsum("ka,ka->k", k, v)[:, None] * (1 - np.cos(angle))[:, None]
    )
    assert np.allclose(turned, rodrigues, atol=1e-12)


def test_inertia_defaults_to_a_solid_sphere_following_the_radius_in_time():
    world = gr.SphereWorld([[0, 0, 0], [1, 0, 0]], lambda t: np.array([0.1, 0.2]) * (1 + t), masses=[2.0, 3.0])
    assert np.allclose(world.inertia_at(0.5), 0.4 * np.array([2.0, 3.0]) * (np.array([0.1, 0.2]) * 1.5) ** 2)
    given = gr.SphereWorld([[0, 0, 0]], 0.1, inertia=0.5, friction=0.3)
    assert given.inertia_at(0.0)[0] == 0.5
    assert np.allclose(given.metric(0.0, given.q0).diagonal, [given.masses_at(0)[0]] * 3 + [0.5] * 3)
    assert given.metric(0.0, given.q0).size == 6 and world.metric(0.0, world.q0).size == 6 // 2 * 2


@pytest.mark.exact
def test_frictionless_world_keeps_its_translational_state_and_constant_spin():
    """Friction 0: the metric stays (3N,) (the frictionless step is untouched), the
    angular velocities are constant and the reported kinetic energy includes them."""
    world = gr.SphereWorld(
        [[0, 0, 0.2]], 0.1, masses=2.0, angular_velocities=[[0, 0, 4.0]], walls=[gr.Plane([0, 0, 0], [0, 0, 1])]
    )
    assert not world.rotates and world.metric(0.0, world.q0).size == 3
    simulation = gr.Simulation(world, 1e-3)
    for _ in range(300):
        result = simulation.step()
    assert np.array_equal(result.angular_velocities, [[0, 0, 4.0]])
    spin_energy = 0.5 * 0.4 * 2.0 * 0.1**2 * 16.0
    assert result.kinetic_energy == pytest.approx(0.5 * 2.0 * np.sum(result.velocities**2) + spin_energy)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(angular_velocities=[[0, 0, 1.0]]), r"angular_velocities must have shape \(2, 3\)"),
        (dict(angular_velocities=[[0, 0, np.nan], [0, 0, 0]]), "angular_velocities has a non-finite entry"),
        (dict(inertia=[0.1, -0.2]), "inertia must be positive: entry 1"),
        (dict(inertia=lambda t: np.array([0.1, 0.0])), "inertia at t = 0 s must be positive: entry 1"),
        (dict(inertia=[0.1, 0.2, 0.3]), r"inertia must be a scalar or have shape \(2,\)"),
        (dict(orientations=[[1, 0, 0, 0], [2, 0, 0, 0]]), "orientations must be unit quaternions.*entry 1"),
        (dict(orientations=[[1, 0, 0]]), r"orientations must have shape \(2, 4\)"),
        (dict(rotation="yes"), "rotation must be True or False"),
    ],
)
def test_bad_rotational_input_is_refused_with_a_clear_error(options, message):
    with pytest.raises(gr.InvalidInputError, match=message):
        gr.SphereWorld([[0, 0, 0], [1, 0, 0]], 0.1, **options)


def test_kinetic_energy_of_a_rotating_world_at_an_unknown_time_is_an_error_not_a_guess():
    world, _, _ = incline(np.radians(20.0), 0.3, angular_velocities=[[0, 1.0, 0]])
    assert world.kinetic_energy(0.0, world.q0, world.u0) > 0.0
    with pytest.raises(gr.InvalidInputError, match="pass angular_velocities="):
        world.kinetic_energy(0.5, world.q0, world.u0)


# -- records ---------------------------------------------------------------------------------


def rolling_frames(steps: int = 30):
    """Frames (t, state, energies, contacts, rotation) of a ball launched sliding on a
    rough table, as `Trajectory.from_frames` takes them, and the world."""
    from types import SimpleNamespace

    world = gr.SphereWorld(
        [[0, 0, 0.04]],
        0.04,
        velocities=[[2.0, 0.5, 0]],
        angular_velocities=[[0, 0, 3.0]],
        walls=[gr.Plane([0, 0, 0], [0, 0, 1], friction=0.3)],
    )
    simulation = gr.Simulation(world, 1e-3)
    frames, dissipated = [], 0.0
    for _ in range(steps):
        result = simulation.step()
        dissipated += result.dissipated_energy
        frames.append(
            SimpleNamespace(
                **{
                    name: getattr(result, name)
                    for name in (
                        "t",
                        "positions",
                        "velocities",
                        "radii",
                        "kinetic_energy",
                        "potential_energy",
                        "contacts",
                        "angular_velocities",
                        "orientations",
                    )
                },
                cumulative_dissipation=dissipated,
            )
        )
    return world, frames


@pytest.mark.exact
def test_trajectory_keeps_angular_velocities_and_orientations_through_a_file(tmp_path):
    world, frames = rolling_frames()
    trajectory = gr.Trajectory.from_frames(frames, world.describe(), {"dt": 1e-3})
    assert trajectory.angular_velocities.shape == (30, 1, 3) and trajectory.orientations.shape == (30, 1, 4)
    assert np.abs(trajectory.angular_velocities[-1, 0, 1]).max() > 1.0  # friction turned it
    loaded = gr.Trajectory.load(trajectory.save(tmp_path / "roll.h5"))
    assert np.array_equal(loaded.angular_velocities, trajectory.angular_velocities)
    assert np.array_equal(loaded.orientations, trajectory.orientations)
    assert np.array_equal(loaded.kinetic_energy, trajectory.kinetic_energy)


@pytest.mark.exact
def test_a_version_1_file_loads_with_zero_spin_and_identity_orientations(tmp_path):
    """Files written before rotation existed (format version 1: no rotational
    fields) load with omega = 0 and identity quaternions, which their spheres had;
    a current file that did not record them loads with None (unknown, not zero)."""
    import h5py

    world, frames = rolling_frames(5)
    trajectory = gr.Trajectory.from_frames(frames, world.describe(), {"dt": 1e-3})
    trajectory.angular_velocities = trajectory.orientations = None
    path = trajectory.save(tmp_path / "unrecorded.h5")
    assert gr.Trajectory.load(path).angular_velocities is None
    with h5py.File(path, "r+") as h5:
        h5.attrs["version"] = 1
    old = gr.Trajectory.load(path)
    assert old.angular_velocities.shape == (5, 1, 3) and not old.angular_velocities.any()
    assert np.array_equal(old.orientations, np.tile([1.0, 0, 0, 0], (5, 1, 1)))
    assert np.array_equal(old.positions, trajectory.positions)
    with h5py.File(path, "r+") as h5:
        h5.attrs["version"] = 7
    with pytest.raises(gr.TrajectoryFileError, match="version 7"):
        gr.Trajectory.load(path)


def test_vtk_export_carries_angular_velocity_spin_and_orientation(tmp_path):
    pv = pytest.importorskip("pyvista")
    from granular.render.vtkfiles import export_vtk

    world, frames = rolling_frames(6)
    trajectory = gr.Trajectory.from_frames(frames, world.describe(), {"dt": 1e-3})
    export_vtk(trajectory, tmp_path, stem="roll")
    spheres = pv.read(str(sorted(tmp_path.glob("roll_spheres_*.vtp"))[-1]))
    assert np.allclose(spheres.point_data["angular_velocity"], trajectory.angular_velocities[-1])
    assert np.allclose(spheres.point_data["spin"], np.linalg.norm(trajectory.angular_velocities[-1], axis=1))
    assert np.allclose(spheres.point_data["orientation"], trajectory.orientations[-1])


# -- rolling resistance ------------------------------------------------------------------------


def test_rolling_ball_stops_under_rolling_resistance_at_the_analytic_time():
    """A ball rolling at v0 = 0.5 m/s on a floor with mu = 0.5 and rolling resistance
    mu_r = 0.2: the torque mu_r r m g about the contact point, whose moment of inertia
    is J + m r^2 = 7/5 m r^2, decelerates it at a = 5 mu_r g / 7 (it keeps rolling: the
    friction force it needs, 5/7 mu_r m g, is below mu m g). It stops at v0 / a:
    within one step (the last step's impulse stops it inside the disc), measured
    where its speed falls below the sweeps' tolerance (FRICTION_SWEEP_TOLERANCE x g h,
    the velocity scale at rest), and stays stopped to that tolerance. Before, its
    speed is v0 - a t to the same tolerance and it rolls without slipping."""
    g, r, v0, mu_r, h = G_EARTH, 0.05, 0.5, 0.2, 1e-3
    a = 5.0 * mu_r * g / 7.0
    world = gr.SphereWorld(
        [[0, 0, r]],
        r,
        masses=1.0,
        velocities=[[v0, 0, 0]],
        angular_velocities=[[0, v0 / r, 0]],
        walls=[gr.Plane([0, 0, 0], [0, 0, 1], friction=0.5, rolling_friction=mu_r)],
    )
    simulation = gr.Simulation(world, h)
    results = [simulation.step() for _ in range(450)]
    t = np.array([result.t for result in results])
    speed = np.array([result.velocities[0, 0] for result in results])
    slip = np.array([result.velocities[0, 0] - r * result.angular_velocities[0, 1] for result in results])
    tolerance = FRICTION_SWEEP_TOLERANCE * g * h
    stop = t[np.flatnonzero(np.abs(speed) <= tolerance)[0]]
    assert abs(stop - v0 / a) <= h
    assert np.all(np.abs(speed[t >= stop]) <= tolerance)
    rolling = t < stop - h
    assert np.allclose(speed[rolling], v0 - a * t[rolling], atol=tolerance)
    assert np.all(np.abs(slip) <= tolerance)
    torque = np.linalg.norm(results[10].contacts.rolling_impulse[0])
    assert torque == pytest.approx(mu_r * r * results[10].contacts.impulse[0], rel=1e-9)


def test_a_ball_held_on_an_incline_by_rolling_resistance_starts_each_step_from_its_torque():
    """A ball at rest on an incline with tan(theta) = 0.1 below mu = 0.5 and mu_r = 0.2
    stays at rest: friction carries m g sin(theta) and the rolling torque balances its
    moment, so the torque impulse is r m g sin(theta) h a step (within r m e, ``e``
    the sweeps' velocity tolerance: an impulse error of a row whose Delassus weight
    is at least 1/m moves its velocity by at least that error over m). Its friction
    and rolling impulses carry to the next step, so from the second step on the
    carried impulses are the answer and the sweeps accept them at their first
    check; started from no torque, every step would sweep again."""
    from granular.contact.friction_gauss_seidel import CHECK_EVERY

    g, r, m, h = G_EARTH, 0.05, 1.0, 1e-3
    theta = np.arctan(0.1)
    normal = np.array([-np.sin(theta), 0.0, np.cos(theta)])
    floor = gr.Plane([0, 0, 0], normal, friction=0.5, rolling_friction=0.2)
    simulation = gr.Simulation(gr.SphereWorld([r * normal], r, masses=m, walls=[floor]), h)
    results = [simulation.step() for _ in range(30)]
    tolerance = FRICTION_SWEEP_TOLERANCE * g * h
    for result in results[1:]:
        assert result.solver.iterations <= CHECK_EVERY
        assert np.linalg.norm(result.velocities[0]) <= tolerance
        torque = np.linalg.norm(result.contacts.rolling_impulse[0])
        assert abs(torque - r * m * g * np.sin(theta) * h) <= r * m * tolerance


def test_energy_never_rises_and_torques_stay_in_their_discs_with_rolling_resistance():
    """The spinning crowd of `test_energy_never_rises...` with rolling resistance
    mu_r = 0.3 between spheres and on the walls: the kinetic energy never rises
    beyond the sweeps' tolerance, every rolling torque impulse is within mu_r R*
    lambda_N (R* = r_i r_j/(r_i + r_j) = r/2 for a pair, r on a wall) to round-off,
    some reach it, and the energy falls faster than without rolling resistance."""

    def run(mu_r):
        world = spinning_gas(restitution=0.0, friction=0.5, rolling_friction=mu_r)
        simulation = gr.Simulation(world, 1e-3)
        energy, allowed, saturated = [world.kinetic_energy(0.0, world.q0, world.u0)], [], 0
        for _ in range(200):
            result = simulation.step()
            energy.append(result.kinetic_energy)
            contacts = result.contacts
            speed = np.abs(result.predicted).max() + 0.018 * np.abs(result.angular_velocities).max()
            impulses = (
                contacts.impulse.sum()
                + np.abs(contacts.tangential_impulse).sum()
                + np.abs(contacts.rolling_impulse).sum() / 0.009
            )
            allowed.append(2.0 * np.sqrt(5.0) * FRICTION_SWEEP_TOLERANCE * speed * impulses)
            if mu_r > 0.0:
                reach = np.where(contacts.wall >= 0, 0.018, 0.009)
                torque = np.linalg.norm(contacts.rolling_impulse, axis=1)
                limit = mu_r * reach * contacts.impulse
                assert np.all(torque <= limit * (1.0 + 1e-12) + 1e-18)
                saturated += int(np.sum((limit > 0.0) & (torque >= limit * (1.0 - 1e-9))))
        energy = np.array(energy)
        assert np.all(np.diff(energy) <= np.array(allowed) + 1e-12 * energy[0])
        return energy, saturated

    plain, _ = run(0.0)
    resisted, saturated = run(0.3)
    assert saturated > 10
    assert resisted[-1] < plain[-1]


def test_bad_rolling_friction_is_refused_with_a_clear_error():
    with pytest.raises(gr.InvalidInputError, match="rolling_friction must lie in"):
        gr.SphereWorld([[0, 0, 1]], 0.1, rolling_friction=-0.1)
    with pytest.raises(gr.InvalidInputError, match="Plane rolling_friction must be finite and >= 0"):
        gr.Plane([0, 0, 0], [0, 0, 1], rolling_friction=-1.0)
    with pytest.raises(gr.InvalidInputError, match="Box rolling_friction"):
        gr.Box([0, 0, 0], [1, 1, 1], rolling_friction=np.nan)
    with pytest.raises(gr.InvalidInputError, match="rolling_friction needs spheres that turn"):
        gr.SphereWorld([[0, 0, 1]], 0.1, friction=0.5, rolling_friction=0.1, rotation=False)


# -- scenes and pictures -----------------------------------------------------------------------


def test_struck_balls_end_rolling_at_five_sevenths_of_v0_times_one_plus_b_over_r():
    """granular/scenes/struck_ball.py: each ball struck at height b keeps m r v + J omega about
    its contact point, so it ends rolling at 5/7 v0 (1 + b/r) (to the sweeps'
    round-off) whatever the step, here 2 ms over 0.8 s (the slowest rolls at 0.73 s)."""
    from support.scenes import load_scene

    scene = load_scene("struck_ball")
    trajectory = scene.run(duration=0.8, dt=2e-3, record_every=400)
    rolling_speed, rolling_time = scene.analytic()
    assert rolling_time.max() < 0.8
    assert np.allclose(trajectory.velocities[-1, :, 0], rolling_speed, atol=ROUNDOFF)
    assert np.allclose(trajectory.angular_velocities[-1, :, 1], rolling_speed / scene.RADIUS, atol=ROUNDOFF / 0.03)
    summary = scene.summary(trajectory)
    assert summary["speed_ratio_min"] == pytest.approx(1.0, abs=1e-9)
    assert summary["speed_ratio_max"] == pytest.approx(1.0, abs=1e-9)


def test_orientation_bands_are_the_body_equator_turned_and_placed_on_each_sphere():
    from granular.render.geometry import BAND_LIFT, orientation_bands

    centres = np.array([[0.0, 0, 0], [1.0, 2.0, 3.0]])
    radii = np.array([0.5, 0.1])
    quarter_turn_about_x = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0]
    bands = orientation_bands(centres, radii, np.array([[1.0, 0, 0, 0], quarter_turn_about_x]), segments=12)
    first, second = bands[:12].reshape(-1, 3), bands[12:].reshape(-1, 3)
    assert np.allclose(first[:, 2], 0.0) and np.allclose(np.linalg.norm(first, axis=1), BAND_LIFT * 0.5)
    # a quarter turn about x takes the body's x-y plane to the world's x-z plane
    assert np.allclose(second[:, 1], 2.0) and np.allclose(np.linalg.norm(second - centres[1], axis=1), BAND_LIFT * 0.1)
    assert np.ptp(second[:, 2]) == pytest.approx(2 * BAND_LIFT * 0.1, rel=1e-2)


@pytest.mark.exact
def test_a_restarted_rotational_state_is_used_and_reported():
    """`MauryScheme.set_rotation` restarts omega in the scheme's state, and the next
    run's first frame reports it in its kinetic energy; bad shapes are refused."""
    world, _, _ = incline(np.radians(20.0), 0.3)
    simulation = gr.Simulation(world, 1e-3)
    simulation.step()
    simulation.scheme.set_rotation([[0.0, 5.0, 0.0]])
    assert np.array_equal(simulation.scheme.angular_velocities, [[0.0, 5.0, 0.0]])
    translational = 0.5 * world.masses_at(0.0)[0] * float(np.sum(simulation.velocities**2))
    kinetic = simulation.run(steps=1).kinetic_energy[0] - translational
    assert kinetic == pytest.approx(0.5 * world.inertia_at(0.0)[0] * 25.0)
    with pytest.raises(gr.InvalidInputError, match=r"angular_velocities must have shape \(1, 3\)"):
        simulation.scheme.set_rotation([0.0, 5.0, 0.0])


@pytest.mark.exact
def test_simulation_run_records_spin_of_turning_spheres_and_not_of_still_ones(tmp_path):
    """`Simulation.run` keeps the angular velocities and orientations of spheres that
    turn: the ball launched sliding (above) is recorded rolling at the end, v = r omega
    to round-off, its last frame is the scheme's state, and a file keeps both. Spheres
    that never turn (frictionless, no spin) record none rather than identity
    orientations in every frame."""
    v0, mu, radius, h = 3.0, 0.2, 0.04, 1e-3
    world = gr.SphereWorld(
        [[0, 0, radius]],
        radius,
        masses=0.17,
        velocities=[[v0, 0, 0]],
        walls=[gr.Plane([0, 0, 0], [0, 0, 1], friction=mu)],
    )
    simulation = gr.Simulation(world, h)
    trajectory = simulation.run(steps=600, record_every=50)
    assert trajectory.angular_velocities.shape == (len(trajectory), 1, 3)
    assert trajectory.orientations.shape == (len(trajectory), 1, 4)
    assert np.array_equal(trajectory.angular_velocities[0], [[0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(trajectory.angular_velocities[-1], simulation.scheme.angular_velocities)
    np.testing.assert_array_equal(trajectory.orientations[-1], simulation.scheme.orientations)
    assert trajectory.velocities[-1, 0, 0] == pytest.approx(
        radius * trajectory.angular_velocities[-1, 0, 1], abs=ROUNDOFF
    )
    assert np.allclose(np.linalg.norm(trajectory.orientations, axis=2), 1.0, atol=1e-12)
    loaded = gr.Trajectory.load(trajectory.save(tmp_path / "rolling.h5"))
    np.testing.assert_array_equal(loaded.angular_velocities, trajectory.angular_velocities)
    still = gr.SphereWorld([[0, 0, 0.2]], 0.1, masses=2.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
    assert gr.Simulation(still, 1e-3).run(steps=20).angular_velocities is None
