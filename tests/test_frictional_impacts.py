"""Frictional impacts: Newton's restitution law with Coulomb friction (`granular.contact.impact`).

The rigid-body limits of Chung and Ooi, *Benchmark tests for verifying discrete
element modelling codes at particle impact level*, Granular Matter 13 (2011)
643-656 (tests 3, 4, 6, 7, 8), derived here from impulse and momentum.

Impulse-momentum for one contact. Sphere ``i`` (mass m_i, radius r_i, inertia
J_i = 2/5 m_i r_i^2) and sphere ``j`` (or a fixed plane: m_j, J_j infinite), unit
normal ``n`` from i to j, contact impulse ``P = P_N n + P_T`` on j (``-P`` on i),
``P_T`` orthogonal to n. The contact points are ``q_i + r_i n`` and ``q_j - r_j n``, so

    m_j du_j = P,   J_j dw_j = -r_j n x P_T,   m_i du_i = -P,   J_i dw_i = -r_i n x P_T.

The relative normal velocity ``U_N = n.(u_j - u_i)`` then jumps by ``w P_N`` with
``w = 1/m_i + 1/m_j = 1/m*`` (m* the reduced mass), and the slip of j's contact point
over i's, ``s = (u_j - u_i)_T - (r_i w_i + r_j w_j) x n``, by ``v P_T`` with ``v = w +
r_i^2/J_i + r_j^2/J_j = 7 / (2 m*)`` (solid spheres; a plane: ``m* = m``).

Newton's law with Coulomb friction (Moreau, 1988; Jean, 1999; Acary and Brogliato,
2008; Siconos' ``NewtonImpactFrictionNSL``): with the approach speed ``v_n =
-U_N^- > 0``, ``U_N^+ = -e U_N^-`` gives ``P_N = (1 + e) m* v_n``; the slip obeys
Coulomb's law between ``P_T`` and ``s^+ + et s^-``: it sticks (``s^+ = -et s^-``,
``P_T = -(1 + et) s^- / v = -2/7 (1 + et) m* s^-``) when that impulse is within the
disc ``|P_T| <= mu P_N``, otherwise it slides, ``P_T = -mu P_N s^- / |s^-|``.

For a sphere without spin on a plane (``et = 0``), at incidence angle theta from the
normal (``v_t = |v| sin theta``, ``v_n = |v| cos theta``):
sticking gives ``v_t^+ = v_t - 2/7 v_t = 5/7 v_t`` and ``omega^+ r = 5/7 v_t``;
sliding gives ``v_t^+ = v_t - mu (1 + e) v_n`` and ``omega^+ r = 5/2 mu (1 + e) v_n``;
the sticking impulse ``2/7 m v_t`` reaches ``mu (1 + e) m v_n`` at ``tan theta =
7/2 mu (1 + e)``.

Tolerances. One contact is solved by the sweeps' closed-form local answer
(`granular.contact.friction_gauss_seidel`), so the answer differs from these formulas by
round-off only: `ROUNDOFF` (64 ulps) times the velocity scale of the impact. Many
contacts are solved to ``FRICTION_SWEEP_TOLERANCE`` times the velocity scale.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import granular as gr
from granular.contact.impact import _clusters
from granular.schemes import maury_impacts
from granular.tolerances import FRICTION_SWEEP_TOLERANCE
from granular.spheres.assembly import tangent_basis
from support.spinning import spinning_gas

#: Relative round-off of a one-contact impact: a few dozen floating-point operations,
#: counted generously (64 ulps).
ROUNDOFF = 64 * np.finfo(float).eps
Z = np.array([0.0, 0.0, 1.0])

# Chung and Ooi (2011), test 4: an aluminium-oxide sphere on an aluminium-alloy wall.
ALUMINA_RADIUS, ALUMINA_DENSITY, ALUMINA_SPEED = 2.5e-3, 4000.0, 3.9  # m, kg/m^3, m/s
ALUMINA_FRICTION, ALUMINA_RESTITUTION = 0.092, 0.98
# Test 6: a sphere on a plane with different initial spins.
SPIN_RADIUS, SPIN_NORMAL_SPEED, SPIN_FRICTION, SPIN_RESTITUTION = 0.1, 0.2, 0.4, 0.5


# -- the analytic law of one contact ------------------------------------------------------


def one_contact(normal_speed, slip, reduced_mass, mu, e, et=0.0):
    """Impulses ``(P_N, P_T (3,))`` of Newton's law with Coulomb friction at one contact
    (module docstring): approach speed ``normal_speed`` (m/s), slip before ``slip``
    (3,) (m/s, orthogonal to n), reduced mass (kg)."""
    normal = (1.0 + e) * reduced_mass * normal_speed
    tangential = -(1.0 + et) * 2.0 / 7.0 * reduced_mass * np.asarray(slip, dtype=float)
    size = np.linalg.norm(tangential)
    if size > mu * normal:  # outside the disc: slides against the slip
        tangential = tangential * (mu * normal / size)
    return normal, tangential


def plane_after(v, omega, radius, mass, mu, e, et=0.0, belt=np.zeros(3)):
    """``(v^+, omega^+)`` of a sphere hitting the plane z = 0 (normal +z) moving at
    ``belt`` (m/s, in the plane): the sphere is ``j`` with ``n = +z`` from the plane to
    it, its contact point ``q - r n``, its slip over the plane the tangential part of
    ``v + omega x (-r n) - belt``."""
    v, omega = np.asarray(v, dtype=float), np.asarray(omega, dtype=float)
    point = v + np.cross(omega, -radius * Z) - belt
    slip = point - (point @ Z) * Z
    P_N, P_T = one_contact(-(v @ Z), slip, mass, mu, e, et)
    impulse = P_N * Z + P_T
    inertia = 0.4 * mass * radius**2
    return v + impulse / mass, omega + np.cross(-radius * Z, P_T) / inertia


def sphere_on_plane(v, omega, radius, density, mu, e, et=0.0, belt=None, rotation=True, rolling=0.0):
    """A sphere touching the plane z = 0 (gap 0) with velocity ``v`` and spin ``omega``,
    no gravity: one step of 1e-6 s holds the whole impact (it moves 1e-6 |v| < r)."""
    plane = gr.Plane([0, 0, 0], [0, 0, 1], velocity=belt)
    world = gr.SphereWorld(
        [[0.0, 0.0, radius]],
        radius,
        density=density,
        velocities=[v],
        angular_velocities=[omega],
        gravity=(0, 0, 0),
        walls=[plane],
        friction=mu,
        restitution=e,
        tangential_restitution=et,
        rotation=rotation,
        rolling_friction=rolling,
    )
    return world, gr.Simulation(world, 1e-6).step()


def energy(mass, inertia, v, omega):
    return 0.5 * mass * np.sum(np.square(v)) + 0.5 * inertia * np.sum(np.square(omega))


# -- Chung and Ooi, test 3: normal impact ----------------------------------------------------


@pytest.mark.parametrize("e", [0.2, 0.4, 0.6, 0.8, 1.0])
def test_normal_impact_rebounds_at_e_times_the_approach_speed(e):
    """Test 3: the alumina sphere of test 4 hits the rough wall along its normal at
    3.9 m/s: no slip, so no friction (``s^- = 0`` gives ``P_T = 0``), and Newton's law
    gives the rebound ``e v``, no spin."""
    world, result = sphere_on_plane(
        [0, 0, -ALUMINA_SPEED], [0, 0, 0], ALUMINA_RADIUS, ALUMINA_DENSITY, ALUMINA_FRICTION, e
    )
    scale = ALUMINA_SPEED
    assert result.velocities[0] == pytest.approx([0, 0, e * ALUMINA_SPEED], abs=ROUNDOFF * scale)
    assert np.abs(result.angular_velocities[0]).max() * ALUMINA_RADIUS <= ROUNDOFF * scale
    mass = world.masses_at(0)[0]
    assert result.contacts.impulse[0] == pytest.approx((1 + e) * mass * ALUMINA_SPEED, rel=ROUNDOFF)


# -- test 4: oblique impacts of a sphere without spin -------------------------------------------


def test_4_regime_change_angle():
    """The sticking impulse ``2/7 m v sin theta`` meets the disc ``mu (1 + e) m v cos
    theta`` at ``tan theta_c = 7/2 mu (1 + e)``: 32.5 degrees for alumina (0.092, 0.98)."""
    critical = np.degrees(np.arctan(3.5 * ALUMINA_FRICTION * (1 + ALUMINA_RESTITUTION)))
    assert 32.0 < critical < 33.0


@pytest.mark.parametrize("angle", np.arange(5.0, 86.0, 5.0))
def test_4_oblique_impact_on_a_wall_sticks_then_slides_with_incidence(angle):
    """Test 4: alumina sphere, R = 2.5 mm, 3.9 m/s at ``angle`` from the normal, mu =
    0.092, e = 0.98. Below ``theta_c`` (`test_4_regime_change_angle`) ``v_t^+ = 5/7
    v_t`` and ``omega^+ R = 5/7 v_t`` (rolls off); above, ``v_t^+ = v_t - mu (1 + e)
    v_n`` and ``omega^+ R = 5/2 mu (1 + e) v_n``. The normal rebound is ``e v_n``
    throughout; the angular momentum about the contact point ``J omega + m R n x v`` is
    kept (the impulse acts there); the kinetic energy does not rise."""
    theta = np.radians(angle)
    v_n, v_t = ALUMINA_SPEED * np.cos(theta), ALUMINA_SPEED * np.sin(theta)
    mu, e, R = ALUMINA_FRICTION, ALUMINA_RESTITUTION, ALUMINA_RADIUS
    world, result = sphere_on_plane([v_t, 0, -v_n], [0, 0, 0], R, ALUMINA_DENSITY, mu, e)
    v, omega = result.velocities[0], result.angular_velocities[0]
    sticks = np.tan(theta) <= 3.5 * mu * (1 + e)
    tangential = 5.0 / 7.0 * v_t if sticks else v_t - mu * (1 + e) * v_n
    spin = 5.0 / 7.0 * v_t if sticks else 2.5 * mu * (1 + e) * v_n  # omega^+ R, about +y
    scale = ALUMINA_SPEED
    assert v == pytest.approx([tangential, 0.0, e * v_n], abs=ROUNDOFF * scale)
    assert omega * R == pytest.approx([0.0, spin, 0.0], abs=ROUNDOFF * scale)
    mass, inertia = world.masses_at(0)[0], world.inertia_at(0)[0]
    before = mass * R * np.cross(Z, [v_t, 0, -v_n])  # J omega^- = 0; lever from the contact point: R n
    after = inertia * omega + mass * R * np.cross(Z, v)
    assert after == pytest.approx(before, abs=ROUNDOFF * mass * R * scale)
    assert energy(mass, inertia, v, omega) <= energy(mass, inertia, [v_t, 0, -v_n], 0) * (1 + ROUNDOFF)


def test_4_impact_impulses_are_in_the_step_contacts():
    """The step's `Contacts` hold the impact's normal impulse ``(1 + e) m v_n`` and its
    friction impulse: ``mu`` times it when sliding (theta = 60 degrees > theta_c)."""
    theta = np.radians(60.0)
    v_n, v_t = ALUMINA_SPEED * np.cos(theta), ALUMINA_SPEED * np.sin(theta)
    world, result = sphere_on_plane(
        [v_t, 0, -v_n], [0, 0, 0], ALUMINA_RADIUS, ALUMINA_DENSITY, ALUMINA_FRICTION, ALUMINA_RESTITUTION
    )
    mass = world.masses_at(0)[0]
    normal = (1 + ALUMINA_RESTITUTION) * mass * v_n
    contacts = result.contacts
    assert contacts.impulse[0] == pytest.approx(normal, rel=ROUNDOFF)
    assert np.linalg.norm(contacts.tangential_impulse[0]) == pytest.approx(ALUMINA_FRICTION * normal, rel=ROUNDOFF)


# -- test 6: sphere on a plane with different initial spins ---------------------------------


@pytest.mark.parametrize("spin", np.linspace(-10.0, 10.0, 21))
def test_6_initial_spin_sets_the_contact_point_velocity(spin):
    """Test 6: R = 0.1 m, v_n = 0.2 m/s, no tangential velocity, mu = 0.4, e = 0.5,
    initial spin ``omega`` about +y. The contact point ``q - R z`` slips at ``s^- = v_t -
    omega R = -omega R`` along x. The slip jumps by ``7/(2m) P_T`` and ``|P_T| <= mu (1 +
    e) m v_n``, so

        s^+ = s^- - sign(s^-) min(|s^-|, 7/2 mu (1 + e) v_n):

    it sticks (``s^+ = 0``) for ``|omega| R <= 0.42`` m/s and slides either way beyond
    (spins -10 to 10 rad/s: both). Then ``v_t^+ = P_T / m`` and ``omega^+ = omega - 5/2
    P_T / (m R)`` (from ``J dw = -R z x P_T``)."""
    R, v_n, mu, e = SPIN_RADIUS, SPIN_NORMAL_SPEED, SPIN_FRICTION, SPIN_RESTITUTION
    world, result = sphere_on_plane([0, 0, -v_n], [0, spin, 0], R, 2700.0, mu, e)
    v, omega = result.velocities[0], result.angular_velocities[0]
    slip_before = -spin * R
    limit = 3.5 * mu * (1 + e) * v_n
    slip_after = slip_before - np.sign(slip_before) * min(abs(slip_before), limit)
    impulse_per_mass = (slip_after - slip_before) / 3.5  # P_T / m = 2/7 (s^+ - s^-)
    scale = max(v_n, abs(spin) * R)
    assert v[0] - omega[1] * R == pytest.approx(slip_after, abs=ROUNDOFF * scale)
    assert v == pytest.approx([impulse_per_mass, 0.0, e * v_n], abs=ROUNDOFF * scale)
    assert omega[1] * R == pytest.approx(spin * R - 2.5 * impulse_per_mass, abs=ROUNDOFF * scale)
    mass, inertia = world.masses_at(0)[0], world.inertia_at(0)[0]
    before = inertia * np.array([0, spin, 0]) + mass * R * np.cross(Z, [0, 0, -v_n])
    after = inertia * omega + mass * R * np.cross(Z, v)
    assert after == pytest.approx(before, abs=ROUNDOFF * mass * R * scale)
    assert energy(mass, inertia, v, omega) <= energy(mass, inertia, [0, 0, v_n], [0, spin, 0]) * (1 + ROUNDOFF)


# -- tests 7 and 8: two spheres ------------------------------------------------------------------


def pair_after(q, v, omega, radii, masses, mu, e, et=0.0):
    """``(v^+ (2, 3), omega^+ (2, 3))`` of spheres 0 (i) and 1 (j) touching at one contact
    (module docstring)."""
    q, v, omega = (np.asarray(x, dtype=float) for x in (q, v, omega))
    n = (q[1] - q[0]) / np.linalg.norm(q[1] - q[0])
    reduced = 1.0 / (1.0 / masses[0] + 1.0 / masses[1])
    point_i = v[0] + np.cross(omega[0], radii[0] * n)
    point_j = v[1] + np.cross(omega[1], -radii[1] * n)
    relative = point_j - point_i
    P_N, P_T = one_contact(-(relative @ n), relative - (relative @ n) * n, reduced, mu, e, et)
    impulse = P_N * n + P_T
    inertia = 0.4 * np.asarray(masses) * np.asarray(radii) ** 2
    v_after = np.array([v[0] - impulse / masses[0], v[1] + impulse / masses[1]])
    omega_after = np.array(
        [omega[0] - radii[0] * np.cross(n, P_T) / inertia[0], omega[1] - radii[1] * np.cross(n, P_T) / inertia[1]]
    )
    return v_after, omega_after


def pair_step(q, v, omega, radii, density, mu, e):
    world = gr.SphereWorld(
        q, radii, density=density, velocities=v, angular_velocities=omega, gravity=(0, 0, 0), friction=mu, restitution=e
    )
    return world, gr.Simulation(world, 1e-6).step()


def check_pair(world, result, q, v, omega, radii, mu, e):
    """The step against `pair_after`; linear and angular momentum (about the origin:
    the spheres touch, so the pair of impulses has no moment) kept; energy not risen."""
    masses, inertia = world.masses_at(0), world.inertia_at(0)
    v_exp, omega_exp = pair_after(q, v, omega, radii, masses, mu, e)
    v, omega, q = (np.asarray(x, dtype=float) for x in (v, omega, q))
    scale = max(np.abs(v).max(), (np.abs(omega).max(axis=1) * radii).max())
    assert result.velocities == pytest.approx(v_exp, abs=ROUNDOFF * scale)
    assert result.angular_velocities * np.asarray(radii)[:, None] == pytest.approx(
        omega_exp * np.asarray(radii)[:, None], abs=ROUNDOFF * scale
    )
    momentum = masses @ v
    assert masses @ result.velocities == pytest.approx(momentum, abs=ROUNDOFF * masses.sum() * scale)
    L_before = np.sum(np.cross(q, masses[:, None] * v) + inertia[:, None] * omega, axis=0)
    L_after = np.sum(
        np.cross(q, masses[:, None] * result.velocities) + inertia[:, None] * result.angular_velocities, axis=0
    )
    lever = np.abs(q).max() + max(radii)
    assert L_after == pytest.approx(L_before, abs=ROUNDOFF * masses.sum() * lever * scale)
    E_before = 0.5 * np.sum(masses * np.sum(v**2, 1)) + 0.5 * np.sum(inertia * np.sum(omega**2, 1))
    assert result.kinetic_energy <= E_before * (1 + ROUNDOFF)
    return v_exp, omega_exp


@pytest.mark.parametrize("spin", [0.0, 2.0, 5.0, 20.0])
@pytest.mark.parametrize("sense", [1.0, -1.0])
def test_7_identical_spheres_with_spins_in_a_head_on_impact(spin, sense):
    """Test 7: two identical spheres (R = 0.1 m, 2700 kg/m^3) meet head on at 0.2 m/s
    each along x, spinning about z at ``spin`` and ``sense x spin``. The slip of j's
    contact point over i's is ``-R (omega_i + omega_j) x n`` = ``-(1 + sense) spin R y``:
    opposite spins (sense -1) roll on each other, no friction, the spins are kept; equal
    spins slip at ``2 spin R``, which sticks for ``2 spin R <= 7/2 mu (1 + e) (2 v) / 2``
    (``m* = m/2``: ``P_N = (1 + e) m v``, sticking needs ``2/7 (m/2) 2 spin R <= mu P_N``),
    i.e. ``spin R <= 7/2 mu (1 + e) v = 0.42`` m/s: spin 2 sticks (both end at ``2/7``
    of it), 5 and 20 slide. mu = 0.4, e = 0.5."""
    R, v0, mu, e = 0.1, 0.2, 0.4, 0.5
    q = [[-R, 0, 0], [R, 0, 0]]
    v = [[v0, 0, 0], [-v0, 0, 0]]
    omega = [[0, 0, spin], [0, 0, sense * spin]]
    world, result = pair_step(q, v, omega, [R, R], 2700.0, mu, e)
    v_exp, omega_exp = check_pair(world, result, q, v, omega, [R, R], mu, e)
    assert v_exp[:, 0] == pytest.approx([-e * v0, e * v0])  # the analytic model itself: Newton
    if sense < 0 or spin == 0.0:
        assert omega_exp == pytest.approx(np.array(omega, dtype=float))
    elif spin * R <= 3.5 * mu * (1 + e) * v0:
        assert omega_exp[:, 2] == pytest.approx([2.0 / 7.0 * spin] * 2)


@pytest.mark.parametrize("tangential_speed", [0.05, 0.3, 1.0, 3.0])
def test_8_unequal_spheres_oblique_impact(tangential_speed):
    """Test 8: spheres of radii 0.1 and 0.05 m (2700 kg/m^3: masses 8 to 1), the large
    one at rest, the small one approaching along -x at 0.5 m/s with ``tangential_speed``
    along y and a spin, mu = 0.4, e = 0.5: reduced mass ``m* = 8/9 m_small``, the result
    of `pair_after` (impulse-momentum with m* and 2/5 m R^2), sticking for the slow
    tangential speeds and sliding for the fast ones."""
    R1, R2, mu, e = 0.1, 0.05, 0.4, 0.5
    q = [[0, 0, 0], [R1 + R2, 0, 0]]
    v = [[0, 0, 0], [-0.5, tangential_speed, 0.1]]
    omega = [[0, 0, 0], [1.0, -2.0, 3.0]]
    world, result = pair_step(q, v, omega, [R1, R2], 2700.0, mu, e)
    check_pair(world, result, q, v, omega, [R1, R2], mu, e)


# -- tangential restitution, rotation off, belts, rolling resistance ----------------------------------


@pytest.mark.parametrize("et", [0.0, 0.3, 1.0])
def test_tangential_restitution_reverses_a_sticking_contact_point(et):
    """Sticking (``|P_T| = 2/7 (1 + et) m |s^-| <= mu (1 + e) m v_n``: here ``2/7 2 0.1 <=
    0.5 1.5 1``), the contact point leaves with ``-et`` times its slip before."""
    world, result = sphere_on_plane([0.1, 0, -1.0], [0, 0, 0], 0.1, 1000.0, 0.5, 0.5, et=et)
    v, omega = result.velocities[0], result.angular_velocities[0]
    assert v[0] - omega[1] * 0.1 == pytest.approx(-et * 0.1, abs=ROUNDOFF)
    v_exp, omega_exp = plane_after([0.1, 0, -1.0], [0, 0, 0], 0.1, world.masses_at(0)[0], 0.5, 0.5, et)
    assert v == pytest.approx(v_exp, abs=ROUNDOFF) and omega == pytest.approx(omega_exp, abs=ROUNDOFF / 0.1)


@pytest.mark.parametrize("tangential_speed", [0.5, 2.0])
def test_without_rotation_a_frictional_point_sticks_or_slides(tangential_speed):
    """``rotation=False``: the slip is ``v_t`` and ``v = w = 1/m``: it sticks (``v_t^+ =
    0``) when ``v_t <= mu (1 + e) v_n = 0.45`` m/s, else slides to ``v_t - 0.45``: 0.5
    and 2 m/s slide, to 0.05 and 1.55 m/s."""
    mu, e, v_n = 0.3, 0.5, 1.0
    world, result = sphere_on_plane([tangential_speed, 0, -v_n], [0, 0, 0], 0.1, 1000.0, mu, e, rotation=False)
    expected = max(tangential_speed - mu * (1 + e) * v_n, 0.0)
    assert result.velocities[0] == pytest.approx([expected, 0, e * v_n], abs=ROUNDOFF * tangential_speed)


def test_without_rotation_a_slow_frictional_point_sticks():
    """As above with ``v_t = 0.3 <= mu (1 + e) v_n = 0.45``: it leaves along the normal."""
    world, result = sphere_on_plane([0.3, 0, -1.0], [0, 0, 0], 0.1, 1000.0, 0.3, 0.5, rotation=False)
    assert result.velocities[0] == pytest.approx([0, 0, 0.5], abs=ROUNDOFF)


@pytest.mark.parametrize("belt", [0.3, -0.2, 3.0])
def test_a_sphere_landing_on_a_belt_takes_its_velocity_when_it_sticks(belt):
    """A belt: the plane z = 0 moving at ``belt`` along x. The slip is measured from the
    belt, ``s^- = v_t - omega R - belt``; sticking (``2/7 |s^-| <= mu (1 + e) v_n`` with
    mu = 0.5, e = 0.5, v_n = 1: ``|s^-| <= 2.625``) the contact point leaves at the
    belt's velocity; at 3 m/s it slides and gets ``mu (1 + e) m v_n`` of impulse."""
    mu, e = 0.5, 0.5
    world, result = sphere_on_plane([0, 0, -1.0], [0, 0, 0], 0.1, 1000.0, mu, e, belt=[belt, 0, 0])
    v, omega = result.velocities[0], result.angular_velocities[0]
    v_exp, omega_exp = plane_after(
        [0, 0, -1.0], [0, 0, 0], 0.1, world.masses_at(0)[0], mu, e, belt=np.array([belt, 0, 0])
    )
    assert v == pytest.approx(v_exp, abs=ROUNDOFF * 3)
    assert omega * 0.1 == pytest.approx(omega_exp * 0.1, abs=ROUNDOFF * 3)
    if abs(belt) <= 3.5 * mu * (1 + e):
        assert v[0] - omega[1] * 0.1 == pytest.approx(belt, abs=ROUNDOFF * 3)
    else:
        assert abs(v[0]) == pytest.approx(mu * (1 + e), rel=ROUNDOFF)


