"""Moving walls and cylinders (granular.walls): every expectation below comes from
the mechanics (Newton's laws, rolling without slipping, Maury's constraint at the
wall's position), not from a previous run of the code."""

import numpy as np
import pytest

import granular as gr
from granular.errors import InvalidInputError
from granular.walls import Cylinder

R = 0.01  # sphere radius (m)
G = 9.81  # gravity (m/s^2)
DT = 1e-3


def mass(world) -> float:
    return float(world.masses_at(0.0)[0])


@pytest.mark.exact
def test_a_sphere_resting_on_a_rising_plane_rides_it_and_loads_it_with_m_g_plus_m_a():
    """A floor accelerating upwards at ``a`` (``v = a t``): the sphere on it keeps a zero
    relative normal velocity (it moves up with the floor) and the floor carries
    ``m (g + a)``, pushed downwards by the sphere (Newton's second and third laws)."""
    a = 0.5
    floor = gr.Plane([0, 0, 0], [0, 0, 1], velocity=lambda t: [0.0, 0.0, a * t])
    world = gr.SphereWorld([[0.0, 0.0, R]], R, density=1000.0, walls=[floor])
    trajectory = gr.Simulation(world, dt=DT).run(steps=100, record_every=10)
    t = trajectory.t
    # The floor's mean velocity over the last step is a (t - h/2); its height a t^2 / 2.
    assert trajectory.velocities[-1, 0, 2] == pytest.approx(a * (t[-1] - DT / 2), rel=1e-9)
    assert trajectory.positions[:, 0, 2] - R == pytest.approx(0.5 * a * t**2, abs=1e-12)
    assert trajectory.wall_displacements[:, 0, 2] == pytest.approx(0.5 * a * t**2, rel=1e-9, abs=1e-15)
    expected = -mass(world) * (G + a)
    assert trajectory.wall_forces[1:, 0, 2] == pytest.approx(expected, rel=1e-9)
    assert np.abs(trajectory.wall_forces[1:, 0, :2]).max() < 1e-12


def test_a_piston_at_constant_speed_carries_an_inelastic_sphere_at_its_speed():
    """No gravity, e = 0: the piston (a plane facing down, moving down at V) meets a
    sphere at rest and pushes it; afterwards the sphere moves at exactly V and never
    overlaps the piston (Maury's constraint at the piston's position)."""
    V = 0.3
    piston = gr.Plane([0, 0, 0.05], [0, 0, -1], velocity=[0.0, 0.0, -V])
    box = gr.Box([-0.05, -0.05, -0.1], [0.05, 0.05, 0.1], open_top=True)
    world = gr.SphereWorld([[0.0, 0.0, 0.0]], R, density=1000.0, gravity=(0, 0, 0), walls=[box, piston])
    trajectory = gr.Simulation(world, dt=DT).run(steps=200)  # contact at t = 0.04/V = 0.133 s
    piston_height = 0.05 - V * trajectory.t
    gap = piston_height - trajectory.positions[:, 0, 2] - R
    assert gap.min() >= -1e-12
    # To the projection's tolerance (relative 1e-8 of the speeds in the step).
    assert trajectory.velocities[-1, 0] == pytest.approx([0.0, 0.0, -V], abs=1e-8 * V)
    assert gap[-1] == pytest.approx(0.0, abs=1e-8 * V * trajectory.t[-1])
    # Without gravity the piston only gave the sphere its momentum, once: m V.
    piston_index = 5  # the open box has 5 faces, numbered first
    impulse_on_piston = trajectory.wall_forces[:, piston_index].sum(axis=0) * DT
    assert impulse_on_piston == pytest.approx([0.0, 0.0, mass(world) * V], rel=1e-7)


@pytest.mark.parametrize("e", [0.5, 1.0])
def test_a_moving_piston_bounces_a_sphere_at_e_times_their_relative_speed(e):
    """No gravity: the piston (facing down, moving down at V) hits a sphere at rest.
    Moreau's law on the relative normal velocity: the sphere leaves the piston at e V
    relative to it, so it moves down at (1 + e) V, and the piston gave it m (1 + e) V."""
    V = 0.3
    piston = gr.Plane([0, 0, 0.05], [0, 0, -1], velocity=[0.0, 0.0, -V])
    box = gr.Box([-0.05, -0.05, -0.5], [0.05, 0.05, 0.1], open_top=True)
    world = gr.SphereWorld([[0.0, 0.0, 0.0]], R, density=1000.0, gravity=(0, 0, 0), walls=[box, piston], restitution=e)
    trajectory = gr.Simulation(world, dt=DT).run(steps=160)  # contact at t = 0.04/V = 0.133 s
    assert trajectory.velocities[-1, 0] == pytest.approx([0.0, 0.0, -(1.0 + e) * V], abs=1e-8 * V)
    piston_height = 0.05 - V * trajectory.t
    assert (piston_height - trajectory.positions[:, 0, 2] - R).min() >= -1e-12
    impulse_on_piston = trajectory.wall_forces[:, 5].sum(axis=0) * DT
    assert impulse_on_piston == pytest.approx([0.0, 0.0, mass(world) * (1.0 + e) * V], rel=1e-7)


