"""The wall protocol (granular.walls.surfaces) and the finite walls Panel and Cone: a wall
type of one's own in one class, descriptions that round-trip, analytic gaps."""

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pytest

import granular as gr
from granular.walls.surfaces import (
    ContactRows,
    WallShape,
    register_wall,
    surface_count,
    surface_names,
    wall_from_description,
)

EPS = np.finfo(float).eps


@register_wall
@dataclass(frozen=True)
class Ball:
    """A still spherical obstacle of radius ``size`` at ``centre``: the whole wall type."""

    kind: ClassVar[str] = "test-ball"
    surface_count: ClassVar[int] = 1
    moves: ClassVar[bool] = False
    restitution: ClassVar = None
    friction: ClassVar = None
    rolling_friction: ClassVar = None
    tangential_restitution: ClassVar = None

    centre: tuple
    size: float

    def surfaces(self):
        return [self]

    def displacement(self, t):
        return np.zeros(3)

    def rows(self, positions, radii, margin, t, h=None):
        offset = positions - np.asarray(self.centre)
        distance = np.linalg.norm(offset, axis=1)
        gaps = distance - self.size - radii
        near = np.flatnonzero(gaps <= margin)
        return ContactRows(near, gaps[near], offset[near] / distance[near, None])

    def label(self):
        return f"ball at {self.centre}"

    def describe(self):
        return {"type": self.kind, "centre": list(self.centre), "size": self.size}

    @classmethod
    def from_description(cls, description):
        return cls(tuple(description["centre"]), description["size"])

    def surface_names(self, start):
        return [f"ball {start}"]

    def shape(self, bounds):
        return WallShape()

    def bounding_box(self):
        return np.array([np.asarray(self.centre) - self.size, np.asarray(self.centre) + self.size])

    def translated(self, shift):
        return replace(self, centre=tuple(np.asarray(self.centre) + shift))


def test_a_wall_type_of_ones_own_is_one_class():
    """A sphere dropped on the ball obstacle stops on top of it (its gap reaches 0),
    the run names the surface, and the description is read back by its kind."""
    world = gr.SphereWorld([[0.0, 0.0, 0.3]], 0.1, walls=[Ball((0.0, 0.0, 0.0), 0.1), gr.Plane([0, 0, -1], [0, 0, 1])])
    trajectory = gr.Simulation(world, dt=1e-3).run(duration=0.5, record_every=50)
    assert trajectory.positions[-1, 0, 2] == pytest.approx(0.2, abs=1e-9)
    assert surface_names(trajectory.system["walls"]) == ["ball 0", "floor"]
    assert wall_from_description(trajectory.system["walls"][0]) == Ball((0.0, 0.0, 0.0), 0.1)
    with pytest.raises(gr.InvalidInputError, match="already taken"):
        register_wall(type("Other", (), {"kind": "test-ball"}))


WALLS = [
    gr.Plane([0, 0, 1], [0, 1, 1]),
    gr.Plane([0, 0, 1], [0, 0, -1], velocity=[0, 0, -0.1], angular_velocity=2.0),
    gr.Plane([0, 0, 1], [0, 0, -1], velocity=lambda t: [0.0, 0.0, np.sin(t)]),
    gr.Box([0, 0, 0], [1, 2, 3], open_top=True, velocity=[0.1, 0, 0]),
    gr.Cylinder([0, 0, 0], [0, 1, 0], 0.5, height=1.0, angular_velocity=3.0),
    gr.Cylinder([0, 0, 0], [1, 1, 0], 0.5),
    gr.Panel([0, 0, 0], [1, 0, 0], [0, 0, 2], velocity=[0, 1, 0]),
    gr.Cone([0, 0, 0], [0, 0, 1], 0.1, 0.5, 0.4, angular_velocity=1.0),
    gr.TriangleMesh(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.5]],
        [[0, 1, 2], [1, 3, 2]],
        angular_velocity=0.5,
        axis=[1, 0, 0],
        centre=[0, 1, 0],
        name="blade",
    ),
    gr.PeriodicBox([0, 0, 0], [1, 1, 1], axes=(0, 1)),
]


@pytest.mark.parametrize("wall", WALLS, ids=lambda wall: type(wall).__name__)
def test_every_wall_description_rebuilds_the_same_wall(wall):
    description = wall.describe()
    rebuilt = wall_from_description(description)
    assert rebuilt.describe() == description
    assert surface_count(description) == wall.surface_count == len(wall.surfaces())
    assert rebuilt.surface_names(3) == wall.surface_names(3)


def test_unknown_wall_descriptions_are_one_nameless_surface():
    assert surface_names([{"type": "from-the-future"}, {"no": "type"}, "junk"]) == ["wall 0", "wall 1", "wall 2"]
    assert surface_count({"type": "plane", "point": "bad"}) == 1


