"""Example constrained systems.

Each builder returns a `ConstrainedSystem` in SI units whose ``drawing`` dict names,
by its registered name, its drawing adapter (`granular.drawing.systems`, registered by
`granular.drawing.adapters`). Every scene is drawn in the x-z plane (y = 0, z up).

- `bouncing_ball`: one coordinate, the height ``z`` of a ball's centre (m), above
  a floor; the same ball as a `SphereWorld` sphere of that radius on the plane z = 0.
- `impact_oscillator`: ``m x'' + c x' + k x = A cos(w t)``, the mass stopped by a
  rigid stop at ``x = stop`` (admissible ``x <= stop``).
- `double_pendulum_wall`: a planar double pendulum, angles ``(theta1, theta2)``
  (rad) from the downward vertical, point bobs at the link ends; its tip cannot
  pass the vertical wall ``x = wall_x`` (admissible ``x_tip <= wall_x``). ``M(q)``
  depends on ``theta1 - theta2``.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .constrained import Constraint, ConstrainedSystem

GRAVITY = 9.81  # m/s^2


# -- bouncing ball -----------------------------------------------------------------------


def bouncing_ball(
    height: float = 1.0,
    restitution: float = 0.9,
    mass: float = 1.0,
    radius: float = 0.1,
    velocity: float = 0.0,
    gravity: float = GRAVITY,
) -> ConstrainedSystem:
    """A ball dropped from ``height`` (m, gap between ball and floor) onto a floor.

    Coordinate ``q = [z]``, the centre height (m); gap ``z - radius``; force
    ``-m g``; potential ``m g z`` (J). ``velocity`` is the initial ``dz/dt`` (m/s).
    """
    if height < 0.0:
        raise InvalidInputError(f"height must be >= 0 (the ball starts above the floor), got {height}")
    weight = mass * gravity
    return ConstrainedSystem(
        [height + radius],
        [velocity],
        mass=[[mass]],
        force=lambda t, q, u: np.array([-weight]),
        constraints=[Constraint(gap=lambda t, q: q[0] - radius, gradient=lambda t, q: np.array([1.0]), name="floor")],
        restitution=restitution,
        potential=lambda t, q: weight * q[0],
        drawing={"kind": "ball", "adapter": "ball", "radius": radius},
    )


# -- impact oscillator -------------------------------------------------------------------


def impact_oscillator(
    frequency: float = 1.0,
    amplitude: float = 1.0,
    stop: float = 0.0,
    restitution: float = 0.8,
    mass: float = 1.0,
    stiffness: float = 1.0,
    damping: float = 0.0,
    x0: float = -0.5,
    v0: float = 0.0,
    radius: float = 0.1,
) -> ConstrainedSystem:
    """A harmonically forced mass-spring hitting a rigid stop.

    ``m x'' + c x' + k x = A cos(w t)`` with ``w = frequency`` (rad/s),
    ``A = amplitude`` (N), ``k = stiffness`` (N/m), ``c = damping`` (N s/m); the
    stop admits ``x <= stop`` (m), gap ``stop - x``. The potential is the spring's
    ``k x^2 / 2`` (J); the forcing and damping are not in it. ``radius`` is only
    drawn.
    """
    if not frequency > 0.0:
        raise InvalidInputError(f"frequency must be > 0 rad/s, got {frequency}")

    def force(t, q, u):
        return np.array([amplitude * np.cos(frequency * t) - stiffness * q[0] - damping * u[0]])

    return ConstrainedSystem(
        [x0],
        [v0],
        mass=[[mass]],
        force=force,
        constraints=[Constraint(gap=lambda t, q: stop - q[0], gradient=lambda t, q: np.array([-1.0]), name="stop")],
        restitution=restitution,
        potential=lambda t, q: 0.5 * stiffness * q[0] ** 2,
        drawing={"kind": "impact_oscillator", "adapter": "impact_oscillator", "stop": stop, "radius": radius},
    )


# -- double pendulum against a wall ------------------------------------------------------


def pendulum_mass_matrix(q: np.ndarray, lengths, masses) -> np.ndarray:
    """``M(theta)`` (2, 2), kg m^2, of point bobs ``masses`` at the ends of ``lengths``."""
    (l1, l2), (m1, m2) = lengths, masses
    coupling = m2 * l1 * l2 * np.cos(q[0] - q[1])
    return np.array([[(m1 + m2) * l1 * l1, coupling], [coupling, m2 * l2 * l2]])


def pendulum_force(q: np.ndarray, u: np.ndarray, lengths, masses, gravity: float) -> np.ndarray:
    """Generalised force (N m): ``-grad V`` plus the velocity terms of Lagrange's
    equations, ``f = -dM/dt u + 1/2 d(u^T M u)/dq - grad V``, so ``M(q) q'' = f``."""
    (l1, l2), (m1, m2) = lengths, masses
    s = m2 * l1 * l2 * np.sin(q[0] - q[1])
    return np.array(
        [-s * u[1] ** 2 - (m1 + m2) * gravity * l1 * np.sin(q[0]), s * u[0] ** 2 - m2 * gravity * l2 * np.sin(q[1])]
    )


def pendulum_potential(q: np.ndarray, lengths, masses, gravity: float) -> float:
    """Gravitational potential (J), zero with both links horizontal at the pivot's height."""
    (l1, l2), (m1, m2) = lengths, masses
    return float(-(m1 + m2) * gravity * l1 * np.cos(q[0]) - m2 * gravity * l2 * np.cos(q[1]))