def test_wall_impulses_balance_the_momentum_of_spheres_in_a_shaken_frictional_box():
    """Pair impulses cancel, so over a run the momentum of the spheres changes by the
    gravity impulse plus the impulses the walls give them, the opposite of what the
    walls receive: sum_f F_wall dt = -(P_end - P_0 - M g T), with friction too."""
    rng = np.random.default_rng(3)
    grid = np.stack(np.meshgrid([0.015, 0.04], [0.015, 0.04], [0.012, 0.037], indexing="ij"), -1).reshape(-1, 3)
    positions = grid + 0.002 * rng.random(grid.shape)
    box = gr.Box(
        [0, 0, 0],
        [0.055, 0.055, 0.1],
        friction=0.4,
        velocity=lambda t: [0.2 * np.sin(60.0 * t), 0.0, 0.3 * np.cos(60.0 * t)],
    )
    world = gr.SphereWorld(positions, R, density=1000.0, walls=[box], friction=0.3, restitution=0.3)
    trajectory = gr.Simulation(world, dt=DT).run(steps=150)
    masses = world.masses_at(0.0)
    momentum = np.einsum("n,fna->fa", masses, trajectory.velocities)
    gravity_impulse = masses.sum() * np.array([0.0, 0.0, -G]) * (trajectory.t[-1] - trajectory.t[0])
    on_walls = trajectory.wall_forces.sum(axis=(0, 1)) * DT
    scale = masses.sum() * 0.5
    assert np.abs(trajectory.wall_forces).max() > 0.0
    assert on_walls == pytest.approx(-(momentum[-1] - momentum[0] - gravity_impulse), abs=1e-9 * scale)


def _drum_run(drum, close_gaps=True, **options):
    rng = np.random.default_rng(1)
    positions = np.array([[x, y, -0.03] for x in (-0.022, 0.0, 0.022) for y in (-0.012, 0.012)])
    positions += 0.001 * rng.random(positions.shape)
    world = gr.SphereWorld(positions, R, density=1000.0, walls=[drum], **options)
    trajectory = gr.Simulation(world, dt=DT, close_gaps=close_gaps).run(steps=300)
    q, u = trajectory.positions, trajectory.velocities
    side_gap = 0.05 - np.hypot(q[..., 0], q[..., 2]) - R
    cap_gap = 0.03 - np.abs(q[..., 1]) - R
    # A step moves a centre by h |u^{n+1}| along a chord of the circle of radius R - r,
    # which the linearised row (the tangent) does not see: it sinks by at most the sag.
    sag = (DT * np.linalg.norm(u[1:], axis=2)) ** 2 / (2 * (0.05 - R))
    return trajectory, side_gap[1:], cap_gap, sag


def test_spheres_thrown_in_a_cylinder_sink_into_its_side_by_at_most_a_steps_sag():
    """Frictionless, the gaps left as the projection gives them (``close_gaps=False``):
    the exact active-set projection meets the linearised rows, so each step's overlap
    of the concave side is at most the sag (h v)^2 / (2 (R_drum - r)) of that step's
    chord; the caps are planes and are never crossed."""
    drum = Cylinder([0, 0, 0], [0, 1, 0], 0.05, height=0.06)
    velocities = np.random.default_rng(2).normal(0.0, 0.5, (6, 3))
    trajectory, side_gap, cap_gap, sag = _drum_run(drum, False, velocities=velocities, restitution=0.5)
    assert np.all(side_gap >= -(sag + 1e-9 * R))
    assert side_gap.min() < -1e-4 * R  # the spheres did slide along the side
    assert np.all(cap_gap >= -1e-9 * R)


