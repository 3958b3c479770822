"""Local repairs of a stall of the Coulomb sweeps, on a captured step of a settling box.

`data/stall_of_a_settling_box.npz` is the working set of step 135 of Siconos' box of
3,375 turning spheres (`benchmarks/peer_scenes.siconos_box`, n = 3,375, mu = 0.5, seed
0): 7,291 contacts, stored as CSR parts of the normal rows ``G`` and the tangent rows
``T``, the diagonal of ``M^{-1}``, ``mu``, ``lower = -D/h``, the prediction, the warm
start and each contact's tolerance (m/s) as `granular.contact.friction.sweep_tolerance`
gave it. The sweeps stall there at 1.1-4 times the tolerance with a few contacts above
it, for 14,600 sweeps, until Newton on the 4,924 loaded contacts ends the stall; Newton
on the stalled contacts and their neighbours (`coulomb_newton.newton_on_cluster`) ends it
in a fraction of the sweeps. The answer is checked against the law itself.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from granular.contact import coulomb_newton, coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from granular.errors import ConvergenceError
from granular.tolerances import FRICTION_SWEEPS
from support.systems import InverseMassDiagonal
from test_friction_stall import assert_coulomb_law, hold_back_final_repair

#: Sweeps allowed in these tests: the repairs end the stall within it; the sweeps with
#: momentum alone are still 1.1-4 times the tolerance after it.
SWEEPS = 4000


@pytest.fixture(scope="module")
def settling_box():
    data = dict(np.load(Path(__file__).parent / "data" / "stall_of_a_settling_box.npz"))
    G = sp.csr_matrix((data["G_data"], data["G_indices"], data["G_indptr"]), shape=tuple(data["G_shape"]))
    T = sp.csr_matrix((data["T_data"], data["T_indices"], data["T_indptr"]), shape=tuple(data["T_shape"]))
    rows = coulomb_rows.sweep_rows(InverseMassDiagonal(data["inverse_mass"]), G, T, data["mu"], data["lower"])
    assert rows is not None and rows.w_tangent is not None  # turning spheres
    return data, G, T, rows


@pytest.fixture
def without_the_newton_hand_over(monkeypatch):
    """The in-loop hand-over to Newton on the loaded contacts held back, so that the
    repairs alone are tested (the repair at the sweeps' stop may still call it, when
    its cluster passes the local cap)."""
    monkeypatch.setattr(gauss_seidel, "NEWTON_AFTER", 10**9)
    monkeypatch.setattr(gauss_seidel, "NEWTON_CHECKS_PER_CONTACT", 10**6)


@pytest.fixture
def without_final_repair(monkeypatch):
    hold_back_final_repair(monkeypatch)


def test_the_sweeps_alone_stall_on_the_settling_box(
    settling_box, without_the_newton_hand_over, without_final_repair, monkeypatch
):
    data, _, _, rows = settling_box
    monkeypatch.setattr(gauss_seidel, "REPAIR_LEVEL", 0.0)  # no repairs
    with pytest.raises(ConvergenceError, match=r"did not converge in \d+ sweeps"):
        gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], SWEEPS)


def test_local_repairs_end_the_stall_of_the_settling_box(settling_box, without_the_newton_hand_over):
    data, G, T, rows = settling_box
    r, sweeps, _ = gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], SWEEPS)
    assert sweeps < SWEEPS
    assert_coulomb_law(data, G, T, r)


def test_a_repair_at_the_sweeps_stop_ends_a_stall_short_of_the_tolerance_within_its_budget(
    settling_box, without_the_newton_hand_over, monkeypatch
):
    """Sweeps without in-loop repairs stop at 1,000 sweeps beyond the tolerance (checked
    with the final repair held back); with it, the solve returns an answer that meets
    the law, and the repairs' factorisations together cost no more than the 1,000 sweeps
    made (each call within the budget it is given, the budgets the rest of 1,000)."""
    data, G, T, rows = settling_box
    monkeypatch.setattr(gauss_seidel, "REPAIR_LEVEL", 0.0)  # no repair before the stop
    final_repair = gauss_seidel._final_repair
    with monkeypatch.context() as held_back:
        hold_back_final_repair(held_back)
        with pytest.raises(ConvergenceError) as stopped:
            gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], 1000)
    assert stopped.value.residual > stopped.value.tolerance
    calls = []
    repair = gauss_seidel.newton_on_cluster

    def recording(*args, budget, **kwargs):
        answer = repair(*args, budget=budget, **kwargs)
        calls.append((budget, answer[2]))
        return answer

    monkeypatch.setattr(gauss_seidel, "newton_on_cluster", recording)
    assert gauss_seidel._final_repair is final_repair
    r, sweeps, _ = gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], 1000)
    assert_coulomb_law(data, G, T, r)
    assert calls and sweeps == 1000 + len(calls)  # one sweep after each repair
    assert all(work <= budget for budget, work in calls)
    assert sum(work for _, work in calls) <= 1000


def repairs_that_change_nothing(monkeypatch) -> list:
    """Newton on a cluster replaced by the identity (no progress, unit work); returns the
    list that records each call's cluster size."""
    sizes = []

    def identity(rows_, u, r, members, *args, **kwargs):
        sizes.append(members.size)
        return r.copy(), np.inf, 1.0

    monkeypatch.setattr(gauss_seidel, "newton_on_cluster", identity)
    return sizes


