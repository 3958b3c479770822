"""`Shapes`: the primitives of one drawn frame, as plain data (no graphics library)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Shapes:
    """Primitives of one frame, all in 3D world coordinates.

    spheres : (k, 3) centres and (k,) radii.
    segments : (s, 2, 3) end points and (s,) tube radii (links, rods, beams).
    planes : list of (point (3,), normal (3,), size) for walls and obstacles,
        ``size`` the half-width drawn.
    scalars : (k,) optional per-sphere values for colouring.
    """

    sphere_centres: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    sphere_radii: np.ndarray = field(default_factory=lambda: np.zeros(0))
    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))
    segment_radii: np.ndarray = field(default_factory=lambda: np.zeros(0))
    planes: list = field(default_factory=list)
    scalars: np.ndarray | None = None