def test_the_gap_closure_keeps_frictionless_spheres_out_of_a_cylinders_side():
    """The same throw with the gaps closed (the default, `granular.contact.gap_closure`):
    every sphere ends every step on or inside the side to the closure's accuracy, a
    tenth of the touching tolerance (``GAP_FRACTION * OVERLAP_TOLERANCE * r``) or
    ``VELOCITY_TOLERANCE`` of the largest sag it closes, plus the round-off of the
    gap's own evaluation at coordinates of 0.05 m."""
    from granular.contact.gap_closure import GAP_FRACTION
    from granular.tolerances import OVERLAP_TOLERANCE, VELOCITY_TOLERANCE

    drum = Cylinder([0, 0, 0], [0, 1, 0], 0.05, height=0.06)
    velocities = np.random.default_rng(2).normal(0.0, 0.5, (6, 3))
    trajectory, side_gap, cap_gap, sag = _drum_run(drum, velocities=velocities, restitution=0.5)
    accuracy = GAP_FRACTION * OVERLAP_TOLERANCE * R + VELOCITY_TOLERANCE * sag.max() + 8 * np.finfo(float).eps * 0.05
    assert sag.max() > 1e-4 * R  # the spheres did slide along the side (the previous test's overlap)
    assert side_gap.min() >= -accuracy
    assert np.all(cap_gap >= -1e-9 * R)
    assert trajectory.closure_energy.max() > 0.0 or trajectory.closure_energy.min() < 0.0  # it moved them


def test_spheres_in_a_turning_frictional_drum_stay_inside_it():
    """With friction the sweeps accept a velocity within their tolerance (2e-4 of the
    velocity scale, `FRICTION_SWEEP_TOLERANCE`) and let a contact keep the overlap it
    inherited (granular.contact.friction.sweep_tolerance), so per step a sphere may sink by its
    sag plus h times that tolerance, and these may add up: the overlaps of the side
    and of the caps stay below their running sum."""
    from granular.tolerances import FRICTION_SWEEP_TOLERANCE

    omega = 8.0
    drum = Cylinder([0, 0, 0], [0, 1, 0], 0.05, height=0.06, angular_velocity=omega, friction=0.5)
    trajectory, side_gap, cap_gap, sag = _drum_run(drum, friction=0.5)
    speeds = np.maximum(np.linalg.norm(trajectory.velocities[1:], axis=2).max(axis=1), omega * 0.05)
    solver = DT * FRICTION_SWEEP_TOLERANCE * speeds[:, None]
    allowance = np.cumsum(sag + solver, axis=0) + 1e-9 * R
    assert np.all(side_gap >= -allowance)
    assert np.all(cap_gap[1:] >= -allowance)
    assert np.abs(trajectory.velocities[-1]).max() > 0.05  # the drum did set them moving


def test_a_turning_drum_brings_the_contact_point_of_a_resting_sphere_to_the_wall_speed():
    """A sphere at rest at the bottom of a drum turning at omega: friction (mu = 1,
    more than the slope it climbs needs) makes its contact point stick to the wall,
    whose material moves at omega R_drum; the sphere spins and climbs on the side the
    wall moves to."""
    radius, omega = 0.1, 2.0
    drum = Cylinder([0, 0, 0], [0, 0, 1], radius, angular_velocity=omega)
    world = gr.SphereWorld(
        [[0.0, -(radius - R), 0.0]], R, density=1000.0, friction=1.0, gravity=(0, -G, 0), walls=[drum]
    )
    trajectory = gr.Simulation(world, dt=DT).run(steps=60)
    # The last step's row: normal n at the start of the step, contact point q^n - r n.
    q = trajectory.positions[-2, 0]
    u, w = trajectory.velocities[-1, 0], trajectory.angular_velocities[-1, 0]
    normal = trajectory.contacts[-1].normal[0]
    contact = q - R * normal
    sliding = u + np.cross(w, -R * normal) - np.cross([0.0, 0.0, omega], contact)
    sliding -= (sliding @ normal) * normal
    assert np.linalg.norm(np.cross([0.0, 0.0, omega], contact)) == pytest.approx(omega * radius, rel=1e-6)
    # Sticking, to the friction sweeps' tolerance (2e-4 of the velocity scale).
    assert np.linalg.norm(sliding) < 1e-4 * omega * radius
    q = trajectory.positions[-1, 0]
    assert q[0] > 0.0  # at the bottom the wall moves along +x
    assert np.linalg.norm(w) > 1.0