def test_rolling_resistance_bounds_the_impact_torque():
    """A sphere spinning at 50 rad/s about y lands along the normal at 1 m/s with mu =
    0.4, e = 0.5 and mu_r = 0.1: the rolling torque impulse
    ``R P_R`` is at most ``mu_r R P_N`` and, the spin being far too fast to stop, at that
    bound; the angular momentum about the contact point changes by exactly that torque
    impulse (the friction and normal impulses act at the contact point)."""
    R, mu_r = 0.1, 0.1
    world, result = sphere_on_plane([0, 0, -1.0], [0, 50.0, 0], R, 1000.0, 0.4, 0.5, rolling=mu_r)
    contacts = result.contacts
    P_N = contacts.impulse[0]
    torque = contacts.rolling_impulse[0]
    assert np.linalg.norm(torque) == pytest.approx(mu_r * R * P_N, rel=ROUNDOFF)
    mass, inertia = world.masses_at(0)[0], world.inertia_at(0)[0]
    v, omega = result.velocities[0], result.angular_velocities[0]
    change = inertia * (omega - [0, 50.0, 0]) + mass * R * np.cross(Z, v - [0, 0, -1.0])
    vector = torque @ tangent_basis(Z[None])[0]
    assert change == pytest.approx(vector, abs=ROUNDOFF * mass * R * 5.0)
    assert np.linalg.norm(vector) > 0.0


