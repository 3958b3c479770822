"""Mass flow through a plane: a hopper's discharge rate.

Between two recorded frames a sphere whose centre went from the side a plane's
normal ``n`` points away from to the side it points to carried its mass across the
plane in the direction of ``n``; one that went back carried it the other way. The
mean mass flow rate over the interval is their signed mass over its duration::

    Q = sum_i m_i [s_i(t_1) - s_i(t_0)] / 2 / (t_1 - t_0),    s_i = sign(n . (q_i - p))   (kg/s)

A sphere that crosses and comes back within the interval is not seen; record
frames often enough that none travels farther than its distance to the plane.
Spheres are matched by index; when the count changes (spheres added), only the
indices present in both frames count.
"""

from __future__ import annotations

import numpy as np

from .forces import sphere_masses


def _side(positions, point, normal) -> np.ndarray:
    return np.sign((np.asarray(positions, float).reshape(-1, 3) - point) @ normal)


def mass_flow(trajectory, point, normal) -> tuple[np.ndarray, np.ndarray]:
    """``(t (F - 1,), Q (F - 1,))``: the middle of each interval between frames (s) and
    the mass flow rate across the plane through ``point`` with ``normal`` (kg/s)."""
    point, normal = np.asarray(point, float), np.asarray(normal, float)
    if point.shape != (3,) or normal.shape != (3,) or not np.linalg.norm(normal) > 0.0:
        raise ValueError(
            f"normal: expected a point (3,) and a non-zero normal (3,), got {point.tolist()} and {normal.tolist()}"
        )
    normal = normal / np.linalg.norm(normal)
    t = np.asarray(trajectory.t, float)
    rates = np.zeros(max(len(t) - 1, 0))
    for k in range(len(t) - 1):
        before, after = trajectory.positions[k], trajectory.positions[k + 1]
        n = min(len(before), len(after))
        masses = sphere_masses(trajectory, k + 1)[:n]
        crossed = 0.5 * (_side(after[:n], point, normal) - _side(before[:n], point, normal))
        rates[k] = float(masses @ crossed) / (t[k + 1] - t[k])
    return 0.5 * (t[1:] + t[:-1]), rates
