"""What one rendered frame contains, as plain numpy data (no graphics library here).

`frame_scene(trajectory, k, ...)` turns frame ``k`` of a `Trajectory` into a
`FrameScene`: the system's `Shapes` (spheres with the frame's radii, links,
obstacle planes), the force chains of the frame, and one colour value per sphere.
`wall_geometry(description, bounds)` gives the static walls as polygons and edges
(a cylinder as edges); `wall_polygons` every wall as polygons, at a frame's
position, for the ParaView export.
The pyvista renderer (`granular.render.pyvista_`) draws these; tests can check them
without a display.

Conventions: world coordinates in the system's units (m); impulses in N s, the
multipliers of the step that ended at the frame's time (divide by ``dt`` for the
mean force of that step, N). Arrays: sphere centres (k, 3), radii (k,), segments
(s, 2, 3), polygons (v, 3) each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..drawing.adapters import Shapes, UnknownAdapterError, shapes_of
from ..errors import InvalidInputError
from ..walls.surfaces import wall_from_description
from ..drawing.walls import box_faces, plane_patch, polygon_edges, tangent_basis  # noqa: F401  (public here too)
from ..records.active_contacts import active
from ..records.trajectory import check_frame

#: Colourings by name; anything else must be an array.
COLORINGS = ("speed", "id", "none")


@dataclass
class ForceChains:
    """Segments along which contact impulses act, one per active contact.

    segments : (c, 2, 3)
        From the centre of sphere ``i`` to the centre of sphere ``j`` (the minimum
        image in a periodic cell), or to the contact point on the wall.
    impulses : (c,) normal impulses (N s), > 0.
    """

    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))
    impulses: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return int(self.impulses.size)


@dataclass
class FrameScene:
    """Everything that changes from frame to frame.

    t : time of the frame (s).
    shapes : the system's `Shapes` at this frame.
    colors : (k,) one value per sphere of ``shapes`` or None (uniform colour).
    chains : `ForceChains` of the frame (empty unless asked for).
    active_contacts : number of constraints with a positive impulse in the frame.
    multipliers : (m,) impulses of the frame's constraints, for systems whose
        contacts have no drawable geometry (a `ConstrainedSystem`).
    bands : (b, 2, 3) segments of the band drawn on each sphere to show its
        orientation (`orientation_bands`), or None (no orientations recorded).
    note : a line for the caption, or "" (`skipped_steps_note`).
    """

    t: float
    shapes: Shapes
    colors: np.ndarray | None
    chains: ForceChains
    active_contacts: int
    multipliers: np.ndarray
    bands: np.ndarray | None = None
    note: str = ""
    wall_displacements: np.ndarray | None = None  # (W, 3) m: where moving walls are, or None
    wall_rotations: np.ndarray | None = None  # (W, 3, 3): how turning meshes are turned, or None


@dataclass
class WallGeometry:
    """Static walls: translucent polygons and the edges drawn over them."""

    polygons: list = field(default_factory=list)  # each (v, 3)
    edges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))


# -- frames -----------------------------------------------------------------------
def select_frames(trajectory, frames=None, every: int = 1) -> np.ndarray:
    """Indices of the frames to draw: ``frames`` (all by default) thinned to every ``every``-th.

    The physics steps per drawn frame are ``record_every * every``; the frame rate
    of a video only sets how fast it plays.
    """
    if int(every) != every or every < 1:
        raise InvalidInputError(f"every must be a positive integer, got {every}")
    if frames is None:
        indices = np.arange(len(trajectory))
    else:
        indices = np.array([check_frame(trajectory, k) for k in np.atleast_1d(frames)], dtype=int)
    indices = indices[:: int(every)]
    if indices.size == 0:
        raise InvalidInputError("no frames to draw")
    return indices


def is_spheres(description: dict) -> bool:
    return description.get("kind") == "spheres"


def present_frame(trajectory, k: int):
    """``(trajectory, k)``, or for a run whose spheres come and go (`granular.spheres.flows`)
    frame ``k`` alone with the spheres present in it and ``0`` (`Trajectory.frame`):
    what is drawn of a frame is what was there."""
    if getattr(trajectory, "varying", False):
        return trajectory.frame(k), 0
    return trajectory, k


def frame_shapes(trajectory, k: int) -> Shapes:
    """The `Shapes` of frame ``k`` (per-frame radii for spheres; the system's adapter otherwise)."""
    trajectory, k = present_frame(trajectory, k)
    description = trajectory.system
    radii = None if trajectory.radii is None else trajectory.radii[k]
    try:
        return shapes_of(description, trajectory.positions[k], radii)
    except UnknownAdapterError as error:  # kept a file error: the granular command exits 3
        raise UnknownAdapterError(f"cannot draw system of kind {description.get('kind')!r}: {error}") from None
    except ValueError as error:
        raise InvalidInputError(f"cannot draw system of kind {description.get('kind')!r}: {error}") from None


def frame_scene(trajectory, k: int, color_by="speed", forces: bool = False, min_impulse: float = 0.0) -> FrameScene:
    """Frame ``k`` of ``trajectory`` as a `FrameScene`.

    color_by : "speed" (|v_i|, m/s), "id" (sphere index), "none", or an array of
        shape (N,) or (F, N) (one value per sphere, or per frame and sphere).
    forces : compute the force chains of the frame.
    min_impulse : chains with a smaller impulse (N s) are left out.
    """
    note = skipped_steps_note(trajectory, k) if forces else ""
    trajectory, k = present_frame(trajectory, k)
    shapes = frame_shapes(trajectory, k)
    contacts = trajectory.contacts[k] if k < len(trajectory.contacts) else None
    impulses = np.zeros(0) if contacts is None else np.asarray(contacts.impulse, dtype=float)
    chains = ForceChains()
    if forces and contacts is not None and is_spheres(trajectory.system):
        chains = force_chains(trajectory.system, contacts, trajectory.positions[k], trajectory.radii[k], min_impulse)
    bands = None
    orientations = getattr(trajectory, "orientations", None)
    if orientations is not None and is_spheres(trajectory.system) and len(shapes.sphere_radii) <= MAX_BANDED:
        bands = orientation_bands(
            np.asarray(shapes.sphere_centres, float).reshape(-1, 3),
            np.asarray(shapes.sphere_radii, float).reshape(-1),
            np.asarray(orientations[k]),
        )
    active_contacts = _active_contacts(trajectory, k)
    note = note if active_contacts == 0 else ""
    displacements = getattr(trajectory, "wall_displacements", None)
    rotations = getattr(trajectory, "wall_rotations", None)
    turned = None if rotations is None else np.asarray(rotations[k], float)
    moved = (
        None
        if displacements is None or (not np.any(displacements) and turned is None)
        else np.asarray(displacements[k], float)
    )
    return FrameScene(
        t=float(trajectory.t[k]),
        shapes=shapes,
        colors=sphere_colors(trajectory, k, color_by, shapes),
        chains=chains,
        active_contacts=active_contacts,
        multipliers=impulses,
        bands=bands,
        note=note,
        wall_displacements=moved,
        wall_rotations=turned,
    )


def skipped_steps_note(trajectory, k: int) -> str:
    """Why a force picture of frame ``k`` may show no chain though bodies collided.

    A frame holds the contacts of its own step only; with ``record_every`` K > 1 the
    K - 1 steps before it are not stored, and a billiard break's impacts, each a
    single step, fall between frames. The note says so, with the energy the
    contacts dissipated since the previous frame when there was any (the trace the
    skipped impacts leave in the file). "" when every step is recorded.
    """
    every = int(trajectory.meta.get("record_every", 1) or 1)
    if every <= 1:
        return ""
    dissipated = float(trajectory.dissipated_energy[k] - trajectory.dissipated_energy[k - 1]) if k > 0 else 0.0
    if dissipated > 0:
        return f"1 step in {every} recorded: impacts between\nframes dissipated {dissipated:.2g} J"
    return f"1 step in {every} recorded: contacts between\nframes are not shown"


def _active_contacts(trajectory, k: int) -> int:
    """Active contacts of frame ``k``, solver noise left out as in every count
    (`granular.records.active_contacts.active`)."""
    return int(np.count_nonzero(active(trajectory, k))) if k < len(trajectory.contacts) else 0


#: Spheres are drawn with an orientation band up to this many (the bands cost
#: `BAND_SEGMENTS` tube segments a sphere).
MAX_BANDED = 2000
#: Segments of the polygon that draws a band.
BAND_SEGMENTS = 24
#: The band's circle lies this far out from the centre, in radii (just above the
#: surface, so that it shows).
BAND_LIFT = 1.02


def rotate_by_quaternions(vectors: np.ndarray, quaternions: np.ndarray) -> np.ndarray:
    """``q v q*``: body vectors (N, k, 3) turned by unit quaternions (N, 4) ``(w, x, y, z)``."""
    w, x = quaternions[:, None, 0:1], quaternions[:, None, 1:]
    x = np.broadcast_to(x, vectors.shape)
    return vectors + 2.0 * w * np.cross(x, vectors) + 2.0 * np.cross(x, np.cross(x, vectors))


def orientation_bands(
    centres: np.ndarray, radii: np.ndarray, quaternions: np.ndarray, segments: int = BAND_SEGMENTS
) -> np.ndarray:
    """Segments (N segments, 2, 3) of each sphere's band: the great circle of its body
    z axis (its equator, in the body's x-y plane) at `BAND_LIFT` radii, turned by its
    orientation and placed on its centre (m). A sphere that turns carries its band."""
    angles = np.linspace(0.0, 2.0 * np.pi, segments + 1)
    circle = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)  # body frame
    n = centres.shape[0]
    points = rotate_by_quaternions(np.broadcast_to(circle, (n,) + circle.shape), quaternions)
    points = centres[:, None, :] + BAND_LIFT * radii[:, None, None] * points
    return np.stack([points[:, :-1], points[:, 1:]], axis=2).reshape(-1, 2, 3)


