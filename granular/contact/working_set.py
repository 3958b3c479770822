"""Constraint generation: the one working-set loop of every contact solver.

The neighbour search proposes every pair that could touch within a step; in a
dense pile most of those rows are satisfied by the answer with a zero multiplier.
Each contact solver (the frictionless projection's OSQP path, `granular.contact.projection`,
and the frictional ones, `granular.contact.friction`) therefore solves its problem on a
working set of rows: the rows the prediction violates and the rows that pushed at
the previous step. Rows the answer violates join, and the set is solved again,
until no row outside it is violated. Rows left out are then satisfied with zero
multipliers, so the answer satisfies the conditions of the full problem
(constraint generation, as in cutting-plane methods: Kelley, *The cutting-plane
method for solving convex programs*, J. SIAM, 1960).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypeVar

import numpy as np

Answer = TypeVar("Answer")


@dataclass(frozen=True)
class RoundAnswer:
    """One round's answer on a subset of rows, spread to all m rows.

    velocities : (d,) the velocities ``u`` its impulses give.
    slack : (m,) ``G u - b`` (velocity units; negative on a violated row).
    impulses : (m,) normal impulses (N s), zero on the rows left out, or None when
        the solver keeps them itself (the sphere sweeps).
    status : the method that found it (`ContactSolution.status`).
    tangential : (m, s) friction impulses (N s), or None.
    """

    velocities: np.ndarray
    slack: np.ndarray
    impulses: np.ndarray | None = None
    status: str = ""
    tangential: np.ndarray | None = None


def grow(
    working: np.ndarray,
    solve: Callable[[np.ndarray], Answer],
    violated: Callable[[Answer], np.ndarray],
    max_rounds: int,
    *,
    joins: Callable[[Answer], np.ndarray] | None = None,
    full_last: bool = False,
) -> tuple[Answer, np.ndarray]:
    """Solve on a growing working set; returns ``(answer, working)``.

    working : (m,) bool, the first working set (not modified).
    solve : ``rows -> answer`` for the sorted row indices ``rows``, the answer
        carrying whatever the caller needs (multipliers and velocities of all m rows).
    violated : ``answer -> (m,) bool``, the rows the answer violates beyond the
        caller's tolerance; the loop ends when none of them lies outside the set.
    max_rounds : rounds on the working set before giving up on it.
    joins : ``answer -> (m,) bool``, the rows that join the set after a round that
        left rows violated (default: the violated rows outside it). Joining every
        row with a negative slack, tolerance or not, saves rounds when many rows sit
        at the boundary.
    full_last : after ``max_rounds`` rounds that did not settle, solve all m rows
        once; without it the last answer is returned as it is.
    """
    m = working.size
    rounds = max_rounds + 1 if full_last else max_rounds
    answer = None
    for round_ in range(rounds):
        every_row = full_last and round_ == max_rounds
        answer = solve(np.arange(m) if every_row else np.flatnonzero(working))
        if every_row:
            break
        wrong = violated(answer)
        outside = ~working & wrong
        if not outside.any():
            break
        working = working | (outside if joins is None else joins(answer))
    return answer, working


def grow_until_feasible(
    working: np.ndarray, solve: Callable[[np.ndarray], RoundAnswer], feasibility: float, max_rounds: int
) -> RoundAnswer:
    """`grow` with the rule of the refined rounds of the contact solvers; returns the
    last answer.

    A row is violated when its slack ``G u - b`` is below ``-feasibility`` (velocity
    units); after a round that left one outside the set, every row with a negative
    slack joins; after ``max_rounds`` rounds that did not settle, all m rows are
    solved once.
    """
    answer, _ = grow(
        working,
        solve,
        lambda answer: answer.slack < -feasibility,
        max_rounds,
        joins=lambda answer: answer.slack < 0.0,
        full_last=True,
    )
    return answer