def pendulum_tip(q: np.ndarray, lengths) -> np.ndarray:
    """Tip position ``(x, z)`` (m), pivot at the origin."""
    l1, l2 = lengths
    return np.array([l1 * np.sin(q[0]) + l2 * np.sin(q[1]), -l1 * np.cos(q[0]) - l2 * np.cos(q[1])])


def double_pendulum_wall(
    theta=(0.0, 0.0),
    omega=(0.0, 0.0),
    lengths=(1.0, 1.0),
    masses=(1.0, 1.0),
    wall_x: float = 1.2,
    restitution: float = 0.8,
    gravity: float = GRAVITY,
    bob_radius: float = 0.06,
) -> ConstrainedSystem:
    """A planar double pendulum whose tip bob cannot pass the wall ``x = wall_x``.

    Coordinates ``q = (theta1, theta2)`` (rad) from the downward vertical, velocities
    ``omega`` (rad/s); ``lengths`` (m) and point ``masses`` (kg) at the link ends,
    drawn as bobs of radius ``bob_radius`` (m). The only constraint is the tip bob's
    ``g = wall_x - bob_radius - x_tip >= 0`` (m), with
    ``grad g = (-l1 cos theta1, -l2 cos theta2)``;
    ``l1 < wall_x - bob_radius < l1 + l2`` keeps the first bob off the wall and the
    gradient nonzero on the wall.
    """
    lengths = tuple(float(x) for x in lengths)
    masses = tuple(float(x) for x in masses)
    l1, l2 = lengths
    reach = wall_x - bob_radius
    if not l1 < reach < l1 + l2:
        raise InvalidInputError(f"wall_x - bob_radius must lie in (l1, l1 + l2) = ({l1}, {l1 + l2}), got {reach}")
    return ConstrainedSystem(
        list(theta),
        list(omega),
        mass=lambda q: pendulum_mass_matrix(q, lengths, masses),
        force=lambda t, q, u: pendulum_force(q, u, lengths, masses, gravity),
        constraints=[
            Constraint(
                gap=lambda t, q: reach - pendulum_tip(q, lengths)[0],
                gradient=lambda t, q: np.array([-l1 * np.cos(q[0]), -l2 * np.cos(q[1])]),
                name="wall",
            )
        ],
        restitution=restitution,
        potential=lambda t, q: pendulum_potential(q, lengths, masses, gravity),
        drawing={
            "kind": "double_pendulum",
            "adapter": "double_pendulum",
            "lengths": list(lengths),
            "wall_x": wall_x,
            "bob_radius": bob_radius,
        },
    )
