"""The acceptance test of the Coulomb law (`granular.contact.kkt.coulomb_residual`):
zero on contacts that obey the law (sticking, sliding against the friction impulse,
separated), positive on each kind of violation, and met by the answers of every
frictional method: the sphere sweeps, planar Lemke pivoting and the conic fixed point.
"""

from dataclasses import replace

import numpy as np
import pytest

from granular.contact import coulomb_rows
from granular.contact.friction import FIXED_POINT_SOLVE_ACCURACY, judge, project_frictional, velocity_scale
from granular.contact.kkt import (
    coulomb_holds,
    coulomb_residual,
    coulomb_weights,
    frictional_residual,
    shifted_normal_allowance,
)
from granular.contact.problem import ContactProblem
from granular.errors import ConvergenceError
from granular.tolerances import FRICTION_SWEEP_TOLERANCE, FRICTION_TOLERANCE

from test_friction import random_contacts
from test_friction_pile import crowd

MU = 0.5
W = 2.0  # 1/kg, the normal weight of the hand-made contacts
V = 3.5  # 1/kg, their tangential weight


def one_contact(slack, tangential_velocity, normal, tangential):
    """`coulomb_residual` (m/s) of one contact with ``mu = MU``."""
    return float(
        coulomb_residual(
            np.array([slack]),
            np.array([tangential_velocity], dtype=float),
            np.array([normal]),
            np.array([tangential], dtype=float),
            np.array([MU]),
            np.array([W]),
            np.array([V]),
        )[0]
    )


@pytest.mark.parametrize(
    "contact",
    [
        dict(slack=0.0, tangential_velocity=[0.0, 0.0], normal=1.0, tangential=[0.2, -0.1]),  # sticking
        dict(slack=0.0, tangential_velocity=[-0.6, 0.0], normal=1.0, tangential=[0.5, 0.0]),  # sliding
        dict(slack=0.0, tangential_velocity=[0.3, 0.4], normal=2.0, tangential=[-0.6, -0.8]),  # sliding, oblique
        dict(slack=0.7, tangential_velocity=[1.0, -2.0], normal=0.0, tangential=[0.0, 0.0]),  # separated
        dict(slack=0.0, tangential_velocity=[0.5, 0.0], normal=0.0, tangential=[0.0, 0.0]),  # grazing
    ],
)
def test_contacts_that_obey_the_law_have_no_residual(contact):
    assert one_contact(**contact) <= 1e-15  # m/s: round-off of the disc's scaling


@pytest.mark.parametrize(
    "contact, expected",
    [
        # a pulling normal impulse: the local answer is l_N' = 0, |W (0 - l_N)| = W
        (dict(slack=0.0, tangential_velocity=[0.0, 0.0], normal=-1.0, tangential=[0.0, 0.0]), W),
        # a penetration (U_N < 0) without impulse: l_N' = 0.1 / W pushes it back
        (dict(slack=-0.1, tangential_velocity=[0.0, 0.0], normal=0.0, tangential=[0.0, 0.0]), 0.1),
        # an impulse on a separating contact (complementarity): l_N' = 1 - 0.4 / W
        (dict(slack=0.4, tangential_velocity=[0.0, 0.0], normal=1.0, tangential=[0.0, 0.0]), 0.4),
        # outside the cone: |l_T| = 0.8 > mu l_N = 0.5, brought back to the disc
        (dict(slack=0.0, tangential_velocity=[0.0, 0.0], normal=1.0, tangential=[0.8, 0.0]), V * 0.3),
        # slip inside the cone (the contact should stick)
        (dict(slack=0.0, tangential_velocity=[0.2, 0.0], normal=1.0, tangential=[0.1, 0.0]), 0.2),
        # sliding along the friction impulse instead of against it
        (dict(slack=0.0, tangential_velocity=[0.6, 0.0], normal=1.0, tangential=[0.5, 0.0]), None),
    ],
)
def test_each_violation_of_the_law_has_a_residual(contact, expected):
    residual = one_contact(**contact)
    assert residual > 0.0
    if expected is not None:
        assert residual == pytest.approx(expected, rel=1e-12)
    assert not coulomb_holds(np.array([residual]), 0.5 * residual)


