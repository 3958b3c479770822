"""A projection on which whole-block active-set exchanges stall: a compacting pile
with nearly redundant contacts, captured from Siconos' box (3,375 spheres of 1 kg,
seed 0, step 196 of 1 ms, 14,925 rows; `benchmarks/stress.py`).

On such a pile the weakly regularised block ``W_AA + rho D_A`` (rho = 1e-8) is
nearly singular and its solutions swing along soft directions: the primal-dual
exchanges, which flip every wrong row at once, re-grow a few wrong rows to dozens
and give up. The primal rounds, whose ratio test keeps the impulses feasible and
the objective from rising, answer the step from the same start, with neither the
continuation, the jam check nor the OSQP fallback."""

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from granular.contact import active_set, delassus_rows
from granular.contact.kkt import kkt_holds
from granular.metric import DiagonalMetric


def stalled_pile():
    """``(rows, keys, warm, feasibility, complementarity)`` of the captured step; the
    spheres' masses are 1 kg, so the Jacobian is ``H = G M^{-1/2}`` itself."""
    data = np.load(Path(__file__).parent / "data" / "stalled_compacting_pile.npz")
    G = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
    rows = delassus_rows.DelassusRows(DiagonalMetric(np.ones(G.shape[1])), G, data["c"])
    return rows, data["keys"], data["warm"], float(data["feasibility"]), float(data["complementarity"])


def test_whole_block_exchanges_give_up_on_the_captured_pile():
    """The primal-dual exchanges at `RHO`, from the start the plain level takes
    (the predicted working set, centred on the previous impulses without their
    self-stress), stall and give up: the case the primal rounds are for."""
    rows, keys, warm, feasibility, complementarity = stalled_pile()

    def accepted(impulses, slack):
        return kkt_holds(slack, impulses, rows.diagonal, feasibility, complementarity)

    context = active_set.SolveContext(
        rows, keys, accepted, feasibility, active_set.Workspace(), active_set.ActiveSetStats()
    )
    impulses = np.where(warm * rows.diagonal > feasibility, warm, 0.0)
    active = active_set.predicted_active(rows, impulses, feasibility)
    reference = active_set.without_self_stress(context, impulses, active, active_set.RHO)
    assert active_set.exchange_rounds(context, active_set.RHO, impulses, active, reference) is None


def test_the_ratio_step_keeps_feasibility_and_never_raises_a_convex_objective():
    """`active_set.ratio_step` towards the minimiser of random strictly convex
    quadratics: the point stays >= 0, at least one blocking entry reaches zero, and
    the objective does not rise (to round-off: 64 eps of the objective's scale)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(2, 12))
        root = rng.normal(size=(k, k))
        matrix = root @ root.T + 1e-3 * np.eye(k)
        current = np.abs(rng.normal(size=k)) * (rng.random(k) < 0.7)
        right = rng.normal(size=k)
        target = np.linalg.solve(matrix, right)
        if not (target < 0.0).any():
            continue

        def objective(x):
            return 0.5 * x @ matrix @ x - right @ x

        moved, leaving = active_set.ratio_step(current, target)
        assert moved.min() >= 0.0
        assert leaving.any() and np.all(moved[leaving] == 0.0) and np.all(target[leaving] < 0.0)
        scale = abs(objective(current)) + abs(objective(target)) + 1.0
        assert objective(moved) <= objective(current) + 64 * np.finfo(float).eps * scale


def test_the_primal_rounds_answer_the_captured_pile_to_the_acceptance_tolerances():
    rows, keys, warm, feasibility, complementarity = stalled_pile()

    def accepted(impulses, slack):
        return kkt_holds(slack, impulses, rows.diagonal, feasibility, complementarity)

    workspace = active_set.Workspace()
    impulses = active_set.solve(rows, keys, warm, accepted, feasibility, workspace)
    assert impulses is not None
    # the KKT conditions, recomputed from the rows: l >= 0, s >= -feasibility and
    # the natural residual within the complementarity tolerance (velocity units)
    slack = rows.H @ (rows.H.T @ impulses) + rows.c
    assert impulses.min() >= 0.0 and slack.min() >= -feasibility
    assert np.abs(np.minimum(rows.diagonal * impulses, slack)).max() <= complementarity
    # the pile carries load: most of the 3,375 spheres' weight over a step, m g h each
    assert 0.5 * 3375 * 9.81e-3 < impulses.sum()
    # the plain level answers, with the factor it starts with: 25 rounds and one
    # factorisation here, where the exchanges and the continuation took 87 and 26
    assert workspace.last.factorisations <= 3 and workspace.last.rounds < 60