def test_the_repairs_at_the_sweeps_stop_end_after_two_without_progress(
    settling_box, without_the_newton_hand_over, monkeypatch
):
    """Repairs that leave the impulses as they were (Newton replaced by the identity)
    make no progress (the sweep after each moves the residual by less than 10%): the
    repairs end after `FINAL_REPAIR_PATIENCE` (2) of them, with the budget left, and
    the error carries an iterate no farther from the law than the sweeps' own best."""
    data, _, _, rows = settling_box
    monkeypatch.setattr(gauss_seidel, "REPAIR_LEVEL", 0.0)
    with monkeypatch.context() as held_back:
        hold_back_final_repair(held_back)
        with pytest.raises(ConvergenceError) as stopped:
            gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], 1000)
    calls = repairs_that_change_nothing(monkeypatch)
    with pytest.raises(ConvergenceError) as repaired:
        gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], 1000)
    assert len(calls) == gauss_seidel.FINAL_REPAIR_PATIENCE == 2
    assert calls[0] < calls[1]  # the second cluster two hops wider
    assert stopped.value.tolerance < repaired.value.residual <= stopped.value.residual


def test_a_repair_holds_the_impulses_outside_its_cluster(
    settling_box, without_the_newton_hand_over, without_final_repair, monkeypatch
):
    """`newton_on_cluster` changes only its cluster's impulses, and its answer meets the
    law of the cluster's contacts in the velocities of the whole set (recomputed from
    all the impulses): the held impulses were folded into the cluster's prediction."""
    data, _, _, rows = settling_box
    tolerance = data["tolerance"]
    monkeypatch.setattr(gauss_seidel, "REPAIR_LEVEL", 0.0)
    with pytest.raises(ConvergenceError) as stalled_sweeps:  # the sweeps' best iterate at the stall
        gauss_seidel.solve(rows, data["predicted"], data["start"], tolerance, 1000)
    r = stalled_sweeps.value.best
    u = coulomb_rows.velocities(rows, data["predicted"], r)
    stalled = coulomb_rows.contact_residuals(rows, u, r) > tolerance
    members = np.flatnonzero(rows.neighbourhood(stalled, 1))
    assert 0 < members.size < rows.cols.shape[0] // 2
    repaired, ratio, _ = coulomb_newton.newton_on_cluster(rows, u, r, members, tolerance, 0.25 * gauss_seidel.TARGET)
    outside = np.setdiff1d(np.arange(r.shape[0]), members)
    assert np.array_equal(repaired[outside], r[outside])
    assert ratio <= 1.0
    whole = coulomb_rows.natural_residual(rows, data["predicted"], repaired)
    assert np.all(whole[members] <= tolerance[members])


