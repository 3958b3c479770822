"""Triangle-mesh walls (granular.walls.meshes): rows against analytic distances, a flat
triangulated floor against a Plane, the compiled search against the numpy reference,
motion, files and bad input."""

import numpy as np
import pytest

import granular as gr
from granular.walls.mesh_geometry import Topology, closest_points, local_minima, merged
from granular.walls.meshes import rotation_matrix

trimesh = pytest.importorskip("trimesh")

EPS = np.finfo(float).eps


def grid_floor(cells: int, size: float, z: float = 0.0, flip: bool = False) -> gr.TriangleMesh:
    """The square ``[-size, size]^2`` at height ``z`` as ``2 cells^2`` triangles."""
    ticks = np.linspace(-size, size, cells + 1)
    x, y = np.meshgrid(ticks, ticks, indexing="ij")
    vertices = np.column_stack([x.ravel(), y.ravel(), np.full(x.size, z)])
    index = np.arange((cells + 1) ** 2).reshape(cells + 1, cells + 1)
    a, b, c, d = index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel()
    faces = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    return gr.TriangleMesh(vertices, faces[:, ::-1] if flip else faces)


def side_walls(size):
    return [
        gr.Plane([-size, 0, 0], [1, 0, 0]),
        gr.Plane([size, 0, 0], [-1, 0, 0]),
        gr.Plane([0, -size, 0], [0, 1, 0]),
        gr.Plane([0, size, 0], [0, -1, 0]),
    ]


# -- a flat triangulated floor is a Plane ---------------------------------------------
def test_a_flat_floor_gives_a_planes_rows_bit_for_bit_also_above_shared_edges_and_vertices():
    mesh, plane = grid_floor(10, 1.0, flip=True), gr.Plane([0, 0, 0], [0, 0, 1])
    rng = np.random.default_rng(0)
    q = np.column_stack([rng.uniform(-0.95, 0.95, 3000), rng.uniform(-0.95, 0.95, 3000), rng.uniform(0.05, 0.2, 3000)])
    q[:200, :2] = mesh.vertices[rng.integers(0, len(mesh.vertices), 200), :2]  # right above vertices
    q[200:400, 0] = np.round(q[200:400, 0] * 5) / 5  # above edges x = k/5
    q[400:600, 1] = q[400:600, 0]  # above the diagonals
    radii = np.full(len(q), 0.1)
    rows, expected = mesh.rows(q, radii, 0.05, 0.0), plane.rows(q, radii, 0.05, 0.0)
    assert rows.size == expected.size > 1000
    assert np.array_equal(rows.spheres, expected.spheres)
    assert np.array_equal(rows.gaps, expected.gaps) and np.array_equal(rows.normals, expected.normals)


@pytest.mark.exact
@pytest.mark.parametrize("friction", [0.0, 0.4])
def test_spheres_on_a_triangulated_floor_move_as_on_a_plane_bit_for_bit(friction):
    """Bouncing, sliding and rolling spheres (restitution 0.3, rolling resistance with
    friction) in a square container: the trajectories with a 512-triangle floor and
    with a Plane are identical to the last bit."""
    rng = np.random.default_rng(3)
    n, radius, size = 40, 0.01, 0.1
    positions = np.column_stack([rng.uniform(-0.08, 0.08, n), rng.uniform(-0.08, 0.08, n), 0.02 + np.arange(n) * 0.025])
    positions[:8, :2] = np.round(positions[:8, :2] / 0.0125) * 0.0125  # above the grid's vertices
    velocities = rng.normal(0.0, 0.3, (n, 3))
    runs = []
    for floor in (gr.Plane([0, 0, 0], [0, 0, 1]), grid_floor(16, size)):
        world = gr.SphereWorld(
            positions,
            radius,
            velocities=velocities,
            walls=[floor, *side_walls(size)],
            friction=friction,
            restitution=0.3,
            rolling_friction=0.01 if friction else 0.0,
        )
        with pytest.warns(gr.TimeStepWarning):
            runs.append(gr.Simulation(world, dt=1e-3).run(steps=200, record_every=20))
    plane, mesh = runs
    assert np.array_equal(plane.positions, mesh.positions)
    assert np.array_equal(plane.velocities, mesh.velocities)
    assert np.array_equal(plane.dissipated_energy, mesh.dissipated_energy)
    assert plane.contacts[-1].wall.size == mesh.contacts[-1].wall.size and np.any(mesh.contacts[-1].wall == 0)