# -- what holds beyond a single impact ---------------------------------------------------------------


def test_a_resting_sphere_on_a_rough_floor_does_not_hop():
    """A sphere resting on a rough floor (mu = 0.3, e = 0.5) under gravity, and one
    rolling on it at 1 m/s: 2,000 steps of 1 ms, the contact stays closed (gap at most
    Maury's round-off), no step's vertical velocity exceeds the floor's solver
    tolerance, and the rolling sphere keeps rolling without slip."""
    for v, omega in (([0, 0, 0], [0, 0, 0]), ([1.0, 0, 0], [0, 10.0, 0])):
        world = gr.SphereWorld(
            [[0, 0, 0.1]],
            0.1,
            density=1000.0,
            velocities=[v],
            angular_velocities=[omega],
            walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
            friction=0.3,
            restitution=0.5,
        )
        simulation = gr.Simulation(world, 1e-3)
        heights, lifts, slips = [], [], []
        for _ in range(2000):
            result = simulation.step()
            heights.append(result.positions[0, 2] - 0.1)
            lifts.append(result.velocities[0, 2])
            slips.append(result.velocities[0, 0] - 0.1 * result.angular_velocities[0, 1])
        scale = 9.81e-3 + np.linalg.norm(v)
        assert np.abs(heights).max() <= 1e-3 * FRICTION_SWEEP_TOLERANCE * scale
        assert np.abs(lifts).max() <= FRICTION_SWEEP_TOLERANCE * scale
        assert np.abs(slips).max() <= FRICTION_SWEEP_TOLERANCE * scale
        assert result.positions[0, 0] == pytest.approx(2.0 * v[0], rel=1e-9, abs=1e-12)


