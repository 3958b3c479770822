"""Which recorded contacts are active: an impulse above the solver's noise level,
judged from the frame alone (the tolerances of `granular.tolerances`)."""

from __future__ import annotations

import numpy as np

from ..tolerances import COMPLEMENTARITY_TOLERANCE


def noise_impulse(trajectory, k: int) -> float:
    """The impulse (N s) below which a multiplier of frame ``k`` is solver noise.

    The projection accepts an answer whose natural residual ``min(W_kk lambda_k,
    s_k)`` is below ``COMPLEMENTARITY_TOLERANCE * scale`` (`granular.tolerances`),
    ``scale`` the velocity scale of the step (`granular.contact.projection`: about the largest
    ``|G v|``, twice the fastest predicted speed ``|u| + |g| dt`` for a pair). A
    multiplier with ``W_kk lambda_k`` below that changes no velocity beyond what the
    solver guarantees: it is zero. ``1 / W_kk`` is at most the largest mass (a
    sphere against a wall), so the bound is ``COMPLEMENTARITY_TOLERANCE * scale *
    max(m)``: 1e-10 N s for 10 g spheres at 1 cm/s, a millionth of a resting
    sphere's ``m g dt``. Without masses (a constrained system, whose ``W`` is not
    stored) the bound is that fraction of the frame's largest impulse.

    Such noise (1e-136 N s, ~6 % of the positive multipliers of a pile) made the
    multiplier histogram span 130 decades and counted as active contacts.
    """

    impulses = np.asarray(trajectory.contacts[k].impulse, float) if k < len(trajectory.contacts) else np.zeros(0)
    masses = trajectory.meta.get("masses")
    if trajectory.system.get("kind") != "spheres" or not masses:
        return COMPLEMENTARITY_TOLERANCE * float(impulses.max(initial=0.0))
    dt = float(trajectory.meta.get("dt", 0.0))
    gravity = float(np.linalg.norm(trajectory.system.get("gravity") or np.zeros(3)))
    speeds = np.linalg.norm(np.asarray(trajectory.velocities[k], float).reshape(-1, 3), axis=1)
    speeds = speeds[np.isfinite(speeds)]  # a run with inlets or outlets stores NaN for absent spheres
    scale = 2.0 * (float(speeds.max(initial=0.0)) + gravity * dt)
    return COMPLEMENTARITY_TOLERANCE * scale * float(np.max(masses))


def active(trajectory, k: int) -> np.ndarray:
    """Boolean mask of the active contacts of frame ``k``: impulse above `noise_impulse`."""
    impulses = np.asarray(trajectory.contacts[k].impulse, float)
    return impulses > noise_impulse(trajectory, k)


def active_counts(trajectory) -> np.ndarray:
    """Number of active contacts (impulse above `noise_impulse`) of each frame."""
    return np.array([int(np.count_nonzero(active(trajectory, k))) for k in range(len(trajectory.contacts))], int)
