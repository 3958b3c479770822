"""A pile at rest is answered from the previous step's factor: once its pushing
contacts stop changing, a step takes one active-set round and no factorisation
(`granular.contact.active_set`: the bordered factor is carried from step to step), and the
answer is still exact: the spheres stay at rest and every contact carries the
weight above it."""

import numpy as np

import granular as gr

RADIUS = 0.01
SIDE, LAYERS = 6, 5  # 180 spheres: more rows than the dense path takes (DENSE_ROWS)
DT = 1e-3


def _stack():
    """Columns of touching spheres (simple cubic, spacing 2r) on the floor of a box whose
    walls touch the outer columns; masses between 1 and 2 kg."""
    index = np.arange(SIDE * SIDE * LAYERS)
    grid = np.stack([index % SIDE, (index // SIDE) % SIDE, index // (SIDE * SIDE)], axis=1)
    positions = grid * 2.0 * RADIUS + RADIUS
    masses = np.random.default_rng(0).uniform(1.0, 2.0, index.size)
    width = 2.0 * SIDE * RADIUS
    world = gr.SphereWorld(
        positions,
        RADIUS,
        masses=masses,
        restitution=0.0,
        walls=[gr.Box([0.0, 0.0, 0.0], [width, width, 1.0], open_top=True)],
    )
    return world, grid, masses


def _weight_above(grid, masses, sphere):
    """Mass (kg) of ``sphere`` and of the spheres stacked on it."""
    column = (grid[:, 0] == grid[sphere, 0]) & (grid[:, 1] == grid[sphere, 1])
    return masses[column & (grid[:, 2] >= grid[sphere, 2])].sum()


def test_a_pile_at_rest_reuses_its_factor_and_carries_its_weight():
    world, grid, masses = _stack()
    simulation = gr.Simulation(world, dt=DT)
    g = -world.gravity[2]
    for step in range(12):
        result = simulation.step()
        stats = simulation.scheme.workspace.last
        if step >= 2:  # the first steps build the factor; the contacts do not change after
            assert stats.rounds == 1 and stats.factorisations == 0, (step, stats)
        contacts = result.contacts
        vertical = np.abs(contacts.normal[:, 2]) > 0.5
        upper = np.where((contacts.wall < 0) & (grid[contacts.j, 2] > grid[contacts.i, 2]), contacts.j, contacts.i)
        upper = upper[vertical]
        expected = np.array([DT * g * _weight_above(grid, masses, k) for k in upper])
        # The contacts between columns and with the side walls touch (zero gap) but
        # carry nothing: at round-off (1e-14 N s after a cold first step).
        assert np.abs(contacts.impulse[~vertical]).max() <= 1e-9 * expected.min()
        # Exact impulses: the KKT test accepts velocity errors of 1e-9 of the velocity
        # scale (g h = 1e-2 m/s), 1e-11 m/s; a column's Delassus block (1 to 2 kg
        # spheres on the floor, 5 high) has no eigenvalue below 0.04 / kg, so an impulse
        # is within 2.5e-10 N s, 2.5e-8 of the smallest (9.8e-3 N s, one sphere's weight).
        np.testing.assert_allclose(contacts.impulse[vertical], expected, rtol=3e-8)
        # At rest: velocities within the same 1e-11 m/s (the step's gravity kick is 1e-2 m/s).
        assert np.abs(result.velocities).max() <= 1e-11
