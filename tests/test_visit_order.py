"""The order in which the Coulomb sweeps visit a world's contacts: down the pile.

A world under gravity gives each contact its depth along gravity
(`granular.constraints.ConstraintSet.depth`), and the sweeps visit the contacts in
increasing depth (`granular.contact.coulomb_rows.SweepRows`). Gauss-Seidel carries a
change to every contact visited after it within the same sweep: a load put on the top
of a column reaches the floor in one sweep going down, and stays at the top going up.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import granular as gr
from granular.contact import coulomb_rows
from granular.contact.problem import ContactProblem, check_friction

EPS = np.finfo(float).eps


def column(n: int, gravity=(0.0, 0.0, -9.81)):
    """``n`` turning spheres of 1 kg and radius 1 cm stacked touching on a rough floor."""
    positions = np.zeros((n, 3))
    positions[:, 2] = 0.01 + 0.02 * np.arange(n)
    return gr.SphereWorld(
        positions, 0.01, masses=1.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1])], friction=0.5, gravity=gravity
    )


def test_a_contacts_depth_is_its_centres_position_along_gravity():
    rng = np.random.default_rng(3)
    positions = 0.021 * np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = positions + np.array([0.0, 0.0, 0.0105]) + rng.uniform(-5e-4, 5e-4, positions.shape)
    gravity = np.array([3.0, 0.0, -4.0])  # |g| = 5, tilted
    world = gr.SphereWorld(positions, 0.01, walls=[gr.Plane([0, 0, 0], [0, 0, 1])], friction=0.5, gravity=gravity)
    constraints = world.constraints(1e-3, world.q0, 1e-3, 1.0)
    pairs, walls = constraints.wall < 0, constraints.wall >= 0
    assert pairs.any() and walls.any()
    down = gravity / 5.0
    centres = positions @ down
    expected = np.where(pairs, 0.5 * (centres[constraints.i] + centres[np.where(pairs, constraints.j, 0)]), 0.0)
    expected[walls] = centres[constraints.i[walls]]
    # each value is a sum of three products of positions (< 0.06 m) and unit components
    np.testing.assert_allclose(constraints.depth, expected, rtol=0.0, atol=8 * EPS * 0.06)
    rows = np.array([4, 0, 2])
    np.testing.assert_array_equal(constraints.subset(rows).depth, constraints.depth[rows])
    problem = ContactProblem.from_constraints(world.metric(1e-3, world.q0), constraints, world.u0, 1e-3)
    assert problem.visit_key is constraints.depth
    weightless = column(3, gravity=(0.0, 0.0, 0.0))
    assert weightless.constraints(1e-3, weightless.q0, 1e-3, 1.0).depth is None


def one_sweep(rows, predicted, r):
    """The impulses (m, 3) after one sweep from ``r`` at the prediction ``predicted``."""
    r = np.ascontiguousarray(r, dtype=float).copy()
    u = coulomb_rows.velocities(rows, predicted, r)
    rows.compiled.sweep(u, r)
    return r


def test_one_sweep_down_a_column_carries_a_load_on_its_top_to_the_floor():
    n, h, load = 6, 1e-3, 0.1  # spheres, step (s), downward velocity added to the top sphere (m/s)
    world = column(n)
    metric = world.metric(h, world.q0)
    u0 = np.zeros(metric.diagonal.size)
    predicted = u0 + h * world.force(0.0, world.q0, u0) / metric.diagonal
    constraints = world.constraints(h, world.q0, h, 1.0)
    mu, T, _ = check_friction(constraints)
    rows = coulomb_rows.sweep_rows(
        metric, constraints.jacobian, T, mu, constraints.lower(h), visit_key=constraints.depth
    )
    assert rows is not None and rows.compiled.blocks is not None  # the turning spheres' kernel
    # The column at rest: the contact under sphere k carries the weight of the spheres
    # from k up over the step, (n - k) m g h, and no friction.
    below = np.where(constraints.wall >= 0, constraints.i, constraints.j)  # the sphere above each contact
    r = np.zeros((constraints.size, 3))
    r[:, 0] = (n - below) * 9.81 * h
    loaded = predicted.copy()
    loaded[3 * (n - 1) + 2] -= load
    # Going down, the top contact takes half the load's momentum and passes the other
    # half to the sphere below it, and so on (a pair's normal block is 2/m, the floor's
    # 1/m): the contact under sphere k >= 1 gains m load / 2^(n - k), the floor m load /
    # 2^(n - 1). The loaded and unloaded sweeps make the same operations on numbers of
    # the size of the impulses, so their difference is exact to a few of their ulps.
    gained = one_sweep(rows, loaded, r)[:, 0] - one_sweep(rows, predicted, r)[:, 0]
    expected = load / 2.0 ** np.where(below > 0, n - below, n - 1)
    np.testing.assert_allclose(gained, expected, rtol=0.0, atol=8 * n * EPS * r[:, 0].max())
    assert gained[constraints.wall >= 0][0] > 0.0  # the floor feels the load in one sweep
    # Going up, every contact but the top one is visited before the load reaches it.
    upwards = dataclasses.replace(rows, visit_key=-constraints.depth)
    after_loaded, after_plain = one_sweep(upwards, loaded, r), one_sweep(upwards, predicted, r)
    top = below == n - 1
    np.testing.assert_array_equal(after_loaded[~top], after_plain[~top])
    np.testing.assert_allclose(after_loaded[top, 0] - after_plain[top, 0], load / 2.0, rtol=1e-12)
