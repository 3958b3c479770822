"""A run in a browser: one self-contained HTML file that opens offline (K3D-jupyter).

    html = viewer.write_html(trajectory, "run.html")        # granular view RUN.h5 -o run.html
    trajectory.show()                                        # the same view in Jupyter

The spheres (coloured by speed, contact force, index or a user array), the walls
(translucent, from their shapes: `granular.render.geometry.wall_polygons`) and the
force network of each frame (segments between touching centres, toggled in the
panel's object list). K3D's panel gives the time slider and play/pause; the mouse
turns, pans and zooms the camera.

Why K3D: its ``Plot.get_snapshot`` writes one HTML file that embeds its own
JavaScript bundle (three.js included) and the data, compressed: it opens from disk
without a network, a server or a kernel, and the same objects display in Jupyter.
viser's embed needs its client served; pyvista's HTML export (trame) writes the
scene of one time only. Nothing is vendored here: the bundle is K3D's.

Size: the snapshot holds the positions and colours of every frame kept, as
float32 compressed by zlib. Positions are quantised to a step of ``QUANTUM`` of
the smallest radius (a 1/200 of a radius cannot be seen and zeroes the low bits
that zlib would otherwise keep), and frames are thinned evenly until the raw
arrays fit ``max_bytes`` (20 MB by default). `benchmarks/viewer_size.py` measures it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..files import atomic_path

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


def kept_frames(frames: int, spheres: int, max_bytes: float, contacts_per_sphere: float = 3.0) -> np.ndarray:
    """The frames to keep, evenly spread from the first to the last, so that their raw
    arrays (positions and colour: 16 bytes a sphere; force segments: 28 bytes a
    contact) fit ``max_bytes``."""
    if not max_bytes > 0:
        raise ValueError(f"max_bytes: expected a positive size, got {max_bytes!r}")
    per_frame = spheres * (16.0 + 28.0 * contacts_per_sphere)
    count = int(max(1, min(frames, max_bytes // max(per_frame, 1.0))))
    return np.unique(np.round(np.linspace(0, frames - 1, count)).astype(int))


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
    contacts = trajectory.contacts[k]
    dt = float(trajectory.meta.get("dt", 1.0))
    impulse = np.asarray(contacts.impulse, float) / dt
    total = np.bincount(np.asarray(contacts.i), weights=impulse, minlength=n)[:n]
    pairs = np.asarray(contacts.wall) < 0
    return total + np.bincount(np.asarray(contacts.j)[pairs], weights=impulse[pairs], minlength=n)[:n]


def _network(trajectory, k: int, step: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(vertices (2m, 3), indices (m, 2), force per vertex (2m,))`` of frame ``k``'s active contacts."""
    from ..runs import active
    from .geometry import contact_segments

    contacts = trajectory.contacts[k]
    keep = np.flatnonzero(active(trajectory, k))
    segments = contact_segments(trajectory.system, contacts.take(keep), trajectory.positions[k], trajectory.radii[k])
    force = np.repeat(np.asarray(contacts.impulse, float)[keep] / float(trajectory.meta.get("dt", 1.0)), 2)
    vertices = quantise(segments.reshape(-1, 3), step)
    return vertices, np.arange(vertices.shape[0], dtype=np.uint32).reshape(-1, 2), force.astype(np.float32)


def _network_lines(k3d, trajectory, frames, times, step):
    """The force network of every kept frame as one K3D lines object: K3D takes the
    vertices (and colours) per time but one index array, so each frame's segments are
    padded to the largest count with segments of zero length (not drawn)."""
    networks = [_network(trajectory, k, step) for k in frames]
    segments = max(1, max(len(n[1]) for n in networks))
    vertices, colours = {}, {}
    for t, (points, _, force) in zip(times, networks):
        padded = np.zeros((2 * segments, 3), np.float32)
        padded[:len(points)] = points
        vertices[t] = padded
        colours[t] = np.concatenate([force, np.zeros(2 * segments - len(force), np.float32)])
    largest = max(float(c.max(initial=0.0)) for c in colours.values())
    indices = np.arange(2 * segments, dtype=np.uint32).reshape(-1, 2)
    return k3d.lines(vertices, indices, indices_type="segment", attribute=colours,
                     color_map=k3d.colormaps.matplotlib_color_maps.Inferno,
                     color_range=[0.0, largest if largest > 0 else 1.0], shader="simple", name="force network (N)")


