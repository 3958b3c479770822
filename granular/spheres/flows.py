"""Grains that come and go: inlets that insert spheres during a run, outlets that remove them.

An `Inlet` inserts spheres into a region at a given rate, in spheres per second or
in kilograms per second, with radii drawn from a size distribution and a given
initial velocity, never overlapping a sphere or a wall (the stream insertion of
LIGGGHTS, ``fix insert/stream``, Kloss, Goniva, Hager, Amberger and Pirker,
*Models, algorithms and validation for opensource DEM and CFD-DEM*, Progress in
Computational Fluid Dynamics 12, 2012). An `Outlet` removes the spheres whose
centres lie inside (or, with ``remove="outside"``, outside) a region. Both are given
to `granular.SphereWorld` (``inlets=``, ``outlets=``); the `granular.Simulation`
applies them at the start of every step, outlets first.

Counting. Inlet ``k`` has inserted ``n_k`` spheres of total mass ``m_k`` by time
``t``; with a rate ``R`` (spheres/s) it inserts at the start of the step from ``t``
the spheres due by the end of that step, ``n_k = floor(R (t + h - t_start))``;
with a mass rate ``Q`` (kg/s) it inserts its next sphere (of mass ``m``) while
``m_k + m <= Q (t + h - t_start)``. Either way the count follows the rate to within
one sphere, unless the region is full: a sphere that finds no free place in
``attempts`` random draws waits for the next step (the inlet then lags behind its
rate, `FlowCounters.inserted` shows by how much).

Determinism. The radius and the trial positions of inlet ``k``'s ``n``-th sphere
come from generators seeded with ``(seed, n, 0)`` and ``(seed, n, 1)`` (NumPy's
``SeedSequence``), not from
a generator carried along: the inlet's whole state is its counters, a run file
stores them per frame, and a restart from any frame inserts the same spheres.

Identity. Every sphere gets a permanent id (``SphereWorld.ids``): the initial
spheres ``0 .. N-1``, then each inserted sphere the next unused integer. Ids are
never reused; trajectories store each sphere in the column of its id
(`granular.records.trajectory`), and the contact solver's warm starts follow the ids
(`granular.constraints.remap_keys`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError
from ..validation import finite_array, positive_scalar


class BoxRegion:
    """The axis-aligned box ``lower <= x <= upper`` (m, each (3,); bounds may be
    infinite for an outlet, e.g. everything below a height)."""

    def __init__(self, lower, upper):
        self.lower = np.asarray(lower, dtype=float).reshape(3)
        self.upper = np.asarray(upper, dtype=float).reshape(3)
        if np.any(np.isnan(self.lower)) or np.any(np.isnan(self.upper)) or np.any(self.upper <= self.lower):
            raise InvalidInputError(
                f"a region needs lower < upper on every axis, got lower={self.lower.tolist()}, "
                f"upper={self.upper.tolist()}"
            )

    def contains(self, points: np.ndarray) -> np.ndarray:
        """Whether each point (k, 3) lies in the box, (k,) bool."""
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        return np.all((points >= self.lower) & (points <= self.upper), axis=1)

    def sample(self, rng: np.random.Generator, radius: float, count: int) -> np.ndarray:
        """``count`` uniform centres (count, 3) of spheres of ``radius`` lying wholly in the box."""
        low, high = self.lower + radius, self.upper - radius
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise InvalidInputError("an inlet's region must be bounded")
        if np.any(high < low):
            raise InvalidInputError(
                f"a sphere of radius {radius:g} m does not fit in the region "
                f"{self.lower.tolist()} .. {self.upper.tolist()}"
            )
        return low + (high - low) * rng.random((count, 3))

    def describe(self) -> dict:
        return {"kind": "box", "lower": self.lower.tolist(), "upper": self.upper.tolist()}


class CylinderRegion:
    """The vertical cylinder of axis ``(x, y) = centre`` (m), radius ``radius`` (m),
    between heights ``bottom`` and ``top`` (m): the feed of a round silo or hopper."""

    def __init__(self, centre, radius: float, bottom: float, top: float):
        self.centre = finite_array(centre, "centre", (2,))
        self.radius = positive_scalar(radius, "radius")
        self.bottom, self.top = float(bottom), float(top)
        if not self.top > self.bottom:
            raise InvalidInputError(f"a cylinder region needs top > bottom, got {self.bottom} .. {self.top}")

    def contains(self, points: np.ndarray) -> np.ndarray:
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        inside = np.sum((points[:, :2] - self.centre) ** 2, axis=1) <= self.radius**2
        return inside & (points[:, 2] >= self.bottom) & (points[:, 2] <= self.top)

    def sample(self, rng: np.random.Generator, radius: float, count: int) -> np.ndarray:
        """``count`` centres uniform in the volume where a sphere of ``radius`` fits."""
        reach = self.radius - radius
        if reach < 0.0 or self.top - self.bottom < 2.0 * radius:
            raise InvalidInputError(f"a sphere of radius {radius:g} m does not fit in the cylinder region")
        draws = rng.random((count, 3))
        rho, angle = reach * np.sqrt(draws[:, 0]), 2.0 * np.pi * draws[:, 1]
        z = self.bottom + radius + (self.top - self.bottom - 2.0 * radius) * draws[:, 2]
        return np.column_stack([self.centre[0] + rho * np.cos(angle), self.centre[1] + rho * np.sin(angle), z])

    def describe(self) -> dict:
        return {
            "kind": "cylinder",
            "centre": self.centre.tolist(),
            "radius": self.radius,
            "bottom": self.bottom,
            "top": self.top,
        }


class SizeDistribution:
    """Radii of inserted spheres (m): one value; ``(low, high)``, uniform in radius
    between them; or ``{radius: fraction}``, fractions by number (normalised)."""

    def __init__(self, radius):
        if isinstance(radius, dict):
            if not radius:
                raise InvalidInputError("radius: an empty distribution")
            values = np.array([positive_scalar(r, "radius") for r in radius], dtype=float)
            weights = np.array([float(w) for w in radius.values()], dtype=float)
            if np.any(~(weights >= 0.0)) or not weights.sum() > 0.0:
                raise InvalidInputError(f"radius: the fractions must be >= 0 and not all 0, got {weights.tolist()}")
            self.values, self.weights, self.kind = values, weights / weights.sum(), "discrete"
        elif np.ndim(radius) == 1:
            pair = finite_array(radius, "radius", (2,))
            if not 0.0 < pair[0] <= pair[1]:
                raise InvalidInputError(f"radius: a range (low, high) needs 0 < low <= high, got {pair.tolist()}")
            self.values, self.weights, self.kind = pair, None, "uniform"
        else:
            self.values, self.weights, self.kind = np.array([positive_scalar(radius, "radius")]), None, "one"

    @property
    def largest(self) -> float:
        return float(self.values.max())

    @property
    def smallest(self) -> float:
        return float(self.values.min())

    def draw(self, rng: np.random.Generator) -> float:
        """One radius (m)."""
        if self.kind == "one":
            return float(self.values[0])
        if self.kind == "uniform":
            return float(self.values[0] + (self.values[1] - self.values[0]) * rng.random())
        return float(rng.choice(self.values, p=self.weights))

    def describe(self):
        if self.kind == "discrete":
            return {"radii": self.values.tolist(), "fractions": self.weights.tolist()}
        return self.values.tolist() if self.kind == "uniform" else float(self.values[0])


class Inlet:
    """Inserts spheres into ``region`` during a run (module docstring).

    Parameters
    ----------
    region : `BoxRegion` or `CylinderRegion`
        Where the inserted spheres lie wholly (centres drawn uniformly there).
    radius : float, (low, high), or {radius: fraction}
        The size distribution (m), `SizeDistribution`.
    rate : float or None
        Spheres per second; give this or ``mass_rate``.
    mass_rate : float or None
        Kilograms per second.
    velocity : (3,) array
        Initial velocity of every inserted sphere (m/s).
    density : float or None
        Density of the inserted spheres (kg/m^3); their mass is ``density 4/3 pi r^3``.
        None: the world's ``density``.
    start, stop : float
        The inlet inserts from ``start`` until ``stop`` (s).
    seed : int
        Seed of the draws (module docstring, "Determinism").
    attempts : int
        Trial positions per sphere and step before it waits for the next step.
    clearance : float
        Smallest gap (m) left between an inserted sphere and any sphere or wall (>= 0).
    """

    def __init__(
        self,
        region,
        radius,
        rate: float | None = None,
        mass_rate: float | None = None,
        velocity=(0.0, 0.0, 0.0),
        density: float | None = None,
        start: float = 0.0,
        stop: float = np.inf,
        seed: int = 0,
        attempts: int = 50,
        clearance: float = 0.0,
    ):
        if not hasattr(region, "sample") or not hasattr(region, "contains"):
            raise InvalidInputError(f"region must be a BoxRegion or CylinderRegion, got {type(region).__name__}")
        self.region = region
        self.sizes = radius if isinstance(radius, SizeDistribution) else SizeDistribution(radius)
        if (rate is None) == (mass_rate is None):
            raise InvalidInputError("give exactly one of rate (spheres/s) or mass_rate (kg/s)")
        self.rate = None if rate is None else positive_scalar(rate, "rate")
        self.mass_rate = None if mass_rate is None else positive_scalar(mass_rate, "mass_rate")
        self.velocity = finite_array(velocity, "velocity", (3,))
        self.density = None if density is None else positive_scalar(density, "density")
        self.start, self.stop = float(start), float(stop)
        if not self.stop > self.start:
            raise InvalidInputError(f"stop must come after start, got start={self.start}, stop={self.stop}")
        if int(seed) != seed or seed < 0:
            raise InvalidInputError(f"seed must be a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        if int(attempts) != attempts or attempts < 1:
            raise InvalidInputError(f"attempts must be a positive integer, got {attempts!r}")
        self.attempts = int(attempts)
        if not float(clearance) >= 0.0:
            raise InvalidInputError(f"clearance must be >= 0 m, got {clearance!r}")
        self.clearance = float(clearance)

    def mass(self, radius: float, default_density: float) -> float:
        """Mass (kg) of an inserted sphere of ``radius`` (m): its density (the inlet's,
        else ``default_density``, kg/m^3) times ``4/3 pi r^3``."""
        density = default_density if self.density is None else self.density
        return density * 4.0 / 3.0 * np.pi * radius**3

    def generator(self, number: int, purpose: int) -> np.random.Generator:
        """The generator of this inlet's ``number``-th sphere (module docstring):
        ``purpose`` 0 draws its radius, 1 its trial positions (two streams, so that
        the number of draws of one never shifts the other)."""
        return np.random.default_rng([self.seed, int(number), int(purpose)])

    def radius_of(self, number: int) -> float:
        """The radius (m) of this inlet's ``number``-th sphere."""
        return self.sizes.draw(self.generator(number, 0))

    def due(self, until: float, inserted: int, inserted_mass: float, default_density: float) -> bool:
        """Whether the next sphere (number ``inserted``) is due by time ``until`` (s), after
        ``inserted`` spheres of total mass ``inserted_mass`` (kg)."""
        elapsed = min(until, self.stop) - self.start
        if elapsed < 0.0:
            return False
        if self.rate is not None:
            # the count due, floor(R t); the 1e-9 absorbs the round-off of R t at a whole count
            return inserted < np.floor(self.rate * elapsed * (1.0 + 1e-12) + 1e-9)
        assert self.mass_rate is not None
        next_mass = self.mass(self.radius_of(inserted), default_density)
        return inserted_mass + next_mass <= self.mass_rate * elapsed * (1.0 + 1e-12)

    def describe(self) -> dict:
        return {
            "region": self.region.describe(),
            "radius": self.sizes.describe(),
            "rate": self.rate,
            "mass_rate": self.mass_rate,
            "velocity": self.velocity.tolist(),
            "density": self.density,
            "start": self.start,
            "stop": self.stop if np.isfinite(self.stop) else None,
            "seed": self.seed,
        }


