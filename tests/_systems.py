"""Small systems several test files share."""
from __future__ import annotations

import numpy as np

import granular as gr


def exploding_spring(stiffness: float = 1e8) -> gr.ConstrainedSystem:
    """A spring of ``stiffness`` (N/m) on 1 kg starting at q = 0.5 m, with a constraint
    that never acts (gap 1e300 - q): stepped explicitly with dt = 1e-3 s (omega dt = 10
    for 1e8 N/m, far past the stability limit 2) it grows about 100-fold a step until
    it overflows."""
    return gr.ConstrainedSystem([0.5], [0.0], mass=[[1.0]], force=lambda t, q, u: -stiffness * q,
                                constraints=[gr.Constraint(gap=lambda t, q: 1e300 - q[0],
                                                           gradient=lambda t, q: np.array([-1.0]))])