def sphere_colors(trajectory, k: int, color_by, shapes: Shapes) -> np.ndarray | None:
    """One colour value per sphere of ``shapes`` (see `frame_scene`), or None; ``"id"``
    colours by permanent id."""
    if getattr(trajectory, "varying", False) and not isinstance(color_by, str):
        raise InvalidInputError("color_by as an array needs a run whose spheres stay; here they come and go")
    trajectory, k = present_frame(trajectory, k)
    n = len(shapes.sphere_radii)
    if isinstance(color_by, str):
        if color_by not in COLORINGS:
            raise InvalidInputError(f"color_by must be one of {COLORINGS} or an array, got {color_by!r}")
        if color_by == "none" or n == 0:
            return None
        if not is_spheres(trajectory.system):
            return None if shapes.scalars is None else np.asarray(shapes.scalars, dtype=float)
        if color_by == "id":
            ids = getattr(trajectory, "ids", None)
            return np.arange(n, dtype=float) if ids is None else np.asarray(ids[k], float)
        return np.linalg.norm(np.asarray(trajectory.velocities[k]).reshape(n, 3), axis=1)
    values = np.asarray(color_by, dtype=float)
    if values.ndim == 2 and values.shape[0] == len(trajectory):
        values = values[k]
    if values.shape != (n,):
        raise InvalidInputError(
            f"color_by array must have shape ({n},) or ({len(trajectory)}, {n}), got {np.shape(color_by)}"
        )
    return values


