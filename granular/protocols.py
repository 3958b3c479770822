"""What a system offers the schemes, stated as `typing.Protocol` classes.

A scheme declares which of these it needs (`granular.schemes.registry`), and
`Simulation` refuses, before the first step, a system that does not offer it.

- `MechanicalSystem`: what every scheme reads (`SphereWorld`, `ConstrainedSystem`).
- `NeighbourSearchSystem`: a mechanical system of bodies found by a neighbour
  search (`SphereWorld`): its constraints are built for a speed bound, so the
  scheme reports its bodies' speeds and may have to widen the search.
- `CoordinateSystem`: generalised coordinates with a list of unilateral
  constraints ``g_k(t, q) >= 0`` evaluated one by one (`ConstrainedSystem`), as
  the schemes of Dzonou, Monteiro Marques and Paoli (2009) and Paoli and
  Schatzman (1999) need.
- `LinearSystem`: a coordinate system ``M q'' + S q = F(t)`` with a constant mass
  ``M``, a stiffness ``S`` and a load ``F`` (a `ConstrainedSystem` built with
  ``stiffness=`` and ``load=``, or `granular.systems.beam.Beam`), as the Newmark
  scheme of Dumont and Paoli (2006) needs.

The checks are structural (`isinstance` on a runtime-checkable protocol looks for
the names); `is_linear` adds that the stiffness is set, since every
`ConstrainedSystem` has the attribute.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class MechanicalSystem(Protocol):
    """Coordinates ``q`` and velocities ``u`` (flat arrays of ``prod(state_shape)``),
    a mass metric, forces and unilateral constraints, energies, a description."""

    @property
    def state_shape(self) -> tuple: ...

    def initial_state(self) -> tuple:
        """``(t0, q0, u0)``: the start time (s) and flat state arrays."""

    def metric(self, t: float, q: np.ndarray):
        """The mass matrix as a `granular.metric` object (``solve``, ``kinetic_energy``)."""

    def force(self, t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Generalised force (N or N m), flat like ``u``."""

    def constraints(self, t_next: float, q: np.ndarray, h: float, max_speed: float):
        """The step's linearised constraints, a `granular.constraints.ConstraintSet`."""

    def advance(self, q: np.ndarray, u: np.ndarray, h: float) -> np.ndarray:
        """Positions after moving at velocity ``u`` for ``h`` seconds."""

    def kinetic_energy(self, t: float, q: np.ndarray, u: np.ndarray) -> float: ...

    def potential_energy(self, t: float, q: np.ndarray) -> float: ...

    def describe(self) -> dict:
        """What a run file stores about the system (plain data, for drawing)."""


@runtime_checkable
class NeighbourSearchSystem(MechanicalSystem, Protocol):
    """Bodies whose contacts come from a neighbour search (`SphereWorld`)."""

    n: int

    def radii_at(self, t: float) -> np.ndarray: ...

    def masses_at(self, t: float) -> np.ndarray: ...

    def body_speeds(self, u: np.ndarray) -> np.ndarray:
        """Speed of each body (m/s): the search margin must cover them."""

    def speed_slack(self, t_next: float, h: float) -> float:
        """Speed a body may exceed the bound by without a wider search (m/s)."""

    def packing_fraction(self, t: float) -> float | None: ...

    def initial_rotation(self) -> tuple:
        """``(angular velocities (n, 3), orientations (n, 4))`` at the start."""

    @property
    def rotates(self) -> bool:
        """Whether contacts turn the bodies (friction), so steps carry ``omega``."""

    @property
    def has_moving_walls(self) -> bool:
        """Whether some wall translates or turns (runs then record where they are)."""

    def wall_displacements(self, t: float) -> np.ndarray:
        """Shift (W, 3) (m) of each wall at ``t`` from its described position."""


@runtime_checkable
class CoordinateSystem(MechanicalSystem, Protocol):
    """Generalised coordinates ``q`` (d,) with constraints ``g_k(t, q) >= 0``."""

    constraint_list: tuple
    restitution: float
    constant_metric: bool

    @property
    def dimension(self) -> int: ...

    def gaps(self, t: float, q: np.ndarray) -> np.ndarray:
        """``g_k(t, q)`` of every constraint (m,)."""

    def gradients(self, t: float, q: np.ndarray) -> np.ndarray:
        """Rows ``grad g_k(t, q)`` (m, d)."""


@runtime_checkable
class LinearSystem(CoordinateSystem, Protocol):
    """``M q'' + S q = F(t)`` with a constant mass: ``stiffness`` ``S`` (d, d) and
    ``load(t)`` ``F`` (d,). Optional refinements a scheme may use when they are
    not None: ``mean_load(t0, t1)`` exactly, ``coordinate_bounds = (i, lower,
    upper)`` when the constraints bound one coordinate, ``penalty`` (normal
    compliance in their place) and ``harmonic_load() -> (P_sin, P_cos, w)``."""

    stiffness: np.ndarray | None
    coordinate_bounds: tuple | None
    penalty: object | None

    def load(self, t: float) -> np.ndarray: ...

    def mean_load(self, t0: float, t1: float) -> np.ndarray: ...

    def harmonic_load(self) -> tuple | None: ...


def is_linear(system) -> bool:
    """Whether ``system`` offers `LinearSystem` with its stiffness set."""
    return isinstance(system, LinearSystem) and system.stiffness is not None and system.constant_metric


def searches_neighbours(system) -> bool:
    """Whether ``system`` offers `NeighbourSearchSystem`."""
    return isinstance(system, NeighbourSearchSystem)


def has_friction(system) -> bool:
    """Whether any of ``system``'s contacts carries a Coulomb coefficient ``mu > 0``
    (both `SphereWorld` and `ConstrainedSystem` say so with ``has_friction``)."""
    return bool(getattr(system, "has_friction", False))