# -- Panel -----------------------------------------------------------------------------
def test_a_panels_gap_is_the_distance_to_the_rectangle():
    """Over the face: the plane distance on either side; past an edge or a corner:
    the distance to it (a rounded lip)."""
    panel = gr.Panel([0, 0, 0], [2, 0, 0], [0, 1, 0])
    q = np.array([[1.0, 0.5, 0.3], [1.0, 0.5, -0.3], [2.4, 0.5, 0.3], [2.3, 1.4, 0.0], [-0.3, -0.4, 0.0]])
    rows = panel.rows(q, np.full(5, 0.1), 1.0, 0.0)
    assert rows.gaps == pytest.approx([0.2, 0.2, 0.4, 0.4, 0.4], abs=4 * EPS)
    assert rows.normals[:3] == pytest.approx(np.array([[0, 0, 1], [0, 0, -1], [0.8, 0, 0.6]]), abs=4 * EPS)
    assert rows.normals[4] == pytest.approx([-0.6, -0.8, 0.0], abs=4 * EPS)


def test_a_panel_over_its_face_gives_a_planes_rows_bit_for_bit():
    panel, plane = gr.Panel([-1, -1, 0.0], [2, 0, 0], [0, 2, 0]), gr.Plane([0, 0, 0], [0, 0, 1])
    q = np.random.default_rng(0).uniform([-0.9, -0.9, 0.1], [0.9, 0.9, 0.3], (500, 3))
    rows, expected = panel.rows(q, np.full(500, 0.1), 0.05, 0.0), plane.rows(q, np.full(500, 0.1), 0.05, 0.0)
    assert np.array_equal(rows.spheres, expected.spheres) and np.array_equal(rows.gaps, expected.gaps)
    assert np.array_equal(rows.normals, expected.normals)


def test_panels_must_be_rectangles():
    with pytest.raises(gr.InvalidInputError, match="orthogonal"):
        gr.Panel([0, 0, 0], [1, 0, 0], [1, 1, 0])
    with pytest.raises(gr.InvalidInputError, match="non-zero"):
        gr.Panel([0, 0, 0], [0, 0, 0], [0, 1, 0])


# -- Cone ------------------------------------------------------------------------------
def test_a_cones_gap_is_the_distance_to_its_generator_in_the_meridian_plane():
    """Funnel from radius 0.1 at z = 0 to 0.5 at z = 0.4 (45 degrees: the generator
    rises as fast as it widens). From a centre on the axis at height z the shell is
    ``(0.1 + z) / sqrt 2`` away; past the lower rim the distance is to the rim circle."""
    cone = gr.Cone([0, 0, 0], [0, 0, 1], 0.1, 0.5, 0.4)
    z = np.array([0.1, 0.2, 0.3])
    q = np.column_stack([np.zeros(3), np.zeros(3), z])
    rows = cone.rows(q, np.full(3, 0.05), 1.0, 0.0)
    assert rows.gaps == pytest.approx((0.1 + z) / np.sqrt(2.0) - 0.05, abs=8 * EPS)
    below = cone.rows(np.array([[0.0, 0.1, -0.3]]), np.array([0.05]), 1.0, 0.0)
    assert below.gaps == pytest.approx([0.3 - 0.05], abs=8 * EPS)
    assert below.normals[0] == pytest.approx([0, 0, -1], abs=8 * EPS)
    turned = cone.rows(np.array([[0.3 * np.cos(1.0), 0.3 * np.sin(1.0), 0.1]]), np.array([0.05]), 1.0, 0.0)
    assert turned.gaps == pytest.approx([0.1 / np.sqrt(2.0) - 0.05], abs=8 * EPS)  # (0.3, 0.1): 0.1/sqrt 2 off


def test_a_ball_rests_in_a_funnel_where_the_shell_is_one_radius_away():
    """A frictionless sphere of radius 0.15 dropped into the 45-degree funnel above
    comes to rest on the axis at the height where ``(0.1 + z) / sqrt 2 = 0.15``. On
    the axis every radial direction is as near, and the one row taken pushes it a
    little aside; the funnel brings it back: both to 1e-9 m (the projection's
    accuracy on a position, ``tolerance * h``, with room)."""
    cone = gr.Cone([0, 0, 0], [0, 0, 1], 0.1, 0.5, 0.4)
    world = gr.SphereWorld([[0.0, 0.0, 0.35]], 0.15, walls=[cone])
    trajectory = gr.Simulation(world, dt=1e-3).run(duration=0.6, record_every=100)
    assert trajectory.positions[-1, 0, 2] == pytest.approx(0.15 * np.sqrt(2.0) - 0.1, abs=1e-9)
    assert np.abs(trajectory.positions[-1, 0, :2]).max() <= 1e-9


def test_the_hopper_scene_runs_with_friction():
    """The silo of scenes/hopper_discharge.py, built from public walls only (a
    cylinder and a nearly flat cone), takes friction: its floor's contacts carry
    friction impulses and no sphere overlaps the walls."""
    from granular.scenes import load_scene, resolve_scene

    scene = load_scene(resolve_scene("hopper_discharge"))
    world = scene.build(orifice=3.0, silo_radius=0.012, fill_height=0.015, friction=0.4)
    assert world.rotates and world.has_friction
    trajectory = gr.Simulation(world, dt=2.5e-4).run(steps=150, record_every=10)
    present = trajectory.present(-1)
    world.check_admissible(float(trajectory.t[-1]), trajectory.positions[-1][present])  # no overlap beyond 1e-9 r
    floor = [k for k, name in enumerate(world.surface_names) if name.startswith("cone")]
    touched = [c for c in trajectory.contacts if np.any(np.isin(c.wall, floor) & (c.impulse > 0))]
    assert floor and touched and any(np.any(np.abs(c.tangential_impulse) > 0) for c in touched)