# -- one row per contact ----------------------------------------------------------------
def cube(half: float = 1.0, subdivisions: int = 1) -> gr.TriangleMesh:
    box = trimesh.creation.box(extents=(2 * half,) * 3)
    for _ in range(subdivisions):
        box = box.subdivide()
    return gr.TriangleMesh(box.vertices, box.faces)


def test_outside_a_cube_each_sphere_has_one_row_at_the_exact_distance():
    """Convex edges and corners: the distance to a cube from outside is
    ``|max(|q| - 1, 0)|``; each sphere within reach gets exactly one row with that
    gap, to the rounding of a distance of numbers of order 1 (a few ulps)."""
    mesh, rng = cube(), np.random.default_rng(1)
    q = rng.uniform(-1.3, 1.3, (20000, 3))
    q = q[np.any(np.abs(q) > 1.0, axis=1)]
    radius, margin = 0.1, 0.2
    rows = mesh.rows(q, np.full(len(q), radius), margin, 0.0)
    distance = np.linalg.norm(np.maximum(np.abs(q) - 1.0, 0.0), axis=1)
    near = np.flatnonzero(distance - radius <= margin)
    assert np.array_equal(rows.spheres, near)
    assert np.max(np.abs(rows.gaps - (distance[near] - radius))) <= 8 * EPS * 1.3
    expected_normals = (q[near] - np.clip(q[near], -1, 1)) / distance[near, None]
    assert np.max(np.abs(rows.normals - expected_normals)) <= 1e-12


def test_inside_a_cube_each_face_within_reach_has_its_row():
    """Concave corners: a sphere inside gets one row per face within reach, each at
    that face's distance ``1 - |q_a| - r``, with the face's inward normal."""
    mesh, rng = cube(subdivisions=2), np.random.default_rng(2)
    q = rng.uniform(-0.99, 0.99, (10000, 3))
    radius, margin = 0.1, 0.2
    rows = mesh.rows(q, np.full(len(q), radius), margin, 0.0)
    face_gaps = 1.0 - np.abs(q) - radius  # (N, 3): the faces across each axis
    expected = np.sum(face_gaps <= margin, axis=1)
    assert np.array_equal(np.bincount(rows.spheres, minlength=len(q)), expected)
    axis = np.argmax(np.abs(rows.normals), axis=1)
    assert np.max(np.abs(rows.gaps - face_gaps[rows.spheres, axis])) <= 8 * EPS
    assert np.all(rows.normals[np.arange(rows.size), axis] == -np.sign(q[rows.spheres, axis]))
    several = rows.features[rows.features > 0]
    assert several.size and several.max() == 2  # a corner: rows 0, 1, 2


def roof(cells: int = 6) -> gr.TriangleMesh:
    """A ridge along y at x = 0, height 0.5, the slopes falling to z = 0 at x = +-1."""
    ticks = np.linspace(-1.0, 1.0, 2 * cells + 1)
    x, y = np.meshgrid(ticks, ticks, indexing="ij")
    vertices = np.column_stack([x.ravel(), y.ravel(), 0.5 * (1.0 - np.abs(x.ravel()))])
    index = np.arange(ticks.size**2).reshape(ticks.size, ticks.size)
    a, b, c, d = index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel()
    return gr.TriangleMesh(vertices, np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])]))


def test_a_sphere_over_a_convex_ridge_has_one_row_at_the_distance_to_the_roof():
    """Across the ridge the distance is that to the slope plane on either side, or to
    the ridge line between the two normal cones: one row everywhere."""
    mesh = roof()
    x = np.linspace(-0.6, 0.6, 241)
    q = np.column_stack([x, np.full(x.size, 0.13), 0.5 * (1.0 - np.abs(x)) + 0.3])
    rows = mesh.rows(q, np.full(x.size, 0.25), 0.1, 0.0)
    assert np.array_equal(rows.spheres, np.arange(x.size))
    slope = np.array([1.0, 0.0, 2.0]) / np.sqrt(5.0)  # normal of the x > 0 slope
    to_plane = np.abs(q[:, [0, 2]] * [1.0, 1.0]) @ [slope[0], slope[2]] - 0.5 * slope[2]
    to_ridge = np.hypot(q[:, 0], q[:, 2] - 0.5)
    in_cone = np.abs(q[:, 0]) * 2.0 <= q[:, 2] - 0.5  # between the two slopes' normals
    expected = np.where(in_cone, to_ridge, to_plane) - 0.25
    assert np.max(np.abs(rows.gaps - expected)) <= 1e-14


def random_mesh(seed: int) -> gr.TriangleMesh:
    sphere = trimesh.creation.icosphere(subdivisions=2)
    vertices = sphere.vertices * np.random.default_rng(seed).uniform(0.8, 1.2, (len(sphere.vertices), 1))
    return gr.TriangleMesh(vertices, sphere.faces)


