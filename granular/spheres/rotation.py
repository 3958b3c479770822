"""Orientations of turning spheres: unit quaternions and their exact rotation.

Each sphere of a `granular.spheres.world.SphereWorld` carries an orientation, a unit
quaternion ``(w, x, y, z)`` taking body axes to world axes. The scheme integrates it
from the angular velocity of each step (`rotate_quaternions`), the exact rotation of
angle ``|omega| h`` about ``omega``.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..validation import finite_array

#: A given orientation quaternion may differ from unit length by this much (it is
#: then normalised); farther is an input error (not a rotation).
QUATERNION_TOLERANCE = 1e-6


def identity_quaternions(n: int) -> np.ndarray:
    """``n`` identity orientations (n, 4)."""
    identity = np.zeros((n, 4))
    identity[:, 0] = 1.0
    return identity


def unit_quaternions(orientations, n: int) -> np.ndarray:
    """Orientations (N, 4) as unit quaternions ``(w, x, y, z)``: identity when None;
    given ones normalised if within `QUATERNION_TOLERANCE` of unit length."""
    if orientations is None:
        return identity_quaternions(n)
    orientations = finite_array(orientations, "orientations", (n, 4))
    norms = np.linalg.norm(orientations, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > QUATERNION_TOLERANCE)
    if bad.size:
        raise InvalidInputError(
            f"orientations must be unit quaternions (w, x, y, z): entry {bad[0]} has length {norms[bad[0]]:.6g}"
        )
    return orientations / norms[:, None]


def rotate_quaternions(orientations: np.ndarray, omega: np.ndarray, h: float) -> np.ndarray:
    """Orientations (N, 4) turned by the exact rotation of angle ``|omega| h`` about
    ``omega / |omega|`` (``omega`` (N, 3) rad/s in the world frame, ``h`` s):
    ``q <- (cos(a/2), sin(a/2) omega/|omega|) q``, renormalised against round-off."""
    speed = np.linalg.norm(omega, axis=1)
    half = 0.5 * h * speed
    scale = np.where(speed > 0.0, np.sin(half) / np.where(speed > 0.0, speed, 1.0), 0.0)
    dw, dv = np.cos(half), scale[:, None] * omega
    w, v = orientations[:, 0], orientations[:, 1:]
    turned = np.column_stack(
        [dw * w - np.einsum("ka,ka->k", dv, v), dw[:, None] * v + w[:, None] * dv + np.cross(dv, v)]
    )
    return turned / np.linalg.norm(turned, axis=1)[:, None]
