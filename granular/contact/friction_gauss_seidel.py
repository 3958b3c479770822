"""Nonsmooth Gauss-Seidel for the 3D Coulomb-Maury law of spheres.

Solves the law (N)-(T) of `granular.contact.friction` contact by contact, as Moreau and
Jean's contact dynamics codes do (LMGC90, Siconos' NSGS): each contact in turn
takes the impulse that satisfies the law *exactly* for the velocity the other
contacts leave it, and sweeps repeat until no contact would change its impulse.

Notation (``m`` contacts, ``d`` coordinates, ``p`` the widest support of a
contact's rows): contact ``k`` has the normal row ``G_k`` and two tangent rows
``T_k`` (``H_k``, 3 x d, sparse), the impulse ``r_k = (l_N, l_T1, l_T2)`` (N s)
and the local velocity ``U_k = H_k u + (D_k / h, 0, 0)`` (m/s), ``u = v + M^{-1}
sum_k H_k^T r_k``.

The local problem. With a diagonal metric whose local Delassus block is
``W_kk = H_k M^{-1} H_k^T = diag(w_k, v_k, v_k)`` (normal decoupled from an
isotropic tangential block), the friction impulse of a contact does not move its
own normal velocity. Spheres have such blocks: without rotation ``w = v = 1/m_i +
1/m_j`` for a pair, ``1/m_i`` for a wall (the normal and the tangents are
orthonormal); turning spheres add ``r_i^2/J_i + r_j^2/J_j`` (``r_i^2/J_i`` on a
wall) to ``v`` only, because a normal row has no rotational part and the
rotational parts ``r (n x t_a)`` of the two tangents are orthogonal and of equal
length. The law for ``r_k`` given ``b = U_k - W_kk r_k`` (the velocity without its
own impulse) then has a closed form::

    l_N = max(0, -b_N / w)
    l_T = -b_T / v, scaled onto the disc |l_T| <= mu l_N when outside it

(inside the disc the contact sticks, ``U_T = 0``; on its boundary it slides with
``U_T = b_T (1 - v mu l_N / |b_T|)``, against ``l_T``). Frictionless rows
(``mu = 0``) keep ``l_T = 0``.

Compiled sweeps. A sweep is a loop over the contacts in compiled code
(`granular.contact.sweep_kernels`, numba: five times the numpy sweeps it replaced, whose
cost was interpreter overhead). The contacts are visited colour after colour
(`colour_classes`: no two contacts of a colour share a coordinate, so a colour's
updates do not see each other, the order the vectorised sweeps had); the answer
is deterministic.

Stopping, and what the answer guarantees. The natural residual ``e_k = |W_kk
(r_k^local - r_k)|`` (m/s), where ``r_k^local`` is the exact local answer at the
current velocities, is what accepts an answer: `granular.contact.kkt.coulomb_residual`
defines it, the compiled kernels compute the same quantity in the sweeps' loop
(`tests/test_kkt.py` checks that both agree). Every second sweep it is checked
against the tolerance. Computing it for all contacts costs two thirds of a sweep,
so between measurements (made every fifth check, whenever the estimate is within the
tolerance, and at the last sweep allowed) it is estimated: each sweep returns the
largest ``e_k`` met at a visit, and the estimate scales it by the ratio of the last
measurement to its own estimate. Only a measured residual accepts. When ``max_k
e_k <= tolerance`` (and the loaded contacts are within the aim of it in root mean
square, `TARGET`) the returned impulses satisfy, at every contact: the cone
``|l_T| <= mu l_N`` and ``l_N >= 0`` exactly (every local answer lies in the
cone), and (N) and (T) up to ``tolerance`` in velocity units (``U_k`` is within
``e_k`` of the velocity of an exact local solution). Otherwise
`ConvergenceError` names the worst contact. Convergence of the sweeps is not
guaranteed in theory (the Coulomb problem is not a convex program), and it is
linear and slow in deep piles (a rate of about 0.97 a sweep in the sand pile).
What is slow in a deep pile is Coulomb's coupling of a sliding contact's friction to
its normal impulse, not its stick/slip pattern. On the same piles of 1,000 and 8,000
spheres the normal law by itself (mu = 0) takes 40-56 sweeps at either size, and the
frictional law with each contact's status and each sliding contact's friction held at
its answer's (a linear system) 46-106, while the solves themselves take 76-860. With the
statuses alone held the sweeps are no faster, and diverge on three of the deep box's
five steps; with the sliding friction's direction held and its size ``mu l_N``
following the normal impulse, they diverge on its two late steps, with or without
momentum. The coupling makes the sweeps' map non-symmetric, and in a deep pile that map
has growing modes, which the law's own sweeps stop only as contacts leave the statuses
on which the modes grow (a sliding contact opening or sticking), a few a sweep
(`benchmarks/pattern_fixed.py`; benchmarks/README.md, "what the deep box's sweeps pay
for"). The sticking network's rows are also worse conditioned (self-stressed loops,
nearly singular modes, a bulk 8-28 times worse conditioned than the normal law's,
worsening with depth), which from the steps' warm starts costs the sweeps little
(benchmarks/README.md, `sweep_trace.py --spectrum` and "the sweeps' growth with
depth"). Where the current stick/slip pattern has no solution the sweeps drift, and
`solve` jumps along the drift (its docstring). Figures: see `scenes/sand_pile.py`.

Momentum. Each sweep starts from Nesterov's extrapolation of the last two
sweeps' impulses, its size the ratio of their fixed-point residuals, restarted
when that residual grows by more than `MOMENTUM_RESTART` (`_Momentum`): every
measured iterate is still a sweep's output, so what an accepted answer guarantees
is unchanged. It halves the sweeps a step takes in the settling frictional box and
the rotating drum.

Stalls of turning spheres, and the Newton hand-over. Among spheres that turn,
the sweeps can stall for good although the law has a solution nearby: in the
sand pile's stream (t = 0.534 s) and the 3D pour of `benchmarks/rotation_speed.py`
(t = 0.192 s) the residual wandered between 2 and 18 times the tolerance for
5,000 sweeps (a limit cycle of about 1,500 sweeps in 3D, a steady drift in the
slot), with the kinetic energy constant to 1e-5 and only 6 of the 41 offending
contacts ever changing status: the sweeps circle in one stick/slip pattern whose
linearised Gauss-Seidel iteration does not contract (sliding contacts make it
non-symmetric; each tangential impulse now also turns both spheres, coupling a
contact to all the others of its spheres through ``r^2/J``, 2.5 times the
translational coupling of a solid sphere). The drift is not a self-equilibrated
impulse field alone (``H^T dr = 0``): 60% of it is, 40% moves velocities, and the
residual, in velocity units, does not fall. A regularised semismooth Newton
method on the same law (`granular.contact.coulomb_newton`) from the stalled impulses reaches 0.002-0.04
times the tolerance in 3-20 linear solves, so `solve` hands over to it after
`_first_newton_wait` checks without progress; one sweep from its answer makes every
impulse a local answer again, accepted by the same residual test as the sweeps'
(otherwise the sweeps go on from there).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConvergenceError
from .coulomb_newton import VARIANTS, newton, newton_by_continuation, newton_on_cluster, newton_on_loaded
from .coulomb_rows import SweepRows, add_impulses, contact_residuals, kernels, onto_cones, velocities


def solve(
    rows: SweepRows,
    predicted: np.ndarray,
    start: np.ndarray,
    tolerance,
    max_sweeps: int,
    names=None,
    floor: int | None = None,
    target: float | None = None,
    aim: float | None = None,
) -> tuple[np.ndarray, int, float]:
    """Sweep until the natural residual of every contact is within its tolerance (m/s;
    a number, or one per contact (m,)) and that of the loaded contacts within
    ``target`` (``aim`` when None) of it in root mean square, or until every contact
    is within its tolerance once the sweeps stall (`_accepts`). ``aim`` is the run's
    aim (`TARGET` when None; `granular.contact.problem.ContactProblem.sweep_aim`),
    ``target`` a later working-set round's own level; the Newton repairs aim at a
    quarter of ``aim``.

    ``predicted`` (d,) the velocity ``v``, ``start`` (m, 3) the initial impulses
    (a warm start; projected onto the cones first). Returns ``(r (m, 3), sweeps,
    residual)``, ``sweeps`` every sweep made: the loop's, and the one from each Newton
    answer (`_swept_once`). Raises `ConvergenceError` after ``max_sweeps``, naming the
    time, the worst contact (``names(k)`` describes it) and its residual, and carrying
    the measured iterate nearest its law (``best``) for a caller that goes on; its
    ``iterations`` count the sweeps made as ``sweeps`` does.

    Drift extrapolation: when the residual stalls and successive sweeps change the
    impulses by the same ``delta``, the sweeps are walking along a direction in
    which the current stick/slip pattern has no solution (a closed loop of
    sticking contacts whose gaps ``D/h`` are incompatible by round-off, measured
    in the pile: ``delta`` constant to 1e-9 for thousands of sweeps). Gauss-Seidel
    would walk until an impulse reaches its cone's boundary; the step jumps there
    at once (`_longest_step`) when that is at least `SHORTEST_JUMP` sweeps away.
    This only moves the starting point of the next sweeps: the answer is accepted
    by the residual alone.

    Local repair: at a long stall near the tolerance (`_repair_due`), Newton on the
    contacts that miss their law and their neighbours, the other impulses held
    (`coulomb_newton.newton_on_cluster`); one sweep from its answer, which is returned
    when within the tolerance, and otherwise the sweeps go on and the next repair
    takes a larger cluster. Its factorisations share the budget below. On a captured
    step of a settling box of 3,375 turning spheres (7,291 contacts) the sweeps stalled
    at 1.1-4 times the tolerance for 14,600 sweeps before Newton on the loaded contacts
    (4,924) ended it; repairs of 150-300 contacts end it after about 1,700 sweeps.

    Final repair: sweeps that stop short of the tolerance (a stall without progress, or
    ``max_sweeps``) hand their best iterate to `_final_repair`, local repairs on growing
    clusters, and Newton on the loaded contacts once a cluster passes the local cap,
    within the same ski-rental budget as the Newton hand-over below, and last, on sets
    of at most `REPAIR_MOST_CONTACTS` contacts, Newton on every contact from the solve's
    start, within as much again, then Newton along a path in the friction coefficients
    from the frictionless law, within `CONTINUATION_SWEEPS` times the sweeps made
    (`_newton_from_start`); its answer is returned when within the tolerance, and is the
    error's ``best`` otherwise when nearer the law.

    Stopping a stall: the sweeps end once the best measured residual has not fallen by
    10% (`PROGRESS`) for as many sweeps as came before that best, and at least
    ``floor`` sweeps (`NO_PROGRESS_FLOOR` when None; a run passes `stall_floor` of its
    recent steps) and `SMALLEST_STALL_VISITS` contact visits (`effective_floor`): the
    ski-rental rule of the Newton budget below, applied to
    the sweeps themselves, so that a stall costs at most about twice the work that
    reached it. The best iterate is then returned if within the tolerance, else
    `ConvergenceError` carries it. On Siconos' box of 3,375 turning spheres (mu = 0.5,
    seed 1) a stall wandered at 2.03 tolerances for 20,000 sweeps and 31 Newton calls
    (17 s) without a new low; it now ends after about 4,000 sweeps with that same best
    (benchmarks/README.md, `stress.py`).

    Newton hand-over: after `_first_newton_wait` residual checks without a 10%
    decrease (and `NEWTON_RETRY` checks after an attempt), `coulomb_newton.newton_on_loaded` starts from the current
    impulses, with a budget: the Newton calls' factorisations together cost no more
    than the sweeps made so far plus one factorisation (`factorisation_cost`), so a
    stall whose Newton steps do not help costs at most about twice its sweeps (the
    ski-rental bound again, now on every call: on a stall of a settling layer of 1,000
    turning spheres, calls every `NEWTON_RETRY` checks made 1,361 factorisations, 363
    s, for answers no better than the sweeps'); after one sweep from its answer (so that every impulse is a local
    answer again) the impulses are returned when their residual is within the
    tolerance (the stalled-sweeps criterion above); otherwise the sweeps go on
    from there if Newton did better than them (module docstring).
    """
    m = rows.cols.shape[0]
    tolerance = np.broadcast_to(np.asarray(tolerance, dtype=float), (m,))
    floor = effective_floor(floor, m)
    aim = TARGET if aim is None else aim
    target = aim if target is None else target
    r = onto_cones(rows, start)  # a copy: ``start`` stays as given, for `_newton_from_start`
    u = velocities(rows, predicted, r)
    compiled = rows.compiled
    scale = compiled.visit_scale(tolerance)
    history, previous, newton_at, newton_wait = [], None, 0, _first_newton_wait(m)
    progressed_at = 0  # the sweep of the last measured residual 10% below the best before it
    best_ratio, best = np.inf, None  # the measured iterate nearest its law, kept if none is accepted
    estimate, calibration = None, 1.0  # the residual's estimate (below)
    accelerated = _Momentum(r, u)
    newton_work = 0.0  # the Newton calls' factorisations so far, in sweeps (`factorisation_cost`)
    cluster, repaired_at = np.zeros(m, dtype=bool), 0  # the local repairs' contacts, and the last one's check
    repair_every = REPAIR_EVERY  # checks between repairs, doubled after each repair that misses
    extra = 0  # the sweeps made from a Newton answer (`_swept_once`), beside the loop's own
    for sweep in range(max_sweeps + 1):
        check = sweep % CHECK_EVERY == 0 or sweep == max_sweeps
        if check:
            # The last sweep's largest residual at a visit, scaled by the last ratio
            # of the residual to it, stands in for the residual between measurements:
            # the pass over the contacts that the residual costs (two thirds of a
            # sweep) is made at the checks that test for a drift, and to confirm an answer.
            history.append(None if estimate is None else calibration * estimate)
            measured = estimate is None or history[-1] <= 1.0 or _drift_check(len(history)) or sweep == max_sweeps
            if measured:
                residual = contact_residuals(rows, u, r)
                levels = residual / tolerance  # in units of each tolerance
                history[-1] = levels.max(initial=0.0)
                if history[-1] < best_ratio:
                    if history[-1] < PROGRESS * best_ratio:
                        progressed_at = sweep
                    best_ratio, best = history[-1], r.copy()
                if estimate is not None and estimate > 0.0:
                    calibration = history[-1] / estimate
                if _accepts(history, levels, r, target):
                    return r, sweep + extra, float(residual.max(initial=0.0))
            if (
                accelerated.enabled
                and sweep >= MOMENTUM_PATIENCE
                and history[-1] <= MOMENTUM_STALL
                and _no_new_low(history)
            ):
                # A long stall near the tolerance: plain sweeps from the best iterate (`_Momentum`).
                accelerated.stop()
                r = best.copy()
                u = velocities(rows, predicted, r)
                estimate = None
        if sweep == max_sweeps:
            break
        if check and sweep - progressed_at > max(floor, progressed_at):
            # A stall that made no progress for as long as the sweeps took to reach it.
            max_sweeps = sweep
            break
        # The change of the impulses is needed only by the drift test of the checks that
        # make it (`_drift_check`): at such a check and at the sweep before it.
        next_check = (sweep + 1) % CHECK_EVERY == 0 or sweep + 1 == max_sweeps
        tracked = (check and _drift_check(len(history))) or (next_check and _drift_check(len(history) + 1))
        before = r.copy() if tracked else None
        accelerated.extrapolate(r, u)
        estimate, change = compiled.sweep(u, r, scale)
        accelerated.judge(change)
        delta = r - before if tracked else None
        if check and delta is not None and _drifting(history, delta, previous):
            jumped = _extrapolate(rows, u, r, delta, float(residual.max(initial=0.0)))
            if jumped is not r:
                r, estimate = jumped, None
                accelerated.restart()
        if check and _repair_due(history, len(history) - repaired_at, repair_every):
            # A stall near the tolerance: Newton on the contacts that miss their law and
            # their neighbours (`coulomb_newton.newton_on_cluster`), the cluster growing
            # from one repair to the next.
            repaired_at = len(history)
            grown = cluster | rows.neighbourhood(contact_residuals(rows, u, r) > tolerance, REPAIR_HOPS)
            members = np.flatnonzero(grown)
            if np.any(grown != cluster) and members.size <= _repair_cap(m):
                cluster = grown
                r, ratio, work = newton_on_cluster(
                    rows, u, r, members, tolerance, 0.25 * aim, budget=sweep - newton_work
                )
                newton_work += work
                if ratio > 1.0:
                    repair_every *= 2
                r, u, residual = _swept_once(rows, predicted, r)
                extra += 1
                if (residual / tolerance).max(initial=0.0) <= 1.0:  # the answer of the stall (`_accepts`)
                    return r, sweep + 1 + extra, float(residual.max(initial=0.0))
                estimate = None
                accelerated.restart()
        if check and len(history) - newton_at >= newton_wait and _stalled(history, newton_wait):
            newton_at = len(history)
            newton_wait = NEWTON_RETRY
            residual = contact_residuals(rows, u, r)
            solved, ratio, work = newton_on_loaded(
                rows, predicted, r, residual, tolerance, 0.25 * aim, budget=sweep - newton_work
            )
            newton_work += work
            if ratio < (residual / tolerance).max(initial=0.0):
                r, u, residual = _swept_once(rows, predicted, solved)
                extra += 1
                if (residual / tolerance).max(initial=0.0) <= 1.0:
                    return r, sweep + 1 + extra, float(residual.max(initial=0.0))
                estimate = None
                accelerated.restart()
        previous = delta
    # The last sweep allowed is always measured, so `best` is the measured iterate
    # nearest its law, the last one included.
    r = best
    u = velocities(rows, predicted, r)
    residual = contact_residuals(rows, u, r)
    repairs = 0
    if (residual / tolerance).max(initial=0.0) > 1.0:
        r, u, residual, repairs = _final_repair(
            rows, predicted, r, u, residual, tolerance, max_sweeps - newton_work, 0.25 * aim, start, max_sweeps
        )
    worst = int(np.argmax(residual / tolerance))
    swept = max_sweeps + extra + repairs  # every sweep made, one after each repair
    if residual[worst] <= tolerance[worst]:
        # Short of the target but within the tolerance: what a stall would accept.
        return r, swept, float(residual.max(initial=0.0))
    which = f"contact {worst}" if names is None else names(worst)
    raise ConvergenceError(
        f"the Coulomb Gauss-Seidel sweeps did not converge in {swept} sweeps: "
        f"{which} is {residual[worst]:.3g} m/s from its local law (tolerance "
        f"{tolerance[worst]:.3g} m/s; no progress over the last "
        f"{max_sweeps - progressed_at} sweeps)",
        status="gauss_seidel",
        best=r,
        residual=float(residual[worst]),
        tolerance=float(tolerance[worst]),
        where=which,
        iterations=swept,
        idle=max_sweeps - progressed_at,
    )


def _final_repair(
    rows: SweepRows,
    predicted,
    r,
    u,
    residual,
    tolerance,
    budget: float,
    newton_aim: float,
    start,
    allowance: float,
):
    """The sweeps' stop short of the tolerance, repaired if the budget allows:
    ``(r, u, residual, repairs)``, the iterate nearest its law met, its velocities
    (d + 1,) and natural residual (m,) (m/s), and the repairs made (a sweep each).

    Each repair is Newton on the contacts above their tolerance and their neighbours
    within ``hops`` shared spheres, joined to the last repair's cluster
    (`coulomb_newton.newton_on_cluster`, with every variant of `coulomb_newton.VARIANTS`,
    aimed at ``newton_aim`` of the tolerance), and one sweep from its answer
    (`_swept_once`); an answer nearer the law replaces the
    iterate. ``hops`` starts at `REPAIR_HOPS` and grows by as much at each repair, until
    an answer is within the tolerance, `FINAL_REPAIR_PATIENCE` repairs in a row bring
    the residual no 10% lower (`PROGRESS`), or the factorisations' work reaches
    ``budget`` (sweeps of ``rows``: the sweeps made, less the Newton calls' work, so
    that the repairs at most double the cost of the solve, the ski-rental bound of
    `solve`). A cluster beyond the local repairs' cap (`REPAIR_LARGEST`,
    `REPAIR_MOST_CONTACTS`) is not local any more: the last repair is then Newton on
    the loaded contacts (`coulomb_newton.newton_on_loaded`), within the same budget,
    which refuses a factorisation whose estimated cost would overrun it. When the
    iterate is still beyond the tolerance, ``start`` (m, q) and ``allowance`` (the
    solve's start and the sweeps made) give the last repairs, on sets of at most
    `REPAIR_MOST_CONTACTS` contacts (`_newton_from_start`), within their own allowances:
    the repairs of a small set's stop may then cost up to about ten times the sweeps
    made, where the repairs before them cost at most as much as those sweeps.

    Why: once the sweeps stop, nothing is descending any more, and the in-loop
    repairs' reason to wait for a residual near the tolerance (`REPAIR_LEVEL`) is gone.
    On a captured step of Siconos' box of 3,375 turning spheres (step 120, seed 0) the
    sweeps stopped at 8.6 and 12.1 tolerances in two working-set rounds, 65 and 91
    contacts above it; two repairs (clusters of 444 then 1,566 contacts, and 621 then
    1,875) ended both within the tolerance for 766 and 1,036 sweeps' worth of work,
    where the first variant alone did not move the second. Newton on all the loaded
    contacts took 10,636 and 17,357 sweeps' worth (benchmarks/README.md, "Frictional
    boxes: a repair at the sweeps' stop"). In the small sets of the sand pile's pours
    the contacts above the tolerance and their neighbours are often more than half of
    the set: a pour of 300 turning spheres stopped at 22 tolerances with 69 of 452
    contacts above it, and Newton on its loaded contacts ends at 0.19 tolerances
    (`tests/test_friction_repair.py`)."""
    m = rows.cols.shape[0]
    cluster, hops, spent, repairs, idle = np.zeros(m, dtype=bool), REPAIR_HOPS, 0.0, 0, 0
    level = (residual / tolerance).max(initial=0.0)
    while level > 1.0 and spent < budget:
        grown = cluster | rows.neighbourhood(residual > tolerance, hops)
        members = np.flatnonzero(grown)
        widest = members.size > _repair_cap(m)
        if widest:
            solved, _, work = newton_on_loaded(
                rows, predicted, r, residual, tolerance, newton_aim, budget=budget - spent
            )
        else:
            solved, _, work = newton_on_cluster(
                rows, u, r, members, tolerance, newton_aim, budget=budget - spent, variants=len(VARIANTS)
            )
        spent, repairs = spent + work, repairs + 1
        solved, solved_u, solved_residual = _swept_once(rows, predicted, solved)
        reached = (solved_residual / tolerance).max(initial=0.0)
        idle = 0 if reached <= PROGRESS * level else idle + 1
        if reached < level:
            r, u, residual, level = solved, solved_u, solved_residual, reached
        if widest or idle == FINAL_REPAIR_PATIENCE:
            break
        cluster, hops = grown, hops + REPAIR_HOPS
    if level > 1.0 and m <= REPAIR_MOST_CONTACTS:
        r, u, residual, made = _newton_from_start(
            rows, predicted, onto_cones(rows, start), r, u, residual, tolerance, allowance, newton_aim
        )
        repairs += made
    return r, u, residual, repairs


def _newton_from_start(rows: SweepRows, predicted, first, r, u, residual, tolerance, budget: float, newton_aim: float):
    """The last repairs of a stop, both from the solve's start ``first`` (m, q) and on
    every contact of the set, aimed at ``newton_aim`` of the tolerance: Newton
    (`coulomb_newton.newton`, its factorisations within ``budget`` sweeps of ``rows``),
    then, while the iterate is still beyond the tolerance, Newton along a path in the
    friction coefficients from the frictionless law (`coulomb_newton.newton_by_continuation`,
    within `CONTINUATION_SWEEPS` times ``budget``), each answer swept once
    (`_swept_once`). Returns ``(r, u, residual, made)``: an answer in place of the
    iterate ``r`` (its velocities ``u``, natural residual ``residual``) when nearer its
    law, and ``made`` the sweeps made, 0 to 2 (none after a Newton call the budget
    refused, or a path that did not reach the law).

    `_final_repair` makes it on sets of at most `REPAIR_MOST_CONTACTS` contacts, the
    largest a local repair takes: on larger sets Newton on every contact costs more
    than the sweeps made (a stall of Siconos' box of 3,375 turning spheres, 7,291
    contacts: 9,092 sweeps' worth, and no answer), and the budget would refuse it after
    the Jacobian was built.

    Why from the start: where the sweeps stop, their iterates have settled on a
    stick/slip pattern with no solution near it, and Newton started there, on a
    cluster or on the loaded contacts, stays in it. The start (the last step's
    impulses, or the last working-set round's answer) is often nearer a solution, and
    the path's first problem, the frictionless law, is a convex projection. On twelve
    stops captured from the sand pile's pours (seeds 13-47, 317-504 contacts, kept at
    1.8-10.1 tolerances after the repairs), Newton from the start ended four within the
    tolerance by itself (700-4,100 sweeps' worth of factorisations, against the
    4,000-7,900 sweeps of the solves) and five through the solve, a sweep after it; the
    path then ended four more, the worst among them (benchmarks/README.md, "a last
    Newton from the start, and along a path in mu")."""
    sweep_size = float(rows.values.size)  # a sweep's reads, the unit of Newton's work
    made, level = 0, (residual / tolerance).max(initial=0.0)
    for method, allowance in ((newton, budget), (newton_by_continuation, CONTINUATION_SWEEPS * budget)):
        solved, ratio, work = method(rows, predicted, first, tolerance, newton_aim, budget=allowance * sweep_size)
        # Nothing to sweep: a Newton call that made no factorisation gives back its
        # start, and a path that did not reach the law an infinite ratio.
        if (method is newton and work == 0.0) or not np.isfinite(ratio):
            continue
        solved, solved_u, solved_residual = _swept_once(rows, predicted, solved)
        made += 1
        solved_level = (solved_residual / tolerance).max(initial=0.0)
        if solved_level < level:
            r, u, residual, level = solved, solved_u, solved_residual, solved_level
        if level <= 1.0:
            break
    return r, u, residual, made


def _repair_cap(contacts: int) -> float:
    """The most contacts a local repair of a set of ``contacts`` takes (`REPAIR_LARGEST`
    of them, and `REPAIR_MOST_CONTACTS`)."""
    return min(REPAIR_LARGEST * contacts, REPAIR_MOST_CONTACTS)


def _swept_once(rows: SweepRows, predicted: np.ndarray, r: np.ndarray):
    """``(r, u, residual)`` after one sweep from the impulses ``r`` (m, q) of a Newton
    answer: the sweep makes every impulse a local answer again (in its cone, a sliding
    one exactly on its boundary), so the natural residual (m,) (m/s) judges it as it
    judges the sweeps' own iterates."""
    r = onto_cones(rows, r)
    u = velocities(rows, predicted, r)
    rows.compiled.sweep(u, r)
    return r, u, contact_residuals(rows, u, r)


class _Momentum:
    """Momentum on the sweeps, its size taken from the sweeps' own progress.

    A sweep is a fixed-point map ``r -> S(r)`` of the impulses. Like an accelerated
    gradient method (Nesterov, *A method of solving a convex programming problem with
    convergence rate O(1/k^2)*, 1983), the next sweep starts from the extrapolated
    point ``y = x_k + beta_k (x_k - x_{k-1})``, where ``x_k`` is the k-th sweep's
    output; the sweep's output is again a set of exact local answers (each in its
    cone), so every iterate the residual test measures is a Gauss-Seidel iterate and
    the acceptance is unchanged. ``y`` itself may leave the cones: a sweep does not
    need its input in them.

    ``beta_k`` is the Fletcher-Reeves ratio of the squared norms of the last two
    fixed-point residuals ``|S(y) - y|^2`` (weighted by ``W_kk`` and the tolerances;
    `sweep_kernels.sweep`), at most 1, and momentum restarts (``beta = 0``, a plain
    sweep next) when that ratio exceeds `MOMENTUM_RESTART`. The nonsmooth nonlinear
    conjugate gradient method (Silcowitz, Niebe and Erleben, *A nonsmooth nonlinear
    conjugate gradient method for interactive contact force problems*, The Visual
    Computer, 2010), which takes projected Gauss-Seidel as its gradient, restarts
    when the ratio exceeds 1; a threshold a little above 1 keeps the momentum through
    the small rises of the residual that changes of the stick/slip pattern make. Where
    the sweeps contract fast the ratio, and the momentum, are small; along the slow
    modes of a network of sticking contacts they approach 1. On captured steps of the settling
    1,000-sphere box this takes a quarter fewer sweeps than Nesterov's schedule
    ``(k - 1) / (k + 2)`` restarted whenever a sweep's largest residual grew
    (the adaptive restart of O'Donoghue and Candes, *Adaptive restart for
    accelerated gradient schemes*, 2015), which takes 2-4 times fewer than plain
    sweeps (benchmarks/README.md, "Measurements behind the constants").

    Momentum stops for good at a long stall near the tolerance: after
    `MOMENTUM_PATIENCE` sweeps, within `MOMENTUM_STALL` tolerances, and no new low
    of the residual over `STALL_WINDOW` checks (`_no_new_low`); the plain sweeps
    then go on from the best iterate measured. Where the current stick/slip pattern has no
    solution the plain sweeps drift and are accepted at the tolerance once stalled
    (`_accepts`); momentum amplifies the drift instead: in a step of the rotating
    drum it wandered at 1-6 times the tolerance for 20,000 sweeps, where the plain
    sweeps stop after 744.
    """

    def __init__(self, r: np.ndarray, u: np.ndarray):
        self.r_previous, self.u_previous = r.copy(), u.copy()
        self.beta, self.last_change = 0.0, np.inf
        self.enabled = MOMENTUM

    def extrapolate(self, r: np.ndarray, u: np.ndarray) -> None:
        """``r`` and ``u`` (in place) moved to the next sweep's starting point."""
        if not self.enabled:
            return
        if not r.flags.c_contiguous:  # reshape would copy, and the extrapolation be lost
            raise ValueError("the sweeps' impulses must be a C-contiguous array")
        momentum = kernels().momentum
        momentum(r.reshape(-1), self.r_previous.reshape(-1), self.beta)
        momentum(u, self.u_previous, self.beta)

    def stop(self) -> None:
        """Plain sweeps from now on."""
        self.enabled = False

    def judge(self, change: float) -> None:
        """The next momentum from the sweep's squared fixed-point residual ``change``
        (`sweep_kernels.sweep`): its ratio to the last one, at most 1, or a restart (0)
        when that ratio exceeds `MOMENTUM_RESTART`."""
        ratio = change / self.last_change if self.last_change > 0.0 else np.inf
        self.beta = min(ratio, 1.0) if ratio <= MOMENTUM_RESTART else 0.0
        self.last_change = change

    def restart(self) -> None:
        """After the iterate was replaced (a jump along a drift, Newton's answer)."""
        self.beta, self.last_change = 0.0, np.inf


#: A measured residual below this fraction of the best before it counts as progress,
#: and the sweeps stop after a stall without progress as long as the sweeps before it,
#: and at least `NO_PROGRESS_FLOOR` sweeps (`solve`), or the floor a run's recent steps
#: give (`stall_floor`).
PROGRESS = 0.9
NO_PROGRESS_FLOOR = 4000
#: `stall_floor`: a stall's floor is this many times the median sweeps of the run's last
#: `RECENT_STEPS` swept steps, and at least `SHORTEST_STALL_FLOOR` sweeps.
STALL_FLOOR_STEPS = 4
SHORTEST_STALL_FLOOR = 1000
RECENT_STEPS = 20
#: A stall's floor is also at least this many contact visits (sweeps times contacts),
#: up to `NO_PROGRESS_FLOOR` sweeps (`effective_floor`), whatever the run's recent
#: steps. Why: `SHORTEST_STALL_FLOOR` was set on Siconos' boxes, whose late sets hold
#: 2,000 contacts and more; in the sand pile's sets of about 450 contacts 1,000 sweeps
#: cost 5 ms, and a stall ended there before the Newton hand-over's first attempt
#: (`_first_newton_wait`: 800 checks, 1,600 sweeps). With this floor a stall of up to
#: about 1,000 contacts lasts until the hand-over has been tried; the cap keeps a stall of a
#: few contacts, whose sweeps cost their fixed overhead, from running to the sweeps'
#: cap. On a stop captured from a pour (seed 23, 446 contacts, aimed at 1/2) the sweeps
#: stopped at 1,211 sweeps and 10.4 tolerances, which neither the final repair's Newton
#: nor the conic fixed point could mend; with this floor (4,000 sweeps) the hand-over's
#: Newton ends the solve at 1,682 sweeps (benchmarks/README.md, "a stall floor by
#: work").
SMALLEST_STALL_VISITS = 2_000_000


def stall_floor(recent_sweeps) -> int | None:
    """The floor of a stall (sweeps, `solve`) for a run whose recent steps took
    ``recent_sweeps`` sweeps each (the last `RECENT_STEPS`, oldest first), or None (the
    fixed `NO_PROGRESS_FLOOR`) before any.

    Why relative to the run: a stall whose best is reached early is a limit cycle of
    the sweeps or a slow drift, and sweeping on seldom ends it (the cycles of Siconos'
    box: the best is the cycle's low point, near one tolerance). A fixed floor of 4,000
    sweeps cost ten times a step of the settling 1,000-sphere box (about 400 sweeps),
    twenty when a second round of the working set stalled again, and under two steps
    of a box of 8,000 (2,500 sweeps and more). With `STALL_FLOOR_STEPS` times the run's
    median step, a stall whose best came early idles for that many typical steps,
    whatever the pile's size; on Siconos' boxes of 1,000 to 5,000 turning spheres it keeps every
    step within 10 times its window's median, with no more steps kept beyond the
    tolerance (benchmarks/README.md, `stress.py`, "a stall floor that follows the
    run")."""
    if recent_sweeps is None or len(recent_sweeps) == 0:
        return None
    return max(SHORTEST_STALL_FLOOR, int(STALL_FLOOR_STEPS * float(np.median(recent_sweeps))))


def effective_floor(floor: int | None, contacts: int) -> int:
    """The fewest sweeps a stall of a set of ``contacts`` makes before it ends (`solve`):
    the run's ``floor`` (`stall_floor`; `NO_PROGRESS_FLOOR` when None), and at least
    `SMALLEST_STALL_VISITS` contact visits, up to `NO_PROGRESS_FLOOR` sweeps."""
    by_work = min(-(-SMALLEST_STALL_VISITS // max(contacts, 1)), NO_PROGRESS_FLOOR)
    return max(NO_PROGRESS_FLOOR if floor is None else floor, by_work)


def recent_sweeps_after(recent_sweeps, sweeps: int) -> np.ndarray:
    """``recent_sweeps`` (or none) with a step of ``sweeps`` sweeps appended, the last
    `RECENT_STEPS` kept (int64)."""
    before = np.zeros(0, dtype=np.int64) if recent_sweeps is None else np.asarray(recent_sweeps, dtype=np.int64)
    return np.append(before, np.int64(sweeps))[-RECENT_STEPS:]


#: Whether the sweeps carry Nesterov's momentum (`_Momentum`).
MOMENTUM = True
#: Momentum restarts when a sweep's squared fixed-point residual exceeds this many times
#: the last one's (`_Momentum`). Why not at 1, the restart of Silcowitz, Niebe and
#: Erleben's method: the stick/slip pattern changes under the sweeps, so the residual of
#: a converging solve rises now and then by a few percent, and each restart throws away
#: the momentum built along the network's slow modes. Against 1, on kept solves of
#: Siconos' settling box: 26% fewer sweeps over 50 solves of 1,000 spheres (40 faster, 5
#: slower, the longest 380 sweeps against 868), 23% fewer over 33 of 8,000 (26 faster, 5
#: slower); over whole runs (seeds 0-2) 11-17% fewer at 1,000 spheres and 24-41% at
#: 8,000. From 1.3 on, some solves of the deep box stall that 1 and 1.1 solve
#: (`benchmarks/momentum_restart.py`; benchmarks/README.md, "the momentum's restart").
MOMENTUM_RESTART = 1.1
#: Momentum stops at a stall whose residual is within this many tolerances, once the
#: solve has made this many sweeps (`_Momentum`).
MOMENTUM_STALL = 10.0
MOMENTUM_PATIENCE = 1000
#: The sweeps accept an answer when every contact is within its tolerance and the loaded
#: contacts are within this fraction of it in root mean square (`loaded_level`), or
#: every contact within its tolerance once they stall (`_accepts`); a run may choose
#: another aim (`solve`'s ``aim``, `granular.schemes.maury.MauryScheme`'s ``sweep_aim``).
#: Why an eighth: the network that carries the load is then typically an eighth of the
#: tolerance from its law, its contacts creeping at an eighth of the tolerance's speed.
#: Why in root mean square rather than at every contact: the last sweeps of a solve
#: chase a few contacts that change between sticking and sliding while the largest
#: residual wanders at 1-5 tolerances, and that chase took a third of a settling box's
#: sweeps. Against the same aim asked of every contact, over 490 pours of the sand pile
#: (seeds 3-100) the answers take 41% fewer sweeps, keep 14 steps beyond the tolerance
#: against 20 (none beyond 5 tolerances against one, the worst 2.4 tolerances against
#: 19.7), and the heaps' angles of repose are the same (paired differences of -0.1 to
#: +0.2 degrees per setting, within their standard errors of 0.24-1.1); on ten runs of
#: Siconos' box of 1,000 turning spheres 34% fewer sweeps, one step kept against four
#: (benchmarks/README.md, "the sweeps' aim in root mean square").
TARGET = 0.125
#: Residual checks (2 sweeps each) without a 10% decrease that count as a stall.
STALL_WINDOW = 25
#: The residual is checked every this many sweeps: measured at the drift checks and
#: whenever it may accept, estimated from the sweeps in between (`solve`).
CHECK_EVERY = 2
#: Residual checks over which a stalled residual (down by less than 10%) calls for
#: extrapolation (10 sweeps).
STALL_CHECKS = 5
#: Residual checks without a 10% decrease after which the sweeps first hand over to
#: `coulomb_newton.newton_on_loaded`: the larger of `NEWTON_AFTER` and `NEWTON_CHECKS_PER_CONTACT` per contact
#: (`_first_newton_wait`). Why so many: most slow descents are not stalls, and a Newton
#: call costs as much as thousands of sweeps (`tests/data/stalled_turning_cluster.npz`,
#: the settling 1,000-sphere pour of `benchmarks/rotation_speed.py`). Waiting until the
#: stalled sweeps have cost about as much as a call bounds the work by twice the
#: better choice made in hindsight, stall or slow descent (the ski-rental argument).
#: Tuned; benchmarks/README.md, "Measurements behind the constants".
NEWTON_AFTER = 800
NEWTON_CHECKS_PER_CONTACT = 1
#: Residual checks without a 10% decrease between a Newton attempt that did not end
#: the solve and the next. Whether Newton reaches the tolerance depends on where it
#: starts, so a stall needs several attempts: in the sand pile's pour (seed 4,
#: t = 1.297 s, 435 contacts) three attempts 500 and 1,000 checks apart all missed
#: the tolerance and the step failed; attempts 100 checks apart end it (figures in
#: benchmarks/README.md, "Measurements behind the constants").
NEWTON_RETRY = 100
#: A drift is followed only when the jump is worth at least this many sweeps. Why:
#: trying a jump costs about two sweeps (the velocities moved, the residual), and
#: among thousands of contacts one changes status at once, so most jumps are
#: shorter than that and following them all costs more than it saves. The drifts
#: the jumps were made for are long (the pile: the same change for 1000s of
#: sweeps). Tuned; benchmarks/README.md, "Measurements behind the constants".
SHORTEST_JUMP = 2.0
#: A jump is kept when the residual grows by at most this factor: along a pure
#: drift it stays constant until a contact changes status at the end of the jump.
JUMP_GROWTH = 1.01

#: Local repairs (`solve`, `coulomb_newton.newton_on_cluster`). The first comes once
#: the residual is within `REPAIR_LEVEL` tolerances and has made no new low over
#: `REPAIR_WINDOW` checks, the next ones at least `REPAIR_EVERY` checks apart while
#: that lasts (twice as far apart after each repair that misses its cluster's
#: tolerance), each only if the cluster grew: the contacts above their tolerance and
#: those within `REPAIR_HOPS` shared spheres of them, joined to the last cluster,
#: up to `REPAIR_LARGEST` of the contacts and `REPAIR_MOST_CONTACTS` (beyond, Newton on
#: the loaded contacts is the way out; a repair is local, and its sparse LU costs more
#: than linearly in its cluster: on the 8,000-sphere box, clusters of up to 9,000 of
#: its 18,000 contacts took 4.9 s of a 10.8 s step). Why these: repairs made at the first sign of a stall, or at 10
#: tolerances, took in hundreds of contacts that were still descending and cost more
#: than the sweeps they saved; a fresh cluster each time (not joined to the last) let
#: the sweeps undo the last repair at its edge, repair after repair; one hop left
#: the repaired cluster's edge above the tolerance more often than two. Measured on
#: the Siconos boxes of 1,000 and 3,375 turning spheres and on the rotating drum
#: (benchmarks/README.md, "Measurements behind the constants").
REPAIR_LEVEL = 3.0
#: The repairs at the sweeps' stop (`_final_repair`) end after this many repairs in a
#: row without a 10% lower residual. Why two: on the captured stall of
#: `tests/test_friction_repair.py` the first repair (142 contacts) leaves the residual
#: where it was and the second ends the stall. Without this limit, on Siconos' box of
#: 2,000 turning spheres (seed 2) stops at 1.14 and 1.73 tolerances took four and three
#: repairs that gained 1-2% in all, 0.25 s of a 0.45 s step and 0.32 s of a 0.52 s one,
#: the second 12 times its window's median (benchmarks/README.md, "Frictional boxes: a
#: repair at the sweeps' stop").
FINAL_REPAIR_PATIENCE = 2
REPAIR_WINDOW = 200
REPAIR_EVERY = 100
REPAIR_HOPS = 2
REPAIR_LARGEST = 0.5
REPAIR_MOST_CONTACTS = 2000
#: The last repair of a stop on a small set follows a path in the friction coefficients
#: (`coulomb_newton.newton_by_continuation`) within this many times the sweeps made.
#: Why 8: on twelve stops captured from the sand pile's pours the path reached the law
#: for 1.3-15 times the sweeps of the solve; at 8 times it still mends the worst (10.1
#: tolerances, 6.2 times), and those stops (317-504 contacts) took 0.2-3.4 s through
#: the solve instead of 0.2-0.8 s (benchmarks/README.md, "a last Newton from the start,
#: and along a path in mu").
CONTINUATION_SWEEPS = 8


def _repair_due(history, since: int, every: int) -> bool:
    """Whether a local repair is due, ``since`` checks after the last one and at
    least ``every`` checks apart."""
    return since >= every and history[-1] <= REPAIR_LEVEL and _no_new_low(history, REPAIR_WINDOW)


def _first_newton_wait(contacts: int) -> int:
    """Stalled residual checks before the first Newton attempt (`NEWTON_AFTER`)."""
    return max(NEWTON_AFTER, NEWTON_CHECKS_PER_CONTACT * contacts)


def _accepts(history, levels: np.ndarray, r: np.ndarray, target: float) -> bool:
    """Whether the measured iterate ``r`` is an answer: every contact within its
    tolerance (``history[-1]``, the largest of its ``levels``, the residuals in units of
    each tolerance, at most 1), and the loaded contacts within ``target`` of it in root
    mean square (`loaded_level`) unless the sweeps stall."""
    return history[-1] <= 1.0 and (_stalled(history) or loaded_level(levels, r) <= target)


def loaded_level(levels: np.ndarray, r: np.ndarray) -> float:
    """The root mean square of ``levels`` (m,), the contacts' residuals in units of their
    tolerances, over the loaded contacts (``r[k, 0] > 0``; 0 when none is): the
    typical distance of the contact network that carries the load from its law. Open
    contacts, whose residual is 0 at rest by their law, would dilute it by their number."""
    loaded = levels[r[:, 0] > 0.0]
    return float(np.sqrt(np.mean(loaded**2))) if loaded.size else 0.0


def _stalled(history, window: int = STALL_WINDOW) -> bool:
    """Whether the residual fell by less than 10% over the last ``window`` checks."""
    return len(history) > window and history[-1] > 0.9 * history[-1 - window]


def _no_new_low(history, window: int = STALL_WINDOW) -> bool:
    """Whether the last ``window`` checks found no residual 10% below the lowest
    before them (momentum's residual oscillates, so `_stalled`'s test of the last
    value against one ``window`` back misses its stalls)."""
    return len(history) > window and min(history[-window:]) > 0.9 * min(history[:-window])


def _drift_check(checks: int) -> bool:
    """Whether the residual check that makes ``checks`` checks in all tests for a drift."""
    return checks > STALL_CHECKS and checks % STALL_CHECKS == 0


def _drifting(history, delta, previous) -> bool:
    """Whether the residual stalled over `STALL_CHECKS` checks and the last two
    sweeps moved the impulses alike (within 5%)."""
    if previous is None or not _drift_check(len(history)):
        return False
    if history[-1] < 0.9 * history[-1 - STALL_CHECKS]:
        return False
    size = np.linalg.norm(delta)
    return size > 0.0 and np.linalg.norm(delta - previous) <= 0.05 * size


def _extrapolate(rows: SweepRows, u: np.ndarray, r: np.ndarray, delta: np.ndarray, before: float) -> np.ndarray:
    """``r`` moved along the drift ``delta`` up to `_longest_step`, projected onto the
    cones, with ``u`` moved in place; kept only if its largest residual does not
    exceed ``before`` (m/s, the residual at the check, one sweep earlier) by more
    than `JUMP_GROWTH` (the drift is linear only near where it was measured:
    unchecked jumps of 1000 sweeps' worth made a 108-contact set of the pile wander)."""
    step = _longest_step(r, delta, rows.mu)
    if step < SHORTEST_JUMP:
        return r
    jumped = onto_cones(rows, r + step * delta)
    trial = u.copy()
    add_impulses(rows, trial, jumped - r)
    if contact_residuals(rows, trial, jumped).max(initial=0.0) > JUMP_GROWTH * before:
        return r
    u[:] = trial
    return jumped


def _longest_step(r, delta, mu, limit: float = 1e4) -> float:
    """How far to extrapolate ``r + a delta`` (k, 3): up to the first contact that
    changes status (its normal impulse reaches 0 or a sticking impulse its cone's
    boundary), found per contact by bisection (`sweep_kernels.longest_step`).
    Contacts that would change within one sweep (``a < 1``) are at their bound
    already and do not limit the step (the caller projects them back onto their
    cones); ``limit`` caps it."""
    return float(
        kernels().longest_step(
            np.ascontiguousarray(r[:, :3], dtype=float),
            np.ascontiguousarray(delta[:, :3], dtype=float),
            np.ascontiguousarray(mu, dtype=float),
            float(limit),
        )
    )
