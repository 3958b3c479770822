"""A run in a browser: one self-contained HTML file that opens offline (K3D-jupyter).

    html = viewer.write_html(trajectory, "run.html")        # granular view RUN.h5 -o run.html
    trajectory.show()                                        # the same view in Jupyter

The spheres (coloured by speed, contact force, index or a user array), the walls
(translucent, from their shapes: `granular.render.geometry.wall_polygons`) and the
force network of each frame, toggled in the panel's object list. The network draws
each contact's branch vectors as `granular.analysis` measures them
(`granular.analysis.forces`: the contact point of a pair in the middle of the gap
along its normal, a wall's on the sphere's surface facing it): a pair is two
segments, from each sphere's centre to the contact point, a wall contact one, from
the centre to the wall; each segment is coloured by the contact force's magnitude
(N, normal and friction). K3D's panel gives the time slider and play/pause; the
mouse turns, pans and zooms the camera.

Why K3D: its ``Plot.get_snapshot`` writes one HTML file that embeds its own
JavaScript bundle (three.js included) and the data, compressed: it opens from disk
without a network, a server or a kernel, and the same objects display in Jupyter.
viser's embed needs its client served; pyvista's HTML export (trame) writes the
scene of one time only. Nothing is vendored here: the bundle is K3D's.

Size: the page holds K3D's bundle (about 1.2 MB) and, for every frame kept, the
positions, colours (and radii, when they change) of the spheres and the network's
segments, as float32 compressed by zlib and written in base64. Positions are
quantised to a step of ``QUANTUM`` of the smallest radius (a 1/200 of a radius cannot
be seen and zeroes the low bits that zlib would otherwise keep). The frames, spread
evenly from the first to the last, are first as many as the raw arrays allow within
``max_bytes`` (20 MB by default); the page is then written and measured, and while it
exceeds ``max_bytes`` the frames are thinned in proportion to the excess over the
one-frame page, so the file written is within the budget. A ValueError when even one
frame exceeds it. `benchmarks/viewer_size.py` measures 10,000 spheres x 100 frames.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..records.files import atomic_path
from ..analysis import frame_forces
from ..records.active_contacts import active
from .geometry import scene_bounds, wall_polygons

#: Position quantum, as a fraction of the smallest radius.
QUANTUM = 0.005
COLORS = ("speed", "force", "id")
DEFAULT_MAX_BYTES = 20_000_000
#: A marker the page writes once K3D has loaded the snapshot, for tests and scripts.
READY_ID = "granular-view-ready"


def _k3d():
    try:
        import k3d
    except ImportError as error:
        raise ImportError("granular view needs K3D: pip install 'granular[view]' (k3d)") from error
    return k3d


#: Raw bytes a sphere takes in a frame: position (12), colour (4), radius (4).
SPHERE_BYTES = 20.0
#: Raw bytes a segment of the force network takes in a frame: two vertices (24) and their colours (8).
SEGMENT_BYTES = 32.0


def evenly(frames: int, count: int) -> np.ndarray:
    """``count`` frame indices spread evenly from 0 to ``frames - 1``, both included."""
    return np.unique(np.round(np.linspace(0, frames - 1, max(1, min(frames, count)))).astype(int))


def kept_frames(frames: int, spheres: int, max_bytes: float, segments_per_sphere: float = 3.0) -> np.ndarray:
    """The frames to keep, evenly spread from the first to the last (`evenly`), so that
    their raw arrays (``SPHERE_BYTES`` a sphere, ``SEGMENT_BYTES`` a force segment)
    fit ``max_bytes``: the first guess of `fitted_page`."""
    if not max_bytes > 0:
        raise ValueError(f"max_bytes: expected a positive size, got {max_bytes!r}")
    per_frame = spheres * (SPHERE_BYTES + SEGMENT_BYTES * segments_per_sphere)
    return evenly(frames, int(max(1, max_bytes // max(per_frame, 1.0))))


def quantise(positions: np.ndarray, step: float) -> np.ndarray:
    """``positions`` rounded to multiples of ``step`` (m), as float32."""
    return (np.round(np.asarray(positions, float) / step) * step).astype(np.float32)


def sphere_values(trajectory, k: int, color) -> np.ndarray:
    """The value (N,) each sphere is coloured by at frame ``k``: ``"speed"`` (m/s),
    ``"force"`` (the summed magnitude of its contact forces, N), ``"id"``, or a user
    array (F, N) or (N,)."""
    n = trajectory.positions.shape[1]
    if isinstance(color, str):
        if color == "speed":
            return np.linalg.norm(trajectory.velocities[k], axis=1)
        if color == "id":
            return np.arange(n, dtype=float)
        if color == "force":
            return _force_on_spheres(trajectory, k, n)
        raise ValueError(f"color: expected one of {', '.join(COLORS)} or an array, got {color!r}")
    values = np.asarray(color, float)
    if values.shape == (len(trajectory), n):
        return values[k]
    if values.shape == (n,):
        return values
    raise ValueError(f"color: an array must have shape ({len(trajectory)}, {n}) or ({n},), got {values.shape}")


def _force_on_spheres(trajectory, k: int, n: int) -> np.ndarray:
    """The summed magnitude (N,) (N) of the contact forces on each sphere (`granular.analysis.forces`)."""
    forces = frame_forces(trajectory, k)
    sphere, force, _ = forces.sphere_rows()
    if forces.ids is not None:  # a run with inlets or outlets: rows of the spheres present, by id
        sphere = forces.ids[sphere]
    return np.bincount(sphere, weights=np.linalg.norm(force, axis=1), minlength=n)[:n]


def network_segments(trajectory, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(segments (c, 2, 3) (m), force magnitude (c,) (N))`` of frame ``k``'s active
    contacts, one a side (`granular.analysis.forces.FrameForces.sphere_rows`): from the
    centre of each sphere a contact touches, as drawn at the frame, along its branch
    vector to the contact point."""
    forces = frame_forces(trajectory, k)
    sphere, force, branch = forces.sphere_rows()
    if forces.ids is not None:  # a run with inlets or outlets: rows of the spheres present, by id
        sphere = forces.ids[sphere]
    start = np.asarray(trajectory.positions[k], float)[sphere]
    return np.stack([start, start + branch], axis=1), np.linalg.norm(force, axis=1)


