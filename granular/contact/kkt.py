"""The acceptance test of every contact answer: the KKT conditions of
``min_{l >= 0} 1/2 l^T W l + c^T l`` at the caller's tolerances (velocity units).

Every solver's answer (`granular.contact.active_set`, OSQP, pivoting, the interior point)
passes through `kkt_holds` before `granular.contact.projection` returns it, so no solver is
trusted on its own stopping rule.
"""
from __future__ import annotations

import numpy as np


def accurate(W, c, impulses, feasibility, complementarity) -> bool:
    """`kkt_holds` for the multipliers ``impulses`` of ``(W, c)``."""
    diagonal = np.maximum(W.diagonal(), np.finfo(float).tiny)
    return kkt_holds(W @ impulses + c, impulses, diagonal, feasibility, complementarity)


def kkt_holds(slack, impulses, diagonal, feasibility, complementarity) -> bool:
    """The KKT test of every answer: ``l >= 0``, ``s = W l + c >= -feasibility`` and the
    natural residual ``max_k |min(W_kk l_k, s_k)| <= complementarity`` (velocity units)."""
    if not np.all(np.isfinite(slack)) or -slack.min(initial=0.0) > feasibility or impulses.min(initial=0.0) < 0.0:
        return False
    return float(np.abs(np.minimum(diagonal * impulses, slack)).max(initial=0.0)) <= complementarity


def natural_residual(W, c, impulses, diagonal) -> float:
    """``max_k |min(W_kk l_k, s_k)|`` with ``s = W l + c`` (velocity units)."""
    slack = W @ impulses + c
    return float(np.abs(np.minimum(diagonal * impulses, slack)).max(initial=0.0))
