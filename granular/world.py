"""SphereWorld: N rigid spheres in 3D with walls, gravity and user forces.

State: positions ``q`` (N, 3) in m and velocities ``u`` (N, 3) in m/s, flattened
to (3N,) for the schemes. Mass metric ``M = diag(m_1, m_1, m_1, ..., m_N, m_N, m_N)``
(kg), Remark 4.1 of Bernicot and Lefebvre-Lepot (*Existence results for
non-smooth second order differential inclusions...*, 2010).

Constraints (ibid., section 4): for each pair that could touch within the
step, ``D_ij(t, q) = |q_j - q_i| - (r_i(t) + r_j(t)) >= 0`` with gradient
``G_ij = (..., -n_ij, ..., +n_ij, ...)``, ``n_ij = (q_j - q_i)/|q_j - q_i|``; for each
sphere near a plane (point p, unit normal n), ``D = n.(q_i - p) - r_i(t) >= 0``
with gradient ``+n`` on sphere i; inside a cylinder, ``D = R - |rho_i| - r_i`` with
gradient ``-rho_i / |rho_i|``. A moving wall enters at its position at ``t_{n+1}``,
``D(t_{n+1}, q^n)``, and its material velocity at the contact enters the friction
rows (`granular.walls` derives both).

Rotation. Each sphere also carries an angular velocity ``omega_i`` (rad/s, world
frame), a moment of inertia ``J_i`` (kg m^2, default ``2/5 m_i r_i(t)^2``, a solid
sphere, following the radius and mass in time) and an orientation, a unit
quaternion ``(w, x, y, z)`` taking body axes to world axes.

- Frictional worlds (``rotates``: some contact has ``mu > 0`` and ``rotation=True``)
  step the generalised velocity ``(u, omega)`` (6N,), ordered ``(u_1 .. u_N,
  omega_1 .. omega_N)``, in the block-diagonal metric ``diag(m_i I_3 .., J_i I_3
  ..)`` (`metric`). A sphere's rotational dofs enter only the tangential rows.
- Worlds without friction and without rolling resistance keep their
  translational state (3N,): a normal row of a sphere has no rotational part (the
  normal passes through the centres), so the rotational dofs decouple exactly and
  ``omega`` is constant (no torque acts on the sphere).
- Rolling resistance without friction (``mu = 0``, ``mu_r > 0``) turns the spheres
  too (``rotates``): the rolling torque, bounded by ``mu_r R* lambda_N``, acts on
  the components of ``omega`` tangent to a contact whether or not the contact can
  carry a tangential force. It models the losses of the deformed contact as
  material rolls through it (hysteresis, the asymmetric pressure of model A in
  `granular.contact.friction`), which does not need sliding friction; so a sphere spinning
  about a horizontal axis on a frictionless floor slows at ``mu_r r m g / J = 5
  mu_r g / (2 r)`` and stops, while its translation and its spin about the normal
  are untouched (no tangential force; no torque about the normal). The scheme carries it along and integrates the
  orientations from it; nothing of Maury's frictionless step changes.

The rotational state lives in the scheme (`granular.schemes.velocity`), which
reports it in every `StepResult` (``angular_velocities`` (N, 3),
``orientations`` (N, 4)); the kinetic energy reported includes
``1/2 sum J_i |omega_i|^2``.

Friction (Moreau's discrete law with Coulomb friction, `granular.contact.friction`): with a
Coulomb coefficient ``mu > 0`` a contact also gets two unit tangents ``t_1, t_2``
orthogonal to its normal, the rows of the tangential velocity of the contact
point. For a pair (normal ``n`` from i to j, contact point at ``q_i + r_i n =
q_j - r_j n``), the velocity of j's material point relative to i's along ``t_a``
is ``t_a . (u_j - u_i) - r_i (n x t_a) . omega_i - r_j (n x t_a) . omega_j``:
rows ``(-t_a on u_i, +t_a on u_j, -r_i n x t_a on omega_i, -r_j n x t_a on
omega_j)``. For a wall (normal ``n`` into the admissible side, contact point
``q_i - r_i n``): ``(+t_a on u_i, -r_i n x t_a on omega_i)``. A sliding contact
therefore applies a torque ``(contact arm) x (friction impulse)`` and a sphere
can roll. With ``rotation=False`` the rotational columns are left out: the
spheres do not turn, a grain is a frictional point with a radius (the model of
earlier versions, kept for comparisons).

Rolling resistance (``rolling_friction`` ``mu_r``, per wall too): a torque impulse
bounded by ``mu_r R* lambda_N`` against the relative rolling of each contact, with
``R* = r_i r_j / (r_i + r_j)`` for a pair and ``r_i`` on a wall; the model and its
references are in `granular.contact.friction`.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
import warnings
from typing import TYPE_CHECKING, Callable

import numpy as np
import scipy.sparse as sp

from .constraints import ConstraintSet
from .errors import IneffectiveWallWarning, InvalidInputError, NonFiniteError, OverlapError, RadiusError
from .metric import DiagonalMetric
from .neighbors import candidate_contacts, candidate_pairs, pair_vectors
from .surfaces import ContactRows, Surface
from .tolerances import OVERLAP_TOLERANCE, SEARCH_SKIN
from .validation import coefficient_per_item, finite_array, positive_per_item, positive_scalar
from .walls import PeriodicBox, Plane

if TYPE_CHECKING:
    from .flows import Exchange

#: A given orientation quaternion may differ from unit length by this much (it is
#: then normalised); farther is an input error (not a rotation).
_QUATERNION_TOLERANCE = 1e-6

#: How per-particle coefficients combine into a pair coefficient.
COMBINATION_RULES = {
    "min": np.minimum,
    "max": np.maximum,
    "mean": lambda a, b: 0.5 * (a + b),
    "geometric": lambda a, b: np.sqrt(a * b),
}


class SphereWorld:
    """N spheres in 3D: radii (possibly time-dependent), masses, walls and forces.

    Parameters
    ----------
    positions : (N, 3) array
        Initial centres (m). Must be admissible: no sphere overlaps another or a wall.
    radii : float, (N,) array, or callable ``t -> (N,)``
        Radii (m), positive at every time. A callable gives radii that change in time
        (Bernicot and Lefebvre-Lepot, 2010, end of section 4); it is checked at every step.
    masses : float, (N,) array, callable ``t -> (N,)``, or None
        Masses (kg). ``None`` uses ``density * 4/3 pi r^3`` with the initial radii.
    velocities : (N, 3) array or None
        Initial velocities (m/s); zeros by default.
    gravity : (3,) array
        Gravitational acceleration (m/s^2).
    force : callable ``(t, q, u) -> (N, 3)`` or None
        Extra force on each sphere (N), with ``q``, ``u`` of shape (N, 3).
    walls : sequence of walls (`granular.surfaces.Surface`)
        Obstacles, still or moving: `Plane`, `Box`, `Cylinder`, `Panel`, `Cone`
        (`granular.walls`), `TriangleMesh` (`granular.meshes`) or a class of one's own.
        A `Box` contributes its faces, a capped `Cylinder` its side and two caps, a
        mesh one surface (``Contacts.wall`` numbers them in this order).
    restitution : float or (N,) array
        Coefficient of restitution in [0, 1] of sphere-sphere impacts: one value, or
        one per sphere combined by ``restitution_rule``. It also applies to
        sphere-wall impacts of walls that carry no coefficient of their own.
        ``0`` is Maury's inelastic scheme.
    restitution_rule : {"min", "geometric", "mean", "max"}
        How per-sphere coefficients combine for a pair (default ``"min"``, as Chrono).
    density : float
        Density (kg/m^3) for the default masses.
    periodic : PeriodicBox or None
        Periodic boundary conditions along some axes.
    t0 : float
        Initial time (s).
    friction : float
        Coulomb coefficient (>= 0) of sphere-sphere contacts, and of sphere-wall
        contacts of walls that carry no coefficient of their own (module docstring:
        no rotation, no rolling). ``0`` (default) is the frictionless scheme.
    initial_overlaps : {"error", "separate"}
        ``"error"`` (default): overlapping initial positions raise `OverlapError`.
        ``"separate"``: they are accepted and the steps push the spheres apart, as
        Maury's constraint ``D + h G u >= 0`` does when ``D < 0``, at most at
        ``separation_speed``; each step's `StepResult.overlap` shows the deepest
        overlap left. The separation speed is kinetic energy the contacts then
        leave alone: to start at rest without overlaps, move the spheres first with
        `granular.remove_overlaps`.
    separation_speed : float or None
        Fastest separation (m/s) of two overlapping spheres (or a sphere and a
        wall) in one step. ``None``: ``0.1 r_min / h``, a tenth of the smallest
        radius per step (an overlap of one radius goes in ten steps).
    angular_velocities : (N, 3) array or None
        Initial angular velocities (rad/s, world frame); zeros by default. Constant
        in a frictionless world (module docstring).
    inertia : float, (N,) array, callable ``t -> (N,)``, or None
        Moments of inertia about the centre (kg m^2), positive. ``None``: a solid
        sphere, ``2/5 m_i(t) r_i(t)^2``, following radii and masses that change in time.
    orientations : (N, 4) array or None
        Initial orientations as unit quaternions ``(w, x, y, z)`` (body to world);
        identity by default.
    rotation : bool
        ``True`` (default): frictional contacts turn the spheres (module docstring).
        ``False``: the spheres never turn (frictional points; ``omega`` constant).
    rolling_friction : float
        Rolling resistance coefficient ``mu_r`` (>= 0, dimensionless) of sphere-sphere
        contacts and of walls without their own: a torque impulse at most ``mu_r R*
        lambda_N`` (N m s) against the contact's relative rolling, ``R* = r_i r_j / (r_i
        + r_j)`` for a pair, ``r_i`` on a wall (`granular.contact.friction`). Needs
        ``rotation=True``. ``0`` (default): none.
    tangential_restitution : float
        Tangential coefficient of restitution ``et`` in [0, 1] of the impacts of
        frictional contacts (sphere-sphere, and sphere-wall for walls without their
        own): a contact point that sticks in an impact leaves with ``-et`` times its
        tangential velocity before it (`granular.contact.impact`, Newton's law with Coulomb
        friction). ``0`` (default): it leaves rolling without slip. It acts in
        impacts only, i.e. on rows with ``restitution > 0``, and only where friction
        acts (``mu > 0``).
    inlets, outlets : sequences of `granular.flows.Inlet`, `granular.flows.Outlet`
        Spheres inserted and removed during a run (`granular.flows`): the world may
        then start empty (``positions`` of shape (0, 3)); each sphere has a permanent
        id (`ids`), and `flow` counts what came and went. They need radii and
        masses given as values, solid spheres (``inertia=None``), one restitution
        coefficient and no periodic boundaries.
    """

    def __init__(self, positions, radii, masses=None, velocities=None,
                 gravity=(0.0, 0.0, -9.81), force: Callable | None = None, walls=(),
                 restitution=0.0, restitution_rule: str = "min", density: float = 1000.0,
                 periodic: PeriodicBox | None = None, t0: float = 0.0, friction: float = 0.0,
                 initial_overlaps: str = "error", separation_speed: float | None = None,
                 angular_velocities=None, inertia=None, orientations=None, rotation: bool = True,
                 rolling_friction: float = 0.0, tangential_restitution: float = 0.0, inlets=(), outlets=()):
        positions = finite_array(positions, "positions")
        if positions.ndim == 1 and positions.size == 0 and inlets:
            positions = positions.reshape(0, 3)
        smallest = 0 if inlets else 1       # a world fed by an inlet may start empty
        if positions.ndim != 2 or positions.shape[1] != 3 or positions.shape[0] < smallest:
            raise InvalidInputError(f"positions must have shape (N, 3) with N >= {smallest}, got {positions.shape}")
        self.n = positions.shape[0]
        self.t0 = float(t0)
        self.gravity = finite_array(gravity, "gravity", (3,))
        self.force_callable = force
        if force is not None and not callable(force):
            raise InvalidInputError("force must be a callable (t, q, u) -> (N, 3) or None")
        self._radii = radii if callable(radii) else positive_per_item(radii, "radii", self.n, " m")
        initial_radii = self.radii_at(self.t0)
        self._masses = self._check_masses(masses, density, initial_radii)
        self.density = positive_scalar(density, "density")
        velocities = np.zeros((self.n, 3)) if velocities is None else velocities
        velocities = finite_array(velocities, "velocities", (self.n, 3))
        if restitution_rule not in COMBINATION_RULES:
            raise InvalidInputError(f"restitution_rule must be one of {sorted(COMBINATION_RULES)}, "
                                    f"got {restitution_rule!r}")
        self.restitution_rule = restitution_rule
        self.particle_restitution = coefficient_per_item(restitution, "restitution", self.n)
        self.walls = tuple(walls)
        for k, wall in enumerate(self.walls):
            if not isinstance(wall, Surface) or isinstance(wall, PeriodicBox):
                raise InvalidInputError(f"walls[{k}] must be a wall (a Plane, Box, Cylinder, Panel, Cone, "
                                        f"TriangleMesh: granular.surfaces.Surface), got {type(wall).__name__}")
        #: The contact surfaces of the walls, by ``Contacts.wall`` index.
        self.surfaces = [surface for wall in self.walls for surface in wall.surfaces()]
        self.planes = self.surfaces      # the name of earlier versions
        self.friction = float(coefficient_per_item(friction, "friction", 1, upper=None)[0])
        self.rolling_friction = float(coefficient_per_item(rolling_friction, "rolling_friction", 1, upper=None)[0])
        self.tangential_restitution = _unit_coefficient(tangential_restitution, "tangential_restitution")
        self._warn_about_frictionless_turning_walls()
        self.periodic = periodic
        if periodic is not None:
            positions = periodic.wrap(positions)
        if initial_overlaps not in ("error", "separate"):
            raise InvalidInputError(f"initial_overlaps must be 'error' or 'separate', got {initial_overlaps!r}")
        self.initial_overlaps = initial_overlaps
        self.separation_speed = None if separation_speed is None else positive_scalar(separation_speed,
                                                                                      "separation_speed")
        self.check_periodic_cell(initial_radii, margin=0.0)
        if initial_overlaps == "error":
            self.check_admissible(self.t0, positions)
        self.q0 = positions.reshape(-1)
        self.u0 = velocities.reshape(-1)
        omega = np.zeros((self.n, 3)) if angular_velocities is None else angular_velocities
        self.omega0 = finite_array(omega, "angular_velocities", (self.n, 3))
        self._inertia = None
        if inertia is not None:
            self._inertia = inertia if callable(inertia) else positive_per_item(inertia, "inertia", self.n,
                                                                                  " kg m^2")
        self.inertia_at(self.t0)  # checks a callable (and the default) at t0
        self.orientations0 = _unit_quaternions(orientations, self.n)
        if not isinstance(rotation, (bool, np.bool_)):
            raise InvalidInputError(f"rotation must be True or False, got {rotation!r}")
        self.rotation = bool(rotation)
        if not self.rotation and self.has_rolling_friction:
            raise InvalidInputError("rolling_friction needs spheres that turn: rotation=False leaves no rolling "
                                    "to resist")
        self._noted_rotation = None  # (t, h, omega) of the last step a scheme took (kinetic_energy)
        self._setup_flows(inlets, outlets, restitution)

    # -- grains that come and go (granular.flows) ----------------------------------------
    def _setup_flows(self, inlets, outlets, restitution) -> None:
        """Check and keep the inlets and outlets; number the spheres ``0 .. N-1``."""
        from .flows import FlowCounters, Inlet, Outlet

        self.inlets, self.outlets = tuple(inlets), tuple(outlets)
        for name, items, kind in (("inlets", self.inlets, Inlet), ("outlets", self.outlets, Outlet)):
            for k, item in enumerate(items):
                if not isinstance(item, kind):
                    raise InvalidInputError(f"{name}[{k}] must be a granular.{kind.__name__}, "
                                            f"got {type(item).__name__}")
        #: Permanent id of each sphere (N,) (`granular.flows`).
        self.ids = np.arange(self.n, dtype=np.int64)
        #: What the inlets and outlets have done (`granular.flows.FlowCounters`).
        self.flow = FlowCounters.start(self.n, len(self.inlets), len(self.outlets))
        #: Mass (kg) of every sphere ever present, by id (the run file's ``meta["masses"]``).
        self.masses_by_id = None if callable(self._masses) else np.array(self._masses, dtype=float)
        if not self.has_flows:
            return
        fixed = {"radii": self._radii, "masses": self._masses, "inertia": self._inertia}
        for name, value in fixed.items():
            if callable(value):
                raise InvalidInputError(f"{name} cannot be a callable in a world with inlets or outlets: the "
                                        "spheres present change, give one value per sphere")
        if self._inertia is not None:
            raise InvalidInputError("inertia must be None (solid spheres) in a world with inlets or outlets")
        if self.periodic is not None:
            raise InvalidInputError("inlets and outlets need a world without periodic boundaries")
        if np.ndim(restitution) != 0:
            raise InvalidInputError("restitution must be one value in a world with inlets or outlets (the "
                                    "inserted spheres take it)")
        self._restitution_value = float(restitution)

    @property
    def has_flows(self) -> bool:
        """Whether inlets or outlets change the spheres present during a run."""
        return bool(self.inlets or self.outlets)

    def exchange(self, t: float, h: float, positions: np.ndarray) -> "Exchange":
        """Apply the outlets, then the inlets, at the start of the step from ``t`` (s)
        to ``t + h`` with the spheres at ``positions`` (N, 3) (m): the world's spheres
        change (ids, radii, masses, counters) and the returned `granular.flows.Exchange`
        says how, for the scheme to carry its state over. An inserted sphere is
        admissible against every sphere kept or inserted and against every wall where
        the step's constraints place it, at ``t + h``."""
        from .flows import Exchange

        positions = np.asarray(positions, dtype=float).reshape(self.n, 3)
        keep = ~self._leaving(t, positions)
        added, velocities, ids, radii, masses = self._inserted(t + h, positions[keep], self.radii_at(t)[keep])
        self.masses_by_id = np.concatenate([self.masses_by_id, masses])
        self._resize(keep, ids, radii, masses)
        return Exchange(keep, added, velocities)

    def _leaving(self, t: float, positions: np.ndarray) -> np.ndarray:
        """Which spheres (N,) the outlets remove, each counted by the first outlet that
        holds it (`flow`)."""
        leaving = np.zeros(self.n, dtype=bool)
        masses = self.masses_at(t)
        for k, outlet in enumerate(self.outlets):
            now = outlet.leaving(positions) & ~leaving
            self.flow.removed[k] += int(np.count_nonzero(now))
            self.flow.removed_mass[k] += float(np.sum(masses[now]))
            leaving |= now
        return leaving

    def _inserted(self, t_next: float, present: np.ndarray, radii: np.ndarray) -> tuple:
        """The spheres the inlets insert next to the spheres ``present`` (k, 3) of ``radii``
        (k,) for the step ending at ``t_next`` (s): ``(centres (a, 3), velocities (a, 3),
        ids (a,), radii (a,), masses (a,))``, counted in `flow`. Each inlet inserts the
        spheres due (`granular.flows.Inlet.due`) until one finds no place."""
        from .flows import place

        rows: list[tuple] = []          # (centre, velocity, id, radius, mass) of each sphere inserted
        for k, inlet in enumerate(self.inlets):
            while inlet.due(t_next, int(self.flow.inserted[k]), float(self.flow.inserted_mass[k]), self.density):
                number = int(self.flow.inserted[k])
                radius = inlet.radius_of(number)
                centre = place(inlet, number, radius, present, radii,
                               lambda c, r, clearance=inlet.clearance: self._fits_walls(c, r, t_next, clearance))
                if centre is None:
                    break            # the region is full: this sphere waits for the next step
                present, radii = np.vstack([present, centre]), np.append(radii, radius)
                rows.append((centre, inlet.velocity, self.flow.issued, radius, inlet.mass(radius, self.density)))
                self.flow.issued += 1
                self.flow.inserted[k] += 1
                self.flow.inserted_mass[k] += rows[-1][4]
        if not rows:
            return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
        centres, velocities, ids, added_radii, masses = zip(*rows)
        return (np.array(centres), np.array(velocities), np.array(ids, dtype=np.int64), np.array(added_radii),
                np.array(masses))

    def _fits_walls(self, centre: np.ndarray, radius: float, t: float, clearance: float) -> bool:
        """Whether a sphere of ``radius`` (m) at ``centre`` (3,) lies at least ``clearance``
        (m) from every wall at ``t`` (s), on the admissible side. A mesh is a two-sided
        shell: an inlet's region must lie on the side of it the spheres belong to."""
        point, radii = centre.reshape(1, 3), np.array([radius])
        for surface in self.surfaces:
            rows = surface.rows(point, radii, clearance, t)
            if rows.size and np.any(rows.gaps < clearance):
                return False
        return True

    def _resize(self, keep: np.ndarray, ids: np.ndarray, radii: np.ndarray, masses: np.ndarray) -> None:
        """Keep the spheres ``keep`` (N,) bool and append spheres of ``ids``, ``radii`` (m)
        and ``masses`` (kg), at rest in rotation with identity orientations."""
        k = ids.size
        self.ids = np.concatenate([self.ids[keep], ids])
        self._radii = np.concatenate([np.asarray(self._radii)[keep], radii])
        self._masses = np.concatenate([np.asarray(self._masses)[keep], masses])
        self.particle_restitution = np.concatenate([self.particle_restitution[keep],
                                                    np.full(k, self._restitution_value)])
        identity = np.zeros((k, 4))
        identity[:, 0] = 1.0
        self.omega0 = np.concatenate([self.omega0[keep], np.zeros((k, 3))])
        self.orientations0 = np.concatenate([self.orientations0[keep], identity])
        self.n = int(self.ids.size)
        self._noted_rotation = None

    def set_spheres(self, ids, radii, flow=None) -> None:
        """Make the spheres present those of ``ids`` (N,) with ``radii`` (N,) (m), their
        masses those recorded by id (`masses_by_id`, extended to the ids given, whose
        masses then follow from the radii), and the counters ``flow`` (a restart
        from a frame of a run with inlets or outlets, `granular.Simulation.from_trajectory`)."""
        ids = np.asarray(ids, dtype=np.int64)
        radii = positive_per_item(radii, "radii", ids.size, " m")
        if flow is not None:
            self.flow = flow.copy()
        known = self.masses_by_id
        needed = int(max(self.flow.issued, ids.max(initial=-1) + 1))
        if needed > known.size:
            known = np.concatenate([known, np.full(needed - known.size, np.nan)])
        unknown = np.isnan(known[ids])
        known[ids[unknown]] = self.density * 4.0 / 3.0 * np.pi * radii[unknown] ** 3
        self.masses_by_id = known
        self.n = 0
        self.ids = np.zeros(0, dtype=np.int64)
        self._radii, self._masses = np.zeros(0), np.zeros(0)
        self.particle_restitution, self.omega0, self.orientations0 = np.zeros(0), np.zeros((0, 3)), np.zeros((0, 4))
        self._resize(np.zeros(0, dtype=bool), ids, radii, known[ids])

    # -- sizes and state ---------------------------------------------------------
    @property
    def dimension(self) -> int:
        """Number of coordinates, 3N."""
        return 3 * self.n

    @property
    def state_shape(self) -> tuple:
        return (self.n, 3)

    def initial_state(self) -> tuple[float, np.ndarray, np.ndarray]:
        """``(t0, q0, u0)`` with flat (3N,) arrays."""
        return self.t0, self.q0.copy(), self.u0.copy()

    # -- radii and masses --------------------------------------------------------
    def radii_at(self, t: float) -> np.ndarray:
        """Radii (N,) at time ``t`` (m); checks a radius callable's output."""
        if not callable(self._radii):
            return self._radii
        values = np.asarray(self._radii(t), dtype=float)
        if values.ndim == 0:
            values = np.full(self.n, float(values))
        if values.shape != (self.n,):
            raise RadiusError(f"radius callable returned shape {values.shape} at t = {t:.6g} s, "
                              f"expected ({self.n},)", t=t)
        bad = np.flatnonzero(~(values > 0.0) | ~np.isfinite(values))
        if bad.size:
            raise RadiusError(f"radius of sphere {bad[0]} is {values[bad[0]]} m at t = {t:.6g} s; "
                              "radii must be positive and finite", t=t, index=int(bad[0]))
        return values

    @property
    def time_dependent_radii(self) -> bool:
        return callable(self._radii)

    def _check_masses(self, masses, density, radii):
        if masses is None:
            density = positive_scalar(density, "density")
            return density * 4.0 / 3.0 * np.pi * radii ** 3
        if callable(masses):
            self._mass_callable_check(masses, self.t0)
            return masses
        return positive_per_item(masses, "masses", self.n, " kg")

    def _mass_callable_check(self, masses, t):
        try:
            return positive_per_item(masses(t), f"masses at t = {t:.6g} s", self.n, " kg")
        except InvalidInputError as error:
            raise InvalidInputError(str(error)) from None

    def masses_at(self, t: float) -> np.ndarray:
        """Masses (N,) at time ``t`` (kg)."""
        if callable(self._masses):
            return self._mass_callable_check(self._masses, t)
        return self._masses

    def inertia_at(self, t: float) -> np.ndarray:
        """Moments of inertia (N,) at time ``t`` (kg m^2): the given ones, or
        ``2/5 m r^2`` of a solid sphere with the masses and radii at ``t``."""
        if self._inertia is None:
            return 0.4 * self.masses_at(t) * self.radii_at(t) ** 2
        if callable(self._inertia):
            try:
                return positive_per_item(self._inertia(t), f"inertia at t = {t:.6g} s", self.n, " kg m^2")
            except InvalidInputError as error:
                raise InvalidInputError(str(error)) from None
        return self._inertia

    @property
    def rotates(self) -> bool:
        """Whether the steps solve for the angular velocities: a world with ``rotation=True``
        and friction or rolling resistance somewhere. Otherwise the rotational dofs
        decouple and ``omega`` is constant."""
        return self.rotation and (self.has_friction or self.has_rolling_friction)

    def metric(self, t: float, q: np.ndarray) -> DiagonalMetric:
        """The mass metric at ``t``: diagonal (3N,) ``m_i`` (kg), or (6N,) ``(m_i .., J_i ..)``
        (kg, kg m^2) for the generalised velocity ``(u, omega)`` of a world that `rotates`."""
        translational = np.repeat(self.masses_at(t), 3)
        if not self.rotates:
            return DiagonalMetric(translational)
        return DiagonalMetric(np.concatenate([translational, np.repeat(self.inertia_at(t), 3)]))

    def initial_rotation(self) -> tuple[np.ndarray, np.ndarray]:
        """``(omega0 (N, 3) rad/s, orientations0 (N, 4))``, copies."""
        return self.omega0.copy(), self.orientations0.copy()

    def note_rotation(self, t: float, h: float, omega: np.ndarray) -> None:
        """Record the angular velocities (N, 3) a scheme reached at ``t`` (step ``h``), so
        that `kinetic_energy` without ``angular_velocities`` reports them at that time."""
        self._noted_rotation = (float(t), float(h), np.asarray(omega, dtype=float).reshape(self.n, 3).copy())

    def _angular_velocities(self, t: float, given) -> np.ndarray:
        """The angular velocities (N, 3) at ``t``: given, constant (no rotating
        contacts), initial at ``t0``, or the ones a scheme noted at ``t``; otherwise
        an error rather than a guess."""
        if given is not None:
            return finite_array(given, "angular_velocities", (self.n, 3))
        if not self.rotates or t == self.t0:
            return self.omega0
        if self._noted_rotation is not None:
            noted_t, h, omega = self._noted_rotation
            if abs(t - noted_t) <= 1e-6 * h:  # the same step, up to round-off of t0 + n h
                return omega
        raise InvalidInputError(f"the angular velocities of this rotating world at t = {t:.6g} s are "
                                "unknown here: pass angular_velocities= (StepResult.angular_velocities)")

    # -- forces and energies ----------------------------------------------------
    def force(self, t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Generalised force (3N,): gravity plus the user force (N). For a generalised
        velocity ``(u, omega)`` (6N,) it is (6N,) with zero torques (gravity and the
        user forces act at the centres)."""
        masses = self.masses_at(t)
        total = masses[:, None] * self.gravity[None, :]
        generalised = u.size == 6 * self.n
        if self.force_callable is not None:
            extra = np.asarray(self.force_callable(t, q.reshape(self.n, 3), u[:3 * self.n].reshape(self.n, 3)),
                               dtype=float)
            if extra.shape != (self.n, 3):
                raise InvalidInputError(f"force returned shape {extra.shape} at t = {t:.6g} s, "
                                        f"expected ({self.n}, 3)")
            if not np.all(np.isfinite(extra)):
                raise NonFiniteError(f"force returned a non-finite value at t = {t:.6g} s: a numerical "
                                     "blow-up (reduce the time step) or a force singular there",
                                     t=t, status="non_finite")
            total = total + extra
        if generalised:
            return np.concatenate([total.reshape(-1), np.zeros(3 * self.n)])
        return total.reshape(-1)

    def kinetic_energy(self, t: float, q: np.ndarray, u: np.ndarray, angular_velocities=None) -> float:
        """``0.5 sum m_i |u_i|^2 + 0.5 sum J_i |omega_i|^2`` (J).

        ``u`` is (3N,) (then ``omega`` is ``angular_velocities`` (N, 3), or when None
        the world's own: constant without rotating contacts, the initial ones at
        ``t0``, those a scheme noted at ``t``, else `InvalidInputError`) or the
        generalised ``(u, omega)`` (6N,)."""
        masses = self.masses_at(t)
        if u.size == 6 * self.n:
            u, omega = u[:3 * self.n], u[3 * self.n:].reshape(self.n, 3)
        else:
            omega = self._angular_velocities(t, angular_velocities)
        translational = 0.5 * float(np.sum(masses * np.sum(u.reshape(self.n, 3) ** 2, axis=1)))
        if not np.any(omega):
            return translational
        return translational + 0.5 * float(np.sum(self.inertia_at(t) * np.sum(omega ** 2, axis=1)))

    def potential_energy(self, t: float, q: np.ndarray) -> float:
        """Gravitational potential ``-sum m_i g . q_i`` (J); user forces are not included."""
        masses = self.masses_at(t)
        return -float(np.sum(masses * (q.reshape(self.n, 3) @ self.gravity)))

    # -- kinematics ----------------------------------------------------------------
    def advance(self, q: np.ndarray, u: np.ndarray, h: float) -> np.ndarray:
        """``q + h u``, wrapped into the periodic cell (``u`` (3N,) or the generalised (6N,))."""
        q_next = q + h * u[:3 * self.n]
        if self.periodic is not None:
            q_next = self.periodic.wrap(q_next.reshape(self.n, 3)).reshape(-1)
        return q_next

    def speed_slack(self, t_next: float, h: float) -> float:
        """Speed (m/s) above the search bound ``s`` that the search skin still covers."""
        return SEARCH_SKIN * float(self.radii_at(t_next).min(initial=np.inf) if self.n else 0.0) / (2.0 * h)

    def body_speeds(self, u: np.ndarray) -> np.ndarray:
        """Speed of each sphere's centre (N,) (m/s); ``u`` (3N,) or the generalised (6N,)."""
        return np.linalg.norm(u[:3 * self.n].reshape(self.n, 3), axis=1)

    # -- constraints -------------------------------------------------------------
    def constraints(self, t_next: float, q: np.ndarray, h: float, max_speed: float) -> ConstraintSet:
        """Constraints of the step ending at ``t_next``, linearised at ``q``.

        Which pairs are kept, and why no contact is missed: a pair is kept when its
        gap ``D_ij(t_{n+1}, q^n) <= 2 h s + skin`` and a sphere-wall contact when
        ``D <= h s + skin``, where ``s`` bounds every sphere speed ``|u_i^{n+1}|`` of
        the step (m/s). The gaps use the radii at the end of the step, so radius
        growth over the step is already inside ``D``; motion can then shrink a
        pair's distance by at most ``h(|u_i| + |u_j|) <= 2 h s`` and a wall gap by
        ``h s``. A pair left out therefore has ``D_ij(t_{n+1}, q^{n+1}) > 0``. The
        scheme chooses ``s`` from the velocities before and after the force
        prediction and checks it after the projection, redoing the step with a
        larger ``s`` if a sphere went faster than the skin allows (the projection
        can speed up a light sphere struck by a heavy one): with ``skin =
        SEARCH_SKIN r_min`` the search also covers speeds up to ``s + skin / (2h)``
        (`speed_slack`).
        """
        clock = time.perf_counter()
        positions = q.reshape(self.n, 3)
        radii = self.radii_at(t_next)
        skin = SEARCH_SKIN * float(radii.min(initial=np.inf) if radii.size else 0.0)
        self.check_periodic_cell(radii, margin=2.0 * h * max_speed + skin)
        i, j, vectors, distances = candidate_contacts(positions, radii, 2.0 * h * max_speed + skin, self.periodic)
        searched = time.perf_counter()
        if np.any(distances == 0.0):
            k = int(np.flatnonzero(distances == 0.0)[0])
            raise InvalidInputError(f"spheres {i[k]} and {j[k]} have coincident centres at t = {t_next:.6g} s")
        normals = vectors / distances[:, None]
        gaps = distances - radii[i] - radii[j]
        e_sphere = self.particle_restitution
        restitution = COMBINATION_RULES[self.restitution_rule](e_sphere[i], e_sphere[j])
        walls = self._all_wall_rows(t_next, h, positions, radii, h * max_speed + skin)
        wi, wnormal, wall_velocity = walls.spheres, walls.normals, walls.velocities
        tangential_restitution = None
        if self.has_tangential_restitution:
            tangential_restitution = np.concatenate([np.full(i.size, self.tangential_restitution),
                                                     walls.tangential_restitution])
        normal_offset = None
        if wall_velocity is not None:   # the impact law acts on the velocity relative to the wall
            normal_offset = np.concatenate([np.zeros(i.size), np.einsum("ka,ka->k", wall_velocity, wnormal)])
        width = 6 * self.n if self.rotates else 3 * self.n  # (u, omega) columns when rotating
        jacobian = _sphere_jacobian(i, j, normals, wi, wnormal, self.n, width)
        minus = -np.ones(wi.size, dtype=np.int64)
        friction, tangents = None, None
        if self.has_friction:
            friction, tangents = self._friction_rows(i, j, normals, wi, wnormal, walls.friction, radii)
        offset = None
        if tangents is not None and wall_velocity is not None:
            offset = np.zeros((i.size + wi.size, 2))
            offset[i.size:] = np.einsum("kab,kb->ka", tangent_basis(wnormal), wall_velocity)
        rolling_friction, rolling, rolling_radius = None, None, None
        if self.has_rolling_friction:
            rolling_friction, rolling, rolling_radius = self._rolling_rows(i, j, normals, wi, wnormal,
                                                                           walls.rolling_friction, radii)
        return ConstraintSet(
            gap=np.concatenate([gaps, walls.gaps]),
            jacobian=jacobian,
            restitution=np.concatenate([restitution, walls.restitution]),
            i=np.concatenate([i, wi]),
            j=np.concatenate([j, minus]),
            wall=np.concatenate([-np.ones(i.size, dtype=np.int64), walls.surface]),
            normal=np.concatenate([normals, wnormal]),
            friction=friction, tangents=tangents,
            seconds={"neighbors": searched - clock, "assembly": time.perf_counter() - searched},
            separation_speed=self._separation_cap(radii, h),
            rolling_friction=rolling_friction, rolling=rolling, rolling_radius=rolling_radius,
            tangential_offset=offset, normal_offset=normal_offset,
            tangential_restitution=tangential_restitution, surface_names=self._surface_names,
            feature=None if walls.features is None else np.concatenate([np.zeros(i.size, np.int64), walls.features]),
        )

    def _separation_cap(self, radii: np.ndarray, h: float) -> float | None:
        """The separation speed of overlapping rows (m/s), None when overlaps are errors."""
        if self.initial_overlaps != "separate":
            return None
        if self.separation_speed is not None:
            return self.separation_speed
        return 0.1 * float(radii.min(initial=np.inf) if radii.size else 0.0) / h

    def _all_wall_rows(self, t_next, h, positions, radii, margin) -> "WallRows":
        """The rows of every contact surface at the end of the step (each surface's
        `granular.surfaces.ContactSurface.rows`), in surface order, with each row's
        contact law; when every surface is a still plane, all in one pass
        (`_plane_rows`)."""
        if self.surfaces and all(type(plane) is Plane and not plane.moves for plane in self.surfaces):
            return self._plane_rows(self.surfaces, positions, radii, margin)
        parts = [surface.rows(positions, radii, margin, t_next, h) for surface in self.surfaces]
        return self._combined(parts)

    def _combined(self, parts: list[ContactRows]) -> "WallRows":
        """The rows of the surfaces ``parts`` (one `ContactRows` each, in surface order)
        as one `WallRows`, each row with its surface's law (`_surface_law`)."""
        if not parts:
            parts = [ContactRows.empty()]
            laws = np.zeros((1, 4))
        else:
            laws = np.array([self._surface_law(surface) for surface in self.surfaces], dtype=float).reshape(-1, 4)
        sizes = np.array([part.size for part in parts])
        surface = np.repeat(np.arange(len(parts), dtype=np.int64), sizes)
        spheres = np.concatenate([part.spheres for part in parts]).astype(np.int64)
        law = laws[surface] if spheres.size else np.zeros((0, 4))
        restitution = np.where(np.isnan(law[:, 0]), self.particle_restitution[spheres], law[:, 0])
        velocities = None
        if any(getattr(s, "moves", False) for s in self.surfaces):
            velocities = np.concatenate([part.velocities if part.velocities is not None else np.zeros((part.size, 3))
                                         for part in parts])
        features = None
        if any(part.features is not None for part in parts):
            features = np.concatenate([part.features if part.features is not None else np.zeros(part.size, np.int64)
                                       for part in parts])
        return WallRows(spheres, surface, np.concatenate([part.gaps for part in parts]),
                        np.concatenate([part.normals for part in parts]).reshape(-1, 3), restitution, law[:, 1],
                        law[:, 2], law[:, 3], velocities, features)

    def _plane_rows(self, planes, positions, radii, margin) -> "WallRows":
        """The rows of the still flat ``planes`` in one pass (the rows of plane 0, then of
        plane 1, ...). The gaps are computed as `Plane.gaps` computes them, term for
        term, and the rows are the same; one pass saves the per-plane calls'
        interpreter overhead (benchmarks/README.md, "Measurements behind the constants")."""
        points = np.array([plane.point for plane in planes])
        normals = np.array([plane.normal for plane in planes])
        gaps = ((positions[None, :, :] - points[:, None, :]) @ normals[:, :, None])[..., 0] - radii
        k, near = np.nonzero(gaps <= margin)
        plane_e, plane_mu, plane_mu_r, plane_et = np.array([self._surface_law(plane) for plane in planes]).T
        e = np.where(np.isnan(plane_e[k]), self.particle_restitution[near], plane_e[k])
        return WallRows(near.astype(np.int64), k.astype(np.int64), gaps[k, near], normals[k], e, plane_mu[k],
                        plane_mu_r[k], plane_et[k])

    def _surface_law(self, plane) -> tuple[float, float, float, float]:
        """``(restitution, friction, rolling friction, tangential restitution)`` of a
        surface's contacts: its own, or the world's where it has none (restitution
        NaN: each sphere's own)."""
        et = getattr(plane, "tangential_restitution", None)
        return (np.nan if plane.restitution is None else float(plane.restitution),
                self.friction if plane.friction is None else float(plane.friction),
                self.rolling_friction if plane.rolling_friction is None else float(plane.rolling_friction),
                self.tangential_restitution if et is None else float(et))

    @property
    def has_moving_walls(self) -> bool:
        """Whether some wall translates or turns."""
        return any(wall.moves for wall in self.walls)

    def wall_displacements(self, t: float) -> np.ndarray:
        """Shift (W, 3) (m) at ``t`` of each wall of ``walls`` (in the order given) from
        its described position at ``t = 0``."""
        return np.array([wall.displacement(t) for wall in self.walls]).reshape(-1, 3)

    @property
    def has_turning_meshes(self) -> bool:
        """Whether some wall turns in a way its drawing shows (a mesh: `wall_rotations`)."""
        return any(hasattr(wall, "rotation") and wall.angular_velocity != 0.0 for wall in self.walls)

    def wall_rotations(self, t: float) -> np.ndarray:
        """Rotation (W, 3, 3) at ``t`` of each wall about its centre from its described
        orientation: a turning mesh's (`granular.meshes.TriangleMesh.rotation`), the
        identity for the others (a turning cylinder or plane looks the same)."""
        return np.array([wall.rotation(t) if hasattr(wall, "rotation") else np.eye(3)
                         for wall in self.walls]).reshape(-1, 3, 3)

    @property
    def has_friction(self) -> bool:
        """Whether any contact of this world can carry friction."""
        return self.friction > 0.0 or any((p.friction or 0.0) > 0.0 for p in self.planes)

    @property
    def has_tangential_restitution(self) -> bool:
        """Whether any contact of this world has a tangential restitution ``et > 0``."""
        return self.tangential_restitution > 0.0 or any((getattr(p, "tangential_restitution", None) or 0.0) > 0.0
                                                        for p in self.planes)

    @property
    def has_rolling_friction(self) -> bool:
        """Whether any contact of this world can carry rolling resistance."""
        return self.rolling_friction > 0.0 or any((p.rolling_friction or 0.0) > 0.0 for p in self.planes)

    def _rolling_rows(self, i, j, normals, wall_sphere, wall_normals, wall_rolling, radii):
        """``(mu_r (m,), rows, R* (m,))``: each row's rolling resistance coefficient, the
        sparse (2m, 6N) rows ``2k + a`` of the relative angular velocity along tangent
        ``a`` times the rolling radius ``R*`` (``-R* t_a`` on ``omega_i``, ``+R* t_a`` on
        ``omega_j`` for a pair, ``+R* t_a`` on ``omega_i`` for a wall; None when every
        coefficient is 0), and ``R* = r_i r_j / (r_i + r_j)`` for a pair, ``r_i`` on a
        wall (m). Scaled so, a rolling row is a velocity (m/s) and its law a Coulomb
        disc of coefficient ``mu_r`` (`granular.contact.friction`)."""
        mu_r = np.concatenate([np.full(i.size, self.rolling_friction), wall_rolling])
        reduced = np.concatenate([radii[i] * radii[j] / (radii[i] + radii[j]), radii[wall_sphere]])
        if not np.any(mu_r > 0.0):
            return mu_r, None, reduced
        pair_basis, wall_basis = tangent_basis(normals), tangent_basis(wall_normals)
        p = i.size
        rows = [_sphere_jacobian(i + self.n, j + self.n, reduced[:p, None] * pair_basis[:, a], wall_sphere + self.n,
                                 reduced[p:, None] * wall_basis[:, a], self.n, 6 * self.n) for a in range(2)]
        m = i.size + wall_sphere.size
        order = np.arange(2 * m).reshape(2, m).T.reshape(-1)  # interleave: 2k + a
        return mu_r, sp.vstack(rows).tocsr()[order], reduced

    def _friction_rows(self, i, j, normals, wall_sphere, wall_normals, wall_friction, radii):
        """``(mu (m,), tangents)`` of the step's rows (pairs first, then walls):
        ``tangents`` is None without friction, else a sparse (2m, 3N) matrix, (2m, 6N)
        with rotational columns when the world `rotates`, whose row ``2k + a`` is the
        velocity of contact ``k``'s material points along its unit tangent ``a``
        (`sphere_tangents`)."""
        mu = np.concatenate([np.full(i.size, self.friction), wall_friction])
        if not np.any(mu > 0.0):
            return mu, None
        return mu, sphere_tangents(i, j, normals, wall_sphere, wall_normals, self.n,
                                   radii if self.rotates else None)

    # -- admissibility -------------------------------------------------------------
    def check_admissible(self, t: float, positions: np.ndarray) -> None:
        """Raise `OverlapError` naming the first overlapping pair or sphere-wall contact."""
        positions = positions.reshape(self.n, 3)
        radii = self.radii_at(t)
        i, j = candidate_pairs(positions, radii, 0.0, self.periodic)
        if i.size:
            vectors = pair_vectors(positions, i, j, self.periodic)
            gaps = np.linalg.norm(vectors, axis=1) - radii[i] - radii[j]
            tolerance = OVERLAP_TOLERANCE * (radii[i] + radii[j])
            bad = np.flatnonzero(gaps < -tolerance)
            if bad.size:
                k = bad[np.argmin(gaps[bad])]
                raise OverlapError(f"spheres {i[k]} and {j[k]} overlap by {-gaps[k]:.6g} m at t = {t:.6g} s",
                                   pair=(int(i[k]), int(j[k])), overlap=float(-gaps[k]))
        for k, surface in enumerate(self.surfaces):
            rows = surface.rows(positions, radii, 0.0, t)
            bad = np.flatnonzero(rows.gaps < -OVERLAP_TOLERANCE * radii[rows.spheres])
            if bad.size:
                worst = bad[np.argmin(rows.gaps[bad])]
                s, overlap = int(rows.spheres[worst]), float(-rows.gaps[worst])
                raise OverlapError(f"sphere {s} overlaps the {self.surface_name(k)} (surface {k}: "
                                   f"{surface.label()}) by {overlap:.6g} m at t = {t:.6g} s",
                                   pair=(s, f"wall {k}"), overlap=overlap)

    def _warn_about_frictionless_turning_walls(self) -> None:
        """A wall that turns (a `Cylinder` about its axis, a `Plane` about its normal)
        moves its surface tangentially only, which reaches the spheres through friction
        alone: without friction (its own, or the world's when it has none) it acts as
        a still wall. That is most likely not what was meant, so say it
        (`granular.errors.IneffectiveWallWarning`)."""
        for k, wall in enumerate(self.walls):
            if not getattr(wall, "spins_in_place", False):
                continue
            omega = wall.angular_velocity
            mu = self.friction if wall.friction is None else float(wall.friction)
            if mu == 0.0:
                warnings.warn(IneffectiveWallWarning(
                    f"walls[{k}] ({type(wall).__name__}) turns at {omega:g} rad/s but its contacts have no "
                    "friction (friction=0 on the wall and in the world): its turning moves no sphere; give it "
                    "friction=... to drag them"), stacklevel=3)

    @functools.cached_property
    def _surface_names(self) -> tuple:
        """The contact surfaces' names (`surface_name`), by ``Contacts.wall`` index: each
        wall's ``surface_names``."""
        names: list[str] = []
        for wall in self.walls:
            names += wall.surface_names(len(names))
        return tuple(names)

    def surface_name(self, k: int) -> str:
        """The name of contact surface ``k`` (a ``Contacts.wall`` index) that ``granular
        inspect`` and the pictures use (`granular.walls.surface_names`: "floor",
        "box x-max", "cylinder side", "plane 5 (normal 0, 0, -1)")."""
        names = self._surface_names
        return names[k] if 0 <= k < len(names) else f"wall {k}"

    def check_periodic_cell(self, radii: np.ndarray, margin: float) -> None:
        if self.periodic is None:
            return
        reach = 2.0 * (2.0 * float(radii.max()) + margin)
        lengths = self.periodic.lengths
        for axis in self.periodic.axes:
            if lengths[axis] <= reach:
                raise InvalidInputError(
                    f"periodic cell length {lengths[axis]:.6g} m along axis {axis} must exceed twice the "
                    f"largest diameter plus the search margin ({reach:.6g} m)")

    def packing_fraction(self, t: float) -> float | None:
        """Sphere volume over container volume (the first wall that encloses a volume, a
        `Box` or a finite `Cylinder`, else a fully periodic cell)."""
        volume = None
        containers = [wall.volume for wall in self.walls if getattr(wall, "volume", None) is not None]
        if containers:
            volume = containers[0]
        elif self.periodic is not None and len(self.periodic.axes) == 3:
            volume = float(np.prod(self.periodic.lengths))
        if volume is None:
            return None
        return float(np.sum(4.0 / 3.0 * np.pi * self.radii_at(t) ** 3) / volume)

    def describe(self) -> dict:
        """What a renderer needs to draw the scene (JSON-serialisable)."""
        return {
            "kind": "spheres",
            "rotates": self.rotates,
            "walls": [wall.describe() for wall in self.walls],
            "periodic": None if self.periodic is None else self.periodic.describe(),
            "gravity": self.gravity.tolist(),
            **({"flows": {"inlets": [inlet.describe() for inlet in self.inlets],
                          "outlets": [outlet.describe() for outlet in self.outlets]}} if self.has_flows else {}),
        }


def _unit_coefficient(value, name: str) -> float:
    """One number in [0, 1], or `InvalidInputError` saying what was given."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be one number in [0, 1], got {value!r}") from None
    if not 0.0 <= number <= 1.0:   # NaN fails too
        raise InvalidInputError(f"{name} must lie in [0, 1], got {number}")
    return number


@dataclass(frozen=True)
class WallRows:
    """The wall rows of a step, every surface's together (arrays of one length k):
    sphere, surface (``Contacts.wall``), gap (m), unit normal (k, 3), restitution,
    friction, rolling friction and tangential restitution of each row; the wall's
    material velocity at the contact (k, 3) (m/s) or None when no wall moves; the
    feature labels (`granular.surfaces.ContactRows.features`) or None."""

    spheres: np.ndarray
    surface: np.ndarray
    gaps: np.ndarray
    normals: np.ndarray
    restitution: np.ndarray
    friction: np.ndarray
    rolling_friction: np.ndarray
    tangential_restitution: np.ndarray
    velocities: np.ndarray | None = None
    features: np.ndarray | None = None


def _sphere_jacobian(i, j, normals, wall_sphere, wall_normals, n, width=None) -> sp.csr_matrix:
    """Sparse G (m x width, default 3N): pair rows ``-n`` on sphere i, ``+n`` on sphere j;
    wall rows ``+n`` (translational columns only; ``width = 6N`` leaves the rotational
    columns of a rotating world empty: a normal row does not turn a sphere)."""
    pair_cols = np.concatenate([3 * i[:, None] + np.arange(3), 3 * j[:, None] + np.arange(3)], axis=1)
    pair_data = np.concatenate([-normals, normals], axis=1)
    wall_cols = 3 * wall_sphere[:, None] + np.arange(3)
    indices = np.concatenate([pair_cols.ravel(), wall_cols.ravel()])
    data = np.concatenate([pair_data.ravel(), wall_normals.ravel()])
    indptr = np.concatenate([np.arange(0, 6 * i.size + 1, 6),
                             6 * i.size + np.arange(3, 3 * wall_sphere.size + 1, 3)])
    m = i.size + wall_sphere.size
    return sp.csr_matrix((data, indices, indptr), shape=(m, 3 * n if width is None else width))


def tangent_basis(normals: np.ndarray) -> np.ndarray:
    """Two unit tangents (k, 2, 3) orthogonal to each unit normal (k, 3), right-handed
    ``(t_1, t_2, n)``; ``t_1`` is ``n x e`` for the axis ``e`` least aligned with ``n``."""
    axis = np.eye(3)[np.argmin(np.abs(normals), axis=1)]
    first = np.cross(normals, axis)
    first /= np.linalg.norm(first, axis=1)[:, None]
    return np.stack([first, np.cross(normals, first)], axis=1)


def sphere_tangents(i, j, normals, wall_sphere, wall_normals, n, radii=None) -> sp.csr_matrix:
    """Sparse tangential Jacobian: row ``2k + a`` is tangent ``a`` of row ``k``.

    Without ``radii`` (spheres that do not turn): (2m, 3N), ``-t`` on sphere i and
    ``+t`` on sphere j for a pair, ``+t`` for a wall row, so ``T u`` is the sliding
    velocity of the centres. With ``radii`` (N,) (m, at the end of the step): (2m,
    6N) on ``(u, omega)``, adding ``-r_i (n x t)`` on ``omega_i`` and ``-r_j (n x t)``
    on ``omega_j`` for a pair, ``-r_i (n x t)`` on ``omega_i`` for a wall, so that ``T
    (u, omega)`` is the tangential velocity of j's material point at the contact
    relative to i's (or of i's on the wall): module docstring."""
    pair_basis, wall_basis = tangent_basis(normals), tangent_basis(wall_normals)
    if radii is None:
        rows = [_sphere_jacobian(i, j, pair_basis[:, a], wall_sphere, wall_basis[:, a], n) for a in range(2)]
        m = i.size + wall_sphere.size
        order = np.arange(2 * m).reshape(2, m).T.reshape(-1)  # interleave: 2k + a
        return sp.vstack(rows).tocsr()[order]
    p, w = i.size, wall_sphere.size
    three = np.arange(3)
    # Row 2k + a holds a pair's 12 entries (u_i, u_j, omega_i, omega_j) or a wall's 6
    # (u_i, omega_i), in increasing column order (i < j), built straight in CSR
    # (a COO assembly and its sort cost 2.4 times as much, for the same matrix).
    pair_cols = np.concatenate([3 * i[:, None] + three, 3 * j[:, None] + three,
                                3 * n + 3 * i[:, None] + three, 3 * n + 3 * j[:, None] + three], axis=1)
    wall_cols = np.concatenate([3 * wall_sphere[:, None] + three, 3 * n + 3 * wall_sphere[:, None] + three],
                               axis=1)
    arm_pair = np.cross(normals[:, None, :], pair_basis)          # (p, 2, 3): n x t_a
    arm_wall = np.cross(wall_normals[:, None, :], wall_basis)
    pair_data = np.concatenate([-pair_basis, pair_basis, -radii[i, None, None] * arm_pair,
                                -radii[j, None, None] * arm_pair], axis=2)             # (p, 2, 12)
    wall_data = np.concatenate([wall_basis, -radii[wall_sphere, None, None] * arm_wall], axis=2)   # (w, 2, 6)
    indices = np.concatenate([np.repeat(pair_cols[:, None, :], 2, axis=1).ravel(),
                              np.repeat(wall_cols[:, None, :], 2, axis=1).ravel()])
    data = np.concatenate([pair_data.ravel(), wall_data.ravel()])
    indptr = np.concatenate([np.arange(0, 24 * p + 1, 12), 24 * p + np.arange(6, 12 * w + 1, 6)])
    return sp.csr_matrix((data, indices, indptr), shape=(2 * (p + w), 6 * n))


def _unit_quaternions(orientations, n: int) -> np.ndarray:
    """Orientations (N, 4) as unit quaternions ``(w, x, y, z)``: identity when None;
    given ones normalised if within `_QUATERNION_TOLERANCE` of unit length."""
    if orientations is None:
        identity = np.zeros((n, 4))
        identity[:, 0] = 1.0
        return identity
    orientations = finite_array(orientations, "orientations", (n, 4))
    norms = np.linalg.norm(orientations, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > _QUATERNION_TOLERANCE)
    if bad.size:
        raise InvalidInputError(f"orientations must be unit quaternions (w, x, y, z): entry {bad[0]} has "
                                f"length {norms[bad[0]]:.6g}")
    return orientations / norms[:, None]


def rotate_quaternions(orientations: np.ndarray, omega: np.ndarray, h: float) -> np.ndarray:
    """Orientations (N, 4) turned by the exact rotation of angle ``|omega| h`` about
    ``omega / |omega|`` (``omega`` (N, 3) rad/s in the world frame, ``h`` s):
    ``q <- (cos(a/2), sin(a/2) omega/|omega|) q``, renormalised against round-off."""
    speed = np.linalg.norm(omega, axis=1)
    half = 0.5 * h * speed
    scale = np.where(speed > 0.0, np.sin(half) / np.where(speed > 0.0, speed, 1.0), 0.0)
    dw, dv = np.cos(half), scale[:, None] * omega
    w, v = orientations[:, 0], orientations[:, 1:]
    turned = np.column_stack([dw * w - np.einsum("ka,ka->k", dv, v),
                              dw[:, None] * v + w[:, None] * dv + np.cross(dv, v)])
    return turned / np.linalg.norm(turned, axis=1)[:, None]
