"""cvxpy on the velocity form: an independent reference, not on the hot path.

    min_u 1/2 (u - v)^T M (u - v)   s.t.   G u >= b

solved by an interior-point solver (Clarabel by default). The multipliers are the
duals of the constraints. cvxpy is imported here only, so the core runs without it.
"""

from __future__ import annotations

import numpy as np

from . import BackendResult


def solve(problem, warm_start=None, solver_name: str = "CLARABEL") -> BackendResult:
    import cvxpy as cp

    d = problem.predicted.size
    u = cp.Variable(d)
    delta = u - problem.predicted
    metric = problem.metric
    if hasattr(metric, "diagonal"):
        objective = 0.5 * cp.sum(cp.multiply(metric.diagonal, cp.square(delta)))
    else:
        objective = 0.5 * cp.quad_form(delta, cp.psd_wrap(metric.matrix()))
    constraint = problem.jacobian @ u >= problem.lower
    qp = cp.Problem(cp.Minimize(objective), [constraint])
    try:
        qp.solve(solver=solver_name)
    except cp.error.SolverError:
        return BackendResult(np.zeros(problem.lower.size), "not_converged")
    if qp.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        return BackendResult(np.zeros(problem.lower.size), "infeasible")
    if qp.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        return BackendResult(np.zeros(problem.lower.size), "not_converged")
    impulses = np.maximum(np.asarray(constraint.dual_value, dtype=float).reshape(-1), 0.0)
    return BackendResult(impulses, "solved" if qp.status == cp.OPTIMAL else "inaccurate")