class Outlet:
    """Removes the spheres whose centres lie inside ``region`` (``remove="inside"``,
    a catch basin below an orifice) or outside it (``remove="outside"``, the spheres
    that left the domain)."""

    def __init__(self, region, remove: str = "inside"):
        if not hasattr(region, "contains"):
            raise InvalidInputError(f"region must be a BoxRegion or CylinderRegion, got {type(region).__name__}")
        if remove not in ("inside", "outside"):
            raise InvalidInputError(f"remove must be 'inside' or 'outside', got {remove!r}")
        self.region, self.remove = region, remove

    def leaving(self, positions: np.ndarray) -> np.ndarray:
        """Which spheres (centres (N, 3) m) this outlet removes, (N,) bool."""
        inside = self.region.contains(positions)
        return inside if self.remove == "inside" else ~inside

    def describe(self) -> dict:
        return {"region": self.region.describe(), "remove": self.remove}


@dataclass
class FlowCounters:
    """What the inlets and outlets have done since the start: ``ids_assigned`` ids given out
    (the next sphere's id); per inlet (I,) the spheres ``inserted`` and their mass
    ``inserted_mass`` (kg); per outlet (O,) the spheres ``removed`` and their mass
    ``removed_mass`` (kg). Mass is conserved: the spheres present weigh the initial
    ones plus the inserted minus the removed."""

    ids_assigned: int
    inserted: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    inserted_mass: np.ndarray = field(default_factory=lambda: np.zeros(0))
    removed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    removed_mass: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @staticmethod
    def start(ids_assigned: int, inlets: int, outlets: int) -> "FlowCounters":
        return FlowCounters(
            int(ids_assigned),
            np.zeros(inlets, dtype=np.int64),
            np.zeros(inlets),
            np.zeros(outlets, dtype=np.int64),
            np.zeros(outlets),
        )

    def copy(self) -> "FlowCounters":
        return FlowCounters(
            self.ids_assigned,
            self.inserted.copy(),
            self.inserted_mass.copy(),
            self.removed.copy(),
            self.removed_mass.copy(),
        )

    def as_row(self) -> np.ndarray:
        """The counters as one float row ``(ids_assigned, inserted .., inserted_mass .., removed
        .., removed_mass ..)``, what a trajectory stores per frame (counts below 2^53
        are exact in a float)."""
        return np.concatenate(
            [[float(self.ids_assigned)], self.inserted, self.inserted_mass, self.removed, self.removed_mass]
        ).astype(float)

    @staticmethod
    def from_row(row, inlets: int, outlets: int) -> "FlowCounters":
        row = np.asarray(row, dtype=float)
        if row.shape != (1 + 2 * inlets + 2 * outlets,):
            raise InvalidInputError(
                f"flow counters of shape {row.shape} do not fit {inlets} inlets and {outlets} outlets"
            )
        a, b = 1 + inlets, 1 + 2 * inlets
        return FlowCounters(
            int(row[0]),
            row[1:a].astype(np.int64),
            row[a:b].copy(),
            row[b : b + outlets].astype(np.int64),
            row[b + outlets :].copy(),
        )