def test_the_compiled_search_finds_the_rows_of_the_numpy_reference_over_every_pair():
    """`granular.walls.mesh_index` (a cell list, compiled) against `closest_points` and
    `local_minima` over every (sphere, triangle) pair of a bumpy closed mesh, then
    merged alike: the same rows, gaps and normals."""
    mesh, rng = random_mesh(4), np.random.default_rng(5)
    q = rng.uniform(-1.4, 1.4, (1500, 3))
    radii, margin = rng.uniform(0.05, 0.2, len(q)), 0.05
    rows = mesh.rows(q, radii, margin, 0.0)
    topology = Topology(mesh.vertices, mesh.faces)
    spheres = np.repeat(np.arange(len(q)), len(mesh.faces))
    triangles = np.tile(np.arange(len(mesh.faces)), len(q))
    corners = mesh.vertices[mesh.faces[triangles]]
    points, features = closest_points(q[spheres], corners[:, 0], corners[:, 1], corners[:, 2])
    distance = np.linalg.norm(q[spheres] - points, axis=1)
    near = np.flatnonzero(distance - radii[spheres] <= margin)
    keep = near[local_minima(topology, q[spheres[near]], triangles[near], points[near], features[near], distance[near])]
    order = keep[np.lexsort((triangles[keep], distance[keep], spheres[keep]))]
    kept = order[merged(spheres[order], points[order], distance[order], radii)]
    assert np.array_equal(np.sort(spheres[kept]), rows.spheres)
    expected_gaps = np.sort(distance[kept] - radii[spheres[kept]] + spheres[kept] * 10.0)
    assert np.max(np.abs(np.sort(rows.gaps + rows.spheres * 10.0) - expected_gaps)) <= 1e-12
    assert rows.size > 300


# -- motion ---------------------------------------------------------------------------
def test_a_turning_square_mesh_drags_spheres_as_a_turntable_plane():
    """A floor turning about z through the origin: the mesh's material velocity at the
    contacts (rotation of its frame) equals a Plane's spin about its normal."""
    omega = 2.0
    mesh = gr.TriangleMesh(
        grid_floor(4, 1.0).vertices, grid_floor(4, 1.0).faces, angular_velocity=omega, axis=[0, 0, 1], centre=[0, 0, 0]
    )
    plane = gr.Plane([0, 0, 0], [0, 0, 1], angular_velocity=omega)
    rng = np.random.default_rng(6)
    q = np.column_stack([rng.uniform(-0.5, 0.5, 50), rng.uniform(-0.5, 0.5, 50), np.full(50, 0.1)])
    radii = np.full(50, 0.1)
    for t in (0.0, 0.3, 1.7):
        rows, expected = mesh.rows(q, radii, 0.01, t, 1e-3), plane.rows(q, radii, 0.01, t, 1e-3)
        assert np.array_equal(rows.spheres, expected.spheres)
        assert np.max(np.abs(rows.gaps - expected.gaps)) <= 1e-15
        assert np.max(np.abs(rows.normals - expected.normals)) <= 1e-15
        assert np.max(np.abs(rows.velocities - expected.velocities)) <= 1e-14


def test_a_turning_mesh_is_where_its_rotation_puts_it():
    """A plate x = 0.5 (y, z in [-1, 1]) turning about z: at angle pi/2 it is the plane
    y = 0.5, so a sphere at (0, 0.8, 0) is 0.3 away from it."""
    vertices = np.array([[0.5, -1, -1], [0.5, 1, -1], [0.5, 1, 1], [0.5, -1, 1]], float)
    mesh = gr.TriangleMesh(vertices, [[0, 1, 2], [0, 2, 3]], angular_velocity=np.pi / 2)
    rows = mesh.rows(np.array([[0.0, 0.8, 0.0]]), np.array([0.1]), 1.0, 1.0, 1e-3)
    assert rows.gaps == pytest.approx([0.2], abs=1e-15)
    assert rows.normals[0] == pytest.approx([0, 1, 0], abs=1e-15)
    assert rotation_matrix(np.array([0.0, 0.0, 1.0]), np.pi / 2) @ [0.5, 0, 0] == pytest.approx([0, 0.5, 0])
    # the material velocity at the row's contact point q - r n = (0, 0.7, 0) (the
    # convention of every wall): omega z x (0, 0.7, 0) = (-0.7 pi / 2, 0, 0)
    assert rows.velocities[0] == pytest.approx([-0.35 * np.pi, 0.0, 0.0], abs=1e-12)


