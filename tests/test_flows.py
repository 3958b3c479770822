"""Grains that come and go: inlets insert without overlaps at their rate, outlets
remove, ids are permanent, mass is accounted for, warm starts follow the ids, and
runs with a changing count are recorded, streamed, continued, drawn and exported."""

import warnings

import numpy as np
import pytest

import granular as gr
from granular.constraints import ConstraintSet, remap_keys
from granular.contact_laws import RowLaws
from granular.spheres.flows import BoxRegion, CylinderRegion, Inlet, Outlet  # also gr.Inlet, ...
from granular.app.runs import load_run

R = 0.005
DT = 1e-3


def fed_box(rate=2000.0, mass_rate=None, radius=(0.004, 0.006), outlet=True, friction=0.3, seed=0):
    """An open box fed from a region near its top, spheres falling at 0.3 m/s; an
    outlet removing what falls below 2 cm (nothing reaches it here unless asked)."""
    inlet = Inlet(
        BoxRegion([0.0, 0.0, 0.12], [0.08, 0.08, 0.2]),
        radius=radius,
        rate=rate,
        mass_rate=mass_rate,
        velocity=(0.0, 0.0, -0.3),
        seed=seed,
    )
    outlets = [Outlet(BoxRegion([-1, -1, -1], [1, 1, 0.015]))] if outlet else []
    return gr.SphereWorld(
        np.zeros((0, 3)),
        R,
        density=2500.0,
        walls=[gr.Box([0, 0, 0], [0.08, 0.08, 0.3], open_top=True)],
        inlets=[inlet],
        outlets=outlets,
        friction=friction,
    )