def test_no_local_repair_takes_a_cluster_larger_than_the_cap_and_the_stall_still_ends(
    settling_box, without_the_newton_hand_over, monkeypatch
):
    """`REPAIR_MOST_CONTACTS` bounds a local repair's cluster whatever the set's size. On
    the settling box the repairs' clusters grow from one repair to the next; capped below
    the largest of them, no local repair takes more (a larger cluster at the sweeps' stop
    goes to Newton on the loaded contacts instead), and the solve still ends: with an
    answer that meets the law, or with the sweeps' best iterate once their stall rule
    stops them. A set larger than the cap gets no last repair on every contact from the
    solve's start (`_newton_from_start`). The sweeps restart their momentum at every
    rise of the residual here (`MOMENTUM_RESTART` 1): with the default, a single repair
    ends this stall, and there is no growth to cap."""
    data, G, T, rows = settling_box
    monkeypatch.setattr(gauss_seidel, "MOMENTUM_RESTART", 1.0)
    sizes = []
    repair = gauss_seidel.newton_on_cluster

    def recording(rows_, u, r, members, *args, **kwargs):
        sizes.append(members.size)
        return repair(rows_, u, r, members, *args, **kwargs)

    monkeypatch.setattr(gauss_seidel, "newton_on_cluster", recording)
    gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], SWEEPS)
    assert len(sizes) >= 2 and min(sizes) < max(sizes)  # uncapped, the cluster grows past the cap below
    cap = max(sizes) - 1
    sizes.clear()
    monkeypatch.setattr(gauss_seidel, "REPAIR_MOST_CONTACTS", cap)
    restarts = []
    restart = gauss_seidel._newton_from_start
    monkeypatch.setattr(gauss_seidel, "_newton_from_start", lambda *args: restarts.append(1) or restart(*args))
    try:
        r, sweeps, _ = gauss_seidel.solve(rows, data["predicted"], data["start"], data["tolerance"], SWEEPS)
    except ConvergenceError as stalled:
        # the loop's sweeps, and one after each repair (a last one on the loaded contacts)
        assert stalled.best is not None and stalled.iterations <= SWEEPS + len(sizes) + 1
    else:
        assert sweeps < SWEEPS
        assert_coulomb_law(data, G, T, r)
    assert sizes and max(sizes) <= cap
    assert not restarts  # a set above the cap gets no repair on every contact from the start


@pytest.fixture(scope="module")
def sand_pour_stop():
    """`data/stop_of_a_sand_pour.npz`: the stage-4 solve of a pour of 300 turning
    spheres without rolling resistance (`granular.scenes.sand_pile`, mu = 0.6, seed 21,
    `friction_gauss_seidel.TARGET` set to 1/2, the solve's own ``target`` None) whose
    sweeps stop at 22 times the tolerance with 69 of its 452 contacts above it, stored as
    the settling box's data, with the stall floor the run gave (``floor``)."""
    data = dict(np.load(Path(__file__).parent / "data" / "stop_of_a_sand_pour.npz"))
    G = sp.csr_matrix((data["G_data"], data["G_indices"], data["G_indptr"]), shape=tuple(data["G_shape"]))
    T = sp.csr_matrix((data["T_data"], data["T_indices"], data["T_indptr"]), shape=tuple(data["T_shape"]))
    rows = coulomb_rows.sweep_rows(InverseMassDiagonal(data["inverse_mass"]), G, T, data["mu"], data["lower"])
    return data, G, T, rows