@pytest.mark.parametrize("seed", range(3))
def test_the_sweeps_answers_pass_and_their_kernels_measure_the_same_residual(seed):
    """Spheres thrown together on a rough floor: the sweeps' answer passes the test at
    their tolerance, and the compiled residual the sweeps stop on is the test's own."""
    world, constraints, predicted, h = crowd(seed)
    metric = world.metric(h, world.q0)
    problem = ContactProblem.from_constraints(metric, constraints, predicted, h)
    answer = project_frictional(problem)
    assert answer.status == "gauss_seidel"
    residual = frictional_residual(problem, answer)
    scale = float(np.abs(predicted).max())
    assert coulomb_holds(residual, FRICTION_SWEEP_TOLERANCE * scale + np.abs(problem.lower))
    rows = coulomb_rows.sweep_rows(metric, problem.jacobian, problem.tangents, problem.friction, problem.lower)
    impulses = np.column_stack([answer.impulses, answer.tangential_impulses])
    compiled = rows.compiled.residual(np.append(answer.velocities, 0.0), impulses)
    np.testing.assert_allclose(compiled, residual, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("s, status", [(1, "lemke"), (2, "fixed_point")])
def test_lemke_and_conic_answers_pass(s, status):
    """Random SPD metrics, 1-4 contacts: planar Lemke pivoting (exact up to round-off)
    and De Saxce's conic fixed point (to its tolerance) give answers the test accepts."""
    rng = np.random.default_rng(40 + s)
    for trial in range(20):
        metric, constraints, predicted = random_contacts(rng, d=7, m=1 + trial % 4, s=s, mu_max=1.5 if s == 1 else 1.0)
        problem = ContactProblem.from_constraints(metric, constraints, predicted, 1e-2)
        answer = project_frictional(problem)
        assert answer.status in (status, "unconstrained")
        scale = velocity_scale(problem)
        if s == 1:
            tolerance = 1e-10 * max(scale, float(np.abs(answer.impulses).max()))
        else:  # the shifts' error, widened by the derived allowance (`shifted_normal_allowance`)
            allowance = shifted_normal_allowance(problem.friction, *coulomb_weights(problem))
            tolerance = FRICTION_TOLERANCE * scale * (allowance + FIXED_POINT_SOLVE_ACCURACY * (1.0 + allowance))
        assert coulomb_holds(frictional_residual(problem, answer), tolerance), trial
        # the answer reports that residual itself (StepResult.solver.residual in a step)
        assert answer.residual == pytest.approx(
            float(frictional_residual(problem, answer).max(initial=0.0)), rel=0.0, abs=1e-15
        )


def test_a_shifted_normal_velocity_costs_at_most_the_derived_allowance():
    """An exact answer whose normal velocity is moved by ``e`` has a residual of at most
    ``e sqrt(1 + (mu v / w)^2)`` (`shifted_normal_allowance`), and a sliding contact
    reaches that bound: the allowance the conic answers are judged by is neither too
    small nor loose."""
    allowance = float(shifted_normal_allowance(np.array([MU]), np.array([W]), np.array([V]))[0])
    rng = np.random.default_rng(7)
    exact = [
        dict(slack=0.0, tangential_velocity=[0.0, 0.0], normal=1.0, tangential=[0.2, -0.1]),
        dict(slack=0.0, tangential_velocity=[-0.6, 0.0], normal=1.0, tangential=[0.5, 0.0]),
        dict(slack=0.0, tangential_velocity=[0.3, 0.4], normal=2.0, tangential=[-0.6, -0.8]),
        dict(slack=0.7, tangential_velocity=[1.0, -2.0], normal=0.0, tangential=[0.0, 0.0]),
    ]
    sliding_ratios = []
    for contact in exact:
        assert one_contact(**contact) <= 1e-15  # exact up to the round-off of O(1) numbers
        for shift in rng.choice([-1.0, 1.0], 50) * 10.0 ** rng.uniform(-5.0, -3.0, 50):
            moved = dict(contact, slack=contact["slack"] + shift)
            ratio = one_contact(**moved) / abs(shift)
            # round-off of the residual's few operations on O(1) numbers (1e-15), relative to |shift| >= 1e-5
            assert ratio <= allowance * (1.0 + 1e-9)
            if contact["normal"] > 0.0 and contact["tangential_velocity"] != [0.0, 0.0]:
                sliding_ratios.append(ratio)
    assert min(sliding_ratios) >= allowance * (1.0 - 1e-9)


def test_a_conic_answer_beyond_its_bound_is_refused_or_kept_as_missed():
    """The acceptance test judges the fixed point's answers: the same answer with its
    velocities moved so that one contact misses its law by more than the bound raises
    when strict, and is kept with the error in ``missed`` otherwise."""
    rng = np.random.default_rng(42)
    metric, constraints, predicted = random_contacts(rng, d=7, m=2, s=2, mu_max=1.0)
    problem = ContactProblem.from_constraints(metric, constraints, predicted, 1e-2)
    answer = project_frictional(problem)
    assert answer.status == "fixed_point"
    tolerance = FRICTION_TOLERANCE * velocity_scale(problem)
    judged = judge(problem, answer, tolerance)
    assert judged.missed is None and judged.residual == answer.residual
    loaded = int(np.argmax(answer.impulses))
    G = problem.jacobian.toarray() if hasattr(problem.jacobian, "toarray") else np.asarray(problem.jacobian)
    row = G[loaded]
    # A normal velocity error of 10^3 tolerances at the loaded contact, along M^-1 G_k^T.
    direction = metric.solve(row)
    moved = replace(answer, velocities=answer.velocities + 1e3 * tolerance * direction / float(row @ direction))
    with pytest.raises(ConvergenceError, match="misses the Coulomb law"):
        judge(problem, moved, tolerance)
    kept = judge(problem, moved, tolerance, strict=False)
    assert kept.status == "inaccurate" and kept.missed is not None
    assert kept.missed.residual > kept.missed.tolerance