def _network(trajectory, k: int, step: float) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (2c, 3), force per vertex (2c,))`` of `network_segments`, quantised, float32."""
    segments, force = network_segments(trajectory, k)
    return quantise(segments.reshape(-1, 3), step), np.repeat(force, 2).astype(np.float32)


def segments_per_sphere(trajectory) -> float:
    """The most segments of `network_segments` in a frame (a pair's two, a wall
    contact's one), per sphere: the network is padded to it in every frame."""
    most = 0
    for k in range(len(trajectory)):
        on = active(trajectory, k)
        walls = np.count_nonzero(on & (np.asarray(trajectory.contacts[k].wall) >= 0))
        most = max(most, int(2 * np.count_nonzero(on) - walls))
    return most / max(1, trajectory.positions.shape[1])


def _network_lines(k3d, trajectory, frames, times, step):
    """The force network of every kept frame as one K3D lines object: K3D takes the
    vertices (and colours) per time but one index array, so each frame's segments are
    padded to the largest count with segments of zero length (not drawn)."""
    networks = [_network(trajectory, k, step) for k in frames]
    segments = max(1, max(len(n[0]) // 2 for n in networks))
    vertices, colours = {}, {}
    for t, (points, force) in zip(times, networks):
        padded = np.zeros((2 * segments, 3), np.float32)
        padded[: len(points)] = points
        vertices[t] = padded
        colours[t] = np.concatenate([force, np.zeros(2 * segments - len(force), np.float32)])
    largest = max(float(c.max(initial=0.0)) for c in colours.values())
    indices = np.arange(2 * segments, dtype=np.uint32).reshape(-1, 2)
    return k3d.lines(
        vertices,
        indices,
        indices_type="segment",
        attribute=colours,
        color_map=k3d.colormaps.matplotlib_color_maps.Inferno,
        color_range=[0.0, largest if largest > 0 else 1.0],
        shader="simple",
        name="force network (N)",
    )


def _walls(k3d, trajectory, bounds: np.ndarray):
    vertices, triangles = [], []
    for corners, _, _ in wall_polygons(trajectory.system, bounds):
        start = sum(len(v) for v in vertices)
        vertices.append(np.asarray(corners, np.float32))
        triangles += [(start, start + a, start + a + 1) for a in range(1, len(corners) - 1)]
    if not vertices:
        return None
    return k3d.mesh(
        np.concatenate(vertices),
        np.asarray(triangles, np.uint32),
        color=0x8899AA,
        opacity=0.2,
        side="double",
        name="walls",
    )


def _check(trajectory) -> None:
    if trajectory.system.get("kind") != "spheres" or trajectory.radii is None:
        raise ValueError("trajectory: granular view shows runs of spheres")


def sphere_diameters(trajectory, frames, times) -> np.ndarray | dict:
    """The spheres' diameters (m) drawn in the frames ``frames`` (indices) shown at
    ``times``: one (N,) float32 array when they keep their radii, else ``{time: (N,)}``
    for each frame kept; 0 for a sphere absent from a frame (a run with inlets or
    outlets), since WebGL draws every point of the plot."""
    radii = np.nan_to_num(np.asarray(trajectory.radii, float)[frames], nan=0.0)
    radii[~np.isfinite(np.asarray(trajectory.positions, float)[frames]).all(axis=2)] = 0.0
    if np.all(radii == radii[:1]):
        return (2.0 * radii[0]).astype(np.float32)
    return {t: (2.0 * r).astype(np.float32) for t, r in zip(times, radii)}


def shown_positions(trajectory, k: int, step: float, parking: np.ndarray) -> np.ndarray:
    """Frame ``k``'s centres (N, 3) (m), quantised to ``step`` (m, `quantise`); a sphere
    absent from the frame (NaN in a run with inlets or outlets, drawn with size 0,
    `sphere_diameters`) is parked at ``parking`` (3,) (m), since WebGL cannot place a
    NaN vertex."""
    positions = np.asarray(trajectory.positions[k], float).copy()
    positions[~np.isfinite(positions).all(axis=1)] = parking
    return quantise(positions, step)


def build_plot(trajectory, color="speed", forces: bool = True, max_bytes: float = DEFAULT_MAX_BYTES, frames=None):
    """The K3D plot of a sphere run (module docstring) showing ``frames`` (indices), by
    default those of `kept_frames` for ``max_bytes``; a ValueError for other systems."""
    _check(trajectory)
    k3d = _k3d()
    if frames is None:
        frames = kept_frames(
            len(trajectory),
            trajectory.positions.shape[1],
            max_bytes,
            segments_per_sphere(trajectory) if forces else 0.0,
        )
    step = QUANTUM * float(np.nanmin(trajectory.radii))
    times = [f"{float(trajectory.t[k]):.6g}" for k in frames]
    values = {t: np.nan_to_num(sphere_values(trajectory, k, color)).astype(np.float32) for t, k in zip(times, frames)}
    bounds = scene_bounds(trajectory, frames)
    parking = 0.5 * (bounds[0] + bounds[1])
    low = min(float(v.min(initial=0.0)) for v in values.values())
    high = max(float(v.max(initial=0.0)) for v in values.values())
    plot = k3d.plot(grid_visible=False, axes_helper=0, camera_auto_fit=True, name="granular")
    plot += k3d.points(
        {t: shown_positions(trajectory, k, step, parking) for t, k in zip(times, frames)},
        point_sizes=sphere_diameters(trajectory, frames, times),
        attribute=values,
        color_map=k3d.colormaps.matplotlib_color_maps.Viridis,
        color_range=[low, high if high > low else low + 1.0],
        shader="3d",
        name=f"spheres ({color if isinstance(color, str) else 'values'})",
    )
    if forces:
        plot += _network_lines(k3d, trajectory, frames, times, step)
    walls = _walls(k3d, trajectory, bounds)
    if walls is not None:
        plot += walls
    return plot


#: Run once K3D has loaded: mark the page ready and give scripts the K3D instance as
#: ``window.GRANULAR_K3D``; ``#last`` in the address moves the time to the last frame
#: kept and records it (the browser test's check).
_READY_JS = f"""
window.GRANULAR_K3D = K3DInstance;
var marker = document.createElement('div');
marker.id = '{READY_ID}';
try {{
    if (window.location.hash === '#last' && window.GRANULAR_LAST !== undefined) {{
        K3DInstance.setTime(window.GRANULAR_LAST);
        marker.setAttribute('data-time', String(K3DInstance.parameters.time));
    }}
}} catch (error) {{
    console.error('granular view: ' + error);
}}
document.body.appendChild(marker);
"""


def _page(trajectory, frames, color, forces: bool) -> str:
    """The page of the run showing ``frames``."""
    plot = build_plot(trajectory, color, forces, frames=frames)
    last = float(trajectory.t[frames[-1]])
    page = plot.get_snapshot(compression_level=9, additional_js_code=_READY_JS)
    return page.replace("var K3DInstance;", f"var K3DInstance;\n    window.GRANULAR_LAST = {last!r};", 1)


def fitted_page(
    trajectory, color="speed", forces: bool = True, max_bytes: float = DEFAULT_MAX_BYTES
) -> tuple[str, np.ndarray]:
    """The page (its UTF-8 encoding at most ``max_bytes``) and the frames it shows
    (module docstring: first `kept_frames`, then thinned until the page fits)."""
    _check(trajectory)
    total = len(trajectory)
    frames = kept_frames(
        total, trajectory.positions.shape[1], max_bytes, segments_per_sphere(trajectory) if forces else 0.0
    )
    page = _page(trajectory, frames, color, forces)
    smallest = None
    while len(page.encode("utf-8")) > max_bytes:
        if smallest is None:
            smallest = len(_page(trajectory, evenly(total, 1), color, forces).encode("utf-8"))
        if len(frames) == 1 or smallest > max_bytes:
            raise ValueError(
                f"max_bytes: one frame's page takes {smallest / 1e6:.3g} MB, more than the "
                f"{max_bytes / 1e6:.3g} MB allowed"
            )
        per_frame = (len(page.encode("utf-8")) - smallest) / (len(frames) - 1)
        count = min(len(frames) - 1, int((max_bytes - smallest) // max(per_frame, 1.0)) + 1)
        frames = evenly(total, count)
        page = _page(trajectory, frames, color, forces)
    return page, frames


def html(trajectory, color="speed", forces: bool = True, max_bytes: float = DEFAULT_MAX_BYTES) -> str:
    """The self-contained HTML page of the run, at most ``max_bytes`` (`fitted_page`)."""
    return fitted_page(trajectory, color, forces, max_bytes)[0]


def write_html(trajectory, path, color="speed", forces: bool = True, max_bytes: float = DEFAULT_MAX_BYTES) -> Path:
    """Write `html` to ``path`` (atomically); returns the path."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"path: the view is an HTML page, {path.name} must end in .html")
    page = html(trajectory, color, forces, max_bytes)
    with atomic_path(path) as temporary:
        Path(temporary).write_text(page, encoding="utf-8")
    return path
