"""The scenes fed by inlets: the silo fills at its inlet's rate without overlaps, and
the silo with an orifice drains through it while its inlet feeds it."""
import warnings

import numpy as np

import granular as gr
from granular.scenes import load_scene, resolve_scene


def run(world, dt, steps, every):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        return gr.Simulation(world, dt=dt).run(steps=steps, record_every=every)


def test_the_silo_fills_at_its_inlets_rate_without_overlaps():
    """After 60 steps the mass inserted lies within one largest sphere's mass below the
    rate times the time (the inlet's counting rule), and the spheres present are
    admissible (no gap below -OVERLAP_TOLERANCE r)."""
    scene = load_scene(resolve_scene("silo_filling"))
    world = scene.build()
    trajectory = run(world, scene.DEFAULTS["dt"], 60, 20)
    figures = scene.summary(trajectory)
    largest = scene.DENSITY * 4.0 / 3.0 * np.pi * scene.RADII[1] ** 3
    assert figures["expected_mass"] - largest < figures["inserted_mass"] <= figures["expected_mass"] * (1 + 1e-12)
    assert figures["inserted"] == world.n > 0
    world.check_admissible(float(trajectory.t[-1]), trajectory.positions[-1][trajectory.present(-1)])


def test_the_hopper_drains_through_its_orifice_while_the_inlet_feeds_it():
    """A small silo (radius 12 mm, bed 2 cm, orifice 4 d): after 0.07 s grains have
    left through the orifice (the summary's mass flow rate is positive), the inlet
    has inserted some, and the grains turn (friction)."""
    scene = load_scene(resolve_scene("hopper_discharge"))
    world = scene.build(orifice=4.0, silo_radius=0.012, fill_height=0.02)
    assert world.rotates
    trajectory = run(world, scene.DEFAULTS["dt"], 280, 40)
    figures = scene.summary(trajectory)
    assert figures["removed"] > 0 and figures["inserted"] > 0
    assert scene.mass_flow_rate(trajectory, since=0.0) > 0.0
    assert np.any(np.abs(trajectory.angular_velocities[-1][trajectory.present(-1)]) > 0.0)
