"""Pictures of a run: animations (MP4, GIF), stills (PNG), force networks.

    from granular.render import animate, snapshot
    animate(trajectory, "renders/pile.mp4", fps=25, color_by="speed", camera="orbit")
    snapshot(trajectory, -1, "renders/pile.png", forces=True)

A frame of the picture is a recorded frame of the trajectory: the number of physics
steps between two pictures is ``record_every`` (chosen when running) times
``every`` (chosen here); ``fps`` only sets how fast the video plays. Real time is
``fps = 1 / (dt * record_every * every)``.

What is drawn: spheres with their per-frame radii, coloured by speed, by index, or
by a user array; walls and boxes translucent; for other systems the `Shapes` of
their drawing adapter (`granular.drawing.adapters.shapes_of`): balls, links as tubes,
obstacle planes as thin slabs on their inadmissible side (visible edge-on). The
caption (title, time, contacts or impulses) sits on a translucent white box.
``forces=True`` overlays the force network: a tube from centre to centre of every
pair in contact and from a centre to its contact point on a wall,
with radius and colour proportional to the contact impulse (N s) of the step that
ended at the frame.

pyvista, imageio and their VTK and ffmpeg binaries are imported when a picture is
made, never by ``import granular``. Every output is written under a temporary name
and renamed when complete.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .geometry import (
    color_range,
    frame_scene,
    impulse_reference,
    scene_bounds,
    select_frames,
    clip_walls,
    time_format,
    wall_geometry,
)
from .output import SUFFIXES, VideoWriter, output_kind, write_image
from ..errors import InvalidInputError
from ..records.trajectory import Trajectory, check_frame

#: With ``fit="bodies"``, walls are cut this fraction of the bodies' box diagonal
#: beyond the box: enough floor around a pile to read it as a floor, not the far
#: corners of a large table crossing the picture.
FIT_MARGIN = 0.25

__all__ = ["animate", "snapshot", "render", "SUFFIXES"]


def _trajectory(trajectory):
    if isinstance(trajectory, (str, Path)):
        return Trajectory.load(trajectory)
    return trajectory


def make_renderer(
    trajectory,
    indices,
    *,
    size,
    camera,
    view,
    up,
    color_by,
    forces,
    force_scale,
    sphere_opacity,
    title,
    cmap,
    orbit_turns,
    antialias,
    fit="scene",
):
    """The `granular.render.pyvista_.Renderer` that draws the frames ``indices`` of
    ``trajectory`` (its ``draw(frame_scene(trajectory, k), count)`` gives each image):
    the arguments of `animate` checked, the scene's bounds (m) fitted to the walls and
    bodies (``fit="scene"``) or to the bodies alone (``"bodies"``), the colour range
    and the reference impulse (N s) of the force segments over those frames."""
    from .pyvista_ import ID_CMAP, Renderer

    if camera not in ("fixed", "orbit"):
        raise InvalidInputError(f"camera must be 'fixed' or 'orbit', got {camera!r}")
    width, height = (int(s) for s in size)
    if width < 16 or height < 16:
        raise InvalidInputError(f"size must be at least 16 x 16 pixels, got {width} x {height}")
    if fit not in ("scene", "bodies"):
        raise InvalidInputError(f"fit must be 'scene' or 'bodies', got {fit!r}")
    bounds = scene_bounds(trajectory, indices, walls=(fit == "scene"))
    bodies = scene_bounds(trajectory, indices, walls=False)  # chooses the default view
    walls = wall_geometry(trajectory.system, bounds, up)
    clip = None
    if fit == "bodies":  # walls reaching far beyond the bodies are cut at a margin around them
        margin = FIT_MARGIN * float(np.linalg.norm(bounds[1] - bounds[0]))
        clip = np.array([bounds[0] - margin, bounds[1] + margin])
        walls = clip_walls(walls, clip)
    reference = float(force_scale) if force_scale else (impulse_reference(trajectory, indices) if forces else 0.0)
    label = None
    if isinstance(color_by, str):
        label = {"speed": "speed (m/s)", "id": None, "none": None}.get(color_by)
        if color_by == "id" and cmap is None:
            cmap = ID_CMAP
    else:
        label = "value"
    radii = trajectory.radii
    mean_radius = float(np.nanmedian(radii[indices])) if radii is not None and radii.size else None
    return Renderer(
        trajectory.system,
        bounds,
        walls,
        size=(width, height),
        camera=camera,
        n_frames=len(indices),
        view=view,
        up=up,
        color_label=label,
        color_range=color_range(trajectory, indices, color_by),
        cmap=cmap,
        forces=forces,
        force_reference=reference,
        sphere_opacity=sphere_opacity,
        title=title,
        mean_radius=mean_radius,
        orbit_turns=orbit_turns,
        antialias=antialias,
        body_bounds=bodies,
        wall_clip=clip,
    )


def animate(
    trajectory,
    path,
    fps: float = 25.0,
    every: int = 1,
    frames=None,
    color_by="speed",
    camera: str = "fixed",
    forces: bool = False,
    size=(640, 480),
    title: str | None = None,
    force_scale: float | None = None,
    view=None,
    up=None,
    sphere_opacity: float | None = None,
    cmap: str | None = None,
    orbit_turns: float = 1.0,
    quality: float = 6.0,
    antialias: bool = False,
    fit: str = "scene",
    progress=None,
) -> Path:
    """Write an animation of ``trajectory`` to ``path`` (.mp4 or .gif).

    Parameters
    ----------
    trajectory : `Trajectory` or path of a saved one.
    fps : frames per second of the video (playback speed only).
    every : draw every ``every``-th recorded frame.
    frames : indices of the recorded frames to draw (default all), before ``every``.
    color_by : "speed", "id", "none", or an array (N,) or (F, N) of values per sphere.
    camera : "fixed", or "orbit" (``orbit_turns`` turns about the up axis).
    forces : overlay the force network (see the module docstring).
    size : (width, height) in pixels; MP4 wants multiples of 16.
    title : text before the time in the caption.
    force_scale : impulse (N s) drawn at full width; default the 98th percentile of
        the positive impulses of the drawn frames.
    view : (3,) direction from the scene centre to the camera; up : (3,) picture up.
    sphere_opacity : default 1, or 0.18 with ``forces`` so that the chains show.
    quality : MP4 quality, 0 (small) to 10 (large).
    antialias : supersample each frame (smoother, about three times slower).
    fit : "scene" frames the bodies of every drawn frame and the finite walls;
        "bodies" frames the bodies only.
    progress : callable ``(done, total)`` called after each frame.

    Returns the path written.
    """
    output_kind(path, (".mp4", ".gif"))
    trajectory = _trajectory(trajectory)
    indices = select_frames(trajectory, frames, every)
    renderer = make_renderer(
        trajectory,
        indices,
        size=size,
        camera=camera,
        view=view,
        up=up,
        color_by=color_by,
        forces=forces,
        force_scale=force_scale,
        sphere_opacity=sphere_opacity,
        title=title,
        cmap=cmap,
        orbit_turns=orbit_turns,
        antialias=antialias,
        fit=fit,
    )
    fmt = time_format(trajectory.t[indices])  # enough decimals to tell the drawn frames apart
    try:
        with VideoWriter(path, fps, quality=quality) as writer:
            for count, k in enumerate(indices):
                scene = frame_scene(trajectory, int(k), color_by, forces)
                writer.append(renderer.draw(scene, count, fmt))
                if progress is not None:
                    progress(count + 1, len(indices))
    finally:
        renderer.close()
    return Path(path)


def frame_image(
    trajectory,
    frame: int = -1,
    forces: bool = False,
    color_by="speed",
    size=(640, 480),
    title: str | None = None,
    force_scale: float | None = None,
    view=None,
    up=None,
    sphere_opacity: float | None = None,
    cmap: str | None = None,
    antialias: bool = True,
    fit: str = "scene",
) -> np.ndarray:
    """The (h, w, 3) uint8 image of one frame (what `snapshot` writes)."""
    trajectory = _trajectory(trajectory)
    k = check_frame(trajectory, frame)
    renderer = make_renderer(
        trajectory,
        np.array([k]),
        size=size,
        camera="fixed",
        view=view,
        up=up,
        color_by=color_by,
        forces=forces,
        force_scale=force_scale,
        sphere_opacity=sphere_opacity,
        title=title,
        cmap=cmap,
        orbit_turns=0.0,
        antialias=antialias,
        fit=fit,
    )
    try:
        return renderer.draw(frame_scene(trajectory, k, color_by, forces), 0, time_format(trajectory.t))
    finally:
        renderer.close()


def snapshot(
    trajectory,
    frame: int,
    path,
    forces: bool = False,
    color_by="speed",
    size=(640, 480),
    title: str | None = None,
    force_scale: float | None = None,
    view=None,
    up=None,
    sphere_opacity: float | None = None,
    cmap: str | None = None,
    antialias: bool = True,
    fit: str = "scene",
) -> Path:
    """Write frame ``frame`` of ``trajectory`` (negative counts from the end) as a PNG.

    Options as for `animate`; ``force_scale`` defaults to the 98th percentile of the
    frame's positive impulses. Stills are supersampled (``antialias``) by default.
    """
    output_kind(path, (".png",))
    image = frame_image(
        trajectory,
        frame,
        forces=forces,
        color_by=color_by,
        size=size,
        title=title,
        force_scale=force_scale,
        view=view,
        up=up,
        sphere_opacity=sphere_opacity,
        cmap=cmap,
        antialias=antialias,
        fit=fit,
    )
    return write_image(path, image)


def render(trajectory, path, frame: int | None = None, **options) -> Path:
    """`snapshot` for a .png (``frame`` defaults to the last), `animate` for .mp4/.gif."""
    kind = output_kind(path)
    if kind == "image":
        keys = (
            "forces",
            "color_by",
            "size",
            "title",
            "force_scale",
            "view",
            "up",
            "sphere_opacity",
            "cmap",
            "antialias",
            "fit",
        )
        return snapshot(
            trajectory, -1 if frame is None else frame, path, **{k: v for k, v in options.items() if k in keys}
        )
    if frame is not None:
        options["frames"] = [frame]
    return animate(trajectory, path, **options)
