"""The renderer (granular.render): geometry of frames, videos and stills, headless.

Small runs only (a few spheres, tens of steps). Images are compared with the white
background and with each other; videos are read back for their frame count and size.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import granular as gr
from granular.drawing.adapters import Shapes, register_adapter
from granular.render import animate, frame_image, snapshot
from granular.render.geometry import contact_segments, force_chains, frame_scene, scene_bounds

pytest.importorskip("pyvista")
imageio = pytest.importorskip("imageio.v2")
imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")

SIZE = (160, 128)  # pixels; multiples of 16 for H.264


def small_pile(steps: int = 30, record_every: int = 3) -> gr.Trajectory:
    """Eight spheres dropped a few millimetres into a box: they touch the floor and each other."""
    r = 0.01
    grid = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    positions = np.array([0.0205, 0.0205, 0.0105]) + grid * 0.0205  # half a millimetre apart
    world = gr.SphereWorld(positions, r, density=2500.0, walls=[gr.Box([0, 0, 0], [0.062, 0.062, 0.2], open_top=True)])
    return gr.Simulation(world, dt=1e-3).run(steps=steps, record_every=record_every)


@pytest.fixture(scope="module")
def pile() -> gr.Trajectory:
    return small_pile()


def foreground(image: np.ndarray) -> np.ndarray:
    """Mask of the pixels that are not the white background."""
    return np.asarray(image)[..., :3].min(axis=-1) < 235


def reddish(image: np.ndarray) -> np.ndarray:
    """Mask of orange-red pixels: the force-chain colour map, absent from the rest of the picture."""
    rgb = np.asarray(image)[..., :3].astype(int)
    return (rgb[..., 0] > rgb[..., 1] + 50) & (rgb[..., 0] > rgb[..., 2] + 50)


# -- geometry, no graphics ----------------------------------------------------------------
def test_force_chain_segments_join_centres_and_wall_contact_points():
    positions = np.array([[0.0, 0.0, 0.01], [0.02, 0.0, 0.01]])
    radii = np.array([0.01, 0.01])
    contacts = gr.Contacts(
        i=np.array([0, 0, 1]),
        j=np.array([1, -1, -1]),
        wall=np.array([-1, 0, 0]),
        gap=np.zeros(3),
        normal=np.array([[1.0, 0, 0], [0, 0, 1.0], [0, 0, 1.0]]),
        impulse=np.array([2.0, 1.0, 0.0]),
    )
    segments = contact_segments({"kind": "spheres"}, contacts, positions, radii)
    np.testing.assert_allclose(segments[0], positions)  # centre to centre
    np.testing.assert_allclose(segments[1], [positions[0], [0.0, 0.0, 0.0]])  # centre to the floor
    chains = force_chains({"kind": "spheres"}, contacts, positions, radii)
    assert len(chains) == 2  # the zero impulse is left out
    np.testing.assert_allclose(chains.impulses, [2.0, 1.0])


def test_force_chain_uses_the_minimum_image_in_a_periodic_cell():
    positions = np.array([[0.005, 0.5, 0.5], [0.995, 0.5, 0.5]])
    contacts = gr.Contacts(
        i=np.array([0]),
        j=np.array([1]),
        wall=np.array([-1]),
        gap=np.zeros(1),
        normal=np.array([[-1.0, 0, 0]]),
        impulse=np.array([1.0]),
    )
    periodic = {"type": "periodic", "lower": [0, 0, 0], "upper": [1, 1, 1], "axes": [0]}
    segments = contact_segments({"kind": "spheres", "periodic": periodic}, contacts, positions, np.full(2, 0.005))
    np.testing.assert_allclose(segments[0, 1], [-0.005, 0.5, 0.5])


def test_frame_scene_uses_the_radii_of_its_frame():
    world = gr.SphereWorld([[0.0, 0.0, 0.0]], lambda t: np.array([0.01 * (1.0 + 10.0 * t)]), gravity=(0, 0, 0))
    trajectory = gr.Simulation(world, dt=1e-2).run(steps=10, record_every=5)
    for k in range(len(trajectory)):
        np.testing.assert_allclose(frame_scene(trajectory, k).shapes.sphere_radii, trajectory.radii[k])
    assert trajectory.radii[-1][0] == pytest.approx(0.02)


def test_scene_bounds_crop_an_open_box_above_the_bodies(pile):
    bounds = scene_bounds(pile, range(len(pile)))
    assert bounds[1, 2] < 0.1  # the box is 0.2 m tall, the spheres below 0.07 m
    np.testing.assert_allclose(bounds[:, :2], [[0, 0], [0.062, 0.062]])


# -- pictures ------------------------------------------------------------------------------
def test_mp4_has_one_frame_per_recorded_frame_and_the_requested_size(pile, tmp_path):
    path = animate(pile, tmp_path / "pile.mp4", fps=10, size=SIZE)
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(path))
    assert len(pile) == 11 and frames == 11
    reader = imageio.get_reader(path)
    try:
        assert tuple(reader.get_meta_data()["size"]) == SIZE
    finally:
        reader.close()


def test_every_thins_the_frames_and_gif_is_written(pile, tmp_path):
    path = animate(pile, tmp_path / "pile.gif", fps=10, every=2, size=SIZE)
    frames = imageio.mimread(path)
    assert len(frames) == 6  # frames 0, 2, ..., 10
    assert frames[0].shape[:2] == (SIZE[1], SIZE[0])


def test_png_is_not_blank(pile, tmp_path):
    path = snapshot(pile, -1, tmp_path / "pile.png", size=SIZE)
    image = imageio.imread(path)
    assert image.shape[:2] == (SIZE[1], SIZE[0])
    covered = foreground(image).mean()
    assert 0.05 < covered < 0.95
    assert image[..., :3].std() > 20


def test_force_overlay_draws_chains(pile):
    plain = frame_image(pile, -1, size=SIZE)
    forces = frame_image(pile, -1, size=SIZE, forces=True)
    assert pile.n_contacts[-1] > 0
    assert reddish(forces).sum() > 50 * reddish(plain).sum() + 20
    assert np.abs(plain.astype(int) - forces.astype(int)).mean() > 2.0


def test_growing_radii_grow_on_screen(tmp_path):
    world = gr.SphereWorld([[0.0, 0.0, 0.0]], lambda t: np.array([0.01 * (1.0 + 20.0 * t)]), gravity=(0, 0, 0))
    trajectory = gr.Simulation(world, dt=1e-2).run(steps=10, record_every=10)  # radius 0.01 -> 0.03
    path = animate(trajectory, tmp_path / "grow.gif", size=SIZE, color_by="none")
    body = (slice(SIZE[1] // 5, None), slice(None))  # below the caption
    first, last = (foreground(frame)[body].sum() for frame in imageio.mimread(path))
    assert last > 6 * first  # area ~ r^2: 9 times with a fixed camera


def test_orbit_camera_moves_and_fixed_camera_does_not(tmp_path):
    world = gr.SphereWorld([[0.0, 0.0, 0.0], [0.05, 0.0, 0.0], [0.0, 0.03, 0.0]], 0.01, gravity=(0, 0, 0))
    still = gr.Simulation(world, dt=1e-3).run(steps=4, record_every=1)  # nothing moves
    fixed = imageio.mimread(animate(still, tmp_path / "fixed.gif", size=SIZE, camera="fixed", color_by="id"))
    orbit = imageio.mimread(animate(still, tmp_path / "orbit.gif", size=SIZE, camera="orbit", color_by="id"))
    body = (slice(SIZE[1] // 5, None), slice(None), slice(0, 3))  # below the caption (the time)

    def change(frames):
        return np.abs(frames[0][body].astype(int) - frames[2][body].astype(int)).mean()

    assert change(fixed) < 0.5  # GIF palettes differ a little from frame to frame
    assert change(orbit) > 5.0


def ball_shapes(description: dict, q: np.ndarray) -> Shapes:
    """A drawing adapter for a test system: a ball at height q[0] over a floor."""
    return Shapes(
        sphere_centres=np.array([[0.0, 0.0, float(q[0])]]),
        sphere_radii=np.array([0.1]),
        segments=np.array([[[0.0, 0.0, float(q[0])], [0.0, 0.0, float(q[0]) + 0.3]]]),
        segment_radii=np.array([0.02]),
        planes=[(np.zeros(3), np.array([0.0, 0.0, 1.0]), 0.5)],
    )


register_adapter("test_ball", ball_shapes)


def test_single_body_system_is_drawn_through_its_adapter(tmp_path):
    system = gr.ConstrainedSystem(
        [0.5],
        [0.0],
        mass=[[1.0]],
        force=lambda t, q, u: np.array([-9.81]),
        constraints=[gr.Constraint(gap=lambda t, q: q[0] - 0.1, gradient=lambda t, q: np.array([1.0]))],
        drawing={"kind": "test ball", "adapter": "test_ball"},
    )
    trajectory = gr.Simulation(system, dt=1e-2).run(steps=5)
    assert trajectory.radii is None
    image = imageio.imread(snapshot(trajectory, 0, tmp_path / "ball.png", size=SIZE))
    orange = image[..., 0].astype(int) > image[..., 2].astype(int) + 60  # the ball's colour
    assert orange.sum() > 100
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(animate(trajectory, tmp_path / "ball.mp4", size=SIZE)))
    assert frames == len(trajectory)


def test_system_without_adapter_is_a_clear_error(tmp_path):
    system = gr.ConstrainedSystem([0.5], [0.0], mass=[[1.0]])
    trajectory = gr.Simulation(system, dt=1e-2).run(steps=2)
    with pytest.raises(gr.InvalidInputError, match="cannot draw"):
        snapshot(trajectory, 0, tmp_path / "x.png", size=SIZE)
    assert not (tmp_path / "x.png").exists()


# -- bad input and atomic writes --------------------------------------------------------------
def test_bad_extension_frame_and_colouring_are_refused(pile, tmp_path):
    with pytest.raises(gr.InvalidInputError, match="unsupported output extension"):
        animate(pile, tmp_path / "pile.avi")
    with pytest.raises(gr.InvalidInputError, match="out of range"):
        snapshot(pile, len(pile), tmp_path / "pile.png")
    with pytest.raises(gr.InvalidInputError, match="color_by"):
        snapshot(pile, 0, tmp_path / "pile.png", color_by=np.ones(3))
    assert list(tmp_path.iterdir()) == []


def test_a_failed_render_leaves_the_previous_file_and_no_temporary(pile, tmp_path, monkeypatch):
    from granular.render import pyvista_

    path = tmp_path / "pile.mp4"
    path.write_bytes(b"the good old video")
    calls = {"n": 0}
    draw = pyvista_.Renderer.draw

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full")
        return draw(self, *args, **kwargs)

    monkeypatch.setattr(pyvista_.Renderer, "draw", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        animate(pile, path, size=SIZE)
    assert path.read_bytes() == b"the good old video"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pile.mp4"]


def test_import_granular_does_not_import_pyvista():
    code = (
        "import sys, granular, granular.render, granular.cli; "
        "print(any(m.split('.')[0] in ('pyvista', 'vtk', 'vtkmodules', 'matplotlib') for m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def beam_shapes(description: dict, q: np.ndarray) -> Shapes:
    """A drawing adapter for a test system: a horizontal rod whose tip sits between two
    obstacle planes 0.1 above and below it (the beam scene's picture)."""
    return Shapes(
        segments=np.array([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]]),
        segment_radii=np.array([0.005]),
        planes=[
            (np.array([1.0, 0.0, -0.1]), np.array([0.0, 0.0, 1.0]), 0.05),
            (np.array([1.0, 0.0, 0.1]), np.array([0.0, 0.0, -1.0]), 0.05),
        ],
    )