@dataclass(frozen=True)
class Exchange:
    """One application of the outlets and inlets: ``keep`` (N_before,) bool, which
    spheres stay (in their order); the inserted spheres' ``positions`` (k, 3) (m) and
    ``velocities`` (k, 3) (m/s), appended after the kept ones."""

    keep: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray

    @property
    def changes(self) -> bool:
        return bool(self.positions.shape[0]) or not bool(np.all(self.keep))

    def new_index(self) -> np.ndarray:
        """Each former sphere's index after the exchange, -1 for a removed one (N_before,)."""
        index = np.full(self.keep.size, -1, dtype=np.int64)
        index[self.keep] = np.arange(int(np.count_nonzero(self.keep)))
        return index


def place(
    inlet: Inlet,
    number: int,
    radius: float,
    positions: np.ndarray,
    radii: np.ndarray,
    fits_walls,
    attempts: int | None = None,
) -> np.ndarray | None:
    """A centre (3,) for ``inlet``'s sphere ``number`` of ``radius`` (m) at least
    ``inlet.clearance`` from every sphere (``positions`` (N, 3), ``radii`` (N,)) and
    every wall (``fits_walls(centre, radius) -> bool``), or None when ``attempts``
    trial positions all failed."""
    rng = inlet.generator(number, 1)
    trials = inlet.region.sample(rng, radius, inlet.attempts if attempts is None else attempts)
    reach = radius + (float(radii.max()) if radii.size else 0.0) + inlet.clearance
    for centre in trials:
        if positions.shape[0]:
            near = np.flatnonzero(np.all(np.abs(positions - centre) <= reach, axis=1))
            gaps = np.linalg.norm(positions[near] - centre, axis=1) - radii[near] - radius
            if np.any(gaps < inlet.clearance):
                continue
        if fits_walls(centre, radius):
            return centre
    return None


