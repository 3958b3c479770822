"""The metric projection (granular.contact.projection): optimality, agreement of the two
backends, degenerate contact networks, and the unconstrained shortcut.

    u = argmin 1/2 (u - v)^T M (u - v)   subject to   G u >= b

KKT conditions checked on every answer, with the tolerances of
`granular.tolerances` and the velocity scale the projection itself uses,
``V = max(max_k (b_k - G_k v), max_k (|G| |v|)_k)``:

- feasibility   ``s = G u - b >= -VELOCITY_TOLERANCE V``;
- sign          ``lambda >= 0`` (exactly);
- complementarity, as the natural residual ``max_k |min(W_kk lambda_k, s_k)|
  <= COMPLEMENTARITY_TOLERANCE V`` (``W = G M^-1 G^T``, velocity units);
- stationarity  ``M (u - v) = G^T lambda`` to round-off (u is rebuilt from lambda).

Distance between two approximate solutions (u1, l1), (u2, l2) (both
``u_a = v + M^-1 G^T l_a``): ``|u1 - u2|_M^2 = (l1 - l2)^T (s1 - s2)
<= l1.s1+ + l2.s2+ + l1.s2- + l2.s1-``. With the KKT tolerances above,
``l_k s_k+ <= dc max(l_k, s_k+ / W_kk)`` (either ``W_kk l_k <= dc`` or ``s_k <= dc``)
and ``s_k- <= df``. `solution_distance_bound` evaluates this bound; it is how the
tests below justify their agreement tolerances instead of guessing them. With the
active rows independent, the multipliers then agree to
``|l1 - l2| <= |u1 - u2|_M / sigma_min(M^-1/2 G_S^T)`` on the union S of supports.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from granular.errors import JammingError, solver_errors_at
from granular.metric import DenseMetric, DiagonalMetric
from granular.contact.interior_point import interior_point
from granular.contact.problem import ContactProblem
from granular.contact.projection import project
from granular.tolerances import COMPLEMENTARITY_TOLERANCE, VELOCITY_TOLERANCE

pytest.importorskip("cvxpy")

ROUNDOFF = 64 * np.finfo(float).eps


# -- problems ----------------------------------------------------------------------------


def random_metric(rng, d: int, dense: bool):
    """A random SPD metric: diagonal masses in [0.5, 5], or a dense A A^T + d I."""
    if dense:
        a = rng.normal(size=(d, d))
        return DenseMetric(a @ a.T + d * np.eye(d))
    return DiagonalMetric(rng.uniform(0.5, 5.0, d))


def random_jacobian(rng, m: int, d: int, density: float = 0.2) -> sp.csr_matrix:
    """Sparse Gaussian rows; every row has at least one entry."""
    G = sp.random(m, d, density=density, random_state=rng, data_rvs=rng.standard_normal, format="lil")
    for k in range(m):
        if G.rows[k] == []:
            G[k, rng.integers(d)] = rng.standard_normal()
    return G.tocsr()


def random_feasible_problem(seed: int, d: int = 30, m: int = 45, dense: bool = False):
    """Random metric, G and v; bounds b = G u0 - s (s >= 0, half of them 0), so u0 is
    feasible. The prediction v violates a good part of the rows."""
    rng = np.random.default_rng(seed)
    metric = random_metric(rng, d, dense)
    G = random_jacobian(rng, m, d)
    u0 = rng.normal(size=d)
    slack = np.where(rng.random(m) < 0.5, 0.0, rng.uniform(0.0, 1.0, m))
    return metric, G, 3.0 * rng.normal(size=d), G @ u0 - slack


def known_solution_problem(
    seed: int, d: int = 12, active: int = 8, inactive: int = 10, dense: bool = False, duplicates: int = 0
):
    """A problem built around its answer: rows ``active`` hold with equality at u*,
    the others with slack; lambda* >= 0 on the active rows (about a third of them
    zero: weakly active); ``v = u* - M^-1 G^T lambda*``. The KKT conditions hold
    exactly at (u*, lambda*), so u* is *the* projection. ``duplicates`` repeats
    some active rows (the network becomes degenerate, lambda non-unique)."""
    rng = np.random.default_rng(seed)
    metric = random_metric(rng, d, dense)
    m = active + inactive
    G = random_jacobian(rng, m, d, density=0.3)
    u_star = rng.normal(size=d)
    slack = np.concatenate([np.zeros(active), rng.uniform(0.1, 1.0, inactive)])
    multipliers = np.zeros(m)
    multipliers[:active] = np.where(rng.random(active) < 0.67, rng.uniform(0.1, 2.0, active), 0.0)
    if duplicates:
        rows = rng.choice(np.flatnonzero(multipliers > 0.0), duplicates)
        G = sp.vstack([G, G[rows]]).tocsr()
        slack = np.concatenate([slack, np.zeros(duplicates)])
        multipliers = np.concatenate([multipliers, np.zeros(duplicates)])
    b = G @ u_star - slack
    v = u_star - metric.solve(G.T @ multipliers)
    return metric, G, v, b, u_star, multipliers


# -- checks ---------------------------------------------------------------------------------


def velocity_scale(G, v, b) -> float:
    """The scale the projection measures its tolerances against (see module docstring)."""
    return max(float((b - G @ v).max()), float((abs(G) @ np.abs(v)).max()))


def kkt_residuals(metric, G, v, b, u, multipliers) -> dict:
    """The four KKT residuals; feasibility and complementarity in units of V."""
    scale = velocity_scale(G, v, b)
    slack = G @ u - b
    W_diagonal = metric.delassus(G).diagonal()
    contact = G.T @ multipliers
    return dict(
        feasibility=float(max(-slack.min(), 0.0)) / scale,
        sign=float(multipliers.min()),
        complementarity=float(np.abs(np.minimum(W_diagonal * multipliers, slack)).max()) / scale,
        stationarity=float(np.abs(metric.apply(u - v) - contact).max())
        / max(float(np.abs(contact).max()), float(np.abs(metric.apply(v)).max())),
    )


def assert_kkt(metric, G, v, b, u, multipliers) -> dict:
    residuals = kkt_residuals(metric, G, v, b, u, multipliers)
    assert residuals["feasibility"] <= VELOCITY_TOLERANCE, residuals
    assert residuals["sign"] >= 0.0, residuals
    assert residuals["complementarity"] <= COMPLEMENTARITY_TOLERANCE, residuals
    assert residuals["stationarity"] <= ROUNDOFF, residuals
    return residuals


def solution_distance_bound(metric, G, v, b, *answers) -> float:
    """Upper bound of ``|u_a - u_c|_M^2`` for answers (u, lambda) meeting the KKT
    tolerances, from the tolerances (module docstring); also bounds the distance of
    one answer to an exact solution (pass it alone)."""
    scale = velocity_scale(G, v, b)
    dc, df = COMPLEMENTARITY_TOLERANCE * scale, VELOCITY_TOLERANCE * scale
    W_diagonal = metric.delassus(G).diagonal()
    bound = 0.0
    for u, multipliers in answers:
        slack = np.maximum(G @ u - b, 0.0)
        pushing = multipliers > 0.0
        bound += dc * float(np.maximum(multipliers, slack / W_diagonal)[pushing].sum())
        bound += df * float(multipliers.sum())
    return bound


def m_norm(metric, x) -> float:
    return float(np.sqrt(x @ metric.apply(x)))


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dense", [False, True], ids=["diagonal-M", "dense-M"])
@pytest.mark.parametrize("seed", range(6))
def test_random_projection_meets_kkt_and_backends_agree(seed, dense):
    """Random SPD metric, sparse G, random v: both backends meet the KKT conditions,
    and their velocities agree to the distance the tolerances allow."""
    metric, G, v, b = random_feasible_problem(seed, dense=dense)
    assert np.any(G @ v < b)  # the prediction is infeasible: a real projection
    osqp = project(ContactProblem(metric, G, v, b), solver="osqp")
    cvxpy = project(ContactProblem(metric, G, v, b), solver="cvxpy")
    for answer in (osqp, cvxpy):
        assert_kkt(metric, G, v, b, answer.velocities, answer.impulses)
    allowed = solution_distance_bound(
        metric, G, v, b, (osqp.velocities, osqp.impulses), (cvxpy.velocities, cvxpy.impulses)
    )
    distance = m_norm(metric, osqp.velocities - cvxpy.velocities)
    assert distance**2 <= allowed + ROUNDOFF * m_norm(metric, v) ** 2


@pytest.mark.parametrize("dense", [False, True], ids=["diagonal-M", "dense-M"])
@pytest.mark.parametrize("seed", range(4))
def test_projection_finds_the_known_solution_and_its_multipliers(seed, dense):
    """Independent active rows: the answer is u*, the multipliers are lambda*
    (unique), for both backends, to the distance the tolerances allow."""
    metric, G, v, b, u_star, multipliers = known_solution_problem(seed, dense=dense)
    for solver in ("osqp", "cvxpy"):
        answer = project(ContactProblem(metric, G, v, b), solver=solver)
        assert_kkt(metric, G, v, b, answer.velocities, answer.impulses)
        allowed = solution_distance_bound(metric, G, v, b, (answer.velocities, answer.impulses))
        distance = m_norm(metric, answer.velocities - u_star)
        assert distance**2 <= allowed + ROUNDOFF * m_norm(metric, v) ** 2
        support = np.flatnonzero((answer.impulses > 0.0) | (multipliers > 0.0))
        GS = G[support].toarray()
        # sigma_min of M^-1/2 G_S^T: the square root of the smallest eigenvalue of W_SS.
        sigma = np.sqrt(np.linalg.eigvalsh(GS @ metric.solve(GS.T)).min())
        assert sigma > 1e-3  # the supports are independent: the multipliers are unique
        error = np.linalg.norm(answer.impulses - multipliers)
        assert error <= (np.sqrt(allowed) + 1e-12) / sigma


@pytest.mark.parametrize("dense", [False, True], ids=["diagonal-M", "dense-M"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("path", ["active-set", "pivoting", "refined"])
def test_degenerate_networks_are_refined_to_the_known_solution(seed, dense, path, monkeypatch):
    """More active rows than unknowns and duplicated rows (the multipliers are not
    unique, OSQP's polishing fails): the answer goes through the proximal active-set
    method (the default), or, when that is switched off, complementary pivoting (few
    rows) or the interior-point refinement (OSQP first, as for many rows); it meets
    the KKT conditions, and its velocity is u*. The impulse it applies, G^T lambda,
    is unique, and the two backends agree on it."""
    import granular.contact.active_set as active_set
    import granular.contact.projection as projection

    if path != "active-set":
        monkeypatch.setattr(active_set, "solve", lambda *args, **kwargs: None)
    if path == "refined":
        monkeypatch.setattr(projection, "SMALL_PROBLEM", 0)
    metric, G, v, b, u_star, _ = known_solution_problem(seed, d=12, active=30, inactive=20, dense=dense, duplicates=5)
    answers = {}
    for solver in ("osqp", "cvxpy"):
        answer = project(ContactProblem(metric, G, v, b), solver=solver)
        assert_kkt(metric, G, v, b, answer.velocities, answer.impulses)
        allowed = solution_distance_bound(metric, G, v, b, (answer.velocities, answer.impulses))
        assert m_norm(metric, answer.velocities - u_star) ** 2 <= allowed + ROUNDOFF * m_norm(metric, v) ** 2
        answers[solver] = answer
    assert answers["osqp"].status == path
    # M^-1 G^T (l1 - l2) = u1 - u2: the applied impulses agree as the velocities do.
    difference = G.T @ (answers["osqp"].impulses - answers["cvxpy"].impulses)
    allowed = solution_distance_bound(metric, G, v, b, *[(a.velocities, a.impulses) for a in answers.values()])
    assert float(difference @ metric.solve(difference)) <= allowed + ROUNDOFF * m_norm(metric, v) ** 2


def test_interior_point_solves_a_singular_delassus_problem():
    """Directly: duplicated contacts make W singular; the interior-point method
    still reaches its feasibility and natural-residual targets."""
    metric, G, v, b, u_star, _ = known_solution_problem(7, d=10, active=25, inactive=5, duplicates=8)
    W = metric.delassus(G)
    assert np.linalg.matrix_rank(W.toarray()) < W.shape[0]
    c = G @ v - b
    feasibility, complementarity = 1e-11, 1e-9
    multipliers = interior_point(W, c, feasibility, complementarity)
    slack = W @ multipliers + c
    assert multipliers.min() > 0.0  # iterates stay strictly inside
    assert -slack.min() <= feasibility
    assert np.abs(np.minimum(W.diagonal() * multipliers, slack)).max() <= complementarity
    assert np.abs(v + metric.solve(G.T @ multipliers) - u_star).max() <= 1e-6


@pytest.mark.exact
@pytest.mark.parametrize("solver", ["osqp", "cvxpy"])
def test_a_feasible_prediction_is_returned_bit_for_bit(solver):
    """v already satisfies G v >= b (some rows with equality): u is v, bit for bit,
    with zero multipliers; no solver is called."""
    rng = np.random.default_rng(11)
    metric = random_metric(rng, 20, dense=False)
    G = random_jacobian(rng, 25, 20)
    v = rng.normal(size=20) / 3.0  # not a float with a short binary expansion
    b = G @ v - np.where(rng.random(25) < 0.3, 0.0, rng.uniform(0.0, 1.0, 25))
    answer = project(ContactProblem(metric, G, v, b), solver=solver)
    assert answer.velocities.tobytes() == v.tobytes()
    assert answer.velocities is not v  # a copy: the caller's array is not shared
    assert np.all(answer.impulses == 0.0) and answer.impulses.shape == (25,)
    assert answer.status == "unconstrained"
    empty = project(ContactProblem(metric, sp.csr_matrix((0, 20)), v, np.zeros(0)), solver=solver)
    assert empty.velocities.tobytes() == v.tobytes() and empty.impulses.size == 0


def test_an_infeasible_projection_raises_jamming_error_with_the_time():
    """Two opposite rows that cannot both hold (u >= 1 and -u >= 1): JammingError,
    never an answer; the scheme that calls quotes the time of its step."""
    metric = DiagonalMetric(np.ones(2))
    G = sp.csr_matrix(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    with pytest.raises(JammingError, match=r"infeasible at t = 0\.25 s") as caught:
        with solver_errors_at(0.25):
            project(ContactProblem(metric, G, np.zeros(2), np.array([1.0, 1.0])))
    assert caught.value.t == 0.25


def test_a_failed_projection_reachable_only_at_absurd_speed_is_a_jam(monkeypatch):
    """u_0 >= 1e6 (velocity units) can be met, but not by |u_k| <= 1e3. When every
    solver fails (simulated), the projection is a SolverError without a speed
    limit and a JammingError with one: the linear program finds no velocity below
    the limit."""
    import granular.contact.active_set as active_set
    import granular.contact.backends.osqp_ as osqp_backend
    import granular.contact.projection as projection
    from granular.contact.backends import BackendResult
    from granular.errors import SolverError

    monkeypatch.setattr(active_set, "solve", lambda *args, **kwargs: None)
    monkeypatch.setattr(
        osqp_backend,
        "solve",
        lambda problem, warm=None, **kw: BackendResult(np.zeros(problem.lower.size), "not_converged"),
    )
    monkeypatch.setattr(projection, "pivoted_impulses", lambda *args: None)
    monkeypatch.setattr(
        projection, "interior_point", lambda *args, **kwargs: (_ for _ in ()).throw(SolverError("simulated"))
    )
    metric = DiagonalMetric(np.ones(2))
    G = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 1e-6]]))
    lower = np.array([1e6, 1e6])
    with pytest.raises(SolverError) as plain:
        project(ContactProblem(metric, G, np.zeros(2), lower))
    assert not isinstance(plain.value, JammingError)
    with pytest.raises(JammingError, match="cannot make room"):
        project(ContactProblem(metric, G, np.zeros(2), lower), speed_limit=1e3)


def pinned_network():
    """A sub-problem of a step of the 300-sphere box pour (t = 0.553 s, 830 rows)
    where chains of contacts are pinned between walls: its optimal multipliers form
    an unbounded set. Stored as the Jacobian, inverse masses, prediction, bounds and
    the absolute tolerances that step used."""
    data = np.load(Path(__file__).parent / "data" / "pinned_network.npz")
    G = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
    masses = 1.0 / data["inverse_mass"]
    return (
        DiagonalMetric(masses),
        G,
        data["predicted"],
        data["lower"],
        float(data["feasibility"]),
        float(data["complementarity"]),
    )


def test_a_pinned_contact_network_gets_bounded_multipliers():
    """In the box pour this sub-problem defeated OSQP's polishing and then the plain
    interior-point method from both starts (its iterates run off along the
    unbounded optimal face until round-off stops them short of the tolerances), and
    the run stopped with a SolverError. Now it is solved, meets the KKT conditions
    and its multipliers stay physical: no contact impulse exceeds the momentum of
    all the bodies together, sum_i m_i |v_i| (0.06 N s here)."""
    metric, G, v, b, _, _ = pinned_network()
    answer = project(ContactProblem(metric, G, v, b))
    assert answer.status == "active-set"
    assert_kkt(metric, G, v, b, answer.velocities, answer.impulses)
    momentum = float(np.sum(metric.diagonal * np.abs(v)))
    assert answer.impulses.max() <= momentum, (answer.impulses.max(), momentum)


def test_a_settled_lattice_keeps_physical_impulses_from_step_to_step():
    """64 equal spheres (1.3 g) settle from a jittered lattice into a frictionless box.
    Their redundant contacts admit impulses around closed loops that cancel on every
    sphere (self-stress): the same velocities, any size. A static frictionless pile
    needs no contact impulse beyond a few times the weight of the whole pile over a
    step; we allow ten times it. Centred on the previous step's impulses, the steps
    kept a self-stress picked up while the layers landed: 0.55 N s, 700 times the
    bound, from t = 0.25 s on."""
    import granular as gr
    from support.systems import lattice_in_a_box

    world = lattice_in_a_box(0)
    dt = 1e-3
    run = gr.Simulation(world, dt=dt).run(duration=0.3, record_every=10)
    weight = float(world.masses_at(0.0).sum()) * 9.81 * dt  # N s, the pile's weight over a step
    largest = max(float(c.impulse.max(initial=0.0)) for c in run.contacts[-5:])
    assert 0.0 < largest <= 10.0 * weight, (largest, weight)


@pytest.mark.exact
@pytest.mark.parametrize("seed", range(4))
def test_a_small_projection_on_its_own_coordinates_agrees_with_the_general_path(seed):
    """A few rows (12) touching 24 of 400 coordinates, a diagonal metric: `project`
    solves them on those coordinates in dense arrays. The answer meets the KKT
    conditions, leaves every other coordinate bit for bit as predicted, and agrees
    with the general path (the same masses as a `DenseMetric`) to the distance the
    tolerances allow."""
    rng = np.random.default_rng(seed)
    d, touched = 400, rng.choice(400, 24, replace=False)
    masses = rng.uniform(0.5, 5.0, d)
    G = sp.lil_matrix((12, d))
    for k in range(12):
        G[k, rng.choice(touched, 4, replace=False)] = rng.standard_normal(4)
    G = G.tocsr()
    v = 3.0 * rng.normal(size=d)
    b = G @ rng.normal(size=d) - np.where(rng.random(12) < 0.5, 0.0, rng.uniform(0.0, 1.0, 12))
    assert np.any(G @ v < b)
    compact = project(ContactProblem(DiagonalMetric(masses), G, v, b))
    general = project(ContactProblem(DenseMetric(np.diag(masses)), G, v, b))
    assert compact.status == "active-set"
    assert_kkt(DiagonalMetric(masses), G, v, b, compact.velocities, compact.impulses)
    untouched = np.setdiff1d(np.arange(d), G.indices)
    assert untouched.size >= d - 24 and np.array_equal(compact.velocities[untouched], v[untouched])
    metric = DiagonalMetric(masses)
    allowed = solution_distance_bound(
        metric, G, v, b, (compact.velocities, compact.impulses), (general.velocities, general.impulses)
    )
    assert m_norm(metric, compact.velocities - general.velocities) ** 2 <= allowed + ROUNDOFF * m_norm(metric, v) ** 2


def _failing_active_set_and_counted_programs(monkeypatch, budget):
    """Simulate an active-set failure and record the rows of every jam program."""
    import granular.contact.active_set as active_set
    import granular.contact.projection as projection

    monkeypatch.setattr(active_set, "solve", lambda *args, **kwargs: None)
    monkeypatch.setattr(projection, "JAM_CHECK_ROWS", budget)
    sizes = []
    infeasible = projection.infeasible

    def counted(jacobian, lower, *args, **kwargs):
        sizes.append(jacobian.shape[0])
        return infeasible(jacobian, lower, *args, **kwargs)

    monkeypatch.setattr(projection, "infeasible", counted)
    return sizes


def _independent_rows(count, first_coordinate, d):
    """``count`` rows ``u_k >= 0.1`` on coordinates ``first_coordinate + k``."""
    rows = np.arange(count)
    return sp.csr_matrix((np.ones(count), (rows, first_coordinate + rows)), shape=(count, d)), np.full(count, 0.1)


def test_the_jam_check_certifies_a_jam_from_the_rows_nearest_the_violation(monkeypatch):
    """Two rows that cannot both hold (u_0 >= 1, -u_0 >= 1) among 300 feasible ones: with
    the active set failing, the jam programs see at most their budget of rows, those
    reached first from the most violated row, and still certify the jam."""
    sizes = _failing_active_set_and_counted_programs(monkeypatch, budget=10)
    d = 301
    jam = sp.csr_matrix(np.vstack([np.eye(1, d, 0), -np.eye(1, d, 0)]))
    rest, rest_lower = _independent_rows(300, 1, d)
    G = sp.vstack([rest[:150], jam, rest[150:]]).tocsr()
    lower = np.concatenate([rest_lower[:150], [1.0, 1.0], rest_lower[150:]])
    with pytest.raises(JammingError, match="infeasible"):
        project(ContactProblem(DiagonalMetric(np.ones(d)), G, np.zeros(d), lower))
    assert sizes and max(sizes) <= 10


def test_the_jam_check_of_a_feasible_set_is_bounded_and_the_fallback_answers(monkeypatch):
    """300 feasible rows, all violated by the prediction, the active set failing: the
    jam programs see at most their budget of rows and the fallback's answer is the
    projection, u_k = 0.1 on every coordinate."""
    sizes = _failing_active_set_and_counted_programs(monkeypatch, budget=10)
    d = 300
    G, lower = _independent_rows(300, 0, d)
    answer = project(ContactProblem(DiagonalMetric(np.ones(d)), G, np.zeros(d), lower), speed_limit=10.0)
    assert sizes and max(sizes) <= 10
    # the acceptance test's tolerances at the problem's velocity scale 0.1
    change = answer.velocities - 0.1
    assert change.min() >= -VELOCITY_TOLERANCE * 0.1 and change.max() <= COMPLEMENTARITY_TOLERANCE * 0.1
