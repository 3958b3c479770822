"""A trajectory as a ParaView time series: one ``.vtp`` file per frame and part, one ``.pvd``.

Written directly as VTK XML (PolyData, inline base64 binary, little-endian, UInt64
headers) with numpy only: no VTK needed to export, and ParaView, pyvista
(``pyvista.read(...pvd)``) or any VTK reader can open the result.

For a trajectory of spheres, in ``DIR`` with ``STEM`` the run file's name::

    STEM.pvd                         time series, two or three parts per time step
    STEM_spheres_00000.vtp           part 0: one point (vertex) per sphere
        point data: radius (m), velocity (m/s, 3 components), speed (m/s), id; when
        the trajectory records rotation: angular_velocity (rad/s, 3 components),
        spin (|omega|, rad/s) and orientation (unit quaternion w, x, y, z)
    STEM_contacts_00000.vtp          part 1: one line per contact the step considered,
        from centre i to centre j, or to the contact point on the wall
        cell data: impulse (N s), force (N, impulse / dt), gap (m), i, j, wall
        (wall = -1 for a sphere pair, j = -1 for a wall contact), active (1 when
        the impulse is above the solver's noise, `granular.records.active_contacts.noise_impulse`,
        else 0); with ``active_only=True`` only the active contacts are written
    STEM_walls_00000.vtp             part 2, when the system has walls: one polygon
        per face at the frame's position (a moving wall where it was then); an
        infinite plane is the rectangle covering the scene's extent over the whole
        series (the bodies of every frame and the finite walls), a cylinder 48
        quads and its caps, a box its faces
        cell data: wall (index in the run's walls), surface (the contact's wall
        index), force (N, 3 components: the force on the whole surface over the
        frame's step, `Trajectory.wall_forces`, repeated on each of its cells)

In ParaView: open ``STEM.pvd``, apply Glyph (sphere, scale by radius) to part 0
and Tube (vary radius by impulse) to part 1, after Threshold (active between 1 and
1) to leave out the rows that carry no force. For any other system, part 0 holds
the drawing adapter's `Shapes` (balls as vertices, links as lines, point data
radius) and field data with the generalised positions ``q``, velocities ``u`` and
the constraint ``impulse`` and ``gap`` of the frame; its obstacle planes (the
beam's obstacles) are part 1, ``STEM_walls_*.vtp``, squares of the size the adapter
draws, with cell data ``obstacle`` (their index).

Every file is written under a temporary name and renamed; the ``.pvd`` is written
last, so it only ever lists complete frames. Exporting again into the same ``DIR``
with the same ``STEM`` replaces the series: once the new ``.pvd`` is in place, the
files of the earlier series that it does not list (``STEM_spheres_*.vtp``,
``STEM_contacts_*.vtp``, ``STEM_shapes_*.vtp``, ``STEM_walls_*.vtp``, e.g. frames of a longer run or of
another ``every``) are removed. Other files in ``DIR`` are never touched.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from .geometry import (
    contact_segments,
    frame_shapes,
    is_spheres,
    present_frame,
    scene_bounds,
    select_frames,
    square,
    wall_polygons,
)
from ..records.files import atomic_path
from ..records.active_contacts import noise_impulse

_TYPES = {np.dtype(np.float64): "Float64", np.dtype(np.int64): "Int64"}


def _encode(array: np.ndarray) -> str:
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    header = np.array([len(data)], dtype="<u8").tobytes()
    return base64.b64encode(header + data).decode("ascii")


def _data_array(name: str | None, values, components: int = 1, tuples: bool = False) -> str:
    values = np.asarray(values)
    values = values.astype(np.int64 if np.issubdtype(values.dtype, np.integer) else np.float64)
    attributes = [f'type="{_TYPES[values.dtype]}"']
    if name is not None:
        attributes.append(f"Name={quoteattr(name)}")
    if components > 1:
        attributes.append(f'NumberOfComponents="{components}"')
    if tuples:
        attributes.append(f'NumberOfTuples="{values.size // components}"')
    attributes.append('format="binary"')
    return f"<DataArray {' '.join(attributes)}>{_encode(values.reshape(-1))}</DataArray>"


def _components(values) -> int:
    values = np.asarray(values)
    return int(values.shape[1]) if values.ndim == 2 else 1


def polydata_xml(
    points: np.ndarray, verts=None, lines=None, point_data=None, cell_data=None, field_data=None, polys=None
) -> str:
    """VTK XML PolyData text.

    points : (n, 3). verts : (v,) point indices, one vertex cell each. lines : (l, 2)
    point index pairs. polys : list of point index arrays, one polygon each (any
    number of corners). point_data / cell_data / field_data : dicts name -> array;
    cell data runs over the vertex cells first, then the lines, then the polygons
    (VTK's cell order).
    """
    points = np.asarray(points, float).reshape(-1, 3)
    verts = np.zeros(0, np.int64) if verts is None else np.asarray(verts, np.int64).reshape(-1)
    lines = np.zeros((0, 2), np.int64) if lines is None else np.asarray(lines, np.int64).reshape(-1, 2)
    polys = [] if polys is None else [np.asarray(p, np.int64).reshape(-1) for p in polys]

    def block(tag, arrays):
        if not arrays:
            return f"<{tag}/>"
        body = "".join(
            _data_array(name, values, _components(values), tuples=(tag == "FieldData"))
            for name, values in arrays.items()
        )
        return f"<{tag}>{body}</{tag}>"

    def cells(tag, connectivity, size):
        count = len(connectivity) // size if size else 0
        return (
            f"<{tag}>{_data_array('connectivity', connectivity)}"
            f"{_data_array('offsets', np.arange(size, size * count + 1, size)[:count])}</{tag}>"
        )

    def polygons(tag):
        connectivity = np.concatenate(polys) if polys else np.zeros(0, np.int64)
        offsets = np.cumsum([len(p) for p in polys]).astype(np.int64)
        return f"<{tag}>{_data_array('connectivity', connectivity)}{_data_array('offsets', offsets)}</{tag}>"

    parts = [
        '<?xml version="1.0"?>',
        '<VTKFile type="PolyData" version="1.0" byte_order="LittleEndian" header_type="UInt64">',
        "<PolyData>",
        block("FieldData", field_data),
        f'<Piece NumberOfPoints="{len(points)}" NumberOfVerts="{len(verts)}" NumberOfLines="{len(lines)}" '
        f'NumberOfStrips="0" NumberOfPolys="{len(polys)}">',
        block("PointData", point_data),
        block("CellData", cell_data),
        f"<Points>{_data_array(None, points, 3)}</Points>",
        cells("Verts", verts, 1),
        cells("Lines", lines.reshape(-1), 2),
        polygons("Polys"),
        "</Piece>",
        "</PolyData>",
        "</VTKFile>",
    ]
    return "\n".join(parts) + "\n"


def _write_text(path: Path, text: str) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="ascii")


def _sphere_parts(trajectory, k: int, dt: float, active_only: bool = False) -> tuple[str, str]:
    trajectory, k = present_frame(trajectory, k)  # the spheres present, with their ids
    positions = np.asarray(trajectory.positions[k], float).reshape(-1, 3)
    velocities = np.asarray(trajectory.velocities[k], float).reshape(-1, 3)
    radii = np.asarray(trajectory.radii[k], float)
    n = len(positions)
    point_data = {
        "radius": radii,
        "velocity": velocities,
        "speed": np.linalg.norm(velocities, axis=1),
        "id": np.arange(n, dtype=np.int64)
        if getattr(trajectory, "ids", None) is None
        else np.asarray(trajectory.ids[k], np.int64),
    }
    omega = getattr(trajectory, "angular_velocities", None)
    if omega is not None:
        omega = np.asarray(omega[k], float).reshape(-1, 3)
        point_data.update(angular_velocity=omega, spin=np.linalg.norm(omega, axis=1))
    orientations = getattr(trajectory, "orientations", None)
    if orientations is not None:
        point_data["orientation"] = np.asarray(orientations[k], float).reshape(-1, 4)
    spheres = polydata_xml(positions, verts=np.arange(n), point_data=point_data)

    contacts = trajectory.contacts[k]
    # Below the solver's tolerance an impulse is zero (granular.records.active_contacts.noise_impulse).
    active = np.asarray(contacts.impulse, float) > noise_impulse(trajectory, k)
    if active_only:
        contacts, active = contacts.take(np.flatnonzero(active)), active[active]
    segments = contact_segments(trajectory.system, contacts, positions, radii)
    impulse = np.asarray(contacts.impulse, float)
    m = len(impulse)
    contact_text = polydata_xml(
        segments.reshape(-1, 3),
        lines=np.arange(2 * m).reshape(m, 2),
        cell_data={
            "impulse": impulse,
            "force": impulse / dt,
            "gap": np.asarray(contacts.gap, float),
            "i": np.asarray(contacts.i, np.int64),
            "j": np.asarray(contacts.j, np.int64),
            "wall": np.asarray(contacts.wall, np.int64),
            "active": active.astype(np.int64),
        },
    )
    return spheres, contact_text


def _polygons_xml(polygons: list, cell_data: dict) -> str:
    """One PolyData of ``polygons`` (each (k, 3) corners) with ``cell_data``."""
    points = np.concatenate(polygons) if polygons else np.zeros((0, 3))
    starts = np.cumsum([0] + [len(p) for p in polygons])
    cells = [np.arange(starts[c], starts[c + 1]) for c in range(len(polygons))]
    return polydata_xml(points, polys=cells, cell_data=cell_data)


def _wall_part(trajectory, k: int, bounds: np.ndarray) -> str | None:
    """The walls of a sphere system at frame ``k`` (module docstring), or None without walls."""
    displacements = getattr(trajectory, "wall_displacements", None)
    rotations = getattr(trajectory, "wall_rotations", None)
    polygons = wall_polygons(
        trajectory.system,
        bounds,
        None if displacements is None else displacements[k],
        None if rotations is None else rotations[k],
    )
    if not polygons:
        return None
    surfaces = np.array([surface for _, _, surface in polygons], np.int64)
    forces = getattr(trajectory, "wall_forces", None)
    force = np.zeros((len(polygons), 3))
    if forces is not None:
        known = surfaces < forces.shape[1]
        force[known] = forces[k][surfaces[known]]
    return _polygons_xml(
        [p for p, _, _ in polygons],
        {"wall": np.array([w for _, w, _ in polygons], np.int64), "surface": surfaces, "force": force},
    )


def _obstacle_part(trajectory, k: int) -> str | None:
    """The obstacle planes of a drawing adapter's `Shapes` at frame ``k`` as squares
    (the beam's obstacles), or None when it has none."""
    planes = frame_shapes(trajectory, k).planes
    if not planes:
        return None
    return _polygons_xml(
        [square(point, normal, size) for point, normal, size in planes],
        {"obstacle": np.arange(len(planes), dtype=np.int64)},
    )


def _shape_part(trajectory, k: int) -> str:
    shapes = frame_shapes(trajectory, k)
    centres = np.asarray(shapes.sphere_centres, float).reshape(-1, 3)
    segments = np.asarray(shapes.segments, float).reshape(-1, 2, 3)
    points = np.concatenate([centres, segments.reshape(-1, 3)])
    radius = np.concatenate(
        [
            np.asarray(shapes.sphere_radii, float).reshape(-1),
            np.repeat(np.asarray(shapes.segment_radii, float).reshape(-1), 2),
        ]
    )
    s = len(segments)
    lines = len(centres) + np.arange(2 * s).reshape(s, 2)
    contacts = trajectory.contacts[k]
    return polydata_xml(
        points,
        verts=np.arange(len(centres)),
        lines=lines,
        point_data={"radius": radius},
        field_data={
            "q": np.asarray(trajectory.positions[k], float).reshape(-1),
            "u": np.asarray(trajectory.velocities[k], float).reshape(-1),
            "impulse": np.asarray(contacts.impulse, float),
            "gap": np.asarray(contacts.gap, float),
        },
    )


def export_vtk(
    trajectory, directory, stem: str = "run", every: int = 1, progress=None, active_only: bool = False
) -> Path:
    """Write ``trajectory`` to ``directory`` as a ``.vtp`` series with a ``.pvd`` index.

    Returns the path of the ``.pvd`` file. ``every`` keeps every ``every``-th frame.
    ``active_only`` writes only the contacts whose impulse is above the solver's
    noise (all of them otherwise, marked by the ``active`` cell data).
    Files of an earlier series of the same ``stem`` not listed by the new ``.pvd`` are
    removed (see the module docstring).
    ``progress`` is called as ``(done, total)`` after each frame.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    indices = select_frames(trajectory, None, every)
    dt = float(trajectory.meta.get("dt", 1.0)) or 1.0
    spheres_run = is_spheres(trajectory.system)
    # One extent for the whole series, so an infinite plane keeps its size.
    bounds = scene_bounds(trajectory, indices) if spheres_run else None
    entries, written = [], []
    for count, k in enumerate(indices):
        t = float(trajectory.t[k])
        if spheres_run:
            spheres, contacts = _sphere_parts(trajectory, int(k), dt, active_only)
            names = [
                (f"{stem}_spheres_{k:05d}.vtp", spheres, "spheres"),
                (f"{stem}_contacts_{k:05d}.vtp", contacts, "contacts"),
            ]
            walls = _wall_part(trajectory, int(k), bounds)
        else:
            names = [(f"{stem}_shapes_{k:05d}.vtp", _shape_part(trajectory, int(k)), "shapes")]
            walls = _obstacle_part(trajectory, int(k))
        if walls is not None:
            names.append((f"{stem}_walls_{k:05d}.vtp", walls, "walls"))
        for part, (name, text, label) in enumerate(names):
            _write_text(directory / name, text)
            entries.append(f'<DataSet timestep="{t!r}" part="{part}" name="{label}" file="{name}"/>')
        written.append([name for name, _, _ in names])
        if progress is not None:
            progress(count + 1, len(indices))
    pvd = (
        "\n".join(
            [
                '<?xml version="1.0"?>',
                '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
                "<Collection>",
                *entries,
                "</Collection>",
                "</VTKFile>",
            ]
        )
        + "\n"
    )
    path = directory / f"{stem}.pvd"
    _write_text(path, pvd)
    remove_stale_frames(directory, stem, keep={name for part in written for name in part})
    return path


def series_files(directory: Path, stem: str) -> list[Path]:
    """The ``.vtp`` files of the series ``stem`` in ``directory`` (any frame, any part)."""
    pattern = re.compile(re.escape(stem) + r"_(spheres|contacts|shapes|walls)_\d{5,}\.vtp")
    return sorted(p for p in Path(directory).iterdir() if p.is_file() and pattern.fullmatch(p.name))


def remove_stale_frames(directory: Path, stem: str, keep: set) -> list[Path]:
    """Remove the series files of ``stem`` whose names are not in ``keep``; return them."""
    stale = [p for p in series_files(directory, stem) if p.name not in keep]
    for p in stale:
        p.unlink()
    return stale