def quiet_run(simulation, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        return simulation.run(**options)


def test_an_inlet_inserts_at_its_rate_without_overlaps():
    """At each step the inlet inserts the spheres due by its end, floor(R t): after n
    steps |inserted - R n dt| < 1 while the region has room. Every insertion leaves
    every gap above -OVERLAP_TOLERANCE r (the admissibility check of the world's
    constructor, which raises otherwise)."""
    world = fed_box(rate=1500.0)
    simulation = gr.Simulation(world, dt=DT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        for _ in range(40):
            simulation.exchange()  # the exchange a step starts with
            world.check_admissible(simulation.t, simulation.positions)
            simulation.scheme.state, _ = simulation.scheme.advance(simulation.scheme.state, simulation.t)
            simulation.steps_taken += 1
    expected = 1500.0 * 40 * DT
    assert abs(int(world.flow.inserted[0]) - expected) < 1.0
    assert world.n == int(world.flow.inserted[0]) and np.array_equal(world.ids, np.arange(world.n))


def test_a_mass_rate_inlet_follows_its_rate_to_within_one_sphere():
    """With a mass rate Q the inserted mass stays in (Q t - m_max, Q t]: the next
    sphere goes in once it fits under Q t (m_max the largest sphere's mass)."""
    world = fed_box(rate=None, mass_rate=0.5, outlet=False)
    simulation = gr.Simulation(world, dt=DT)
    quiet_run(simulation, steps=30, record_every=30)
    target = 0.5 * 30 * DT
    largest = 2500.0 * 4.0 / 3.0 * np.pi * 0.006**3
    assert target - largest < float(world.flow.inserted_mass[0]) <= target * (1 + 1e-12)


def test_a_full_region_leaves_its_spheres_waiting_and_never_overlaps():
    """A region with room for a few spheres at a rate far above what fits: the inlet
    lags behind its rate instead of placing a sphere on another."""
    inlet = Inlet(BoxRegion([0.0, 0.0, 0.0], [0.03, 0.03, 0.03]), radius=R, rate=1e5)
    world = gr.SphereWorld(
        np.zeros((0, 3)), R, walls=[gr.Box([0, 0, 0], [0.03, 0.03, 0.1])], inlets=[inlet], gravity=(0, 0, 0)
    )
    exchange = world.exchange(0.0, DT, np.zeros((0, 3)))
    world.check_admissible(0.0, exchange.positions)
    assert 0 < world.n < 1e5 * DT


def test_outlets_remove_and_the_mass_balance_holds():
    """Per frame, from the trajectory's columns alone: the mass of the spheres present
    equals the inserted minus the removed mass of the counters (to the round-off of
    summing a few hundred masses, 1e-12 relative)."""
    world = fed_box(rate=3000.0, radius=R)
    world.outlets[0].region = BoxRegion([-1, -1, -1], [1, 1, 0.03])
    simulation = gr.Simulation(world, dt=DT)
    trajectory = quiet_run(simulation, duration=0.2, record_every=10)
    masses = np.asarray(trajectory.meta["masses"])
    flow = trajectory.flow
    assert flow[-1, 3] > 0, "the outlet removed nothing"
    for k in range(len(trajectory)):
        present = masses[trajectory.present(k)].sum()
        assert present == pytest.approx(flow[k, 2] - flow[k, 4], rel=1e-12, abs=1e-15)
        assert trajectory.present(k).size == int(flow[k, 1] - flow[k, 3])


def test_ids_are_permanent_and_never_reused():
    """A sphere keeps its column: once it has left it never comes back, and its centre
    moves continuously between frames: at most v_max times the frames' interval,
    v_max = sqrt(v0^2 + 2 g H) = 2.0 m/s for spheres thrown down at v0 = 0.3 m/s from
    at most H = 0.2 m (inelastic contacts give no sphere more)."""
    world = fed_box(rate=3000.0, radius=R)
    world.outlets[0].region = BoxRegion([-1, -1, -1], [1, 1, 0.03])
    trajectory = quiet_run(gr.Simulation(world, dt=DT), duration=0.2, record_every=5)
    present = np.isfinite(trajectory.positions[:, :, 0])
    for column in present.T:
        seen = np.flatnonzero(column)
        assert seen.size == 0 or np.all(column[seen[0] : seen[-1] + 1])
    both = present[1:] & present[:-1]
    jumps = np.linalg.norm(trajectory.positions[1:] - trajectory.positions[:-1], axis=2)[both]
    assert jumps.max() <= np.sqrt(0.3**2 + 2 * 9.81 * 0.2) * 5 * DT


def test_remapped_keys_are_the_keys_of_the_renumbered_rows():
    """Two ways to the keys after a removal: remap the old keys, or build the keys of
    the same rows with the new indices. Pairs, wall rows and further rows of a
    sphere on one surface (features)."""
    rng = np.random.default_rng(3)
    n = 40
    i = rng.integers(0, n - 1, 60)
    j = i + 1 + rng.integers(0, n - 1 - i)
    wall_sphere = rng.integers(0, n, 30)
    wall = rng.integers(0, 4, 30)
    feature = rng.integers(0, 3, 30)
    keep = rng.random(n) < 0.7
    new_index = np.full(n, -1)
    new_index[keep] = np.arange(keep.sum())
    n_after = int(keep.sum()) + 5  # five spheres inserted after the kept ones

    def rows(i, j, wi, w, f, n_bodies):
        size = i.size + wi.size
        zero = np.zeros(size)
        constraints = ConstraintSet(
            gap=zero,
            jacobian=None,
            laws=RowLaws(zero),
            i=np.concatenate([i, wi]),
            j=np.concatenate([j, -np.ones(wi.size, int)]),
            wall=np.concatenate([-np.ones(i.size, int), w]),
            normal=np.zeros((size, 3)),
            feature=np.concatenate([np.zeros(i.size, int), f]),
        )
        return constraints.keys(n_bodies)

    before = rows(i, j, wall_sphere, wall, feature, n)
    kept, remapped = remap_keys(before, n, new_index, n_after)
    alive_pairs = keep[i] & keep[j]
    alive_walls = keep[wall_sphere]
    direct = rows(
        new_index[i[alive_pairs]],
        new_index[j[alive_pairs]],
        new_index[wall_sphere[alive_walls]],
        wall[alive_walls],
        feature[alive_walls],
        n_after,
    )
    assert np.array_equal(kept, np.flatnonzero(np.concatenate([alive_pairs, alive_walls])))
    assert np.array_equal(remapped, direct)


def pile_with_a_runner():
    """Sphere 0 slides along the floor at 0.4 m/s into an outlet 3 cm away, far from a
    settled pile of 27 spheres in the other corner (frictionless: nothing slows it)."""
    ticks = 0.12 + 2.05 * R * np.arange(3)
    pile = np.stack(np.meshgrid(ticks, ticks, R + 2.05 * R * np.arange(3), indexing="ij"), -1).reshape(-1, 3)
    positions = np.vstack([[[0.02, 0.02, R]], pile])
    velocities = np.zeros_like(positions)
    velocities[0] = (0.4, 0.0, 0.0)
    outlet = Outlet(BoxRegion([0.05, -1, -1], [0.07, 1, 1]))
    return gr.SphereWorld(
        positions, R, velocities=velocities, walls=[gr.Box([0, 0, 0], [0.2, 0.2, 0.3], open_top=True)], outlets=[outlet]
    )


def id_keyed(state, ids, n):
    """The warm start as {(id_i, id_j or -1, wall): impulse}, decoded from the keys."""
    table = {}
    for key, impulse in zip(state.previous_keys, state.previous_impulses):
        if key >= 0:
            table[(int(ids[key // (n + 1)]), int(ids[key % (n + 1)]), -1)] = impulse
        else:
            code = -key - 1
            table[(int(ids[code % (n + 1)]), -1, int(code // (n + 1)))] = impulse
    return table


def test_warm_starts_follow_the_ids_when_a_sphere_leaves():
    """When sphere 0 leaves, every other sphere's index drops by one; the warm start
    of each remaining row (pairs and walls) must still be its own impulse, read by
    ids before and after the exchange, and the rows of the sphere that left are gone."""
    world = pile_with_a_runner()
    simulation = gr.Simulation(world, dt=DT)
    for _ in range(100):
        if world.outlets[0].leaving(simulation.positions)[0]:
            break
        simulation.step()
    table = id_keyed(simulation.scheme.state, world.ids, world.n)
    simulation.exchange()
    assert 0 not in world.ids and world.n == 27
    survivors = {key: value for key, value in table.items() if 0 not in key[:2]}
    assert len(survivors) < len(table) and any(value > 0 and key[1] >= 0 for key, value in survivors.items())
    assert id_keyed(simulation.scheme.state, world.ids, world.n) == survivors
    simulation.step()  # and the next step takes the carried state


@pytest.mark.exact
def test_a_run_with_an_inlet_and_an_outlet_streams_and_continues_bit_for_bit(tmp_path):
    """Stream 60 steps to a file, continue 40 from it; the same 100 steps in one run:
    every frame's positions and velocities (by id, NaN where absent) identical."""
    world = fed_box(rate=3000.0, radius=R)
    world.outlets[0].region = BoxRegion([-1, -1, -1], [1, 1, 0.03])
    whole = quiet_run(gr.Simulation(world, dt=DT), steps=100, record_every=20)
    first = gr.Simulation(fed_box(rate=3000.0, radius=R), dt=DT)
    first.system.outlets[0].region = BoxRegion([-1, -1, -1], [1, 1, 0.03])
    quiet_run(first, steps=60, record_every=20, out=tmp_path / "a.h5", read_back=False)
    run = load_run(tmp_path / "a.h5")
    world = fed_box(rate=3000.0, radius=R)
    world.outlets[0].region = BoxRegion([-1, -1, -1], [1, 1, 0.03])
    second = gr.Simulation.from_trajectory(run, world=world)
    rest = quiet_run(second, steps=40, record_every=20)
    joined = gr.Trajectory.concatenate([run, rest])
    assert np.array_equal(joined.t, whole.t)
    assert np.array_equal(joined.positions, whole.positions, equal_nan=True)
    assert np.array_equal(joined.velocities, whole.velocities, equal_nan=True)
    assert np.array_equal(joined.flow, whole.flow)


def test_renders_exports_and_inspect_show_the_spheres_present(tmp_path, capsys):
    """The drawn spheres, the VTK points and inspect's count are those present in the frame."""
    from granular.cli.__main__ import main
    from granular.render.geometry import frame_scene
    from granular.render.vtkfiles import export_vtk
    from granular.app.runs import save_run

    world = fed_box(rate=3000.0, radius=R)
    trajectory = quiet_run(gr.Simulation(world, dt=DT), steps=30, record_every=10)
    counts = trajectory.sphere_counts()
    assert list(counts) == [0, 30, 60, 90]
    for k in range(len(trajectory)):
        scene = frame_scene(trajectory, k, forces=True)
        assert len(scene.shapes.sphere_radii) == counts[k]
    export_vtk(trajectory, tmp_path / "vtk", stem="fed")
    for k in range(len(trajectory)):
        text = (tmp_path / "vtk" / f"fed_spheres_{k:05d}.vtp").read_text()
        assert f'NumberOfPoints="{counts[k]}"' in text
    save_run(trajectory, tmp_path / "fed.h5")
    assert main(["inspect", str(tmp_path / "fed.h5")]) == 0
    out = capsys.readouterr().out
    assert f"{counts[-1]} spheres in frame {len(trajectory) - 1}" in out


def test_bad_inlets_are_refused_naming_the_argument():
    region = BoxRegion([0, 0, 0], [1, 1, 1])
    with pytest.raises(gr.InvalidInputError, match="rate"):
        Inlet(region, radius=R)
    with pytest.raises(gr.InvalidInputError, match="radius"):
        Inlet(region, radius=(0.02, 0.01), rate=1.0)
    with pytest.raises(gr.InvalidInputError, match="lower < upper"):
        BoxRegion([0, 0, 0], [1, 0, 1])
    with pytest.raises(gr.InvalidInputError, match="remove"):
        Outlet(region, remove="below")
    with pytest.raises(gr.InvalidInputError, match="radii cannot be a callable"):
        gr.SphereWorld(np.zeros((0, 3)), lambda t: np.full(0, R), inlets=[Inlet(region, radius=R, rate=1.0)])
    assert CylinderRegion([0, 0], 0.1, 0.0, 0.1).contains(np.array([[0.05, 0, 0.05], [0.2, 0, 0.05]])).tolist() == [
        True,
        False,
    ]