@pytest.mark.parametrize("rotation, fraction", [(True, 2.0 / 7.0), (False, 1.0)])
def test_a_shear_wall_drags_a_sphere_to_rolling_or_sticking(rotation, fraction):
    """A floor sliding at V under a sphere: a solid sphere (J = 2/5 m r^2) ends rolling
    without slipping, u + r omega = V with m u = J omega / r, i.e. u = 2V/7; a sphere
    that cannot turn ends sticking, u = V."""
    V = 0.2
    floor = gr.Plane([0, 0, 0], [0, 0, 1], velocity=[V, 0.0, 0.0], friction=0.5)
    world = gr.SphereWorld([[0.0, 0.0, R]], R, density=1000.0, walls=[floor], rotation=rotation)
    trajectory = gr.Simulation(world, dt=DT).run(steps=200)
    assert trajectory.velocities[-1, 0] == pytest.approx([fraction * V, 0.0, 0.0], abs=1e-9)
    friction_force = trajectory.wall_forces[-1, 0]
    assert friction_force == pytest.approx([0.0, 0.0, -mass(world) * G], abs=1e-9)  # no more sliding


@pytest.mark.exact
def test_wall_forces_and_displacements_survive_save_load_and_concatenate(tmp_path):
    floor = gr.Plane([0, 0, 0], [0, 0, 1], velocity=[0.0, 0.0, 0.1])
    world = gr.SphereWorld([[0.0, 0.0, R]], R, density=1000.0, walls=[floor])
    simulation = gr.Simulation(world, dt=DT)
    first = simulation.run(steps=10, record_every=5)
    second = simulation.run(steps=10, record_every=5)
    first.save(tmp_path / "run.h5")
    loaded = gr.Trajectory.load(tmp_path / "run.h5")
    assert np.array_equal(loaded.wall_forces, first.wall_forces)
    assert np.array_equal(loaded.wall_displacements, first.wall_displacements)
    joined = gr.Trajectory.concatenate([first, second])
    assert joined.wall_forces.shape == (5, 1, 3)
    assert joined.wall_displacements[:, 0, 2] == pytest.approx(0.1 * joined.t, rel=1e-12)
    assert np.array_equal(joined.wall_forces[3:], second.wall_forces[1:])


@pytest.mark.exact
def test_a_file_written_before_wall_forces_loads_with_the_forces_of_its_contacts(tmp_path):
    import h5py

    world = gr.SphereWorld([[0.0, 0.0, R]], R, density=1000.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
    trajectory = gr.Simulation(world, dt=DT).run(steps=5)
    path = tmp_path / "old.h5"
    trajectory.save(path)
    with h5py.File(path, "a") as h5:
        del h5["walls"]
    loaded = gr.Trajectory.load(path)
    assert loaded.wall_displacements is None
    # At rest on the floor: the floor carries the sphere's weight (Newton's third law).
    assert loaded.wall_forces[1:, 0, 2] == pytest.approx(-mass(world) * G, rel=1e-9)
    assert np.array_equal(loaded.wall_forces, trajectory.wall_forces)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: gr.Plane([0, 0, 0], [0, 0, 1], velocity=[0.0, np.inf, 0.0]), "velocity must be finite"),
        (lambda: gr.Plane([0, 0, 0], [0, 0, 1], velocity=lambda t: [0.0, 1.0]), r"returned shape \(2,\)"),
        (lambda: gr.Box([0, 0, 0], [1, 1, 1], velocity=lambda t: np.full(3, np.nan)), "non-finite"),
        (lambda: Cylinder([0, 0, 0], [0, 0, 1], -0.1), "radius must be positive"),
        (lambda: Cylinder([0, 0, 0], [0, 0, 0], 0.1), "axis must be non-zero"),
        (lambda: Cylinder([0, 0, 0], [0, 0, 1], 0.1, height=0.0), "height must be positive"),
        (lambda: Cylinder([0, 0, 0], [0, 0, 1], 0.1, angular_velocity=np.nan), "angular_velocity must be finite"),
    ],
)
def test_bad_walls_are_one_line_input_errors(make, message):
    with pytest.raises(InvalidInputError, match=message) as caught:
        make()
    assert "\n" not in str(caught.value)


def test_a_velocity_function_that_fails_later_names_the_time():
    floor = gr.Plane([0, 0, 0], [0, 0, 1], velocity=lambda t: [0.0, 0.0, 0.0] if t < 0.0035 else [0.0, 0.0])
    world = gr.SphereWorld([[0.0, 0.0, R]], R, density=1000.0, walls=[floor])
    with pytest.raises(InvalidInputError, match=r"returned shape \(2,\) at t = 0.00\d+ s"):
        gr.Simulation(world, dt=DT).run(steps=10)