def test_zero_restitution_never_runs_the_impact_law(monkeypatch):
    """``e = 0`` is Maury's frictional scheme as before: the frictional impact law is
    never called (so every step is the same computation as before it existed), while
    ``e = 0.5`` calls it."""
    calls = []
    real = maury_impacts.solve_impact

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(maury_impacts, "solve_impact", counted)
    for e, expect_calls in ((0.0, False), (0.5, True)):
        calls.clear()
        world = gr.SphereWorld(
            [[0, 0, 0.2], [0.05, 0, 0.45]],
            0.1,
            density=1000.0,
            velocities=[[1, 0, -1], [0, 0, -2]],
            walls=[gr.Plane([0, 0, 0], [0, 0, 1])],
            friction=0.3,
            restitution=e,
        )
        simulation = gr.Simulation(world, 1e-3)
        for _ in range(300):
            result = simulation.step()
        assert bool(calls) == expect_calls
        assert np.linalg.norm(result.angular_velocities) > 0.0


def test_energy_never_rises_in_frictional_collisions_with_restitution():
    """Twenty spinning spheres in a closed rough box without gravity, e = 0.8 between
    spheres and 0.6 on the walls, mu 0.5 and 0.3, et = 0.2: the kinetic energy with
    rotation never rises from one step to the next beyond the sweeps' tolerance (work
    at most ``tau |P|`` a contact, ``tau = FRICTION_SWEEP_TOLERANCE`` times the velocity
    scale), and impacts with friction took place (a tangential impulse in a step with a
    bounce)."""
    world = spinning_gas(wall_restitution=0.6, restitution=0.8, friction=0.5, tangential_restitution=0.2)
    simulation = gr.Simulation(world, 1e-3)
    energy_before = world.kinetic_energy(0.0, world.q0, world.u0)
    rises, allowed = [], []
    for _ in range(300):
        result = simulation.step()
        speed = np.abs(result.predicted).max() + 0.018 * np.abs(result.angular_velocities).max()
        impulses = result.contacts.impulse.sum() + np.abs(result.contacts.tangential_impulse).sum()
        rises.append(result.kinetic_energy - energy_before)
        allowed.append(2.0 * np.sqrt(3.0) * FRICTION_SWEEP_TOLERANCE * speed * impulses + 1e-12 * energy_before)
        energy_before = result.kinetic_energy
    assert np.all(np.array(rises) <= np.array(allowed))
    assert energy_before < 0.9 * world.kinetic_energy(0.0, world.q0, world.u0)