register_adapter("test_beam", beam_shapes)


def test_obstacles_level_with_the_camera_stay_visible():
    """Obstacle planes level with the camera are drawn as slabs on their inadmissible
    side: each covers at least 8 rows of pixels above or below the rod (as infinitely
    thin squares seen at a grazing angle they cover 4 and 6)."""
    system = gr.ConstrainedSystem(
        [0.0], [0.0], mass=[[1.0]], constraints=[], drawing={"kind": "test beam", "adapter": "test_beam"}
    )
    trajectory = gr.Simulation(system, dt=1e-2).run(steps=1)
    image = frame_image(trajectory, 0, size=(320, 128), view=(0.0, -1.0, 0.0), antialias=False)
    drawn = foreground(image)
    drawn[: 128 // 5] = False  # the caption
    rod = np.flatnonzero(drawn[:, 10:40].any(axis=1))  # left of the obstacles
    rows = np.flatnonzero(drawn.any(axis=1))
    above, below = rows[rows < rod.min()], rows[rows > rod.max()]
    assert len(rod) <= 4 and len(above) >= 8 and len(below) >= 8


# -- colour bar and caption scale together with the frame ------------------
def test_colour_bar_text_and_box_scale_with_the_frame():
    from granular.render.pyvista_ import CAPTION_SCALE, colorbar_layout, font_size, scalar_bar_arguments

    small, large = colorbar_layout((320, 240)), colorbar_layout((1280, 960))
    for size, layout in (((320, 240), small), ((1280, 960), large)):
        caption_points = CAPTION_SCALE * font_size(size)
        assert 0.6 <= layout["font_size"] / caption_points <= 1.0  # not 10 px beside a 30 px caption
        assert layout["reserved_width"] < 0.2  # not a quarter of a small GIF
        assert layout["position_x"] + layout["width"] < 1.0  # inside the frame
    assert large["font_size"] / small["font_size"] == pytest.approx(4.0, rel=0.15)
    assert large["reserved_width"] == pytest.approx(small["reserved_width"], rel=0.15)
    arguments = scalar_bar_arguments(small, "impulse (N s)")
    assert arguments["unconstrained_font_size"] is True  # VTK would shrink the labels
    assert arguments["label_font_size"] == small["font_size"] and arguments["width"] == small["width"]


# -- a force picture of a frame between impacts says why it shows none (item 10) -----------------
def test_a_force_frame_without_contacts_says_impacts_fell_between_frames():
    import copy

    run = small_pile(steps=12, record_every=3)
    assert run.meta["record_every"] == 3
    quiet = copy.deepcopy(run)
    quiet.contacts[2].impulse[:] = 0.0  # no contact in frame 2's own step
    quiet.dissipated_energy[2:] += 0.5  # but contacts dissipated between frames 1 and 2
    note = frame_scene(quiet, 2, forces=True).note
    assert "1 step in 3 recorded" in note and "dissipated 0.5 J" in note
    assert frame_scene(quiet, 2, forces=False).note == ""  # not a force picture
    assert frame_scene(run, len(run) - 1, forces=True).note == ""  # contacts drawn: nothing to explain
    every_step = copy.deepcopy(quiet)
    every_step.meta["record_every"] = 1
    assert frame_scene(every_step, 2, forces=True).note == ""  # nothing skipped


def test_walls_are_cut_to_a_box_exactly():
    """A 4 x 4 square through a 2 x 2 x 2 box keeps the 2 x 2 square; an edge across
    the box keeps its inner part; one that misses it is dropped."""
    from granular.render.geometry import WallGeometry, clip_walls

    square = np.array([[-2.0, -2.0, 0.0], [2.0, -2.0, 0.0], [2.0, 2.0, 0.0], [-2.0, 2.0, 0.0]])
    edges = np.array([[[-2.0, 0.5, 0.0], [2.0, 0.5, 0.0]], [[-2.0, 3.0, 0.0], [2.0, 3.0, 0.0]]])
    cut = clip_walls(WallGeometry(polygons=[square], edges=edges), np.array([[-1.0] * 3, [1.0] * 3]))
    (polygon,) = cut.polygons
    assert sorted(map(tuple, np.round(polygon, 12))) == [(-1, -1, 0), (-1, 1, 0), (1, -1, 0), (1, 1, 0)]
    np.testing.assert_allclose(cut.edges, [[[-1.0, 0.5, 0.0], [1.0, 0.5, 0.0]]])