def contact_segments(description: dict, contacts, positions: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """(m, 2, 3) segment of every contact row of a sphere frame.

    A sphere pair (i, j) gives the segment from centre i to centre j; in a periodic
    cell, to the minimum image of j seen from i. A sphere-wall contact gives the
    segment from centre i to its contact point ``q_i - r_i n`` (n the wall normal,
    pointing into the admissible side).
    """
    positions = np.asarray(positions, dtype=float).reshape(-1, 3)
    radii = np.asarray(radii, dtype=float)
    i = np.asarray(contacts.i, dtype=np.int64)
    j = np.asarray(contacts.j, dtype=np.int64)
    wall = np.asarray(contacts.wall, dtype=np.int64)
    if i.size == 0:
        return np.zeros((0, 2, 3))
    normal = np.asarray(contacts.normal, dtype=float).reshape(i.size, -1)
    start = positions[i]
    end = np.empty_like(start)
    on_wall = wall >= 0
    end[on_wall] = start[on_wall] - radii[i[on_wall], None] * normal[on_wall, :3]
    pair = ~on_wall
    vectors = positions[j[pair]] - start[pair]
    periodic = description.get("periodic")
    if periodic:
        lower, upper = np.asarray(periodic["lower"], float), np.asarray(periodic["upper"], float)
        for axis in periodic["axes"]:
            length = upper[axis] - lower[axis]
            vectors[:, axis] -= length * np.round(vectors[:, axis] / length)
    end[pair] = start[pair] + vectors
    return np.stack([start, end], axis=1)


def force_chains(
    description: dict, contacts, positions: np.ndarray, radii: np.ndarray, min_impulse: float = 0.0
) -> ForceChains:
    """The `contact_segments` of the contacts with impulse > ``max(min_impulse, 0)``."""
    impulse = np.asarray(contacts.impulse, dtype=float)
    keep = np.flatnonzero(impulse > max(float(min_impulse), 0.0))
    if keep.size == 0:
        return ForceChains()
    segments = contact_segments(description, contacts.take(keep), positions, radii)
    return ForceChains(segments, impulse[keep])


def impulse_reference(trajectory, indices, quantile: float = 0.98) -> float:
    """A robust scale for the force chains of the frames ``indices`` (N s).

    The ``quantile`` of every positive impulse in those frames: one violent impact
    then does not make the chains of a settled pile invisible. Chains above it are
    drawn at full width and the top colour.
    """
    values = [np.asarray(trajectory.contacts[k].impulse) for k in indices if k < len(trajectory.contacts)]
    values = np.concatenate(values) if values else np.zeros(0)
    values = values[values > 0.0]
    if values.size == 0:
        return 0.0
    return float(np.quantile(values, quantile))


def color_range(trajectory, indices, color_by) -> tuple[float, float]:
    """A fixed colour range for the whole animation (speeds: 0 to the 99.5th percentile)."""
    values = [sphere_colors(trajectory, k, color_by, frame_shapes(trajectory, k)) for k in indices]
    values = [v for v in values if v is not None and v.size]
    if not values:
        return 0.0, 1.0
    values = np.concatenate(values)
    low, high = float(values.min()), float(values.max())
    if isinstance(color_by, str) and color_by == "speed":
        # A few fast outliers (an impact) would leave everything else dark.
        low, high = 0.0, float(np.quantile(values, 0.995))
    if high <= low:
        high = low + 1.0
    return low, high


# -- extents and walls ------------------------------------------------------------
def shape_bounds(shapes: Shapes, planes: bool = True) -> np.ndarray | None:
    """(2, 3) lower and upper corners of the bodies of ``shapes`` (and its obstacle
    planes), or None if empty."""
    corners = []
    if len(shapes.sphere_radii):
        centres = np.asarray(shapes.sphere_centres, float).reshape(-1, 3)
        r = np.asarray(shapes.sphere_radii, float).reshape(-1, 1)
        corners += [(centres - r).min(axis=0), (centres + r).max(axis=0)]
    if len(shapes.segment_radii):
        ends = np.asarray(shapes.segments, float).reshape(-1, 2, 3)
        r = np.asarray(shapes.segment_radii, float).reshape(-1, 1, 1)
        corners += [(ends - r).reshape(-1, 3).min(axis=0), (ends + r).reshape(-1, 3).max(axis=0)]
    for point, normal, size in shapes.planes if planes else []:
        polygon = square(point, normal, size)
        corners += [polygon.min(axis=0), polygon.max(axis=0)]
    if not corners:
        return None
    corners = np.array(corners)
    return np.array([corners.min(axis=0), corners.max(axis=0)])


def scene_bounds(trajectory, indices, walls: bool = True) -> np.ndarray:
    """(2, 3) box holding the bodies of every frame in ``indices`` and (``walls``) the
    finite walls and obstacle planes.

    Walls widen the box sideways and downwards but not above the highest body (an
    open container taller than its contents is cropped at the top).
    """
    boxes = [b for b in (shape_bounds(frame_shapes(trajectory, k), planes=walls) for k in indices) if b is not None]
    bodies = np.array([np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)]) if boxes else None
    for description in (trajectory.system.get("walls", []) or []) if walls else []:
        wall = wall_from_description(description)
        box = None if wall is None else wall.bounding_box()
        if box is not None:
            boxes.append(np.asarray(box, dtype=float))
    periodic = trajectory.system.get("periodic")
    if periodic and walls:
        boxes.append(_periodic_box(periodic, boxes))
    if not boxes:
        return np.array([[-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]])
    boxes = np.array(boxes)
    bounds = np.array([boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)])
    if bodies is not None:
        up = up_direction(trajectory.system)
        axis = int(np.argmax(np.abs(up)))
        if abs(up[axis]) > 0.99:
            top = 1 if up[axis] > 0 else 0
            reach = 0.05 * float(np.max(bodies[1] - bodies[0]))
            if top:
                bounds[1, axis] = min(bounds[1, axis], bodies[1, axis] + reach)
            else:
                bounds[0, axis] = max(bounds[0, axis], bodies[0, axis] - reach)
    # Give a flat scene (a planar mechanism) a little depth so cameras behave.
    size = max(float(np.max(bounds[1] - bounds[0])), 1e-9)
    flat = bounds[1] - bounds[0] < 1e-6 * size
    bounds[0, flat] -= 1e-3 * size
    bounds[1, flat] += 1e-3 * size
    return bounds


