"""The rotating drum scene: its angle measurement on beds whose surface is known,
and a short run in which the turning wall drags the bed up."""

import numpy as np
import pytest

import granular as gr
from support.scenes import load_scene


@pytest.mark.parametrize("angle", [0.0, 20.0, 35.0])
def test_the_dynamic_angle_of_a_bed_with_a_plane_surface_is_its_inclination(angle):
    """Beads of radius 5 mm packed under the plane z = -tan(angle) x (rising towards
    -x): the slices' tops lie within a radius of that plane, so the fitted angle is
    the inclination up to a radius over the fitted width (about 2 degrees here)."""
    drum = load_scene("rotating_drum")
    radius = 0.005
    x, z = np.meshgrid(np.arange(-0.08, 0.08, 2 * radius), np.arange(-0.1, 0.1, 2 * radius))
    surface = -np.tan(np.radians(angle)) * x
    keep = z <= surface - radius
    positions = np.column_stack([x[keep], np.zeros(keep.sum()), z[keep]])
    measured = drum.dynamic_angle(positions, np.full(keep.sum(), radius))
    width = 0.6 * 0.16
    assert measured == pytest.approx(angle, abs=np.degrees(2 * radius / width))


def test_the_turning_drum_drags_its_bed_up_on_the_side_where_its_wall_rises():
    """120 beads, 0.3 s at 3 rad/s (about a seventh of a turn): the bed, settled flat
    at first, is tilted towards -x (a positive angle) and the run keeps every bead
    inside the drum up to the sink that the concave wall's linearised row allows a
    bead sliding along it at speed v, (h v)^2 / (2 (R - r)) a step (the `Cylinder`
    docstring), for v up to 1 m/s, over three times the wall's speed."""
    drum = load_scene("rotating_drum")
    world = drum.build(n=120)
    run = gr.Simulation(world, 1e-3).run(duration=0.3, record_every=100)
    last = np.asarray(run.positions[-1])
    assert drum.dynamic_angle(last, np.asarray(run.radii[-1])) > 5.0
    distance = np.hypot(last[:, 0], last[:, 2]) + np.asarray(run.radii[-1])
    sink = (1e-3 * 1.0) ** 2 / (2.0 * (drum.DRUM_RADIUS - 0.0055))
    assert distance.max() <= drum.DRUM_RADIUS + sink
