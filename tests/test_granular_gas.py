"""The granular gas cooling scene: Haff's law in a smaller box.

300 spheres at packing fraction 0.1 (kinetic-theory tau = 0.62 s, shorter than the
scene's 1.42 s at packing 0.05, so that the run reaches t ~ 6.5 tau in 8,000 steps),
e = 0.9, dt = 5e-4 s (a sphere moves 0.05 r per step). Freely cooling, the kinetic
energy follows E0 / (1 + t/tau)^2: the fitted exponent is -2 within 0.3, and since
every impact with e < 1 dissipates and nothing else acts, E strictly decreases
between frames 0.02 s apart (several impacts each).
"""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from support.scenes import load_scene as load


@pytest.fixture(scope="module")
def cooling():
    scene = load("granular_gas_cooling")
    packing, dt = 0.1, 5e-4
    world = scene.build(n=300, packing=packing)
    trajectory = gr.Simulation(world, dt).run(duration=4.0, record_every=40)
    return scene, packing, trajectory


def test_gas_cools_by_haffs_law(cooling):
    scene, packing, trajectory = cooling
    fit = scene.fit_haff(trajectory.t, trajectory.kinetic_energy)
    assert abs(fit["exponent"] + 2.0) <= 0.3, fit
    assert trajectory.t[-1] >= 5.0 * fit["tau"], "the run must reach the t^-2 regime"
    # tau from kinetic theory (Enskog collision frequency), to the accuracy of a
    # 300-sphere sample and of impacts resolved up to one step early.
    assert fit["tau"] == pytest.approx(scene.haff_time(packing=packing), rel=0.3)


def test_gas_energy_strictly_decreases(cooling):
    _, _, trajectory = cooling
    energy = trajectory.kinetic_energy
    assert np.all(np.diff(energy) < 0.0)
    assert energy[-1] < 0.05 * energy[0]


def test_gas_scene_builds_the_stated_world():
    scene = load("granular_gas_cooling")
    world = scene.build(n=50, packing=0.05, seed=3)
    t, q, u = world.initial_state()
    velocities = u.reshape(-1, 3)
    assert world.periodic is not None and not world.walls
    assert np.allclose(velocities.mean(axis=0), 0.0, atol=1e-12)
    assert np.sqrt(np.mean(np.sum(velocities**2, axis=1))) == pytest.approx(scene.SPEED)
    assert world.packing_fraction(t) == pytest.approx(0.05)
    assert set(scene.DEFAULTS) == {"duration", "dt", "record_every"}
