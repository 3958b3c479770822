"""The analysis of a run whose spheres come and go (an inlet and an outlet): each
frame is measured on the spheres present in it, by their permanent ids."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import granular as gr
import granular.analysis as A
from granular.records.active_contacts import noise_impulse

SIDE = 0.1  # m, the box's side


@functools.lru_cache(maxsize=None)
def fed_run() -> gr.Trajectory:
    """Spheres of 4-6 mm poured at 0.5 kg/s into an open box with a drain in its floor."""
    feed = gr.Inlet(
        gr.BoxRegion([0, 0, 0.2], [SIDE, SIDE, 0.25]),
        radius=(0.004, 0.006),
        mass_rate=0.5,
        velocity=(0, 0, -0.5),
        seed=1,
    )
    drain = gr.Outlet(gr.BoxRegion([0.04, 0.04, -1], [0.06, 0.06, 0.02]))
    world = gr.SphereWorld(
        np.zeros((0, 3)),
        0.005,
        density=2500.0,
        friction=0.4,
        inlets=[feed],
        outlets=[drain],
        walls=[gr.Box([0, 0, 0], [SIDE, SIDE, 0.3], open_top=True)],
    )
    return gr.Simulation(world, dt=4e-4).run(duration=0.3, record_every=50, progress=None)


def test_a_frame_is_measured_on_the_spheres_present_by_their_ids():
    run = fed_run()
    k = len(run) - 1
    forces = A.frame_forces(run, k)
    present = run.present(k)
    assert present.size > 50 and np.array_equal(forces.ids, present)
    assert forces.n == present.size and np.all(np.isfinite(forces.centres))
    # Every contact above the solver's noise, pairs and walls, and no other.
    impulses = np.asarray(run.contacts[k].impulse, float)
    expected = int(np.count_nonzero(impulses > noise_impulse(run, k)))
    assert expected > 0 and len(forces.pair_i) + len(forces.wall_sphere) == expected
    assert np.all(forces.pair_i < forces.n) and np.all(forces.pair_j < forces.n)


def test_the_density_of_a_fed_frame_integrates_to_the_mass_present():
    """The coarse-grained density integrates to the mass of the spheres present (by
    their ids), the trapezoid rule's error on a Gaussian of width 5 mm sampled every
    0.05 mm being far below 1e-6 of it."""
    run = fed_run()
    forces = A.frame_forces(run, len(run) - 1)
    masses = np.asarray(run.meta["masses"], float)[forces.ids]
    assert forces.masses == pytest.approx(masses, rel=1e-15)
    kernel = A.Kernel("gaussian", 0.005)
    z = np.arange(-0.05, 0.35, 5e-5)
    density = A.profile(forces, "z", z, kernel, SIDE**2).density
    assert np.trapezoid(density * SIDE**2, z) == pytest.approx(masses.sum(), rel=1e-6)


def test_the_weight_of_a_fed_frame_is_that_of_the_spheres_present():
    run = fed_run()
    for k in (1, len(run) - 1):
        present = run.present(k)
        masses = np.asarray(run.meta["masses"], float)[present]
        assert A.tables.weight(run, k) == pytest.approx(9.81 * masses.sum(), rel=1e-12)


def test_the_viewer_draws_a_fed_run_without_a_nan_vertex():
    """WebGL cannot place a NaN vertex: a sphere absent from a frame is drawn with size 0
    at a finite point, and each force segment starts at the centre of its sphere (by id)."""
    from granular.render import viewer

    run = fed_run()
    k = len(run) - 1
    shown = viewer.shown_positions(run, k, 1e-6, np.zeros(3))
    present = run.present(k)
    assert np.all(np.isfinite(shown))
    sizes = viewer.sphere_diameters(run, [k], ["t"])
    sizes = sizes["t"] if isinstance(sizes, dict) else sizes
    absent = np.setdiff1d(np.arange(run.positions.shape[1]), present)
    assert absent.size > 0 and np.all(sizes[absent] == 0.0) and np.all(sizes[present] > 0.0)
    segments, _ = viewer.network_segments(run, k)
    starts = {tuple(p) for p in np.asarray(run.positions[k], float)[present].tolist()}
    assert segments.shape[0] > 0 and all(tuple(s) in starts for s in segments[:, 0].tolist())
