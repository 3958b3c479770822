"""Initial configurations: read and write spheres from files, and build a world from one.

Configuration files (`read_configuration`, `write_configuration`), SI units
(positions and radii in m, velocities in m/s, masses in kg):

- CSV (``.csv``): a header row naming the columns, then one row per sphere.
  Columns ``x,y,z,r`` are required, ``vx,vy,vz`` (all three or none) and ``m``
  optional, in any order; any other column is an error. Written with Python's
  ``repr`` of each float, so a round trip is exact to the bit.
- XYZ (``.xyz``, extended-XYZ style): line 1 the number of spheres N; line 2 a
  comment that declares the columns as extended XYZ does,
  ``Properties=species:S:1:pos:R:3:radius:R:1[:velo:R:3][:mass:R:1]``; then N
  lines ``name x y z r [vx vy vz] [m]`` (``name`` is any word, written ``S``).
  Without ``Properties=`` on line 2 the columns are told by their number: 5
  (name x y z r), 6 (+ m), 8 (+ vx vy vz), 9 (+ vx vy vz m).
- A granular run file (``.h5``/``.hdf5``, `granular.Trajectory`): one frame
  (default the last) gives positions, velocities, radii, angular velocities and
  orientations; the masses are those the run recorded (its final masses).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError, TrajectoryFileError
from .files import atomic_path
from .trajectory import Trajectory
from ..validation import finite_array, positive_radii
from ..spheres.world import SphereWorld

#: The columns of a configuration CSV file, in the order written.
_CSV_COLUMNS = ("x", "y", "z", "r", "vx", "vy", "vz", "m")
#: Suffixes of granular run files, read as configurations (their frame).
_RUN_SUFFIXES = (".h5", ".hdf5")


@dataclass
class Configuration:
    """Spheres read from a file (SI units).

    positions (N, 3) m; radii (N,) m; velocities (N, 3) m/s or None; masses (N,) kg
    or None; from a run file also angular_velocities (N, 3) rad/s, orientations
    (N, 4) and the frame's time t (s), else None.
    """

    positions: np.ndarray
    radii: np.ndarray
    velocities: np.ndarray | None = None
    masses: np.ndarray | None = None
    angular_velocities: np.ndarray | None = None
    orientations: np.ndarray | None = None
    t: float | None = None

    def __len__(self) -> int:
        return len(self.radii)


def write_configuration(path, positions, radii, velocities=None, masses=None) -> Path:
    """Write spheres to ``path`` (``.csv`` or ``.xyz``, module docstring), atomically.

    positions (N, 3) m, radii (N,) m, velocities (N, 3) m/s or None, masses (N,) kg
    or None. Returns the path.
    """
    path = Path(path)
    configuration = _checked(str(path), positions, radii, velocities, masses)
    writer = {".csv": _write_csv, ".xyz": _write_xyz}.get(path.suffix.lower())
    if writer is None:
        raise InvalidInputError(
            f"{path}: a configuration is written as .csv or .xyz, not {path.suffix or 'no suffix'!r}"
        )
    with atomic_path(path) as temporary:
        with open(temporary, "w", newline="") as handle:
            writer(handle, configuration)
    return path


def read_configuration(path, frame: int = -1) -> Configuration:
    """Spheres from a ``.csv``, ``.xyz`` or granular run file (``.h5``), module docstring.

    ``frame`` picks the frame of a run file (default the last; negative counts
    from the end). Raises `InvalidInputError` (one line naming the file) for a
    missing column, a wrong count, a non-finite value or a non-positive radius or
    mass; `TrajectoryFileError` for an unreadable run file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _RUN_SUFFIXES:
        return _read_run(path, frame)
    reader = {".csv": _read_csv, ".xyz": _read_xyz}.get(suffix)
    if reader is None:
        raise InvalidInputError(
            f"{path}: a configuration is read from .csv, .xyz or .h5, not {suffix or 'no suffix'!r}"
        )
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such configuration file")
    with open(path, newline="") as handle:
        columns = reader(handle, path)
    return _from_columns(path, columns)