def test_a_rising_mesh_floor_lifts_a_sphere_as_a_rising_plane():
    """A floor moving up at 0.1 m/s under a resting sphere, as a mesh and as a Plane:
    the same heights to rounding (both exact to the solver's tolerance)."""
    heights = []
    for floor in (
        gr.Plane([0, 0, 0], [0, 0, 1], velocity=[0, 0, 0.1]),
        gr.TriangleMesh(grid_floor(4, 1.0).vertices, grid_floor(4, 1.0).faces, velocity=[0, 0, 0.1]),
    ):
        world = gr.SphereWorld([[0.1, 0.2, 0.05]], 0.05, walls=[floor])
        heights.append(gr.Simulation(world, dt=1e-3).run(steps=100, record_every=10).positions[:, 0, 2])
    assert heights[0][-1] == pytest.approx(0.05 + 0.1 * 0.1, abs=1e-12)
    assert np.max(np.abs(heights[0] - heights[1])) <= 1e-12


# -- files and descriptions -----------------------------------------------------------
@pytest.mark.parametrize("suffix", ["stl", "obj", "ply"])
def test_a_mesh_file_is_read_with_its_triangles_sharing_their_vertices(tmp_path, suffix):
    box = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    path = tmp_path / f"box.{suffix}"
    box.export(path)
    mesh = gr.TriangleMesh.from_file(path, scale=1e-3, friction=0.3)
    assert mesh.vertices.shape == (8, 3) and mesh.faces.shape == (12, 3) and mesh.friction == 0.3
    assert np.max(np.abs(mesh.vertices)) == pytest.approx(1e-3)
    assert len(mesh.topology.edges) == 18  # a closed cube: every edge on two triangles


def test_separate_triangles_are_joined_at_identical_vertices():
    """An STL-like list (each triangle its own vertices) of a flat square is one
    surface: a sphere right above the diagonal gets one row."""
    corners = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    mesh = gr.TriangleMesh(corners, [[0, 1, 2], [3, 4, 5]])
    assert mesh.vertices.shape == (4, 3)
    rows = mesh.rows(np.array([[0.5, 0.5, 0.2]]), np.array([0.1]), 0.5, 0.0)
    assert rows.size == 1 and rows.gaps[0] == pytest.approx(0.1, abs=1e-16)


def test_a_mesh_world_round_trips_through_its_run_file(tmp_path):
    """The description written to the run file rebuilds the same walls: names,
    surface count, polygons for the export."""
    from granular.render.geometry import wall_polygons
    from granular.walls.surfaces import surface_count, surface_names, wall_from_description

    mesh = grid_floor(3, 0.1)
    walls = [
        mesh,
        gr.Cone([0, 0, 0.05], [0, 0, 1], 0.03, 0.08, 0.05),
        gr.Panel([-0.1, -0.1, 0.2], [0.2, 0, 0], [0, 0.2, 0]),
        *side_walls(0.1),
    ]
    world = gr.SphereWorld([[0.0, 0.0, 0.15]], 0.01, walls=walls)
    trajectory = gr.Simulation(world, dt=1e-3).run(steps=3)
    trajectory.save(tmp_path / "run.h5")
    loaded = gr.Trajectory.load(tmp_path / "run.h5")
    described = loaded.system["walls"]
    assert [wall_from_description(d).describe() for d in described] == [w.describe() for w in walls]
    assert (
        surface_names(described)
        == list(world.surface_names)
        == [
            "mesh 0",
            "cone 1",
            "panel 2",
            "plane 3 (normal 1, 0, 0)",
            "plane 4 (normal -1, 0, 0)",
            "plane 5 (normal 0, 1, 0)",
            "plane 6 (normal 0, -1, 0)",
        ]
    )
    assert sum(surface_count(d) for d in described) == len(world.surfaces) == 7
    polygons = wall_polygons(loaded.system, np.array([[-0.1] * 3, [0.1] * 3]))
    assert sum(1 for _, w, _ in polygons if w == 0) == len(mesh.faces)


# -- bad input --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "vertices, faces, match",
    [
        ([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]], "degenerate"),
        ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 3]], "outside 0..2"),
        ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0.0, 1.0, 2.0]], "integer"),
        ([[0, 0, 0], [1, 0, 0]], [[0, 1, 1]], r"shape \(V >= 3, 3\)"),
        ([[0, 0, 0], [1, 0, np.nan], [0, 1, 0]], [[0, 1, 2]], "finite"),
    ],
)
def test_bad_meshes_are_refused_with_the_reason(vertices, faces, match):
    with pytest.raises(gr.InvalidInputError, match=match):
        gr.TriangleMesh(vertices, faces)