def leaving(outlets, positions: np.ndarray, masses: np.ndarray, flow: FlowCounters) -> np.ndarray:
    """Which spheres (N,) at ``positions`` (N, 3) of ``masses`` (N,) the ``outlets``
    remove, each counted in ``flow`` by the first outlet that holds it."""
    gone = np.zeros(positions.shape[0], dtype=bool)
    for k, outlet in enumerate(outlets):
        now = outlet.leaving(positions) & ~gone
        flow.removed[k] += int(np.count_nonzero(now))
        flow.removed_mass[k] += float(np.sum(masses[now]))
        gone |= now
    return gone


def inserted(
    inlets, flow: FlowCounters, density: float, surfaces, t_next: float, present: np.ndarray, radii: np.ndarray
) -> tuple:
    """The spheres the ``inlets`` insert next to the spheres ``present`` (k, 3) of
    ``radii`` (k,), clear of the walls' contact ``surfaces``, for the step ending at
    ``t_next`` (s): ``(centres (a, 3), velocities (a, 3), ids (a,), radii (a,), masses
    (a,))``, counted in ``flow``. Each inlet inserts the spheres due (`Inlet.due`)
    until one finds no place."""
    rows: list[tuple] = []  # (centre, velocity, id, radius, mass) of each sphere inserted
    for k, inlet in enumerate(inlets):
        while inlet.due(t_next, int(flow.inserted[k]), float(flow.inserted_mass[k]), density):
            number = int(flow.inserted[k])
            radius = inlet.radius_of(number)
            centre = place(
                inlet,
                number,
                radius,
                present,
                radii,
                lambda c, r, clearance=inlet.clearance: fits_walls(surfaces, c, r, t_next, clearance),
            )
            if centre is None:
                break  # the region is full: this sphere waits for the next step
            present, radii = np.vstack([present, centre]), np.append(radii, radius)
            rows.append((centre, inlet.velocity, flow.ids_assigned, radius, inlet.mass(radius, density)))
            flow.ids_assigned += 1
            flow.inserted[k] += 1
            flow.inserted_mass[k] += rows[-1][4]
    if not rows:
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    centres, velocities, ids, added_radii, masses = zip(*rows)
    return (
        np.array(centres),
        np.array(velocities),
        np.array(ids, dtype=np.int64),
        np.array(added_radii),
        np.array(masses),
    )