def _periodic_box(periodic: dict, boxes) -> np.ndarray:
    lower, upper = np.array(periodic["lower"], float), np.array(periodic["upper"], float)
    if boxes:
        others = np.array(boxes)
        for axis in range(3):
            if axis not in periodic["axes"]:
                lower[axis], upper[axis] = others[:, 0, axis].min(), others[:, 1, axis].max()
    return np.array([lower, upper])


def square(point, normal, half_width: float) -> np.ndarray:
    """(4, 3) corners of a square of half-width ``half_width`` centred at ``point`` normal to ``normal``."""
    point = np.asarray(point, float)
    u, v = tangent_basis(normal)
    signs = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], dtype=float)
    return point + half_width * (signs[:, :1] * u + signs[:, 1:] * v)


def clip_walls(walls: WallGeometry, bounds: np.ndarray) -> WallGeometry:
    """``walls`` cut to the box ``bounds`` (2, 3): what a picture framed on the
    bodies (``fit="bodies"``) shows of walls that reach far beyond them, without the
    edges of a distant face crossing the frame (a billiard table's far corners)."""
    lower, upper = np.asarray(bounds, float)
    polygons = [p for p in (_clip_polygon(np.asarray(p, float), lower, upper) for p in walls.polygons) if len(p) >= 3]
    edges = [e for e in (_clip_segment(a, b, lower, upper) for a, b in np.asarray(walls.edges, float)) if e is not None]
    return WallGeometry(polygons=polygons, edges=np.array(edges).reshape(-1, 2, 3))


