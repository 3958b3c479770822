"""Energy with moving walls: the walls' work is counted, so the dissipated energy of
every step is >= 0 and the cumulative dissipation never falls, for a turning drum
and for a piston."""

import warnings

import numpy as np
import pytest

import granular as gr

R = 0.01
EPS = np.finfo(float).eps


def drum_world() -> gr.SphereWorld:
    """20 frictional spheres in the lower half of a drum turning at 3 rad/s."""
    rng, centres = np.random.default_rng(0), []
    while len(centres) < 20:
        p = rng.uniform([-0.05, -0.012, -0.06], [0.05, 0.012, 0.0])
        if np.hypot(p[0], p[2]) < 0.07 - R and all(np.linalg.norm(p - c) > 2.05 * R for c in centres):
            centres.append(p)
    drum = gr.Cylinder([0, 0, 0], [0, 1, 0], 0.08, height=0.05, angular_velocity=3.0, friction=0.5)
    return gr.SphereWorld(np.array(centres), R, walls=[drum], friction=0.3)


def piston_world() -> gr.SphereWorld:
    """27 agitated spheres (e = 0.5, no gravity) in a box closed by a piston coming down at 5 cm/s."""
    rng = np.random.default_rng(1)
    ticks = np.arange(0.02, 0.1, 0.03)
    centres = np.stack(np.meshgrid(ticks, ticks, ticks, indexing="ij"), -1).reshape(-1, 3)
    centres += rng.uniform(-0.002, 0.002, centres.shape)
    piston = gr.Plane([0, 0, 0.12], [0, 0, -1], velocity=[0, 0, -0.05])
    return gr.SphereWorld(
        centres,
        R,
        walls=[gr.Box([0, 0, 0], [0.1, 0.1, 0.3], open_top=True), piston],
        gravity=(0, 0, 0),
        velocities=rng.normal(0, 0.1, centres.shape),
        restitution=0.5,
    )


@pytest.mark.parametrize("build, steps", [(drum_world, 300), (piston_world, 400)], ids=["drum", "piston"])
def test_the_dissipated_energy_counts_the_walls_work_and_never_falls(build, steps):
    """Per step ``D = KE(v) - KE(u^{n+1}) + W >= 0``, to the solver's residual: an
    inexact projection leaves each row's complementarity off by at most its
    ``residual`` (m/s), which moves ``D`` by at most ``residual * sum |P_k|`` (J), plus
    the round-off of the kinetic energies (a few ulps of them). Without ``W`` (the
    bookkeeping before) the balance goes negative: the walls feed the spheres."""
    simulation = gr.Simulation(build(), dt=1e-3)
    worst, uncounted = np.inf, np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        for _ in range(steps):
            result = simulation.step()
            contacts = result.contacts
            impulse = np.sum(np.abs(contacts.impulse)) + np.sum(np.abs(contacts.tangential_impulse))
            tolerance = max(float(result.solver.residual), 0.0) * impulse + 8 * EPS * result.kinetic_energy
            worst = min(worst, (result.dissipated_energy + tolerance))
            uncounted = min(uncounted, result.dissipated_energy - result.wall_work + tolerance)
    assert worst >= 0.0
    assert uncounted < 0.0
    assert simulation.wall_work > 0.0 and simulation.dissipated_energy > 0.0


def test_a_still_walls_step_does_no_work():
    world = gr.SphereWorld([[0.0, 0.0, 0.02]], R, walls=[gr.Plane([0, 0, 0], [0, 0, 1])], restitution=0.5)
    simulation = gr.Simulation(world, dt=1e-3)
    results = [simulation.step() for _ in range(200)]
    assert all(result.wall_work == 0.0 for result in results) and simulation.wall_work == 0.0
    assert any(result.contacts.impulse.sum() > 0 for result in results)


@pytest.mark.exact
def test_chained_restarts_keep_the_walls_work(tmp_path):
    """A piston run of 3 x 40 steps, each part continued from the previous part's run
    file, against the same 120 steps at once: the cumulative wall work and dissipated
    energy of every frame are the same numbers (the run files store the work, so a
    restart does not start it at 0), the piston has done work by the end, and the
    dissipation never falls."""
    from granular.app.runs import load_run, save_run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        whole = gr.Simulation(piston_world(), dt=1e-3).run(steps=120, record_every=20)
        parts = [gr.Simulation(piston_world(), dt=1e-3).run(steps=40, record_every=20)]
        for k in range(2):
            path = tmp_path / f"part{k}.h5"
            save_run(parts[-1], path)
            simulation = gr.Simulation.from_trajectory(load_run(path), world=piston_world())
            parts.append(simulation.run(steps=40, record_every=20))
    joined = gr.Trajectory.concatenate(parts)
    assert whole.wall_work is not None and whole.wall_work[-1] > 0.0
    assert np.array_equal(joined.wall_work, whole.wall_work)
    assert np.array_equal(joined.dissipated_energy, whole.dissipated_energy)
    assert np.all(np.diff(joined.dissipated_energy) >= 0.0)