def _walls(k3d, trajectory, bounds: np.ndarray):
    from .geometry import wall_polygons

    vertices, triangles = [], []
    for corners, _, _ in wall_polygons(trajectory.system, bounds):
        start = sum(len(v) for v in vertices)
        vertices.append(np.asarray(corners, np.float32))
        triangles += [(start, start + a, start + a + 1) for a in range(1, len(corners) - 1)]
    if not vertices:
        return None
    return k3d.mesh(np.concatenate(vertices), np.asarray(triangles, np.uint32), color=0x8899AA, opacity=0.2,
                    side="double", name="walls")


def build_plot(trajectory, color="speed", forces: bool = True, max_bytes: float = DEFAULT_MAX_BYTES):
    """The K3D plot of a sphere run (module docstring); a ValueError for other systems."""
    from .geometry import scene_bounds

    if trajectory.system.get("kind") != "spheres" or trajectory.radii is None:
        raise ValueError("trajectory: granular view shows runs of spheres")
    k3d = _k3d()
    frames = kept_frames(len(trajectory), trajectory.positions.shape[1], max_bytes, 3.0 if forces else 0.0)
    step = QUANTUM * float(np.min(trajectory.radii))
    times = [f"{float(trajectory.t[k]):.6g}" for k in frames]
    values = {t: sphere_values(trajectory, k, color).astype(np.float32) for t, k in zip(times, frames)}
    low = min(float(v.min(initial=0.0)) for v in values.values())
    high = max(float(v.max(initial=0.0)) for v in values.values())
    plot = k3d.plot(grid_visible=False, axes_helper=0, camera_auto_fit=True, name="granular")
    plot += k3d.points({t: quantise(trajectory.positions[k], step) for t, k in zip(times, frames)},
                       point_sizes={t: (2.0 * trajectory.radii[k]).astype(np.float32) for t, k in zip(times, frames)},
                       attribute=values, color_map=k3d.colormaps.matplotlib_color_maps.Viridis,
                       color_range=[low, high if high > low else low + 1.0], shader="3d",
                       name=f"spheres ({color if isinstance(color, str) else 'values'})")
    if forces:
        plot += _network_lines(k3d, trajectory, frames, times, step)
    walls = _walls(k3d, trajectory, scene_bounds(trajectory, frames))
    if walls is not None:
        plot += walls
    return plot


#: Run once K3D has loaded: mark the page ready; ``#last`` in the address moves the
#: time to the last frame kept and records it (the browser test's check).
_READY_JS = f"""
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


def html(trajectory, color="speed", forces: bool = True, max_bytes: float = DEFAULT_MAX_BYTES) -> str:
    """The self-contained HTML page of the run (module docstring)."""
    plot = build_plot(trajectory, color, forces, max_bytes)
    last = float(trajectory.t[-1])          # kept_frames always keeps the last frame
    page = plot.get_snapshot(compression_level=9, additional_js_code=_READY_JS)
    return page.replace("var K3DInstance;", f"var K3DInstance;\n    window.GRANULAR_LAST = {last!r};", 1)


def write_html(trajectory, path, color="speed", forces: bool = True, max_bytes: float = DEFAULT_MAX_BYTES) -> Path:
    """Write `html` to ``path`` (atomically); returns the path."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"path: the view is an HTML page, {path.name} must end in .html")
    page = html(trajectory, color, forces, max_bytes)
    with atomic_path(path) as temporary:
        Path(temporary).write_text(page, encoding="utf-8")
    return path