def world_from_file(path, frame: int = -1, **world_options):
    """A `granular.SphereWorld` starting from the spheres of a configuration file.

    Positions, radii and, when the file has them, velocities, masses (and from a
    run file angular velocities and orientations) come from ``path``
    (`read_configuration`, with ``frame``); ``world_options`` are passed to
    `SphereWorld` (walls, gravity, friction, ...) and override a file's
    velocities, masses or rotation when given. ``density`` with a file that gives
    masses is refused (it would be ignored). Walls, gravity and forces are not in
    the files: pass them.
    """

    configuration = read_configuration(path, frame)
    if configuration.masses is not None and "density" in world_options and "masses" not in world_options:
        raise InvalidInputError(f"{path} gives the masses: density would be ignored (pass masses= to replace them)")
    from_file = dict(
        velocities=configuration.velocities,
        masses=configuration.masses,
        angular_velocities=configuration.angular_velocities,
        orientations=configuration.orientations,
    )
    options = {name: value for name, value in from_file.items() if value is not None}
    options.update(world_options)
    return SphereWorld(configuration.positions, configuration.radii, **options)


def _checked(where: str, positions, radii, velocities=None, masses=None) -> Configuration:
    """A `Configuration` after checking shapes, finiteness and signs; errors name ``where``."""
    try:
        positions = finite_array(positions, "positions")
        if positions.ndim != 2 or positions.shape[1] != 3 or positions.shape[0] < 1:
            raise InvalidInputError(f"positions must have shape (N, 3) with N >= 1, got {positions.shape}")
        n = positions.shape[0]
        radii = positive_radii(finite_array(radii, "radii", (n,)))
        if velocities is not None:
            velocities = finite_array(velocities, "velocities", (n, 3))
        if masses is not None:
            masses = finite_array(masses, "masses", (n,))
            bad = np.flatnonzero(masses <= 0.0)
            if bad.size:
                raise InvalidInputError(f"masses must be positive: sphere {bad[0]} has m = {masses[bad[0]]} kg")
    except InvalidInputError as error:
        raise InvalidInputError(f"{where}: {error}") from None
    return Configuration(positions, radii, velocities, masses)


def _from_columns(path, columns: dict) -> Configuration:
    """A configuration from named float columns (x, y, z, r, [vx, vy, vz], [m])."""
    missing = [name for name in ("x", "y", "z", "r") if name not in columns]
    if missing:
        raise InvalidInputError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    has_velocity = [name in columns for name in ("vx", "vy", "vz")]
    if any(has_velocity) and not all(has_velocity):
        raise InvalidInputError(f"{path}: velocities need all of vx, vy, vz")
    positions = np.column_stack([columns[name] for name in ("x", "y", "z")])
    velocities = np.column_stack([columns[name] for name in ("vx", "vy", "vz")]) if all(has_velocity) else None
    return _checked(str(path), positions, columns["r"], velocities, columns.get("m"))


