"""The pyvista adapter: draws `FrameScene`s off screen and returns images.

The only module of granular that imports pyvista (and through it VTK). It knows
nothing of the physics: it receives plain arrays from `granular.render.geometry`.

Headless machines: with no X display (``DISPLAY`` and ``WAYLAND_DISPLAY`` unset on
Linux) VTK is pointed at its EGL window (``VTK_DEFAULT_OPENGL_WINDOW``), which
renders with Mesa (llvmpipe) or a GPU without a display and skips VTK's slow
attempt to reach an X server. Set ``VTK_DEFAULT_OPENGL_WINDOW`` yourself to
override.

Layers, updated in place from frame to frame: spheres (glyphs scaled by their
radius, coloured by a scalar), their orientation bands (thin dark tubes along each
sphere's body equator, turned with it, when the trajectory records orientations),
links (tubes), obstacle planes (translucent slabs of depth ``OBSTACLE_DEPTH`` on the
inadmissible side, outlined), force chains (tubes whose radius and colour are
proportional to the contact impulse), walls (translucent polygons with opaque edges,
moved with the frames of moving walls) and a title with the time on a white box.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import numpy as np

from .geometry import (
    FrameScene,
    WallGeometry,
    clip_walls,
    polygon_edges,
    shape_planes,
    shifted_walls,
    up_direction,
    wall_geometry,
)

if TYPE_CHECKING:  # annotations only: pyvista is imported where a picture is drawn
    import pyvista

#: Look of the pictures, in one place.
BACKGROUND = "white"
TEXT_COLOR = "black"
#: Opacity of the white box behind the caption.
CAPTION_OPACITY = 0.85
WALL_COLOR = "#7f9fbf"
WALL_OPACITY = 0.12
EDGE_COLOR = "#4a6a8a"
LINK_COLOR = "#5a6a7a"
BODY_COLOR = "#e07b39"
BAND_COLOR = "#202020"
#: Thickness of an orientation band, in sphere radii.
BAND_WIDTH = 0.07
OBSTACLE_COLOR = "#8899aa"
#: Obstacle planes are drawn as slabs this thick (fraction of the scene's size) on their
#: inadmissible side, so that a plane seen edge-on (a planar mechanism) still shows.
OBSTACLE_DEPTH = 0.025
GHOST_COLOR = "#b8c0c8"
GHOST_OPACITY = 0.18
SPEED_CMAP = "viridis"
ID_CMAP = "turbo"
FORCE_CMAP = "YlOrRd"
#: Radius of a force chain carrying the reference impulse, in sphere radii.
CHAIN_WIDTH = 0.45
#: Chains below this fraction of the reference impulse are not drawn (clutter).
CHAIN_THRESHOLD = 0.03


#: Caption font size per pixel of frame height (pyvista's ``add_text`` then draws
#: it at twice that many points, `CAPTION_SCALE`).
FONT_PER_HEIGHT = 1.0 / 40.0
CAPTION_SCALE = 2.0
#: Colour-bar text size as a fraction of the caption's.
BAR_TEXT_RATIO = 0.8


def font_size(size) -> int:
    """The caption's font size for a frame of ``size`` (width, height) pixels:
    proportional to the height, so that a small GIF is a scaled-down copy."""
    return max(5, int(round(size[1] * FONT_PER_HEIGHT)))


def colorbar_layout(size) -> dict:
    """Where the colour bar goes and how big its text is, from the frame ``size``.

    The bar's text is `BAR_TEXT_RATIO` of the caption's (in points, the caption
    being drawn at `CAPTION_SCALE` times its font size) and is not shrunk to fit
    the bar's box (VTK's default: 10 px tick labels beside a 30 px caption). The box
    is sized in that text's units (``em``, a point being about a pixel): a colour
    strip 0.8 em wide, a 0.4 em gap, tick labels of up to five characters (``%.2g``)
    of 0.6 em, a 0.6 em margin (the title, its unit on a second line, fits over it); so
    bar and caption scale together with the frame and
    keep the same share of it (about a sixth of the width, where a fixed-size bar
    took a quarter of a 320 x 240 GIF). Returns ``font_size`` (points of the bar's
    text), fractions of the frame ``position_x``, ``position_y``, ``width``,
    ``height``, ``bar_ratio`` (the strip's share of the box) and ``reserved_width``
    (kept free of bodies).
    """
    width = float(size[0])
    text = max(6, int(round(BAR_TEXT_RATIO * CAPTION_SCALE * font_size(size))))
    em = float(text)
    strip, gap, labels, margin = 0.8 * em, 0.4 * em, 3.0 * em, 0.6 * em
    box = strip + gap + labels
    return dict(
        font_size=text,
        position_x=1.0 - (box + margin) / width,
        width=box / width,
        bar_ratio=strip / box,
        reserved_width=(box + 2.0 * margin) / width,
        position_y=0.08,
        height=0.74,
    )


def scalar_bar_arguments(layout: dict, title: str) -> dict:
    """pyvista's ``scalar_bar_args`` of a colour bar placed by ``layout`` (`colorbar_layout`)
    with ``title``, its unit on a line of its own ("impulse (N s)" in one line is wider
    than the bar), its labels at the layout's font size, never shrunk by VTK."""
    return dict(
        title=title.replace(" (", "\n(") + "\n",
        vertical=True,
        position_x=layout["position_x"],
        position_y=layout["position_y"],
        height=layout["height"],
        width=layout["width"],
        title_font_size=layout["font_size"],
        label_font_size=layout["font_size"],
        unconstrained_font_size=True,
        color=TEXT_COLOR,
        fmt="%.2g",
        n_labels=4,
    )


def _prepare_environment() -> None:
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("VTK_DEFAULT_OPENGL_WINDOW", "vtkEGLRenderWindow")


def import_pyvista():
    """pyvista, set up for off-screen rendering."""
    _prepare_environment()
    import pyvista

    return pyvista


class Renderer:
    """An off-screen pyvista window drawing the frames of one system.

    Parameters
    ----------
    description : the system's ``describe()`` dict (walls, gravity, kind).
    bounds : (2, 3) box that every drawn frame fits in (sets the camera).
    walls : `WallGeometry` drawn translucent, and moved with the frames of moving walls.
    size : (width, height) in pixels.
    camera : "fixed" or "orbit" (one turn about the up axis over ``n_frames``).
    view : (3,) direction from the scene centre to the camera, or None (automatic).
    up : (3,) up direction of the picture, or None (against gravity, else +z).
    color_label, color_range, cmap : scalar colouring of the spheres.
    forces : draw force chains; ``force_reference`` (N s) is the impulse drawn at
        full width and top colour.
    sphere_opacity : opacity of the spheres (default 1, or 0.18 with forces).
    antialias : supersample (smoother edges, about three times slower).
    """

    def __init__(
        self,
        description: dict,
        bounds: np.ndarray,
        walls: WallGeometry,
        size=(640, 480),
        camera: str = "fixed",
        n_frames: int = 1,
        view=None,
        up=None,
        color_label: str | None = "speed (m/s)",
        color_range=(0.0, 1.0),
        cmap: str | None = None,
        forces: bool = False,
        force_reference: float = 0.0,
        sphere_opacity: float | None = None,
        title: str | None = None,
        mean_radius: float | None = None,
        orbit_turns: float = 1.0,
        antialias: bool = False,
        body_bounds=None,
        wall_clip=None,
    ):
        pv = import_pyvista()
        self.pv = pv
        self.description = description
        self.size = (int(size[0]), int(size[1]))
        theme = pv.themes.DocumentTheme()
        theme.allow_empty_mesh = True
        theme.font.color = TEXT_COLOR
        self.plotter = pv.Plotter(off_screen=True, window_size=list(self.size), theme=theme)
        self.plotter.set_background(BACKGROUND)
        if antialias:  # supersampling: about three times slower, smoother edges
            self.plotter.enable_anti_aliasing("ssaa")
        self.forces = forces
        self.force_reference = float(force_reference)
        self.color_label = color_label
        self.color_range = tuple(float(c) for c in color_range)
        self.cmap = cmap
        spheres = description.get("kind") == "spheres"
        self.ghosts = forces and spheres  # spheres see-through so that the chains show
        self.sphere_opacity = (
            (GHOST_OPACITY if forces and spheres else 1.0) if sphere_opacity is None else float(sphere_opacity)
        )
        if self.sphere_opacity < 1.0:
            self.plotter.enable_depth_peeling(number_of_peels=6)
        self.title = title
        self.font_size = font_size(self.size)
        self.bar_layout = colorbar_layout(self.size)
        self.mean_radius = mean_radius
        self.meshes = {}
        self._caption = None
        self._draw_walls(walls)
        self.up = np.asarray(up_direction(description) if up is None else up, float)
        self.up /= np.linalg.norm(self.up)
        self.bounds = np.asarray(bounds, float)
        self._wall_shift = None  # the displacements the walls are drawn at (None: where described)
        self.wall_clip = wall_clip  # (2, 3) box the walls are cut to, or None
        self.body_bounds = self.bounds if body_bounds is None else np.asarray(body_bounds, float)
        self.camera_mode = camera
        self.n_frames = max(int(n_frames), 1)
        self.orbit_turns = float(orbit_turns)
        self.view = self._default_view() if view is None else np.asarray(view, float) / np.linalg.norm(view)
        bar = (forces or color_label is not None) and spheres
        # fractions of the width (colour bar) and height (caption) kept free of bodies
        self.reserved = (self.bar_layout["reserved_width"] if bar else 0.0, 0.1)
        angles = np.linspace(0.0, 2.0 * np.pi, 24, endpoint=False) if camera == "orbit" else [0.0]
        self.distance = max(self._fit_distance(self._rotated(self.view, a)) for a in angles)

    # -- camera ----------------------------------------------------------------------
    def _horizontal_basis(self):
        up = self.up
        helper = np.eye(3)[0] if abs(up[0]) < 0.9 else np.eye(3)[1]
        h1 = helper - np.dot(helper, up) * up
        h1 /= np.linalg.norm(h1)
        return h1, np.cross(up, h1)

    def _default_view(self) -> np.ndarray:
        """Face a planar drawing, look down on a table at 55 degrees, else a three-quarter view."""
        extent = self.body_bounds[1] - self.body_bounds[0]
        flat = [a for a in np.argsort(extent) if extent[a] < 0.15 * extent.max()]
        vertical = [a for a in flat if abs(self.up[a]) > 0.9]
        horizontal = [a for a in flat if abs(self.up[a]) < 0.1]
        h1, h2 = self._horizontal_basis()
        if horizontal:  # a mechanism drawn in a vertical plane
            axis = np.eye(3)[horizontal[0]]
            direction = -axis if np.dot(np.cross(self.up, -axis), h1) >= 0 else axis
            direction = direction + 0.08 * self.up
        elif vertical:  # a table
            direction = 0.57 * (-h2) + 0.82 * self.up
        else:
            direction = 0.55 * h1 - 1.0 * h2 + 0.7 * self.up
        return direction / np.linalg.norm(direction)

    def _rotated(self, direction: np.ndarray, angle: float) -> np.ndarray:
        """``direction`` turned by ``angle`` about the up axis (Rodrigues)."""
        k = self.up
        return (
            direction * np.cos(angle)
            + np.cross(k, direction) * np.sin(angle)
            + k * np.dot(k, direction) * (1.0 - np.cos(angle))
        )

    def _fit_distance(self, direction: np.ndarray, view_angle: float = 30.0, margin: float = 1.12) -> float:
        centre = self.bounds.mean(axis=0)
        corners = (
            np.array(
                [
                    [self.bounds[i, 0], self.bounds[j, 1], self.bounds[k, 2]]
                    for i in (0, 1)
                    for j in (0, 1)
                    for k in (0, 1)
                ]
            )
            - centre
        )
        right = np.cross(-direction, self.up)
        if np.linalg.norm(right) < 1e-9:
            right = self._horizontal_basis()[0]
        right /= np.linalg.norm(right)
        upward = np.cross(right, -direction)
        tan_half = np.tan(np.radians(view_angle) / 2.0)
        aspect = self.size[0] / self.size[1]
        depth = corners @ direction
        free_right, free_top = 1.0 - self.reserved[0], 1.0 - self.reserved[1]
        needed = np.maximum(
            np.abs(corners @ upward) / (tan_half * free_top), np.abs(corners @ right) / (tan_half * aspect * free_right)
        )
        return float(margin * np.max(needed + depth))

    def _screen_axes(self, direction: np.ndarray):
        right = np.cross(-direction, self.up)
        if np.linalg.norm(right) < 1e-9:
            right = self._horizontal_basis()[0]
        right /= np.linalg.norm(right)
        return right, np.cross(right, -direction)

    def _place_camera(self, index: int) -> None:
        angle = 0.0
        if self.camera_mode == "orbit":
            angle = 2.0 * np.pi * self.orbit_turns * index / self.n_frames
        direction = self._rotated(self.view, angle)
        centre = self.bounds.mean(axis=0)
        # Keep the bodies clear of the caption (top) and the colour bar (right).
        right, upward = self._screen_axes(direction)
        height = 2.0 * self.distance * np.tan(np.radians(15.0))
        centre = (
            centre
            + right * (0.5 * self.reserved[0] * height * self.size[0] / self.size[1])
            + upward * (0.5 * self.reserved[1] * height)
        )
        camera = self.plotter.camera
        camera.focal_point = tuple(centre)
        camera.position = tuple(centre + self.distance * direction)
        camera.up = tuple(self.up)
        camera.view_angle = 30.0
        self.plotter.renderer.ResetCameraClippingRange()

    # -- layers ----------------------------------------------------------------------
    def _draw_walls(self, walls: WallGeometry) -> None:
        pv = self.pv
        if walls.polygons:
            self.plotter.add_mesh(
                _polygons(pv, walls.polygons),
                color=WALL_COLOR,
                opacity=WALL_OPACITY,
                lighting=False,
                name="walls",
                render=False,
            )
        if len(walls.edges):
            self.plotter.add_mesh(
                _lines(pv, walls.edges), color=EDGE_COLOR, line_width=1.5, name="wall-edges", render=False
            )

    def _moving_walls(self, scene: FrameScene) -> None:
        """Redraw the walls where a frame's moving walls are (a piston, a shaker)."""
        shift, turn = scene.wall_displacements, scene.wall_rotations
        if shift is None or (self._wall_shift is not None and np.array_equal(shift, self._wall_shift) and turn is None):
            return
        self._wall_shift = np.array(shift)
        walls = wall_geometry(shifted_walls(self.description, shift, turn), self.bounds, self.up)
        if self.wall_clip is not None:
            walls = clip_walls(walls, self.wall_clip)
        for name, mesh in (
            ("walls", _polygons(self.pv, walls.polygons) if walls.polygons else None),
            ("wall-edges", _lines(self.pv, walls.edges) if len(walls.edges) else None),
        ):
            actor = self.plotter.actors.get(name)
            if mesh is not None and actor is not None:
                actor.mapper.dataset.copy_from(mesh, deep=True)

    def _update(self, name: str, mesh, **style) -> None:
        if name in self.meshes:
            self.meshes[name].copy_from(mesh, deep=True)
            return
        if mesh.n_points == 0:
            return
        self.plotter.add_mesh(mesh, name=name, render=False, **style)
        self.meshes[name] = mesh
        title = style.get("scalar_bar_args", {}).get("title")
        if title is not None and title in self.plotter.scalar_bars.keys():
            # the colour strip's share of the bar's box; the tick labels get the rest
            self.plotter.scalar_bars[title].SetBarRatio(self.bar_layout["bar_ratio"])

    def _spheres(self, scene: FrameScene) -> None:
        shapes = scene.shapes
        centres = np.asarray(shapes.sphere_centres, float).reshape(-1, 3)
        if centres.size == 0 and "spheres" not in self.meshes:
            return
        pv = self.pv
        n = len(centres)
        # About 70,000 triangles in all: software rendering time grows with them.
        resolution = (24, 16) if n <= 100 else (14, 10) if n <= 400 else (10, 8) if n <= 1500 else (8, 6)
        cloud = pv.PolyData(centres)
        cloud["radius"] = np.asarray(shapes.sphere_radii, float).reshape(-1)
        style = dict(smooth_shading=True, specular=0.3, opacity=self.sphere_opacity)
        if scene.colors is not None and not self.ghosts:
            cloud["value"] = np.asarray(scene.colors, float)
            style.update(
                scalars="value",
                clim=self.color_range,
                cmap=self.cmap or SPEED_CMAP,
                show_scalar_bar=self.color_label is not None,
                scalar_bar_args=scalar_bar_arguments(self.bar_layout, self.color_label or ""),
            )
        else:
            style.update(color=GHOST_COLOR if self.ghosts else BODY_COLOR)
        geometry = pv.Sphere(radius=1.0, theta_resolution=resolution[0], phi_resolution=resolution[1])
        glyphs = cloud.glyph(geom=geometry, scale="radius", orient=False, factor=1.0) if n else pv.PolyData()
        self._update("spheres", glyphs, **style)

    def _bands(self, scene: FrameScene) -> None:
        if scene.bands is None and "bands" not in self.meshes:
            return
        segments = np.zeros((0, 2, 3)) if scene.bands is None else np.asarray(scene.bands, float)
        radii = np.asarray(scene.shapes.sphere_radii, float).reshape(-1)
        per_sphere = segments.shape[0] // max(radii.size, 1)
        widths = BAND_WIDTH * np.repeat(radii, per_sphere) if per_sphere else np.zeros(0)
        self._update("bands", _tubes(self.pv, segments, widths), color=BAND_COLOR, smooth_shading=True)

    def _links(self, scene: FrameScene) -> None:
        shapes = scene.shapes
        if len(shapes.segment_radii) == 0 and "links" not in self.meshes:
            return
        tubes = _tubes(
            self.pv,
            np.asarray(shapes.segments, float).reshape(-1, 2, 3),
            np.asarray(shapes.segment_radii, float).reshape(-1),
        )
        self._update("links", tubes, color=LINK_COLOR, smooth_shading=True, specular=0.4)

    def _obstacles(self, scene: FrameScene) -> None:
        shapes = scene.shapes
        if not shapes.planes and "obstacles" not in self.meshes:
            return
        depth = OBSTACLE_DEPTH * float(np.max(self.bounds[1] - self.bounds[0]))
        normals = [np.asarray(normal, float) / np.linalg.norm(normal) for _, normal, _ in shapes.planes]
        slabs = [_slab(square, normal, depth) for square, normal in zip(shape_planes(shapes), normals)]
        faces = _polygons(self.pv, [face for slab in slabs for face in slab]) if slabs else self.pv.PolyData()
        edges = (
            _lines(
                self.pv,
                np.concatenate(
                    [polygon_edges(face) for slab in slabs for face in slab[:2]]
                    + [np.stack([slab[0], slab[1]], axis=1) for slab in slabs]
                ),
            )
            if slabs
            else self.pv.PolyData()
        )
        self._update("obstacles", faces, color=OBSTACLE_COLOR, opacity=0.6, lighting=False)
        self._update("obstacle-edges", edges, color=EDGE_COLOR, line_width=1.5)

    def _chains(self, scene: FrameScene) -> None:
        if not self.forces:
            return
        chains = scene.chains
        reference = (
            self.force_reference if self.force_reference > 0 else (float(chains.impulses.max()) if len(chains) else 0.0)
        )
        keep = chains.impulses >= CHAIN_THRESHOLD * reference if reference > 0 else np.zeros(0, bool)
        width = CHAIN_WIDTH * (self.mean_radius or 1.0)
        radii = width * np.minimum(chains.impulses[keep] / reference, 1.0) if reference > 0 else np.zeros(0)
        tubes = _tubes(self.pv, chains.segments[keep], radii, values=chains.impulses[keep], name="impulse")
        self._update(
            "chains",
            tubes,
            scalars="impulse",
            cmap=FORCE_CMAP,
            clim=(0.0, reference or 1.0),
            smooth_shading=True,
            specular=0.2,
            scalar_bar_args=scalar_bar_arguments(self.bar_layout, "impulse (N s)"),
        )

    def _title(self, scene: FrameScene, time_format: str) -> None:
        lines = [f"t = {time_format.format(scene.t)} s"]
        if self.title:
            lines[0] = f"{self.title}   {lines[0]}"
        if self.description.get("kind") == "spheres":
            lines.append(f"{scene.active_contacts} contact{'' if scene.active_contacts == 1 else 's'}")
            if scene.note:
                lines.append(scene.note)
        elif 0 < scene.multipliers.size <= 4:
            values = ", ".join(f"{v:.3g}" for v in scene.multipliers)
            lines.append(f"impulse{'s' if scene.multipliers.size > 1 else ''} {values} N s")
        elif scene.multipliers.size == 0:  # the first frame too: the caption keeps its lines
            lines.append("no contact")
        text = "\n".join(lines)
        if self._caption is None:
            # A plain text actor at a pixel position: its size does not change with its length.
            margin = max(6, self.size[1] // 60)
            self._caption = self.plotter.add_text(
                text,
                position=(margin, self.size[1] - margin),
                font_size=self.font_size,
                color=TEXT_COLOR,
                name="title",
                render=False,
            )
            style = self._caption.GetTextProperty()
            style.SetVerticalJustificationToTop()
            # A translucent box behind the text: wall edges passing under it do not cross the letters.
            style.SetBackgroundColor(1.0, 1.0, 1.0)
            style.SetBackgroundOpacity(CAPTION_OPACITY)
        else:
            self._caption.SetInput(text)

    # -- frames ----------------------------------------------------------------------
    def draw(self, scene: FrameScene, index: int = 0, time_format: str = "{:.3f}") -> np.ndarray:
        """Draw ``scene`` as frame number ``index`` of the output; return the (h, w, 3) image."""
        self._moving_walls(scene)
        self._spheres(scene)
        self._bands(scene)
        self._links(scene)
        self._obstacles(scene)
        self._chains(scene)
        self._title(scene, time_format)
        self._place_camera(index)
        self.plotter.render()
        image = self.plotter.screenshot(return_img=True)
        return np.ascontiguousarray(image[:, :, :3])

    def close(self) -> None:
        self.plotter.close()


def _polygons(pv, polygons) -> "pyvista.PolyData":
    points = np.concatenate([np.asarray(p, float) for p in polygons])
    faces, start = [], 0
    for polygon in polygons:
        count = len(polygon)
        faces.append(np.concatenate([[count], np.arange(start, start + count)]))
        start += count
    return pv.PolyData(points, faces=np.concatenate(faces).astype(np.int64))


def _slab(square: np.ndarray, normal: np.ndarray, depth: float) -> list[np.ndarray]:
    """The six (4, 3) faces of the box made by pushing a (4, 3) square ``depth``
    against its unit ``normal``: the square, its copy behind, then the four sides."""
    back = square - depth * normal
    sides = [np.array([square[k], square[(k + 1) % 4], back[(k + 1) % 4], back[k]]) for k in range(4)]
    return [square, back] + sides


def _lines(pv, segments: np.ndarray) -> "pyvista.PolyData":
    segments = np.asarray(segments, float).reshape(-1, 2, 3)
    points = segments.reshape(-1, 3)
    cells = np.column_stack(
        [np.full(len(segments), 2), np.arange(0, 2 * len(segments), 2), np.arange(1, 2 * len(segments), 2)]
    ).ravel()
    return pv.PolyData(points, lines=cells.astype(np.int64))


def _tubes(pv, segments: np.ndarray, radii: np.ndarray, values=None, name: str = "value"):
    """Tubes along ``segments`` (s, 2, 3) with per-segment ``radii`` (s,); optional cell values."""
    keep = (
        (radii > 0) & (np.linalg.norm(segments[:, 1] - segments[:, 0], axis=1) > 0)
        if len(segments)
        else np.zeros(0, bool)
    )
    if not np.any(keep):
        return pv.PolyData()
    lines = _lines(pv, segments[keep])
    lines["width"] = np.repeat(radii[keep], 2)
    if values is not None:
        lines[name] = np.repeat(np.asarray(values, float)[keep], 2)
    return lines.tube(scalars="width", absolute=True, n_sides=12, capping=True)
