"""A projection whose active-set exchanges stall: a compacting pile with nearly
redundant contacts, captured from Siconos' box (3,375 spheres of 1 kg, seed 0,
step 196 of 1 ms, 14,925 rows; `benchmarks/stress.py`).

On such a pile the weakly regularised block ``W_AA + rho D_A`` (rho = 1e-8) is
nearly singular, its solutions swing along soft directions and the exchange rule
wanders; the continuation's strongly regularised levels settle the set in a few
rounds, each level is offered to the acceptance test, and the answer needs
neither the jam check nor the OSQP fallback."""
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from granular.contact import active_set
from granular.contact.kkt import kkt_holds
from granular.metric import DiagonalMetric


def stalled_pile():
    """``(rows, keys, warm, feasibility, complementarity)`` of the captured step; the
    spheres' masses are 1 kg, so the Jacobian is ``H = G M^{-1/2}`` itself."""
    data = np.load(Path(__file__).parent / "data" / "stalled_compacting_pile.npz")
    G = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
    rows = active_set.DelassusRows(DiagonalMetric(np.ones(G.shape[1])), G, data["c"])
    return rows, data["keys"], data["warm"], float(data["feasibility"]), float(data["complementarity"])


def test_the_exchanges_stall_without_the_stall_rule_and_the_continuations_levels(monkeypatch):
    """The weakly regularised level alone, retried through the former continuation
    (1e-2, 1e-4, 1e-6, 1e-8, the last level alone offered to the acceptance test),
    with no stall rule and the former exchange rule, runs out of rounds: the case
    the stall rule, the exchange rule and the continuation's levels are for."""
    rows, keys, warm, feasibility, complementarity = stalled_pile()
    monkeypatch.setattr(active_set, "STALL_ROUNDS", active_set.MAX_ROUNDS)
    monkeypatch.setattr(active_set, "CONTINUATION", (1e-2, 1e-4, 1e-6, active_set.RHO))
    monkeypatch.setattr(active_set, "MAX_BISECTIONS", 0)
    original = active_set.proximal_rounds

    def last_level_only(*args, max_updates=active_set.MAX_PROXIMAL, last=True, **kwargs):
        # the former continuation: no proximal update and no acceptance before its last level
        outcome = original(*args, max_updates=max_updates if last else 0, last=last, **kwargs)
        if outcome is not None and not last:
            return outcome[0], outcome[1], False
        return outcome

    monkeypatch.setattr(active_set, "proximal_rounds", last_level_only)

    class FormerExchangeRule(active_set.ExchangeRule):
        """Whole-block flips again after every new fewest count (Judice and Pires)."""

        def rows_to_flip(self, wrong):
            count = int(wrong.sum())
            if count < self.fewest:
                self.fewest, self.grace, self.since_fewest = count, self.PATIENCE, 0
                return wrong
            self.since_fewest += 1
            if self.grace > 0:
                self.grace -= 1
                return wrong
            flip = np.zeros_like(wrong)
            flip[np.flatnonzero(wrong)[-1]] = True
            return flip

    monkeypatch.setattr(active_set, "ExchangeRule", FormerExchangeRule)

    def accepted(impulses, slack):
        return kkt_holds(slack, impulses, rows.diagonal, feasibility, complementarity)

    assert active_set.solve(rows, keys, warm, accepted, feasibility) is None


def test_the_continuation_answers_the_captured_pile_to_the_acceptance_tolerances():
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
    assert workspace.last.rounds < active_set.MAX_ROUNDS