def _number(text: str, path, line: int, column: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvalidInputError(f"{path}, line {line}: column {column} is not a number: {text!r}") from None


# CSV ---------------------------------------------------------------------------------
def _write_csv(handle, configuration: Configuration) -> None:
    names, table = _table(configuration)
    handle.write(",".join(names) + "\n")
    for row in table:
        handle.write(",".join(repr(float(v)) for v in row) + "\n")


def _table(configuration: Configuration) -> tuple[list[str], np.ndarray]:
    names, blocks = ["x", "y", "z", "r"], [configuration.positions, configuration.radii[:, None]]
    if configuration.velocities is not None:
        names += ["vx", "vy", "vz"]
        blocks.append(configuration.velocities)
    if configuration.masses is not None:
        names.append("m")
        blocks.append(configuration.masses[:, None])
    return names, np.hstack(blocks)


def _read_csv(handle, path) -> dict:
    rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    if not rows:
        raise InvalidInputError(f"{path}: empty file (expected a header row x,y,z,r[,vx,vy,vz][,m])")
    header = [name.strip().lower() for name in rows[0]]
    unknown = [name for name in header if name not in _CSV_COLUMNS]
    if unknown:
        raise InvalidInputError(f"{path}: unknown column {unknown[0]!r} (columns are {','.join(_CSV_COLUMNS)})")
    repeated = {name for name in header if header.count(name) > 1}
    if repeated:
        raise InvalidInputError(f"{path}: column {sorted(repeated)[0]!r} appears twice")
    if len(rows) == 1:
        raise InvalidInputError(f"{path}: no spheres after the header")
    values = np.empty((len(rows) - 1, len(header)))
    for k, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise InvalidInputError(f"{path}, line {k + 2}: {len(row)} values for {len(header)} columns")
        values[k] = [_number(text, path, k + 2, name) for text, name in zip(row, header)]
    return {name: values[:, c] for c, name in enumerate(header)}


# XYZ ---------------------------------------------------------------------------------
#: Extended-XYZ property names and the CSV columns they fill.
_XYZ_PROPERTIES = {"species": (), "pos": ("x", "y", "z"), "radius": ("r",), "velo": ("vx", "vy", "vz"), "mass": ("m",)}
#: Columns by their number when line 2 declares no properties.
_XYZ_BY_COUNT = {
    5: "species:S:1:pos:R:3:radius:R:1",
    6: "species:S:1:pos:R:3:radius:R:1:mass:R:1",
    8: "species:S:1:pos:R:3:radius:R:1:velo:R:3",
    9: "species:S:1:pos:R:3:radius:R:1:velo:R:3:mass:R:1",
}


def _write_xyz(handle, configuration: Configuration) -> None:
    properties = "species:S:1:pos:R:3:radius:R:1"
    properties += ":velo:R:3" if configuration.velocities is not None else ""
    properties += ":mass:R:1" if configuration.masses is not None else ""
    _, table = _table(configuration)
    handle.write(f"{len(configuration)}\nProperties={properties} units=SI\n")
    for row in table:
        handle.write("S " + " ".join(repr(float(v)) for v in row) + "\n")


def _read_xyz(handle, path) -> dict:
    lines = handle.read().splitlines()
    if len(lines) < 2:
        raise InvalidInputError(f"{path}: an XYZ file starts with the number of spheres and a comment line")
    try:
        n = int(lines[0].strip())
    except ValueError:
        raise InvalidInputError(f"{path}, line 1: expected the number of spheres, got {lines[0].strip()!r}") from None
    body = [line.split() for line in lines[2:] if line.strip()]
    if n < 1 or len(body) != n:
        raise InvalidInputError(f"{path}: line 1 announces {n} spheres, the file has {len(body)}")
    declared = re.search(r"Properties=(\S+)", lines[1])
    properties = declared.group(1) if declared else _XYZ_BY_COUNT.get(len(body[0]))
    if properties is None:
        raise InvalidInputError(
            f"{path}, line 3: {len(body[0])} columns; expected name x y z r [vx vy vz] [m] "
            f"(5, 6, 8 or 9) or a Properties= comment"
        )
    names = _xyz_columns(path, properties)
    values = np.empty((n, len(names)))
    for k, fields in enumerate(body):
        if len(fields) != len(names):
            raise InvalidInputError(f"{path}, line {k + 3}: {len(fields)} values for {len(names)} columns")
        values[k] = [np.nan if name is None else _number(text, path, k + 3, name) for text, name in zip(fields, names)]
    return {name: values[:, c] for c, name in enumerate(names) if name is not None}


def _xyz_columns(path, properties: str) -> list:
    """Column names (None for text columns) of an extended-XYZ ``Properties=`` value."""
    parts = properties.split(":")
    if len(parts) % 3:
        raise InvalidInputError(f"{path}, line 2: Properties={properties} is not name:type:count triples")
    names = []
    for name, kind, count in zip(parts[0::3], parts[1::3], parts[2::3]):
        columns = _XYZ_PROPERTIES.get(name)
        if columns is None:
            raise InvalidInputError(f"{path}, line 2: unknown property {name!r} (known: {', '.join(_XYZ_PROPERTIES)})")
        width = int(count) if count.isdigit() else -1
        if width != max(len(columns), 1):
            raise InvalidInputError(
                f"{path}, line 2: property {name} has {count} columns, expected {max(len(columns), 1)}"
            )
        names += list(columns) if columns else [None] * width
    return names


# run files ---------------------------------------------------------------------------
def _read_run(path: Path, frame: int) -> Configuration:

    trajectory = Trajectory.load(path)
    if trajectory.radii is None or trajectory.positions.ndim != 3:
        raise TrajectoryFileError(f"{path} is not a run of spheres (no radii)")
    frames = len(trajectory)
    if isinstance(frame, bool) or not -frames <= int(frame) < frames:
        raise InvalidInputError(f"{path}: frame {frame} out of range (the run has {frames} frames)")
    k = int(frame)
    masses = trajectory.meta.get("masses")
    configuration = _checked(
        str(path),
        trajectory.positions[k],
        trajectory.radii[k],
        trajectory.velocities[k],
        None if masses is None else np.asarray(masses, dtype=float),
    )

    def optional(array):
        return None if array is None else array[k]

    configuration.angular_velocities = optional(trajectory.angular_velocities)
    configuration.orientations = optional(trajectory.orientations)
    configuration.t = float(trajectory.t[k])
    return configuration