def test_an_impact_whose_sweeps_do_not_converge_bounces_without_friction(monkeypatch):
    """Should the impact's sweeps raise `ConvergenceError`, the run goes on: the
    impact is Moreau's frictionless one (rebound ``e v_n``, tangential velocity and
    spin kept), not a stopped run."""

    def stalled(*args, **kwargs):
        raise gr.ConvergenceError("stalled", t=0.0)

    monkeypatch.setattr(maury_impacts, "solve_impact", stalled)
    world, result = sphere_on_plane([1.0, 0, -1.0], [0, 0, 0], 0.1, 1000.0, 0.3, 0.5)
    assert result.velocities[0] == pytest.approx([1.0, 0.0, 0.5], abs=ROUNDOFF)
    assert np.abs(result.angular_velocities[0]).max() == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_impact_clusters_are_the_components_of_rows_sharing_coordinates(seed):
    """`impact._clusters` labels rows by union-find on the coordinates they touch;
    two rows share a label exactly when the row graph ``|G| |G|^T`` (rows sharing a
    coordinate) connects them. Random sparse rows, some with explicit zero entries
    (which connect nothing)."""
    rng = np.random.default_rng(seed)
    k, d = 40, 120
    G = sp.random(k, d, density=0.02, random_state=seed, format="csr")
    G.data[rng.random(G.data.size) < 0.2] = 0.0  # explicit zeros, kept in the structure
    labels = _clusters(G)
    pattern = abs(G) @ abs(G).T
    _, expected = connected_components(sp.csr_matrix(pattern != 0), directed=False)
    same = labels[:, None] == labels[None, :]
    assert np.array_equal(same, expected[:, None] == expected[None, :])
