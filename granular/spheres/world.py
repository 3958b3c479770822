"""SphereWorld: N rigid spheres in 3D with walls, gravity and user forces.

State: positions ``q`` (N, 3) in m and velocities ``u`` (N, 3) in m/s, flattened
to (3N,) for the schemes. Mass metric ``M = diag(m_1, m_1, m_1, ..., m_N, m_N, m_N)``
(kg), Remark 4.1 of Bernicot and Lefebvre-Lepot (*Existence results for
non-smooth second order differential inclusions...*, 2010).

Its contact rows, with their friction and rolling resistance rows, are assembled by
`granular.spheres.assembly` (``constraints``); orientations turn by `granular.spheres.rotation`.

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

The rotational state lives in the scheme (`granular.schemes.maury`), which
reports it in every `StepResult` (``angular_velocities`` (N, 3),
``orientations`` (N, 4)); the kinetic energy reported includes
``1/2 sum J_i |omega_i|^2``.

Friction rows (the contact point's velocity, hence a torque on each sphere) and
rolling resistance rows: `granular.spheres.assembly`.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ..constraints import ConstraintSet
from ..errors import InvalidInputError, RadiusError
from .flows import Exchange, FlowCounters, checked_flows, inserted, inserted_restitution, leaving
from ..metric import DiagonalMetric
from .rotation import identity_quaternions, unit_quaternions
from .assembly import COMBINATION_RULES, raise_if_overlapping, sphere_constraints
from ..walls.surfaces import Surface
from ..tolerances import SEARCH_SKIN
from ..validation import (
    checked_force,
    coefficient_per_item,
    finite_array,
    positive_per_item,
    positive_scalar,
    unit_coefficient,
)
from ..walls import PeriodicBox
from ..walls.common import warn_if_turning_without_friction


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
    walls : sequence of walls (`granular.walls.surfaces.Surface`)
        Obstacles, still or moving: `Plane`, `Box`, `Cylinder`, `Panel`, `Cone`
        (`granular.walls`), `TriangleMesh` (`granular.walls.meshes`) or a class of one's own.
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
    inlets, outlets : sequences of `granular.spheres.flows.Inlet`, `granular.spheres.flows.Outlet`
        Spheres inserted and removed during a run (`granular.spheres.flows`): the world may
        then start empty (``positions`` of shape (0, 3)); each sphere has a permanent
        id (`ids`), and `flow` counts what came and went. They need radii and
        masses given as values, solid spheres (``inertia=None``), one restitution
        coefficient and no periodic boundaries.
    """

    def __init__(
        self,
        positions,
        radii,
        masses=None,
        velocities=None,
        gravity=(0.0, 0.0, -9.81),
        force: Callable | None = None,
        walls=(),
        restitution=0.0,
        restitution_rule: str = "min",
        density: float = 1000.0,
        periodic: PeriodicBox | None = None,
        t0: float = 0.0,
        friction: float = 0.0,
        initial_overlaps: str = "error",
        separation_speed: float | None = None,
        angular_velocities=None,
        inertia=None,
        orientations=None,
        rotation: bool = True,
        rolling_friction: float = 0.0,
        tangential_restitution: float = 0.0,
        inlets=(),
        outlets=(),
    ):
        positions = finite_array(positions, "positions")
        if positions.ndim == 1 and positions.size == 0 and inlets:
            positions = positions.reshape(0, 3)
        smallest = 0 if inlets else 1  # a world fed by an inlet may start empty
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
            raise InvalidInputError(
                f"restitution_rule must be one of {sorted(COMBINATION_RULES)}, got {restitution_rule!r}"
            )
        self.restitution_rule = restitution_rule
        self.particle_restitution = coefficient_per_item(restitution, "restitution", self.n)
        self.walls = tuple(walls)
        for k, wall in enumerate(self.walls):
            if not isinstance(wall, Surface) or isinstance(wall, PeriodicBox):
                raise InvalidInputError(
                    f"walls[{k}] must be a wall (a Plane, Box, Cylinder, Panel, Cone, "
                    f"TriangleMesh: granular.walls.surfaces.Surface), got {type(wall).__name__}"
                )
        #: The contact surfaces of the walls, by ``Contacts.wall`` index.
        self.surfaces = [surface for wall in self.walls for surface in wall.surfaces()]
        self.planes = self.surfaces  # the name of earlier versions
        #: Whether a surface is concave somewhere (a `Cylinder`'s side, a `Cone`): its
        #: linearised rows let a sphere sliding along it sink by a second-order amount
        #: (`wall_rows_at`).
        self.curved_walls = any(getattr(surface, "curved", False) for surface in self.surfaces)
        self.friction = float(coefficient_per_item(friction, "friction", 1, upper=None)[0])
        self.rolling_friction = float(coefficient_per_item(rolling_friction, "rolling_friction", 1, upper=None)[0])
        self.tangential_restitution = unit_coefficient(tangential_restitution, "tangential_restitution")
        warn_if_turning_without_friction(self.walls, self.friction)
        self.periodic = periodic
        if periodic is not None:
            positions = periodic.wrap(positions)
        if initial_overlaps not in ("error", "separate"):
            raise InvalidInputError(f"initial_overlaps must be 'error' or 'separate', got {initial_overlaps!r}")
        self.initial_overlaps = initial_overlaps
        self.separation_speed = (
            None if separation_speed is None else positive_scalar(separation_speed, "separation_speed")
        )
        if self.periodic is not None:
            self.periodic.check_cell(initial_radii, margin=0.0)
        if initial_overlaps == "error":
            self.check_admissible(self.t0, positions)
        self.q0 = positions.reshape(-1)
        self.u0 = velocities.reshape(-1)
        omega = np.zeros((self.n, 3)) if angular_velocities is None else angular_velocities
        self.omega0 = finite_array(omega, "angular_velocities", (self.n, 3))
        self._inertia = None
        if inertia is not None:
            self._inertia = inertia if callable(inertia) else positive_per_item(inertia, "inertia", self.n, " kg m^2")
        self.inertia_at(self.t0)  # checks a callable (and the default) at t0
        self.orientations0 = unit_quaternions(orientations, self.n)
        if not isinstance(rotation, (bool, np.bool_)):
            raise InvalidInputError(f"rotation must be True or False, got {rotation!r}")
        self.rotation = bool(rotation)
        if not self.rotation and self.has_rolling_friction:
            raise InvalidInputError(
                "rolling_friction needs spheres that turn: rotation=False leaves no rolling to resist"
            )
        self._setup_flows(inlets, outlets, restitution)

    # -- grains that come and go (granular.spheres.flows) ----------------------------------------
    def _setup_flows(self, inlets, outlets, restitution) -> None:
        """Check and keep the inlets and outlets; number the spheres ``0 .. N-1``."""
        self.inlets, self.outlets = checked_flows(inlets, outlets)
        #: Permanent id of each sphere (N,) (`granular.spheres.flows`).
        self.ids = np.arange(self.n, dtype=np.int64)
        #: What the inlets and outlets have done (`granular.spheres.flows.FlowCounters`).
        self.flow = FlowCounters.start(self.n, len(self.inlets), len(self.outlets))
        #: Mass (kg) of every sphere ever present, by id (the run file's ``meta["masses"]``).
        self.masses_by_id = None if callable(self._masses) else np.array(self._masses, dtype=float)
        if self.has_flows:
            self._restitution_value = inserted_restitution(
                self._radii, self._masses, self._inertia, self.periodic, restitution
            )

    @property
    def has_flows(self) -> bool:
        """Whether inlets or outlets change the spheres present during a run."""
        return bool(self.inlets or self.outlets)

    def exchange(self, t: float, h: float, positions: np.ndarray) -> Exchange:
        """Apply the outlets, then the inlets, at the start of the step from ``t`` (s)
        to ``t + h`` with the spheres at ``positions`` (N, 3) (m): the world's spheres
        change (ids, radii, masses, counters) and the returned `granular.spheres.flows.Exchange`
        says how, for the scheme to carry its state over. An inserted sphere is
        admissible against every sphere kept or inserted and against every wall where
        the step's constraints place it, at ``t + h``."""
        positions = np.asarray(positions, dtype=float).reshape(self.n, 3)
        keep = ~leaving(self.outlets, positions, self.masses_at(t), self.flow)
        added, velocities, ids, radii, masses = inserted(
            self.inlets, self.flow, self.density, self.surfaces, t + h, positions[keep], self.radii_at(t)[keep]
        )
        self.masses_by_id = np.concatenate([self.masses_by_id, masses])
        self._resize(keep, ids, radii, masses)
        return Exchange(keep, added, velocities)

    def _resize(self, keep: np.ndarray, ids: np.ndarray, radii: np.ndarray, masses: np.ndarray) -> None:
        """Keep the spheres ``keep`` (N,) bool and append spheres of ``ids``, ``radii`` (m)
        and ``masses`` (kg), at rest in rotation with identity orientations."""
        k = ids.size
        self.ids = np.concatenate([self.ids[keep], ids])
        self._radii = np.concatenate([np.asarray(self._radii)[keep], radii])
        self._masses = np.concatenate([np.asarray(self._masses)[keep], masses])
        self.particle_restitution = np.concatenate(
            [self.particle_restitution[keep], np.full(k, self._restitution_value)]
        )
        self.omega0 = np.concatenate([self.omega0[keep], np.zeros((k, 3))])
        self.orientations0 = np.concatenate([self.orientations0[keep], identity_quaternions(k)])
        self.n = int(self.ids.size)

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
        needed = int(max(self.flow.ids_assigned, ids.max(initial=-1) + 1))
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
            raise RadiusError(
                f"radius callable returned shape {values.shape} at t = {t:.6g} s, expected ({self.n},)", t=t
            )
        bad = np.flatnonzero(~(values > 0.0) | ~np.isfinite(values))
        if bad.size:
            raise RadiusError(
                f"radius of sphere {bad[0]} is {values[bad[0]]} m at t = {t:.6g} s; radii must be positive and finite",
                t=t,
                index=int(bad[0]),
            )
        return values

    @property
    def time_dependent_radii(self) -> bool:
        return callable(self._radii)

    def _check_masses(self, masses, density, radii):
        if masses is None:
            density = positive_scalar(density, "density")
            return density * 4.0 / 3.0 * np.pi * radii**3
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

    def _angular_velocities(self, t: float, given) -> np.ndarray:
        """The angular velocities (N, 3) at ``t``: the ``given`` ones, else the world's
        own where they are known without a scheme (constant without rotating contacts,
        the initial ones at ``t0``); otherwise `InvalidInputError` rather than a guess
        (the scheme's state holds them: `granular.records.results.StepResult.angular_velocities`)."""
        if given is not None:
            return finite_array(given, "angular_velocities", (self.n, 3))
        if not self.rotates or t == self.t0:
            return self.omega0
        raise InvalidInputError(
            f"the angular velocities of this rotating world at t = {t:.6g} s are "
            "unknown here: pass angular_velocities= (StepResult.angular_velocities)"
        )

    # -- forces and energies ----------------------------------------------------
    def force(self, t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Generalised force (3N,): gravity plus the user force (N). For a generalised
        velocity ``(u, omega)`` (6N,) it is (6N,) with zero torques (gravity and the
        user forces act at the centres)."""
        masses = self.masses_at(t)
        total = masses[:, None] * self.gravity[None, :]
        generalised = u.size == 6 * self.n
        if self.force_callable is not None:
            extra = self.force_callable(t, q.reshape(self.n, 3), u[: 3 * self.n].reshape(self.n, 3))
            total = total + checked_force(t, extra, (self.n, 3))
        if generalised:
            return np.concatenate([total.reshape(-1), np.zeros(3 * self.n)])
        return total.reshape(-1)

    def kinetic_energy(self, t: float, q: np.ndarray, u: np.ndarray, angular_velocities=None) -> float:
        """``0.5 sum m_i |u_i|^2 + 0.5 sum J_i |omega_i|^2`` (J).

        ``u`` is (3N,) (then ``omega`` is ``angular_velocities`` (N, 3), or when None
        the world's own: constant without rotating contacts, the initial ones at
        ``t0``, else `InvalidInputError`) or the generalised ``(u, omega)`` (6N,)."""
        masses = self.masses_at(t)
        if u.size == 6 * self.n:
            u, omega = u[: 3 * self.n], u[3 * self.n :].reshape(self.n, 3)
        else:
            omega = self._angular_velocities(t, angular_velocities)
        translational = 0.5 * float(np.sum(masses * np.sum(u.reshape(self.n, 3) ** 2, axis=1)))
        if not np.any(omega):
            return translational
        return translational + 0.5 * float(np.sum(self.inertia_at(t) * np.sum(omega**2, axis=1)))

    def potential_energy(self, t: float, q: np.ndarray) -> float:
        """Gravitational potential ``-sum m_i g . q_i`` (J); user forces are not included."""
        masses = self.masses_at(t)
        return -float(np.sum(masses * (q.reshape(self.n, 3) @ self.gravity)))

    # -- kinematics ----------------------------------------------------------------
    def advance(self, q: np.ndarray, u: np.ndarray, h: float) -> np.ndarray:
        """``q + h u``, wrapped into the periodic cell (``u`` (3N,) or the generalised (6N,))."""
        q_next = q + h * u[: 3 * self.n]
        if self.periodic is not None:
            q_next = self.periodic.wrap(q_next.reshape(self.n, 3)).reshape(-1)
        return q_next

    def speed_slack(self, t_next: float, h: float) -> float:
        """Speed (m/s) above the search bound ``s`` that the search skin still covers."""
        return SEARCH_SKIN * float(self.radii_at(t_next).min(initial=np.inf) if self.n else 0.0) / (2.0 * h)

    def body_speeds(self, u: np.ndarray) -> np.ndarray:
        """Speed of each sphere's centre (N,) (m/s); ``u`` (3N,) or the generalised (6N,)."""
        return np.linalg.norm(u[: 3 * self.n].reshape(self.n, 3), axis=1)

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
        return sphere_constraints(self, t_next, q, h, max_speed)

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
        orientation: a turning mesh's (`granular.walls.meshes.TriangleMesh.rotation`), the
        identity for the others (a turning cylinder or plane looks the same)."""
        return np.array([wall.rotation(t) if hasattr(wall, "rotation") else np.eye(3) for wall in self.walls]).reshape(
            -1, 3, 3
        )

    @property
    def has_friction(self) -> bool:
        """Whether any contact of this world can carry friction."""
        return self.friction > 0.0 or any((p.friction or 0.0) > 0.0 for p in self.planes)

    @property
    def has_tangential_restitution(self) -> bool:
        """Whether any contact of this world has a tangential restitution ``et > 0``."""
        return self.tangential_restitution > 0.0 or any(
            (getattr(p, "tangential_restitution", None) or 0.0) > 0.0 for p in self.planes
        )

    @property
    def has_rolling_friction(self) -> bool:
        """Whether any contact of this world can carry rolling resistance."""
        return self.rolling_friction > 0.0 or any((p.rolling_friction or 0.0) > 0.0 for p in self.planes)

    # -- admissibility -------------------------------------------------------------
    def wall_rows_at(self, constraints: ConstraintSet, t: float, positions: np.ndarray):
        """``(gaps (m,) (m), normals (m, 3))`` of a step's wall rows ``constraints`` with
        the spheres at ``positions`` (flat 3N, m) and the walls where they are at ``t``
        (s): the distances and unit normals (into the admissible side) there, not their
        linearisation at the step's start, for the first row of a sphere on a surface
        that is concave somewhere (``curved``: a `Cylinder`'s side, a `Cone`); NaN for
        pairs and the other rows. A plane's row is its gap at the end of the step
        already (its normal does not turn); a convex rim's, as a `Panel`'s, errs
        towards opening, as a pair's does; meshes are not covered.

        The gap closure of frictional steps closes these (`granular.contact.gap_closure`):
        a linearised gap misses the curvature of a surface, by about ``delta^2 / (2 R)``
        for a tangential travel ``delta`` along a surface of radius ``R``, which inside
        a drum or a funnel is an overlap. A pair's linearised gap errs only the other
        way: ``n . (x_j - x_i) <= |x_j - x_i|`` for the unit normal ``n`` of the step's
        start."""
        centres = positions.reshape(self.n, 3)
        radii = self.radii_at(t)
        gaps, normals = np.full(constraints.size, np.nan), np.full((constraints.size, 3), np.nan)
        first = constraints.wall >= 0
        if constraints.feature is not None:
            first &= constraints.feature == 0
        for k in np.unique(constraints.wall[first]):
            surface = self.surfaces[k]
            if not getattr(surface, "curved", False):
                continue
            rows = np.flatnonzero(first & (constraints.wall == k))
            spheres = constraints.i[rows]
            gaps[rows], normals[rows] = surface.gaps_at(t, centres[spheres], radii[spheres])
        return gaps, normals

    def check_admissible(self, t: float, positions: np.ndarray) -> None:
        """Raise `OverlapError` naming the first overlapping pair or sphere-wall contact."""
        raise_if_overlapping(
            t, positions.reshape(self.n, 3), self.radii_at(t), self.periodic, self.surfaces, self.surface_name
        )

    @functools.cached_property
    def surface_names(self) -> tuple:
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
        names = self.surface_names
        return names[k] if 0 <= k < len(names) else f"wall {k}"

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
            **(
                {
                    "flows": {
                        "inlets": [inlet.describe() for inlet in self.inlets],
                        "outlets": [outlet.describe() for outlet in self.outlets],
                    }
                }
                if self.has_flows
                else {}
            ),
        }
