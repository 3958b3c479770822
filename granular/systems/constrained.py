"""ConstrainedSystem: generalised coordinates, a mass matrix M(q), forces and
unilateral constraints g_k(t, q) >= 0, the setting of Dzonou, Monteiro Marques and Paoli
(*A convergence result for a vibro-impact problem with a general inertia operator*, 2009)
and of Paoli and Schatzman (*A numerical scheme for impact problems*, 1999).

State ``q`` (d,) and ``u = dq/dt`` (d,) in the system's own units. The force is
``f(t, q, u)`` (d,), a generalised force conjugate to ``q`` (so ``M(q) du/dt = f``
away from contacts). We take the velocity ``u`` rather than the momentum
``p = M(q) u`` of both papers: call ``f(t, q, M(q) u)`` inside your callable
if your model is written in ``p``.

Admissible means ``g_k(t, q) >= 0`` (the convention of the whole package). Dzonou,
Monteiro Marques and Paoli (2009) write ``g <= 0``: pass ``-g`` here.

Linear systems. A finite-element model ``M q'' + S q = F(t)`` with obstacles is a
`ConstrainedSystem` built with ``stiffness=S`` and ``load=F`` instead of ``force``:

    bar = ConstrainedSystem(q0, u0, mass=M, stiffness=S, load=lambda t: F,
                            constraints=[Constraint(gap=lambda t, q: gap - q[-1],
                                                    gradient=lambda t, q: -e_tip)])
    Simulation(bar, dt, scheme="newmark", beta=0.25)

Its force is ``F(t) - S q`` and, unless ``potential`` is given, its potential
energy ``q^T S q / 2``; it offers `granular.protocols.LinearSystem`, which the
Newmark scheme of Dumont and Paoli (2006) needs, and the explicit schemes refuse
it at a step beyond their stability limit ``2 / w_max``
(`granular.schemes.registry`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..constraints import ConstraintSet
from ..contact_laws import RowLaws
from ..errors import InvalidInputError, MassMatrixError, OverlapError
from ..metric import DenseMetric
from ..validation import checked_force, finite_array


@dataclass(frozen=True)
class Constraint:
    """One unilateral constraint ``g(t, q) >= 0``.

    Parameters
    ----------
    gap : callable ``(t, q) -> float``
        The constraint function; admissible when >= 0.
    gradient : callable ``(t, q) -> (d,)`` or None
        ``grad_q g``. ``None`` uses central finite differences with step
        ``1e-7 * max(1, |q|)`` (second-order accurate, about 1e-9 relative error
        for smooth ``g``); give it analytically when you can.
    restitution : float or None
        Coefficient of this constraint; ``None`` uses the system's.
    friction : float
        Coulomb coefficient ``mu >= 0`` (0: frictionless).
    tangent : callable ``(t, q) -> (s, d)`` or None
        Tangential Jacobian rows for friction (``s = 1`` in the plane, 2 in 3D).
    name : str
        Shown in error messages and contact tables.
    """

    gap: Callable
    gradient: Callable | None = None
    restitution: float | None = None
    friction: float = 0.0
    tangent: Callable | None = None
    name: str = ""

    def __post_init__(self):
        if not callable(self.gap):
            raise InvalidInputError("Constraint gap must be a callable (t, q) -> float")
        if self.gradient is not None and not callable(self.gradient):
            raise InvalidInputError("Constraint gradient must be a callable (t, q) -> (d,) or None")
        if self.restitution is not None and not 0.0 <= self.restitution <= 1.0:
            raise InvalidInputError(f"Constraint restitution must lie in [0, 1], got {self.restitution}")
        if not self.friction >= 0.0:
            raise InvalidInputError(f"Constraint friction must be >= 0, got {self.friction}")

    def value(self, t: float, q: np.ndarray) -> float:
        return float(self.gap(t, q))

    def grad(self, t: float, q: np.ndarray) -> np.ndarray:
        if self.gradient is not None:
            return np.asarray(self.gradient(t, q), dtype=float)
        return finite_difference_gradient(lambda x: self.gap(t, x), q)


def finite_difference_gradient(function: Callable, q: np.ndarray) -> np.ndarray:
    """Central differences of a scalar function at ``q`` (d,)."""
    step = 1e-7 * max(1.0, float(np.abs(q).max(initial=0.0)))
    gradient = np.empty(q.size)
    for k in range(q.size):
        offset = np.zeros(q.size)
        offset[k] = step
        gradient[k] = (function(q + offset) - function(q - offset)) / (2.0 * step)
    return gradient


class ConstrainedSystem:
    """A mechanical system with coordinates ``q`` (d,), inertia ``M`` and constraints.

    Parameters
    ----------
    q0, u0 : (d,) arrays
        Initial configuration and velocity. ``q0`` must be admissible, and ``u0``
        must not point out of the admissible set at an active constraint
        (Paoli and Schatzman, 1999, (1.7)): ``grad g_k . u0 >= 0`` wherever ``g_k(t0, q0) = 0``.
    mass : (d, d) array or callable ``q -> (d, d)``
        Symmetric positive definite mass matrix, constant or configuration-dependent.
        Checked at ``q0`` and at every evaluation.
    force : callable ``(t, q, u) -> (d,)`` or None
        Generalised force. None means no force.
    constraints : sequence of `Constraint`
    restitution : float
        Default coefficient of restitution in [0, 1].
    potential : callable ``(t, q) -> float`` or None
        Potential energy of the conservative part of ``force``, for the energy
        bookkeeping only (J).
    drawing : dict or None
        How a renderer draws the system (``{"kind": ...}``, see `granular.render`).
    t0 : float
        Initial time.
    stiffness : (d, d) array or None
        ``S`` of a linear system ``M q'' + S q = F(t)`` (module docstring): symmetric,
        with a constant ``mass``, and ``force`` left None.
    load : callable ``t -> (d,)`` or None
        ``F(t)`` of a linear system (None: no load); only with ``stiffness``.

    Attributes ``coordinate_bounds`` and ``penalty`` (None here) and the methods
    ``load``, ``mean_load`` and ``harmonic_load`` complete
    `granular.protocols.LinearSystem`; `granular.systems.beam.Beam` refines them.
    """

    #: ``(i, lower, upper)`` when the constraints are exactly ``lower <= q_i <= upper``
    #: (the Newmark scheme then projects by Lemma 4.1 of Dumont and Paoli, 2006).
    coordinate_bounds: tuple[int, float, float] | None = None
    #: Normal compliance replacing the constraints (`granular.systems.beam.TipPenalty`).
    penalty: object | None = None

    def __init__(
        self,
        q0,
        u0,
        mass,
        force: Callable | None = None,
        constraints=(),
        restitution: float = 0.0,
        potential: Callable | None = None,
        drawing: dict | None = None,
        t0: float = 0.0,
        stiffness=None,
        load: Callable | None = None,
    ):
        q0 = finite_array(q0, "q0")
        if q0.ndim != 1 or q0.size < 1:
            raise InvalidInputError(f"q0 must be a vector (d,), got shape {q0.shape}")
        self.d = q0.size
        u0 = finite_array(u0, "u0", (self.d,))
        self.t0 = float(t0)
        self.mass = mass
        self.constant_metric = not callable(mass)
        self._constant = DenseMetric(np.asarray(mass, dtype=float), "mass") if self.constant_metric else None
        if self._constant is not None and self._constant.matrix().shape != (self.d, self.d):
            raise MassMatrixError(
                f"mass has shape {self._constant.matrix().shape}, expected ({self.d}, {self.d}) for q0 of size {self.d}"
            )
        if not self.constant_metric:
            self.metric(self.t0, q0)
        if force is not None and not callable(force):
            raise InvalidInputError("force must be a callable (t, q, u) -> (d,) or None")
        self.force_callable = force
        self.stiffness, self._load = self._linear_part(stiffness, load, force)
        self.constraint_list = tuple(constraints)
        for k, constraint in enumerate(self.constraint_list):
            if not isinstance(constraint, Constraint):
                raise InvalidInputError(f"constraints[{k}] must be a Constraint, got {type(constraint).__name__}")
        if not 0.0 <= restitution <= 1.0:
            raise InvalidInputError(f"restitution must lie in [0, 1], got {restitution}")
        self.restitution = float(restitution)
        if potential is None and self.stiffness is not None:
            potential = self._elastic_energy
        self.potential = potential
        self.drawing = dict(drawing) if drawing else {"kind": "coordinates"}
        self.normal_dimension = self.d
        self._check_initial_state(q0, u0)
        self.q0, self.u0 = q0, u0

    # -- the system protocol used by the schemes ------------------------------------
    @property
    def dimension(self) -> int:
        return self.d

    @property
    def state_shape(self) -> tuple:
        return (self.d,)

    def initial_state(self):
        return self.t0, self.q0.copy(), self.u0.copy()

    def metric(self, t: float, q: np.ndarray) -> DenseMetric:
        """The kinetic metric ``M(q)``."""
        if self._constant is not None:  # exactly when constant_metric
            return self._constant
        matrix = np.asarray(self.mass(q), dtype=float)
        if matrix.shape != (self.d, self.d):
            raise MassMatrixError(f"mass(q) returned shape {matrix.shape}, expected ({self.d}, {self.d})")
        return DenseMetric(matrix, f"mass matrix at q = {np.array2string(q, precision=4)}")

    def force(self, t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        if self.stiffness is not None:
            return checked_force(t, self.load(t) - self.stiffness @ q, (self.d,))
        if self.force_callable is None:
            return np.zeros(self.d)
        return checked_force(t, self.force_callable(t, q, u), (self.d,))

    # -- the linear part (granular.protocols.LinearSystem) ----------------------------
    def load(self, t: float) -> np.ndarray:
        """``F(t)`` (d,) of a linear system; zero without a load."""
        if self._load is None:
            return np.zeros(self.d)
        value = np.asarray(self._load(t), dtype=float)
        if value.shape != (self.d,) or not np.all(np.isfinite(value)):
            raise InvalidInputError(f"load({t:.6g}) must be a finite vector ({self.d},), got shape {value.shape}")
        return value

    def mean_load(self, t0: float, t1: float) -> np.ndarray:
        """The mean of ``F`` over ``[t0, t1]`` by Simpson's rule (exact for a load
        quadratic in time; a subclass with a closed form overrides it)."""
        return (self.load(t0) + 4.0 * self.load(0.5 * (t0 + t1)) + self.load(t1)) / 6.0

    def harmonic_load(self):
        """``(P_sin, P_cos, w)`` when ``F(t) = P_sin sin(w t) + P_cos cos(w t)``, else None."""
        return None

    def _linear_part(self, stiffness, load, force):
        """``(S, F)`` checked, or ``(None, None)`` for a system given by its force."""
        if stiffness is None:
            if load is not None:
                raise InvalidInputError("load= needs stiffness= (a linear system M q'' + S q = F(t))")
            return None, None
        if force is not None:
            raise InvalidInputError("give either force= or stiffness= and load=, not both")
        if not self.constant_metric:
            raise InvalidInputError("a linear system (stiffness=) needs a constant mass matrix")
        S = finite_array(stiffness, "stiffness", (self.d, self.d))
        if not np.allclose(S, S.T, rtol=1e-12, atol=0.0):
            raise InvalidInputError("stiffness must be a symmetric matrix")
        if load is not None and not callable(load):
            raise InvalidInputError("load must be a callable t -> (d,) or None")
        return S, load

    def _elastic_energy(self, t: float, q: np.ndarray) -> float:
        return 0.5 * float(q @ (self.stiffness @ q))

    def gaps(self, t: float, q: np.ndarray) -> np.ndarray:
        """``g_k(t, q)`` for every constraint (m,)."""
        return np.array([c.value(t, q) for c in self.constraint_list])

    def gradients(self, t: float, q: np.ndarray) -> np.ndarray:
        """Rows ``grad g_k(t, q)`` (m, d), shape-checked."""
        rows = np.zeros((len(self.constraint_list), self.d))
        for k, constraint in enumerate(self.constraint_list):
            row = constraint.grad(t, q)
            if row.shape != (self.d,):
                raise InvalidInputError(
                    f"gradient of constraint {self._label(k)} has shape {row.shape}, expected ({self.d},)"
                )
            if not np.all(np.isfinite(row)):
                raise InvalidInputError(f"gradient of constraint {self._label(k)} is not finite at t = {t:.6g}")
            rows[k] = row
        return rows

    def constraints(self, t_next: float, q: np.ndarray, h: float, max_speed: float = np.inf) -> ConstraintSet:
        """Every constraint, linearised at ``q`` and evaluated at ``t_next``."""
        m = len(self.constraint_list)
        if m == 0:
            return ConstraintSet.empty(self.d, self.d)
        rows = self.gradients(t_next, q)
        index = np.arange(m, dtype=np.int64)
        minus = -np.ones(m, dtype=np.int64)
        restitution = np.array(
            [self.restitution if c.restitution is None else c.restitution for c in self.constraint_list]
        )
        friction = np.array([c.friction for c in self.constraint_list])
        return ConstraintSet(
            gap=self.gaps(t_next, q),
            jacobian=sp.csr_matrix(rows),
            laws=RowLaws(restitution, friction),
            i=index,
            j=minus,
            wall=minus,
            normal=rows,
            tangents=self._tangents(t_next, q, friction),
        )

    @property
    def has_friction(self) -> bool:
        """Whether any constraint carries a Coulomb coefficient ``mu > 0``."""
        return any(c.friction > 0.0 for c in self.constraint_list)

    def _tangents(self, t, q, friction):
        if not np.any(friction > 0.0):
            return None
        blocks = []
        for k, constraint in enumerate(self.constraint_list):
            if constraint.tangent is None:
                if friction[k] > 0.0:
                    raise InvalidInputError(f"constraint {self._label(k)} has friction but no tangent")
                blocks.append(None)
                continue
            blocks.append(np.atleast_2d(np.asarray(constraint.tangent(t, q), dtype=float)))
        s = max(b.shape[0] for b in blocks if b is not None)
        tangents = np.zeros((len(blocks), s, self.d))
        for k, block in enumerate(blocks):
            if block is not None:
                tangents[k, : block.shape[0]] = block
        return tangents

    def advance(self, q: np.ndarray, u: np.ndarray, h: float) -> np.ndarray:
        return q + h * u

    def kinetic_energy(self, t: float, q: np.ndarray, u: np.ndarray) -> float:
        return self.metric(t, q).kinetic_energy(u)

    def potential_energy(self, t: float, q: np.ndarray) -> float:
        return 0.0 if self.potential is None else float(self.potential(t, q))

    def describe(self) -> dict:
        return dict(self.drawing)

    # -- checks --------------------------------------------------------------------
    def _label(self, k: int) -> str:
        name = self.constraint_list[k].name
        return f"{k} ({name})" if name else str(k)

    def _check_initial_state(self, q0, u0) -> None:
        if not self.constraint_list:
            return
        gaps = self.gaps(self.t0, q0)
        rows = self.gradients(self.t0, q0)
        scale = max(1.0, float(np.abs(q0).max()))
        for k, gap in enumerate(gaps):
            if gap < -1e-12 * scale:
                raise OverlapError(
                    f"initial state violates constraint {self._label(k)}: g = {gap:.6g} < 0",
                    pair=("constraint", k),
                    overlap=float(-gap),
                )
            if abs(gap) <= 1e-12 * scale and rows[k] @ u0 < -1e-12 * max(1.0, float(np.abs(u0).max())):
                raise InvalidInputError(
                    f"initial velocity leaves the admissible set through active constraint {self._label(k)}: "
                    f"grad g . u0 = {rows[k] @ u0:.6g} < 0 (Paoli and Schatzman, 1999, (1.7))"
                )