def test_a_stop_whose_cluster_passes_the_cap_is_repaired_by_newton_on_the_loaded_contacts(sand_pour_stop, monkeypatch):
    """A stop far from the law in a small set: the contacts above the tolerance and
    their neighbours within two spheres are more than `REPAIR_LARGEST` of the contacts,
    so no local repair applies. The final repair is then Newton on the loaded contacts,
    once, within the budget of the sweeps made, and its answer meets the law."""
    data, G, T, rows = sand_pour_stop
    monkeypatch.setattr(gauss_seidel, "TARGET", 0.5)  # the aim of the run it was taken from
    # The stop as its run made it: a floor of 1,000 sweeps, not the floor by work, under
    # which the Newton hand-over ends this solve before any stop.
    monkeypatch.setattr(gauss_seidel, "SMALLEST_STALL_VISITS", 0)
    arguments = (rows, data["predicted"], data["start"], data["tolerance"], FRICTION_SWEEPS)
    floor = int(data["floor"])
    with monkeypatch.context() as held_back:
        hold_back_final_repair(held_back)
        with pytest.raises(ConvergenceError) as stopped:
            gauss_seidel.solve(*arguments, floor=floor)
    best = stopped.value.best
    u = coulomb_rows.velocities(rows, data["predicted"], best)
    above = coulomb_rows.contact_residuals(rows, u, best) > data["tolerance"]
    assert rows.neighbourhood(above, gauss_seidel.REPAIR_HOPS).sum() > gauss_seidel._repair_cap(rows.cols.shape[0])
    assert stopped.value.residual > 10.0 * stopped.value.tolerance
    local, loaded = [], []
    on_cluster, on_loaded = gauss_seidel.newton_on_cluster, gauss_seidel.newton_on_loaded

    def recording_cluster(*args, **kwargs):
        local.append(args)
        return on_cluster(*args, **kwargs)

    def recording_loaded(*args, budget, **kwargs):
        answer = on_loaded(*args, budget=budget, **kwargs)
        loaded.append((budget, answer[2]))  # (budget, work), in sweeps
        return answer

    monkeypatch.setattr(gauss_seidel, "newton_on_cluster", recording_cluster)
    monkeypatch.setattr(gauss_seidel, "newton_on_loaded", recording_loaded)
    r, sweeps, _ = gauss_seidel.solve(*arguments, floor=floor)
    assert_coulomb_law(data, G, T, r)
    assert not local and len(loaded) == 1
    budget, work = loaded[0]
    assert work <= budget <= stopped.value.iterations
    assert sweeps == stopped.value.iterations + 1  # one sweep after the repair


def test_a_solve_counts_every_sweep_it_makes_whether_it_returns_or_stops(
    settling_box, without_the_newton_hand_over, monkeypatch
):
    """The sweeps a solve reports are the sweeps it made: those of its loop, the one
    from each in-loop repair's answer and the one after each repair at the stop. Counted
    here at the compiled sweep itself, for a solve whose repairs end its stall and for
    one whose repairs (Newton replaced by the identity) make no progress, so that it
    stops and the error carries the count."""
    data, _, _, rows = settling_box
    made = []
    compiled_sweep = coulomb_rows.CompiledRows.sweep

    def counting(self, *args, **kwargs):
        made.append(1)
        return compiled_sweep(self, *args, **kwargs)

    monkeypatch.setattr(coulomb_rows.CompiledRows, "sweep", counting)
    arguments = (rows, data["predicted"], data["start"], data["tolerance"])
    _, sweeps, _ = gauss_seidel.solve(*arguments, SWEEPS)
    assert sweeps == len(made)
    made.clear()
    repairs = repairs_that_change_nothing(monkeypatch)
    with pytest.raises(ConvergenceError) as stopped:
        gauss_seidel.solve(*arguments, SWEEPS)
    assert len(repairs) > gauss_seidel.FINAL_REPAIR_PATIENCE  # in-loop repairs too
    assert stopped.value.iterations == len(made)


def test_a_small_sets_stall_lasts_long_enough_for_the_newton_hand_over(monkeypatch):
    """`tests/data/early_stop_of_a_sand_pour.npz`: a step of a pour of 300 turning
    spheres (seed 23, sweeps aimed at half the tolerance, 446 contacts). With the run's
    floor of 1,000 sweeps alone, the sweeps stop at about 1,200 sweeps, 10 tolerances
    from the law, before the Newton hand-over's first attempt (1,600 stalled sweeps),
    and the repair at the stop does not mend it: the step is kept far beyond the
    tolerance. With the floor by work (`SMALLEST_STALL_VISITS`, capped at 4,000 sweeps:
    4,000 sweeps of 446 contacts) the hand-over's Newton ends the solve, and the answer
    meets the law."""
    data = dict(np.load(Path(__file__).parent / "data" / "early_stop_of_a_sand_pour.npz"))
    G = sp.csr_matrix((data["G_data"], data["G_indices"], data["G_indptr"]), shape=tuple(data["G_shape"]))
    T = sp.csr_matrix((data["T_data"], data["T_indices"], data["T_indptr"]), shape=tuple(data["T_shape"]))
    rows = coulomb_rows.sweep_rows(InverseMassDiagonal(data["inverse_mass"]), G, T, data["mu"], data["lower"])
    arguments = (rows, data["predicted"], data["start"], data["tolerance"], FRICTION_SWEEPS)
    floor = int(data["floor"])
    m = rows.cols.shape[0]
    hand_over = gauss_seidel._first_newton_wait(m) * gauss_seidel.CHECK_EVERY  # stalled sweeps
    assert floor == 1000 < hand_over < gauss_seidel.effective_floor(floor, m)
    with monkeypatch.context() as sweeps_floor_only:
        sweeps_floor_only.setattr(gauss_seidel, "SMALLEST_STALL_VISITS", 0)
        with pytest.raises(ConvergenceError) as stopped:
            gauss_seidel.solve(*arguments, floor=floor, aim=0.5)
    assert stopped.value.residual > 5.0 * stopped.value.tolerance
    assert stopped.value.iterations < hand_over
    r, sweeps, _ = gauss_seidel.solve(*arguments, floor=floor, aim=0.5)
    assert_coulomb_law(data, G, T, r)
    assert sweeps < gauss_seidel.effective_floor(floor, m)