def _clip_polygon(polygon: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Sutherland-Hodgman clipping of a convex polygon (k, 3) to a box."""
    for axis in range(3):
        for bound, sign in ((lower[axis], 1.0), (upper[axis], -1.0)):
            if len(polygon) == 0:
                return polygon
            inside = sign * (polygon[:, axis] - bound) >= 0.0
            out = []
            for k in range(len(polygon)):
                a, b = polygon[k], polygon[(k + 1) % len(polygon)]
                a_in, b_in = inside[k], inside[(k + 1) % len(polygon)]
                if a_in:
                    out.append(a)
                if a_in != b_in:
                    out.append(a + (bound - a[axis]) / (b[axis] - a[axis]) * (b - a))
            polygon = np.array(out).reshape(-1, 3)
    return polygon


def _clip_segment(a: np.ndarray, b: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    """The part of segment ``a``-``b`` inside the box (Liang-Barsky), or None."""
    start, end, change = 0.0, 1.0, b - a
    for axis in range(3):
        for distance, rate in ((a[axis] - lower[axis], change[axis]), (upper[axis] - a[axis], -change[axis])):
            if rate == 0.0:
                if distance < 0.0:
                    return None
                continue
            bound = -distance / rate
            if rate > 0.0:
                start = max(start, bound)
            else:
                end = min(end, bound)
    if start > end:
        return None
    return np.array([a + start * change, a + end * change])


def shifted_walls(description: dict, displacements, rotations=None) -> dict:
    """``description`` with each wall moved by its row of ``displacements`` (W, 3) (m,
    a frame of `Trajectory.wall_displacements`): each wall's ``translated``; with
    ``rotations`` (W, 3, 3) (a frame of `Trajectory.wall_rotations`) a wall that can
    be drawn turned (a mesh's ``placed``) is turned too; a wall of an unknown type
    stays where it is."""
    walls, displacements = [], np.asarray(displacements, float)
    for w, description_of_wall in enumerate(description.get("walls", []) or []):
        wall = wall_from_description(description_of_wall)
        if wall is not None and rotations is not None and hasattr(wall, "placed"):
            wall = wall.placed(displacements[w], rotations[w])
        elif wall is not None:
            wall = wall.translated(displacements[w])
        walls.append(description_of_wall if wall is None else wall.describe())
    return {**description, "walls": walls}


def wall_shapes(description: dict, bounds: np.ndarray) -> list:
    """``(index, wall, WallShape)`` of each wall of a system's description whose type
    is known (`granular.walls.surfaces.Surface.shape`), for bodies inside ``bounds`` (2, 3)."""
    shapes = []
    for w, description_of_wall in enumerate(description.get("walls", []) or []):
        wall = wall_from_description(description_of_wall)
        if wall is not None:
            shapes.append((w, wall, wall.shape(np.asarray(bounds, float))))
    return shapes


def wall_geometry(description: dict, bounds: np.ndarray, up=None) -> WallGeometry:
    """Polygons and edges of the walls of a system, for bodies inside ``bounds``.

    An infinite plane is drawn as the rectangle that covers the projection of
    ``bounds``. Faces whose admissible side looks down (a lid: inward normal . up <
    -0.9) are drawn as edges only, so a camera above still sees in; so are the walls
    whose shape says so (a cylinder's side). Periodic cells are drawn as edges.
    """
    bounds = np.asarray(bounds, float)
    up = _unit(up if up is not None else _up_of(description))
    polygons, edges = [], []
    for _, _, shape in wall_shapes(description, bounds):
        edges.append(np.asarray(shape.edges, float).reshape(-1, 2, 3))
        if shape.faces_drawn:
            polygons += [
                corners
                for corners, _, normal in shape.faces
                if normal is None or float(np.dot(_unit(normal), up)) > -0.9
            ]
    periodic = description.get("periodic")
    if periodic:
        box = _periodic_box(periodic, [bounds])
        for corners, _ in box_faces(box[0], box[1]):
            edges.append(polygon_edges(corners))
    return WallGeometry(polygons, np.concatenate(edges) if edges else np.zeros((0, 2, 3)))


def wall_polygons(
    description: dict, bounds: np.ndarray, displacements=None, rotations=None
) -> list[tuple[np.ndarray, int, int]]:
    """Every wall of a sphere system as polygons ``(corners (k, 3), wall, surface)``:
    ``wall`` the index in ``description["walls"]``, ``surface`` the contact surface
    (``Contacts.wall``), from each wall's shape (`granular.walls.surfaces.Surface.shape`:
    planes are rectangles covering ``bounds``, boxes their faces, cylinders their
    side's quads and caps, meshes their triangles). ``displacements`` (W, 3) (m) shifts
    each wall (a frame of `Trajectory.wall_displacements`), ``rotations`` (W, 3, 3)
    turns the meshes (`shifted_walls`); periodic cells have none."""
    if displacements is not None:
        description = shifted_walls(description, displacements, rotations)
    shapes = {w: (wall, shape) for w, wall, shape in wall_shapes(description, bounds)}
    polygons, surface = [], 0
    for w, _ in enumerate(description.get("walls", []) or []):
        if w not in shapes:
            surface += 1  # an unknown wall: one nameless surface (granular.walls.surfaces.surface_count)
            continue
        wall, shape = shapes[w]
        polygons += [(np.asarray(corners, float), w, surface + offset) for corners, offset, _ in shape.faces]
        surface += wall.surface_count
    return polygons


def shape_planes(shapes: Shapes) -> list[np.ndarray]:
    """The obstacle planes of an adapter's `Shapes` as (4, 3) squares."""
    return [square(point, normal, size) for point, normal, size in shapes.planes]


def _up_of(description: dict) -> np.ndarray:
    """The up direction: against gravity when the system has one, else +z."""
    gravity = np.asarray(description.get("gravity") or (0.0, 0.0, 0.0), float)
    if gravity.shape == (3,) and np.linalg.norm(gravity) > 0:
        return -gravity
    up = description.get("up")
    return np.asarray(up, float) if up is not None else np.array([0.0, 0.0, 1.0])


def up_direction(description: dict) -> np.ndarray:
    """Unit up vector of a system's drawing."""
    return _unit(_up_of(description))


def _unit(vector) -> np.ndarray:
    vector = np.asarray(vector, float)
    return vector / np.linalg.norm(vector)


def time_format(times: np.ndarray) -> str:
    """A format for frame times with enough decimals to tell consecutive frames apart."""
    steps = np.diff(np.asarray(times, float))
    steps = steps[steps > 0]
    smallest = float(steps.min()) if steps.size else 1.0
    digits = int(np.clip(np.ceil(-np.log10(smallest) - 1e-9), 1, 6))
    return f"{{:.{digits}f}}"
