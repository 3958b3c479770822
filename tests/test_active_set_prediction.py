"""The first active set guessed by projected SOR sweeps (`granular.contact.dual_sweeps`,
`granular.contact.active_set.predicted_active`) changes where the active-set rounds start,
not the answer: on a settling pile the answer with the guess passes the KKT test
and gives the same slacks as the answer from the previous support."""

import numpy as np
import pytest
import scipy.sparse as sp

import granular as gr
from granular.contact import active_set, delassus_rows
from granular.contact.dual_sweeps import projected_gauss_seidel


def _settling_pile_projection(monkeypatch):
    """The arguments of the last active-set solve of more than `DENSE_ROWS` rows of 144
    spheres poured into an open box (150 steps of 1 ms; about 390 rows, 230 active)."""
    calls = []
    original = active_set.solve

    def recording(rows_data, keys, warm, accurate, feasibility, workspace=None):
        if rows_data.size > delassus_rows.DENSE_ROWS:
            calls.append((rows_data, keys, warm.copy(), accurate, feasibility))
        return original(rows_data, keys, warm, accurate, feasibility, workspace)

    monkeypatch.setattr(active_set, "solve", recording)
    n, spacing = 6, 0.021
    index = np.arange(n * n * 4)
    grid = np.stack([index % n, (index // n) % n, index // (n * n)], axis=1)
    rng = np.random.default_rng(1)
    centre = (n - 1) * spacing / 2
    positions = np.column_stack(
        [grid[:, 0] * spacing - centre, grid[:, 1] * spacing - centre, 0.011 + grid[:, 2] * spacing]
    ) + rng.uniform(-4e-4, 4e-4, (index.size, 3))
    half = (n * spacing + 0.005) / 2.0
    world = gr.SphereWorld(
        positions,
        0.01 * rng.uniform(0.9, 1.0, index.size),
        masses=1.0,
        restitution=0.0,
        walls=[gr.Box([-half, -half, 0.0], [half, half, 1.0], open_top=True)],
    )
    simulation = gr.Simulation(world, dt=1e-3)
    for _ in range(150):
        simulation.step()
    monkeypatch.setattr(active_set, "solve", original)
    return calls[-1]


def test_the_predicted_first_set_leaves_the_answer_of_a_settling_pile_unchanged(monkeypatch):
    rows, keys, warm, accurate, feasibility = _settling_pile_projection(monkeypatch)
    support = np.where(warm * rows.diagonal > feasibility, warm, 0.0) > 0.0
    predicted = active_set.predicted_active(rows, np.where(support, warm, 0.0), feasibility)
    assert predicted is not None and np.count_nonzero(predicted != support) > 10  # the guess is exercised

    with_guess = active_set.solve(rows, keys, warm, accurate, feasibility, active_set.Workspace())
    monkeypatch.setattr(active_set, "PREDICTION_SWEEPS", 0)
    from_support = active_set.solve(rows, keys, warm, accurate, feasibility, active_set.Workspace())

    assert with_guess is not None and from_support is not None
    assert accurate(with_guess, rows.slack(with_guess))
    # The slacks (velocities along the rows) are unique at the optimum: equal to the
    # feasibility tolerance, where a proximal centre moved to the sweeps' impulses
    # (measured on SCoPI's settled pile) left them 30 tolerances apart.
    assert np.abs(rows.slack(with_guess) - rows.slack(from_support)).max() <= feasibility


def test_the_sweeps_converge_to_the_complementarity_answer_of_a_definite_problem():
    rng = np.random.default_rng(7)
    m, d = 40, 90  # fewer rows than coordinates: W = H H^T is positive definite
    H = sp.random(m, d, density=0.1, random_state=rng, format="csr") + sp.eye(m, d, format="csr")
    H = sp.csr_matrix(H)
    c = rng.normal(size=m)
    diagonal = np.asarray(H.multiply(H).sum(axis=1)).ravel()
    for relaxation, full_every in ((1.0, 1), (1.7, 1), (1.7, 3)):
        impulses, u, _ = projected_gauss_seidel(H, diagonal, c, np.zeros(m), 3000, relaxation, full_every=full_every)
        W = (H @ H.T).toarray()
        slack = W @ impulses + c
        np.testing.assert_allclose(u, H.T @ impulses, atol=1e-12)  # kept up to date incrementally
        assert impulses.min() >= 0.0 and slack.min() >= -1e-10
        assert np.abs(np.minimum(diagonal * impulses, slack)).max() <= 1e-10
        assert np.count_nonzero(impulses) not in (0, m)  # a problem with both kinds of rows


@pytest.mark.exact
def test_sweeps_that_stop_once_the_support_settles_keep_the_support_of_the_full_run():
    """The early stop (``settle``) ends the sweeps once no row has entered or left the
    support over the latter half of them. On a definite problem, whose sweeps
    converge, it stops well before the cap with the support the full run ends on."""
    rng = np.random.default_rng(8)
    m, d = 60, 150
    H = sp.csr_matrix(sp.random(m, d, density=0.08, random_state=rng, format="csr") + sp.eye(m, d, format="csr"))
    c = rng.normal(size=m)
    diagonal = np.asarray(H.multiply(H).sum(axis=1)).ravel()
    full, _, made_full = projected_gauss_seidel(H, diagonal, c, np.zeros(m), 3000, 1.7)
    early, u, made = projected_gauss_seidel(H, diagonal, c, np.zeros(m), 3000, 1.7, settle=10)
    assert made_full == 3000 and 10 <= made < 300
    np.testing.assert_array_equal(early > 0.0, full > 0.0)
    np.testing.assert_allclose(u, H.T @ early, atol=1e-12)


def test_the_self_stress_solve_and_the_first_round_share_one_factorisation(monkeypatch):
    """The guessed first set differs from the previous support; the self-stress
    solve runs on the guessed set, so its factor serves the first round. Here the
    guess is the final set (two rounds: the solve and one proximal update, no row
    flipped), so the whole solve takes one factorisation; solved on the previous
    support alone, the self-stress block differed and the solve took two."""
    rows, keys, warm, accurate, feasibility = _settling_pile_projection(monkeypatch)
    workspace = active_set.Workspace()
    answer = active_set.solve(rows, keys, warm, accurate, feasibility, workspace)
    assert answer is not None and accurate(answer, rows.slack(answer))
    assert workspace.last.rounds == 2 and workspace.last.factorisations == 1, workspace.last