def fits_walls(surfaces, centre: np.ndarray, radius: float, t: float, clearance: float) -> bool:
    """Whether a sphere of ``radius`` (m) at ``centre`` (3,) lies at least ``clearance``
    (m) from every contact surface of ``surfaces`` at ``t`` (s), on the admissible
    side. A mesh is a two-sided shell: an inlet's region must lie on the side of it
    the spheres belong to."""
    point, radii = centre.reshape(1, 3), np.array([radius])
    for surface in surfaces:
        rows = surface.rows(point, radii, clearance, t)
        if rows.size and np.any(rows.gaps < clearance):
            return False
    return True


def checked_flows(inlets, outlets) -> tuple[tuple, tuple]:
    """``(inlets, outlets)`` as tuples, each item checked to be an `Inlet` or an `Outlet`."""
    inlets, outlets = tuple(inlets), tuple(outlets)
    for name, items, kind in (("inlets", inlets, Inlet), ("outlets", outlets, Outlet)):
        for k, item in enumerate(items):
            if not isinstance(item, kind):
                raise InvalidInputError(f"{name}[{k}] must be a granular.{kind.__name__}, got {type(item).__name__}")
    return inlets, outlets


def inserted_restitution(radii, masses, inertia, periodic, restitution) -> float:
    """The restitution coefficient of the spheres an inlet inserts, after checking that
    a world with inlets or outlets can change its spheres: radii and masses given as
    values (not callables), solid spheres (``inertia`` None), no ``periodic``
    boundaries and one ``restitution`` value."""
    fixed = {"radii": radii, "masses": masses, "inertia": inertia}
    for name, value in fixed.items():
        if callable(value):
            raise InvalidInputError(
                f"{name} cannot be a callable in a world with inlets or outlets: the "
                "spheres present change, give one value per sphere"
            )
    if inertia is not None:
        raise InvalidInputError("inertia must be None (solid spheres) in a world with inlets or outlets")
    if periodic is not None:
        raise InvalidInputError("inlets and outlets need a world without periodic boundaries")
    if np.ndim(restitution) != 0:
        raise InvalidInputError(
            "restitution must be one value in a world with inlets or outlets (the inserted spheres take it)"
        )
    return float(restitution)
