"""ParaView export of walls and active contacts (granular.render.vtkfiles), read back
with pyvista: the polygons must lie where the walls were at each frame's time."""

import numpy as np
import pytest

import granular as gr
from granular.render.vtkfiles import export_vtk
from granular.records.active_contacts import noise_impulse
from granular.walls import Cylinder

pyvista = pytest.importorskip("pyvista")

R = 0.01
DT = 1e-3
V = 0.2  # m/s, the piston's speed
TOP = 0.1  # m, the piston's height at t = 0


@pytest.fixture(scope="module")
def piston_run():
    """Four spheres at rest on the floor of an open box, a piston coming down; the
    first is 0.2 mm from the x-min face, inside the contact search but not touching."""
    positions = np.array([[R + 2e-4, 0.02, R], [0.05, 0.02, R], [0.02, 0.06, R], [0.08, 0.08, R]])
    box = gr.Box([0, 0, 0], [0.1, 0.1, 0.2], open_top=True)
    piston = gr.Plane([0, 0, TOP], [0, 0, -1], velocity=[0.0, 0.0, -V])
    world = gr.SphereWorld(positions, R, density=1000.0, walls=[box, piston])
    return world, gr.Simulation(world, dt=DT).run(steps=30, record_every=10)


def walls_of(directory, stem, k):
    return pyvista.read(directory / f"{stem}_walls_{k:05d}.vtp")


def cell_points(mesh, c):
    cell = mesh.get_cell(c)
    return np.asarray(cell.points)


@pytest.mark.exact
def test_the_walls_are_written_where_they_were_at_each_frame(piston_run, tmp_path):
    world, trajectory = piston_run
    export_vtk(trajectory, tmp_path, stem="p")
    for k, t in enumerate(trajectory.t):
        mesh = walls_of(tmp_path, "p", k)
        surfaces = np.asarray(mesh.cell_data["surface"])
        assert sorted(surfaces) == [0, 1, 2, 3, 4, 5]  # 5 faces of the open box, the piston
        piston = cell_points(mesh, int(np.flatnonzero(surfaces == 5)[0]))
        assert piston[:, 2] == pytest.approx(TOP - V * t, abs=1e-12)
        floor = cell_points(mesh, int(np.flatnonzero(surfaces == 4)[0]))
        assert np.all(floor[:, 2] == 0.0) and floor[:, :2].min() == 0.0 and floor[:, :2].max() == 0.1
        # The infinite piston is drawn over the whole scene: it covers every sphere.
        assert piston[:, 0].min() <= trajectory.positions[k, :, 0].min() - R
        assert piston[:, 1].max() >= trajectory.positions[k, :, 1].max() + R
        force = np.asarray(mesh.cell_data["force"])
        assert np.array_equal(force, trajectory.wall_forces[k][surfaces])
    # At rest on the floor, the floor carries the spheres' weight (frames after the first).
    last = walls_of(tmp_path, "p", len(trajectory) - 1)
    floor_force = np.asarray(last.cell_data["force"])[np.asarray(last.cell_data["surface"]) == 4][0]
    assert floor_force == pytest.approx([0.0, 0.0, -world.masses_at(0.0).sum() * 9.81], rel=1e-9)


@pytest.mark.exact
def test_contacts_are_marked_active_or_left_out(piston_run, tmp_path):
    _, trajectory = piston_run
    export_vtk(trajectory, tmp_path / "all", stem="p")
    export_vtk(trajectory, tmp_path / "active", stem="p", active_only=True)
    k = len(trajectory) - 1
    every = pyvista.read(tmp_path / "all" / f"p_contacts_{k:05d}.vtp")
    impulse = np.asarray(every.cell_data["impulse"])
    active = np.asarray(every.cell_data["active"]).astype(bool)
    assert every.n_cells == len(trajectory.contacts[k])
    assert np.array_equal(active, impulse > noise_impulse(trajectory, k))
    assert active.any() and not active.all()  # the floor holds them; the x-min face does not
    only = pyvista.read(tmp_path / "active" / f"p_contacts_{k:05d}.vtp")
    assert only.n_cells == active.sum()
    assert np.all(np.asarray(only.cell_data["impulse"]) > 0.0)
    assert np.array_equal(np.sort(np.asarray(only.cell_data["i"])), np.sort(np.asarray(every.cell_data["i"])[active]))