def test_a_missing_mesh_file_is_an_input_error(tmp_path):
    with pytest.raises(gr.InvalidInputError, match="no mesh file"):
        gr.TriangleMesh.from_file(tmp_path / "nothing.stl")


def test_a_mesh_carries_its_own_contact_law():
    """The rows on a mesh take its friction, rolling resistance and restitution; the
    rows on a wall without them take the world's."""
    floor = grid_floor(2, 1.0)
    mesh = gr.TriangleMesh(floor.vertices, floor.faces, restitution=0.4, friction=0.7, rolling_friction=0.05)
    world = gr.SphereWorld(
        [[0.3, 0.2, 0.1], [0.0, 0.9, 0.1]],
        0.1,
        walls=[mesh, gr.Plane([0, 1, 0], [0, -1, 0])],
        friction=0.2,
        rolling_friction=0.01,
        restitution=0.9,
    )
    rows = world.constraints(1e-3, world.q0, 1e-3, 0.0)
    on_mesh, on_plane = rows.wall == 0, rows.wall == 1
    assert on_mesh.sum() == 2 and on_plane.sum() == 1
    laws = rows.laws
    assert np.all(laws.friction[on_mesh] == 0.7) and np.all(laws.friction[on_plane] == 0.2)
    assert np.all(laws.rolling_friction[on_mesh] == 0.05) and np.all(laws.rolling_friction[on_plane] == 0.01)
    assert np.all(laws.restitution[on_mesh] == 0.4) and np.all(laws.restitution[on_plane] == 0.9)


def test_a_turning_mesh_is_drawn_turned_in_each_frame(tmp_path):
    """A quadrilateral of two triangles turning at 2 rad/s about the vertical through its centre: the run
    file keeps each frame's rotation, and the polygons of the ParaView export (and of
    the renders' `shifted_walls`) are the vertices turned by the analytic angle 2 t
    (scipy's rotation vector, an independent formula), to round-off (1e-12 m)."""
    from scipy.spatial.transform import Rotation

    from granular.render.geometry import frame_scene, shifted_walls, wall_polygons
    from granular.app.runs import load_run, save_run

    vertices = np.array([[0.1, 0.0, 0.0], [0.0, 0.08, 0.0], [-0.05, 0.0, 0.0], [0.0, -0.03, 0.0]])
    mesh = gr.TriangleMesh(vertices, [[0, 1, 2], [0, 2, 3]], angular_velocity=2.0, axis=(0, 0, 1), centre=(0, 0, 0))
    world = gr.SphereWorld([[0.5, 0.5, 0.5]], 0.01, walls=[mesh], gravity=(0, 0, 0))
    save_run(gr.Simulation(world, dt=1e-3).run(steps=300, record_every=100), tmp_path / "turn.h5")
    trajectory = load_run(tmp_path / "turn.h5")
    bounds = np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]])
    for k, t in enumerate(trajectory.t):
        expected = Rotation.from_rotvec([0.0, 0.0, 2.0 * t]).apply(vertices)
        polygons = wall_polygons(
            trajectory.system, bounds, trajectory.wall_displacements[k], trajectory.wall_rotations[k]
        )
        corners = np.concatenate([polygon for polygon, _, _ in polygons])
        distance = np.linalg.norm(corners[:, None, :] - expected[None, :, :], axis=2)
        assert distance.min(axis=0).max() < 1e-12 and distance.min(axis=1).max() < 1e-12
        scene = frame_scene(trajectory, k)
        drawn = shifted_walls(trajectory.system, scene.wall_displacements, scene.wall_rotations)
        distance = np.linalg.norm(np.asarray(drawn["walls"][0]["vertices"])[:, None, :] - expected[None], axis=2)
        assert distance.min(axis=0).max() < 1e-12 and distance.min(axis=1).max() < 1e-12
    assert trajectory.t[-1] > 0.2  # turned by more than 0.4 rad: an unturned drawing would fail


def test_a_lone_triangle_draws_its_three_edges():
    """Every edge of a lone triangle is a boundary edge, so all three are drawn (the
    test of sharp edges used to index a second triangle that no edge has)."""
    triangle = gr.TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    shape = triangle.shape(np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]]))
    drawn = {frozenset(map(tuple, segment)) for segment in np.asarray(shape.edges).reshape(-1, 2, 3).tolist()}
    corners = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]
    assert drawn == {frozenset({a, b}) for a in corners for b in corners if a < b}
