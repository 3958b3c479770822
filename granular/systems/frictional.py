"""Frictional example systems, after a study of Moreau's contact
dynamics with Coulomb friction and its discrete contact law (Springer, 2017,
doi:10.1007/978-3-319-55795-3_40).

Both are planar `ConstrainedSystem`s in SI units with Coulomb friction on their
contacts (one tangent row per contact, the velocity of the contact point along
the unit tangent), drawn in the x-z plane (the system's y is drawn as z; `granular.drawing.systems`).

- `block_on_incline`: a point mass ``q = (x, y)`` (m) on the plane through the
  origin inclined by ``theta``; gap ``n . q`` with ``n = (-sin theta, cos theta)``,
  tangent ``t = (cos theta, sin theta)`` (up the slope).
- `painleve_rod`: a slender rod ``q = (x, y, phi)`` (m, m, rad), centre ``(x, y)``,
  half-length ``s``, ``M = diag(m, m, J)``; its end A at
  ``(x + s cos phi, y - s sin phi)`` and end B at ``(x - s cos phi, y + s sin phi)``
  stay above the floor ``y = 0``. With ``phi`` in (0, pi/2) A is the lower end and
  leads when ``dx/dt > 0``: the friction on A then raises ``phi`` towards
  Painleve's inconsistent range (``1 + 3 cos^2 phi < 3 mu sin phi cos phi`` for
  ``J = m s^2/3``, i.e. ``1 < tan phi < 4`` at ``mu = 5/3``).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .constrained import Constraint, ConstrainedSystem


def block_on_incline(
    theta: float, friction: float, mass: float = 1.0, gravity: float = 9.81, velocity: float = 0.0
) -> ConstrainedSystem:
    """A block (point mass, kg) at rest, or sliding at ``velocity`` (m/s, up the
    slope positive), at the origin of an incline of angle ``theta`` (rad).

    Sticks when ``tan theta <= friction`` (from rest); otherwise slides down with
    acceleration ``g (sin theta - mu cos theta)`` (m/s^2).
    """
    if not 0.0 <= theta < 0.5 * np.pi:
        raise InvalidInputError(f"theta must lie in [0, pi/2) rad, got {theta}")
    normal = np.array([-np.sin(theta), np.cos(theta)])
    tangent = np.array([np.cos(theta), np.sin(theta)])
    weight = mass * gravity
    return ConstrainedSystem(
        [0.0, 0.0],
        velocity * tangent,
        mass=mass * np.eye(2),
        force=lambda t, q, u: np.array([0.0, -weight]),
        constraints=[
            Constraint(
                gap=lambda t, q: float(normal @ q),
                gradient=lambda t, q: normal,
                friction=friction,
                tangent=lambda t, q: tangent[None, :],
                name="incline",
            )
        ],
        potential=lambda t, q: weight * q[1],
        drawing={"kind": "block_on_incline", "adapter": "block_on_incline", "theta": theta},
    )


def rod_ends(q: np.ndarray, half_length: float) -> tuple[np.ndarray, np.ndarray]:
    """Ends A and B ``(x, y)`` (m) of the rod at ``q = (x, y, phi)``."""
    c, s = np.cos(q[2]), np.sin(q[2])
    return (
        np.array([q[0] + half_length * c, q[1] - half_length * s]),
        np.array([q[0] - half_length * c, q[1] + half_length * s]),
    )


def painleve_rod(
    phi0_degrees: float = 31.0,
    velocity: float = 30.0,
    friction: float = 5.0 / 3.0,
    mass: float = 1.0,
    half_length: float = 1.0,
    gravity: float = 10.0,
    restitution: float = 0.0,
) -> ConstrainedSystem:
    """The slender rod of Painleve's paradox, end A on a rough floor (section 1 of the
    Springer 2017 study of Moreau's contact dynamics with Coulomb friction,
    doi:10.1007/978-3-319-55795-3_40).

    Defaults are Glocker's example: ``m = 1`` kg, ``s = 1`` m, ``J = m s^2 / 3``,
    ``g = 10`` m/s^2, ``mu = 5/3``, ``e = 0``, ``phi0 = 31`` degrees with A on the floor
    (``y0 = s sin phi0``), ``dx/dt = velocity`` (m/s), no vertical or angular velocity.
    Both ends carry a floor constraint with the same friction.
    """
    s = float(half_length)
    phi0 = np.radians(phi0_degrees)
    inertia = mass * s * s / 3.0
    weight = mass * gravity

    def end_constraint(sign: float, name: str) -> Constraint:
        # sign -1: end A (y - s sin phi), +1: end B (y + s sin phi)
        return Constraint(
            gap=lambda t, q: q[1] + sign * s * np.sin(q[2]),
            gradient=lambda t, q: np.array([0.0, 1.0, sign * s * np.cos(q[2])]),
            friction=friction,
            name=name,
            tangent=lambda t, q: np.array([[1.0, 0.0, sign * s * np.sin(q[2])]]),
        )

    return ConstrainedSystem(
        [0.0, s * np.sin(phi0), phi0],
        [velocity, 0.0, 0.0],
        mass=np.diag([mass, mass, inertia]),
        force=lambda t, q, u: np.array([0.0, -weight, 0.0]),
        constraints=[end_constraint(-1.0, "end A"), end_constraint(1.0, "end B")],
        restitution=restitution,
        potential=lambda t, q: weight * q[1],
        drawing={"kind": "rod", "adapter": "rod", "half_length": s},
    )