@pytest.mark.exact
def test_a_capped_cylinder_is_its_side_at_its_radius_and_two_caps(tmp_path):
    centre, radius, height = np.array([0.0, 0.0, 0.1]), 0.05, 0.08
    drum = Cylinder(centre, [0, 0, 1], radius, height=height, angular_velocity=3.0)
    world = gr.SphereWorld([[0.0, 0.0, 0.1 - height / 2 + R]], R, density=1000.0, walls=[drum])
    trajectory = gr.Simulation(world, dt=DT).run(steps=2)
    export_vtk(trajectory, tmp_path, stem="c")
    mesh = walls_of(tmp_path, "c", 1)
    surfaces = np.asarray(mesh.cell_data["surface"])
    assert set(surfaces) == {0, 1, 2}
    side = np.concatenate([cell_points(mesh, c) for c in np.flatnonzero(surfaces == 0)])
    assert np.hypot(side[:, 0], side[:, 1]) == pytest.approx(radius, rel=1e-12)
    assert side[:, 2].min() == pytest.approx(0.1 - height / 2) and side[:, 2].max() == pytest.approx(0.1 + height / 2)
    bottom = cell_points(mesh, int(np.flatnonzero(surfaces == 1)[0]))
    assert bottom[:, 2] == pytest.approx(0.1 - height / 2)
    # The sphere rests on the bottom cap, which carries its weight.
    force = np.asarray(mesh.cell_data["force"])[np.flatnonzero(surfaces == 1)[0]]
    assert force == pytest.approx([0.0, 0.0, -world.masses_at(0.0)[0] * 9.81], rel=1e-9)


@pytest.mark.exact
def test_the_beams_obstacles_are_exported_as_squares_at_their_planes(tmp_path):
    from granular.constraints import Contacts
    from granular.systems.beam import Beam

    beam = Beam()
    q = beam.q0
    trajectory = gr.Trajectory(
        t=np.array([0.0]),
        positions=q[None],
        velocities=np.zeros_like(q)[None],
        radii=None,
        kinetic_energy=np.zeros(1),
        potential_energy=np.zeros(1),
        dissipated_energy=np.zeros(1),
        contacts=[Contacts.empty(1)],
        system=beam.describe(),
        meta={"dt": 1e-5},
    )
    export_vtk(trajectory, tmp_path, stem="b")
    mesh = walls_of(tmp_path, "b", 0)
    heights = sorted(cell_points(mesh, c)[:, 2].mean() for c in range(mesh.n_cells))
    assert heights == pytest.approx([-0.1, 0.1])  # the obstacles at -+ the gap (Beam's default)
    for c in range(mesh.n_cells):
        assert np.ptp(cell_points(mesh, c)[:, 2]) == pytest.approx(0.0, abs=1e-15)


def test_renders_draw_a_moving_wall_where_it_is_in_each_frame(piston_run):
    """The animation's piston (a lid: drawn as edges) follows the recorded
    displacements: after drawing frame k its edges lie at TOP - V t_k, not at TOP."""
    from granular.render import make_renderer
    from granular.render.geometry import frame_scene, select_frames

    _, trajectory = piston_run
    indices = select_frames(trajectory)
    renderer = make_renderer(
        trajectory,
        indices,
        size=(64, 48),
        camera="fixed",
        view=None,
        up=None,
        color_by="speed",
        forces=False,
        force_scale=None,
        sphere_opacity=None,
        title=None,
        cmap=None,
        orbit_turns=1.0,
        antialias=False,
    )
    try:
        for k in indices[1:]:
            renderer.draw(frame_scene(trajectory, int(k)), int(k))
            heights = np.unique(np.asarray(renderer.plotter.actors["wall-edges"].mapper.dataset.points)[:, 2])
            assert np.any(np.abs(heights - (TOP - V * trajectory.t[k])) < 1e-12)
            assert not np.any(np.abs(heights - TOP) < 1e-12)  # nothing left at the start
    finally:
        renderer.close()