@pytest.mark.exact
def test_the_piston_scene_gives_a_strain_linear_in_time_and_a_stress_that_only_pushes(tmp_path):
    """The piston moves at a prescribed constant speed V: strain = V t / H exactly; a
    unilateral contact can only push it back, so the stress is never negative; what
    the piston gave the spheres (no gravity, the other walls' share apart) is the
    momentum they gained."""
    from granular.render.plots import plot_stress_strain, plot_wall_forces, stress_strain
    from granular.scenes import piston_compression as scene
    from granular.walls import first_surface

    speed = 0.3
    world = scene.build(n=20, speed=speed)
    trajectory = gr.Simulation(world, dt=DT).run(duration=0.12)
    area, height = scene.SIDE**2, scene.HEIGHT
    strain, stress = stress_strain(trajectory, scene.PISTON, area, height)
    assert strain == pytest.approx(speed * trajectory.t / height, rel=1e-12, abs=1e-15)
    assert stress.min() >= 0.0 and stress.max() > 0.0
    masses = world.masses_at(0.0)
    momentum = np.einsum("n,fna->fa", masses, trajectory.velocities)
    walls = trajectory.system["walls"]
    piston = first_surface(walls, scene.PISTON)
    given = -trajectory.wall_forces.sum(axis=0) * DT  # impulses on the spheres, per surface
    assert given.sum(axis=0) == pytest.approx(momentum[-1] - momentum[0], abs=1e-9)
    assert given[piston, 2] < 0.0  # the piston pushed down
    summary = scene.summary(trajectory)
    assert summary["strain"] == pytest.approx(speed * 0.12 / height)
    assert plot_stress_strain(trajectory, tmp_path / "s.png", scene.PISTON, area, height).stat().st_size > 0
    assert plot_wall_forces(trajectory, tmp_path / "f.png").stat().st_size > 0


def test_plotting_wall_forces_of_a_run_without_walls_is_an_input_error(tmp_path):
    from granular.render.plots import plot_wall_forces

    world = gr.SphereWorld([[0.0, 0.0, 0.0]], R, gravity=(0, 0, 0))
    trajectory = gr.Simulation(world, dt=DT).run(steps=2)
    with pytest.raises(InvalidInputError, match="no walls"):
        plot_wall_forces(trajectory, tmp_path / "f.png")


def test_a_sphere_pivoting_over_a_panels_rim_never_sinks_into_it():
    """Why a `Panel` is not a curved wall for the gap closure: its face is a plane,
    whose linearised row is exact, and its rim is convex, whose linearised row errs
    towards opening (``n . (x - c) <= |x - c|``, as between two spheres). A sphere
    slid at 0.1 m/s off the end of a level panel (slower than ``sqrt(g r)`` = 0.31
    m/s, so it pivots on the rim before it falls), its gaps left as the projection
    gives them: every step ends at a gap >= 0 to round-off, and a step whose rim
    contact pushes ends it at most the chord's sag ``(h v)^2 / (2 r)`` apart."""
    panel = gr.Panel([-0.02, -0.02, 0.0], [0.04, 0, 0], [0, 0.04, 0])
    world = gr.SphereWorld([[0.015, 0.0, R]], R, density=1000.0, walls=[panel], velocities=[[0.1, 0.0, 0.0]])
    trajectory = gr.Simulation(world, dt=DT, close_gaps=False).run(steps=100)
    q, u = trajectory.positions[1:, 0], trajectory.velocities[1:, 0]
    gaps = np.array([panel.gaps(centre[None, :], np.array([R]))[0][0] for centre in q])
    sag = (DT * np.linalg.norm(u, axis=1)) ** 2 / (2 * R)
    pushed = np.array([float(np.sum(contacts.impulse)) > 0.0 for contacts in trajectory.contacts[1:]])
    on_rim = pushed & (q[:, 0] > 0.02)
    assert on_rim.sum() > 10 and q[-1, 2] < 0.0099  # it pivoted on the rim and tipped down
    roundoff = 8 * np.finfo(float).eps * 0.05
    assert gaps.min() >= -roundoff
    assert gaps[on_rim].max() > 0.0  # the rim's row opened: the bound below bites
    assert np.all(gaps[on_rim] <= sag[on_rim] + roundoff)
