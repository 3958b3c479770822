"""The acceptance test of the Coulomb law (`granular.contact.kkt.coulomb_residual`):
zero on contacts that obey the law (sticking, sliding against the friction impulse,
separated), positive on each kind of violation, and met by the answers of every
frictional method: the sphere sweeps, planar Lemke pivoting and the conic fixed point.
"""
import numpy as np
import pytest

from granular.contact import friction_gauss_seidel
from granular.contact.friction import project_frictional
from granular.contact.kkt import coulomb_holds, coulomb_residual, frictional_residual
from granular.contact.problem import ContactProblem
from granular.tolerances import FRICTION_SWEEP_TOLERANCE, FRICTION_TOLERANCE

from test_friction import random_contacts
from test_friction_pile import crowd

MU = 0.5
W = 2.0      # 1/kg, the normal weight of the hand-made contacts
V = 3.5      # 1/kg, their tangential weight


def one_contact(slack, tangential_velocity, normal, tangential):
    """`coulomb_residual` (m/s) of one contact with ``mu = MU``."""
    return float(coulomb_residual(np.array([slack]), np.array([tangential_velocity], dtype=float),
                                  np.array([normal]), np.array([tangential], dtype=float), np.array([MU]),
                                  np.array([W]), np.array([V]))[0])


@pytest.mark.parametrize("contact", [
    dict(slack=0.0, tangential_velocity=[0.0, 0.0], normal=1.0, tangential=[0.2, -0.1]),     # sticking
    dict(slack=0.0, tangential_velocity=[-0.6, 0.0], normal=1.0, tangential=[0.5, 0.0]),     # sliding
    dict(slack=0.0, tangential_velocity=[0.3, 0.4], normal=2.0, tangential=[-0.6, -0.8]),    # sliding, oblique
    dict(slack=0.7, tangential_velocity=[1.0, -2.0], normal=0.0, tangential=[0.0, 0.0]),     # separated
    dict(slack=0.0, tangential_velocity=[0.5, 0.0], normal=0.0, tangential=[0.0, 0.0]),      # grazing
])
def test_contacts_that_obey_the_law_have_no_residual(contact):
    assert one_contact(**contact) <= 1e-15   # m/s: round-off of the disc's scaling


@pytest.mark.parametrize("contact, expected", [
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
])
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
    rows = friction_gauss_seidel.sweep_rows(metric, problem.jacobian, problem.tangents, problem.friction,
                                              problem.lower)
    impulses = np.column_stack([answer.impulses, answer.tangential_impulses])
    compiled = rows.compiled.residual(np.append(answer.velocities, 0.0), impulses)
    np.testing.assert_allclose(compiled, residual, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("s, status", [(1, "lemke"), (2, "fixed_point")])
def test_lemke_and_conic_answers_pass(s, status):
    """Random SPD metrics, 1-4 contacts: planar Lemke pivoting (exact up to round-off)
    and De Saxce's conic fixed point (to its tolerance) give answers the test accepts."""
    rng = np.random.default_rng(40 + s)
    for trial in range(20):
        metric, constraints, predicted = random_contacts(rng, d=7, m=1 + trial % 4, s=s,
                                                         mu_max=1.5 if s == 1 else 1.0)
        problem = ContactProblem.from_constraints(metric, constraints, predicted, 1e-2)
        answer = project_frictional(problem)
        assert answer.status in (status, "unconstrained")
        scale = max(1.0, float(np.abs(predicted).max()), float(np.abs(answer.impulses).max()))
        tolerance = (1e-10 if s == 1 else 10 * FRICTION_TOLERANCE) * scale
        assert coulomb_holds(frictional_residual(problem, answer), tolerance), trial
        # the answer reports that residual itself (StepResult.solver.residual in a step)
        assert answer.residual == pytest.approx(float(frictional_residual(problem, answer).max(initial=0.0)),
                                                rel=0.0, abs=1e-15)