def captured_stop(name: str):
    """``(data, G, T, rows)`` of a stop stored in ``tests/data/<name>.npz``."""
    data = dict(np.load(Path(__file__).parent / "data" / f"{name}.npz"))
    G = sp.csr_matrix((data["G_data"], data["G_indices"], data["G_indptr"]), shape=tuple(data["G_shape"]))
    T = sp.csr_matrix((data["T_data"], data["T_indices"], data["T_indptr"]), shape=tuple(data["T_shape"]))
    rows = coulomb_rows.sweep_rows(InverseMassDiagonal(data["inverse_mass"]), G, T, data["mu"], data["lower"])
    return data, G, T, rows


def test_a_stop_that_the_repairs_leave_is_mended_by_newton_from_the_start(monkeypatch):
    """`tests/data/stop_mended_from_the_start.npz`: a step of a pour of 300 turning
    spheres (seed 22, no rolling resistance, 492 contacts, the run's floor of 1,000
    sweeps). The sweeps stop beyond the tolerance, and the repairs on growing clusters
    and Newton on the loaded contacts, all started from the sweeps' best iterate, leave
    it there. Newton on every contact from the solve's start (`_newton_from_start`) ends
    within the tolerance, with factorisations that cost no more than the sweeps made,
    and the answer meets the law contact by contact."""
    data, G, T, rows = captured_stop("stop_mended_from_the_start")
    arguments = (rows, data["predicted"], data["start"], data["tolerance"], FRICTION_SWEEPS)
    floor = int(data["floor"])
    with monkeypatch.context() as held_back:
        held_back.setattr(
            gauss_seidel,
            "_newton_from_start",
            lambda rows, predicted, first, r, u, residual, *rest: (r, u, residual, 0),
        )
        with pytest.raises(ConvergenceError) as stopped:
            gauss_seidel.solve(*arguments, floor=floor)
    assert stopped.value.residual > 1.5 * stopped.value.tolerance
    calls = []
    newton = gauss_seidel.newton

    def recording(rows, predicted, r, tolerance, target, budget):
        answer = newton(rows, predicted, r, tolerance, target, budget=budget)
        calls.append((r.copy(), budget, answer[1], answer[2]))
        return answer

    monkeypatch.setattr(gauss_seidel, "newton", recording)
    r, sweeps, _ = gauss_seidel.solve(*arguments, floor=floor)
    assert_coulomb_law(data, G, T, r)
    ((first, budget, ratio, work),) = calls
    assert np.array_equal(first, coulomb_rows.onto_cones(rows, data["start"]))
    assert ratio <= 1.0  # Newton from the start, not the path after it, ended the stop
    # Newton's work is priced before each factorisation (`coulomb_newton.newton`), so
    # it may pass its budget by one misestimated factorisation at most.
    assert work <= 1.1 * budget and budget <= stopped.value.iterations * rows.values.size
    assert sweeps == stopped.value.iterations + 1  # the sweep after Newton's answer


