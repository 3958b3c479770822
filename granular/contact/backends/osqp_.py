"""OSQP on the multiplier (dual) form of the metric projection.

For ``min 1/2 |u - v|_M^2 s.t. G u >= b`` the multipliers solve

    min_{lambda >= 0}  1/2 lambda^T W lambda + lambda^T (G v - b),   W = G M^{-1} G^T

and ``u = v + M^{-1} G^T lambda``. W is sparse (m x m, a row couples the contacts
that share a body) and the only constraint is a bound. On the full row set of a
10,000-sphere box (`benchmarks/qp_forms.py`) the two forms cost about the same,
both dominated by OSQP's factorisation; what makes the step fast is solving only
the rows that matter (constraint generation in
`granular.contact.projection.project`), and there the multiplier form's unknowns
are exactly those rows (figures in benchmarks/README.md, `qp_forms.py`). The
velocity form is kept (``form="velocity"``) for that benchmark.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
import osqp
import scipy.sparse as sp

from ...tolerances import OSQP_EPS, OSQP_MAX_ITER
from . import BackendResult

_STATUS = {
    osqp.SolverStatus.OSQP_SOLVED: "solved",
    osqp.SolverStatus.OSQP_SOLVED_INACCURATE: "inaccurate",
    osqp.SolverStatus.OSQP_PRIMAL_INFEASIBLE: "infeasible",
    osqp.SolverStatus.OSQP_PRIMAL_INFEASIBLE_INACCURATE: "infeasible",
    osqp.SolverStatus.OSQP_DUAL_INFEASIBLE: "infeasible",
    osqp.SolverStatus.OSQP_DUAL_INFEASIBLE_INACCURATE: "infeasible",
    osqp.SolverStatus.OSQP_MAX_ITER_REACHED: "not_converged",
    osqp.SolverStatus.OSQP_TIME_LIMIT_REACHED: "not_converged",
}

SETTINGS = dict(max_iter=OSQP_MAX_ITER, polishing=True, verbose=False, eps_prim_inf=1e-10, eps_dual_inf=1e-10)


@contextlib.contextmanager
def _c_stdout_silenced():
    """Silence OSQP's C-level polishing notices, which ignore ``verbose=False``."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def _status(result) -> str:
    return _STATUS.get(result.info.status_val, str(result.info.status))


def solve(problem, warm_start: np.ndarray | None = None, form: str = "dual", eps: float = OSQP_EPS) -> BackendResult:
    """Solve ``problem`` (a `granular.contact.problem.ContactProblem`); see the module docstring."""
    if form == "velocity":
        return _solve_velocity_form(problem, eps)
    W = problem.delassus()
    c = problem.jacobian @ problem.predicted - problem.lower
    m = c.size
    # Unit-free problem: lambda = D mu v_ref with D = diag(W)^(-1/2), so that the
    # scaled Delassus matrix has a unit diagonal and the linear term is O(1).
    D = 1.0 / np.sqrt(np.maximum(W.diagonal(), np.finfo(float).tiny))
    v_ref = max(float(np.abs(c).max()), np.finfo(float).tiny)
    scaled = sp.diags(D) @ W @ sp.diags(D)
    solver = osqp.OSQP()
    solver.setup(
        sp.triu(scaled, format="csc"),
        D * c / v_ref,
        sp.identity(m, format="csc"),
        np.zeros(m),
        np.full(m, np.inf),
        eps_abs=eps,
        eps_rel=eps,
        **SETTINGS,
    )
    if warm_start is not None:
        solver.warm_start(x=np.maximum(warm_start, 0.0) / (D * v_ref))
    with _c_stdout_silenced():
        result = solver.solve(raise_error=False)
    impulses = np.maximum(np.nan_to_num(result.x), 0.0) * D * v_ref
    return BackendResult(impulses, _status(result), int(result.info.iter))


def _solve_velocity_form(problem, eps: float) -> BackendResult:
    M = (
        sp.csc_matrix(problem.metric.matrix())
        if not hasattr(problem.metric, "diagonal")
        else sp.diags(problem.metric.diagonal, format="csc")
    )
    G = sp.csc_matrix(problem.jacobian)
    solver = osqp.OSQP()
    solver.setup(
        sp.triu(M, format="csc"),
        -(M @ problem.predicted),
        G,
        problem.lower,
        np.full(problem.lower.size, np.inf),
        eps_abs=eps,
        eps_rel=eps,
        **SETTINGS,
    )
    with _c_stdout_silenced():
        result = solver.solve(raise_error=False)
    # OSQP's y is the multiplier of l <= G u: negative on an active lower bound.
    impulses = np.maximum(-np.nan_to_num(result.y), 0.0)
    return BackendResult(impulses, _status(result), int(result.info.iter))