def test_a_stop_that_newton_from_the_start_leaves_is_mended_along_a_path_in_mu(monkeypatch):
    """`tests/data/stop_mended_along_a_path_in_mu.npz`: a step of a pour of 300 turning
    spheres (seed 13, no rolling resistance, 504 contacts). The sweeps, the repairs and
    Newton from the solve's start all leave it beyond the tolerance; Newton along the
    path from the frictionless law to the law itself
    (`coulomb_newton.newton_by_continuation`) ends within it, within its allowance of
    `CONTINUATION_SWEEPS` times the sweeps made, and the answer meets the law contact by
    contact."""
    data, G, T, rows = captured_stop("stop_mended_along_a_path_in_mu")
    arguments = (rows, data["predicted"], data["start"], data["tolerance"], FRICTION_SWEEPS)
    floor = int(data["floor"])
    with monkeypatch.context() as held_back:
        held_back.setattr(
            gauss_seidel, "newton_by_continuation", lambda rows, predicted, start, *rest, **budget: (start, np.inf, 0.0)
        )
        with pytest.raises(ConvergenceError) as stopped:
            gauss_seidel.solve(*arguments, floor=floor)
    assert stopped.value.residual > 1.5 * stopped.value.tolerance
    budgets = []
    path = gauss_seidel.newton_by_continuation

    def recording(*args, budget):
        answer = path(*args, budget=budget)
        budgets.append((budget, answer[2]))
        return answer

    monkeypatch.setattr(gauss_seidel, "newton_by_continuation", recording)
    r, sweeps, _ = gauss_seidel.solve(*arguments, floor=floor)
    assert_coulomb_law(data, G, T, r)
    ((budget, work),) = budgets
    assert work <= 1.1 * budget and budget <= gauss_seidel.CONTINUATION_SWEEPS * sweeps * rows.values.size
    assert sweeps == stopped.value.iterations + 1  # the sweep after the path's answer


def test_the_path_in_mu_starts_frictionless_and_ends_at_the_law(monkeypatch):
    """`coulomb_newton.newton_by_continuation` solves problems whose friction
    coefficients are ``s mu``, from ``s = 0`` to ``s = 1``: each problem starts from the
    answer of the last one Newton solved within the tolerance, at a larger ``s`` than
    that one's; its answer, swept once, meets the law itself. With no budget it makes no
    factorisation and gives back its start, with an infinite ratio."""
    data, G, T, rows = captured_stop("stop_mended_along_a_path_in_mu")
    start = coulomb_rows.onto_cones(rows, data["start"])
    calls = []  # (s, start of the call, answer, ratio)
    newton = coulomb_newton.newton
    frictional = rows.mu > 0.0

    def recording(problem, predicted, first, *args, **kwargs):
        scale = problem.mu[frictional] / rows.mu[frictional]
        assert np.all(scale == scale[0])  # every coefficient scaled alike
        answer = newton(problem, predicted, first, *args, **kwargs)
        calls.append((float(scale[0]), first.copy(), answer[0], answer[1]))
        return answer

    monkeypatch.setattr(coulomb_newton, "newton", recording)
    r, ratio, work = coulomb_newton.newton_by_continuation(rows, data["predicted"], start, data["tolerance"], 0.03)
    frictionless = dataclasses.replace(rows, mu=0.0 * rows.mu)
    assert calls[0][0] == 0.0 and np.array_equal(calls[0][1], coulomb_rows.onto_cones(frictionless, start))
    last_solved = calls[0]
    assert last_solved[3] <= 1.0
    for call in calls[1:]:
        scale, first, answer, call_ratio = call
        assert scale > last_solved[0]
        problem = dataclasses.replace(rows, mu=rows.mu * scale)
        assert np.array_equal(first, coulomb_rows.onto_cones(problem, last_solved[2]))
        if call_ratio <= 1.0:
            last_solved = call
    assert last_solved[0] == 1.0 and last_solved[2] is r
    assert ratio <= 1.0 and work > 0.0
    # Newton's iterates may leave the cones by round-off: one sweep makes them local
    # answers, as the solve does with every Newton answer (`_swept_once`).
    assert_coulomb_law(data, G, T, gauss_seidel._swept_once(rows, data["predicted"], r)[0])
    r, ratio, work = coulomb_newton.newton_by_continuation(
        rows, data["predicted"], start, data["tolerance"], 0.03, budget=0.0
    )
    assert r is start and ratio == np.inf and work == 0.0
