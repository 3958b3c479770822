"""An Euler-Bernoulli beam clamped to a vibrating support, its free end between two
obstacles, after Dumont and Paoli (*Vibrations of a beam between obstacles. Convergence of
a fully discretized approximation*, 2006, sections 1, 2 and 4).

Physics. The transverse displacement ``u~(x, t)``, ``0 <= x <= L``, obeys
``u~_tt + k^2 u~_xxxx = f~`` (``k^2 = EI / (rho S)``, m^4 s^-2), clamped to a support
moving as ``phi(t) = a sin(w t)`` (``u~(0) = phi``, ``u~_x(0) = 0``), free at ``x = L``
(``u~_xx = 0``) and stopped there by rigid obstacles ``lower <= u~(L, t) <= upper``
(m). The lifting ``h(x) = 1 - 2 (x/L)^2 + 4/3 (x/L)^3 - 1/3 (x/L)^4`` (section 1)
turns the unknown into ``u = u~ - h phi``, which is clamped homogeneously; since
``h(L) = h''(L) = h'''(L) = 0`` the tip conditions and the obstacles are unchanged,
and the load becomes ``f = f~ - h phi'' - k^2 h'''' phi`` with ``h'''' = -8 / L^4``.
We take ``f~ = 0`` (no gravity, as in the paper's example).

Discretisation. ``J`` Hermite cubic elements of length ``h = L / J``; the
coordinates are ``q = (u(x_1), u'(x_1), ..., u(x_J), u'(x_J))`` (2J,), values in m,
slopes dimensionless, the clamped node ``x_0`` removed. The tip displacement is
``q[2J - 2]`` (the paper's ``u_{2J-1}``). Element matrices are those of section 4; the
whole system is multiplied by the linear density ``rho S`` (kg/m):

    M q'' + S q = F(t),   M = rho S (phi_i, phi_j),   S = rho S k^2 (phi_i'', phi_j''),
    F_i(t) = rho S (f(., t), phi_i) = rho S a sin(w t) (w^2 (h, phi_i) + 8 k^2 / L^4 (1, phi_i)).

With ``linear_density = 1`` (the default) these are the paper's equations, divided
by ``rho S``: every force, impulse and penalty stiffness is per kg/m of beam (SI
value divided by ``rho S``). With the pipe's ``rho S = 0.11938`` kg/m they are in SI
units (kg, N, N s, N/m). Constrained motions do not depend on ``rho S``; the motion
under a penalty of a given stiffness does.

`Beam` is a `ConstrainedSystem`: constant ``M``, force ``-S q + F(t)``, two
constraints on the tip (gaps ``q_tip - lower >= 0`` and ``upper - q_tip >= 0``,
in that order; an infinite bound is left out). `Beam.penalised` gives the normal
compliance variant (section 1, Remark 4.2): no constraint, and the tip force
``-kappa [max(q_tip - upper, 0) - max(lower - q_tip, 0)]`` with ``kappa = 1 / eps``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import InvalidInputError
from ..validation import finite_array, positive_scalar
from .constrained import Constraint, ConstrainedSystem

#: Gauss-Legendre nodes and weights on [0, 1], exact for degree 7 (lifting x cubic).
_GAUSS_S, _GAUSS_W = np.polynomial.legendre.leggauss(4)
_GAUSS_S, _GAUSS_W = 0.5 * (_GAUSS_S + 1.0), 0.5 * _GAUSS_W


# -- Hermite cubic elements ------------------------------------------------------------


def hermite_basis(s: np.ndarray, h: float) -> np.ndarray:
    """The four Hermite cubics of an element of length ``h`` at ``s = (x - x_e) / h``
    in [0, 1]; shape (4, len(s)), ordered (value, slope) at the left then right node."""
    s = np.asarray(s, dtype=float)
    return np.array(
        [1.0 - 3.0 * s**2 + 2.0 * s**3, h * (s - 2.0 * s**2 + s**3), 3.0 * s**2 - 2.0 * s**3, h * (s**3 - s**2)]
    )


def element_mass(h: float) -> np.ndarray:
    """``(phi_i, phi_j)`` on one element (4, 4), section 4 of Dumont and Paoli, 2006 (m)."""
    return (
        h
        / 420.0
        * np.array(
            [
                [156.0, 22.0 * h, 54.0, -13.0 * h],
                [22.0 * h, 4.0 * h**2, 13.0 * h, -3.0 * h**2],
                [54.0, 13.0 * h, 156.0, -22.0 * h],
                [-13.0 * h, -3.0 * h**2, -22.0 * h, 4.0 * h**2],
            ]
        )
    )


def element_stiffness(h: float, k2: float) -> np.ndarray:
    """``k^2 (phi_i'', phi_j'')`` on one element (4, 4), section 4 of Dumont and Paoli, 2006."""
    return (
        2.0
        * k2
        / h**3
        * np.array(
            [
                [6.0, 3.0 * h, -6.0, 3.0 * h],
                [3.0 * h, 2.0 * h**2, -3.0 * h, h**2],
                [-6.0, -3.0 * h, 6.0, -3.0 * h],
                [3.0 * h, h**2, -3.0 * h, 2.0 * h**2],
            ]
        )
    )


def _element_dofs(e: int) -> np.ndarray:
    """Global indices of element ``e``'s local dofs; -1 for the clamped node 0."""
    return np.array([2 * e - 2, 2 * e - 1, 2 * e, 2 * e + 1])


def assemble(local: np.ndarray, elements: int) -> np.ndarray:
    """Assemble the same (4, 4) element matrix over ``elements`` elements (2J, 2J),
    dropping the clamped node's two dofs."""
    size = 2 * elements
    matrix = np.zeros((size, size))
    for e in range(elements):
        dofs = _element_dofs(e)
        keep = dofs >= 0
        matrix[np.ix_(dofs[keep], dofs[keep])] += local[np.ix_(keep, keep)]
    return matrix


def assemble_load(function, length: float, elements: int) -> np.ndarray:
    """``(function, phi_i)`` (2J,) by 4-point Gauss quadrature per element (exact for
    polynomials of degree <= 4 such as the lifting)."""
    h = length / elements
    vector = np.zeros(2 * elements)
    for e in range(elements):
        values = function(h * (e + _GAUSS_S))
        local = hermite_basis(_GAUSS_S, h) @ (_GAUSS_W * values) * h
        dofs = _element_dofs(e)
        keep = dofs >= 0
        vector[dofs[keep]] += local[keep]
    return vector


def lifting(x: np.ndarray, length: float) -> np.ndarray:
    """``h(x)`` of section 1: ``h(0) = 1``, ``h'(0) = h(L) = h''(L) = h'''(L) = 0``."""
    xi = np.asarray(x, dtype=float) / length
    return 1.0 - 2.0 * xi**2 + 4.0 / 3.0 * xi**3 - xi**4 / 3.0


def lifting_slope(x: np.ndarray, length: float) -> np.ndarray:
    """``h'(x)`` (1/m)."""
    xi = np.asarray(x, dtype=float) / length
    return (-4.0 * xi + 4.0 * xi**2 - 4.0 / 3.0 * xi**3) / length


def interpolate(q: np.ndarray, length: float, samples_per_element: int = 8):
    """The Hermite interpolant of ``q`` (2J,): ``(x, u(x))``, both
    (J * samples_per_element + 1,), in m."""
    q = np.asarray(q, dtype=float)
    elements = q.size // 2
    h = length / elements
    s = np.linspace(0.0, 1.0, samples_per_element + 1)[:-1]
    basis = hermite_basis(s, h)
    nodal = np.concatenate([[0.0, 0.0], q]).reshape(elements + 1, 2)
    x, u = [], []
    for e in range(elements):
        x.append(h * (e + s))
        u.append(np.concatenate([nodal[e], nodal[e + 1]]) @ basis)
    return np.append(np.concatenate(x), length), np.append(np.concatenate(u), q[-2])


# -- the penalty (normal compliance) ---------------------------------------------------


@dataclass(frozen=True)
class TipPenalty:
    """Normal compliance on coordinate ``index``: the force on it is
    ``-stiffness [max(x - upper, 0) - max(lower - x, 0)]`` (Dumont and Paoli, 2006,
    section 1), a spring of ``stiffness`` (the paper's ``1/eps``) against each obstacle."""

    index: int
    lower: float
    upper: float
    stiffness: float

    def force(self, x: float) -> float:
        """Force on the coordinate at displacement ``x`` (restoring)."""
        return -self.stiffness * (max(x - self.upper, 0.0) - max(self.lower - x, 0.0))

    def energy(self, x: float) -> float:
        """Elastic energy stored in the springs at ``x``."""
        return 0.5 * self.stiffness * (max(x - self.upper, 0.0) ** 2 + max(self.lower - x, 0.0) ** 2)


# -- the system ------------------------------------------------------------------------


class Beam(ConstrainedSystem):
    """The beam of Dumont and Paoli (2006) between two obstacles (module docstring).
    Defaults are the steel pipe of their section 4.

    Parameters
    ----------
    length : float
        ``L`` (m).
    k2 : float
        ``k^2 = EI / (rho S)`` (m^4 s^-2).
    elements : int
        ``J``, the number of Hermite elements; ``2J`` coordinates.
    support_amplitude, support_frequency : float
        ``phi(t) = a sin(w t)``: ``a`` (m), ``w`` (rad/s).
    lower, upper : float
        Obstacles ``lower <= u(L) <= upper`` (m), ``lower < 0 < upper``; ``-inf`` /
        ``inf`` leave one out.
    linear_density : float
        ``rho S`` (kg/m) multiplying M, S, F; 1 gives the paper's scaled equations.
    q0, u0 : (2J,) arrays or None
        Initial ``q`` and ``dq/dt``. Default: the beam at rest in the lab frame,
        ``u~ = u~_t = 0``, i.e. ``q0 = 0`` and ``u0`` the Hermite interpolant of
        ``-phi'(0) h`` (the paper's ``v_0 = -2h``).
    penalty_stiffness : float or None
        If given, normal compliance of that stiffness replaces the constraints.
    radius : float
        Tube radius used only for drawing (m); the pipe's outer radius.

    Attributes
    ----------
    mass, stiffness : (2J, 2J) arrays
        ``M`` and ``S`` (symmetric positive definite).
    load_amplitude : (2J,) array
        ``F(t) = load_amplitude sin(w t)``; see `load`, `mean_load`.
    tip : int
        Index of ``u(L)`` in ``q`` (``2J - 2``).
    lower, upper : float
        The obstacles (m).
    coordinate_bounds : ``(tip, lower, upper)`` or None
        Declares the constraints as bounds on one coordinate, for Lemma 4.1
        (`granular.schemes.newmark`); None for the penalised beam.
    penalty : `TipPenalty` or None
        The normal compliance of a penalised beam.
    nodes : (J,) array
        ``x_1 .. x_J`` (m).
    """

    def __init__(
        self,
        length: float = 1.501,
        k2: float = 282.84,
        elements: int = 19,
        support_amplitude: float = 0.2,
        support_frequency: float = 10.0,
        lower: float = -0.1,
        upper: float = 0.1,
        linear_density: float = 1.0,
        q0=None,
        u0=None,
        penalty_stiffness: float | None = None,
        radius: float = 0.005,
    ):
        if int(elements) != elements or elements < 1:
            raise InvalidInputError(f"elements must be a positive integer, got {elements}")
        self.length = positive_scalar(length, "length")
        self.k2 = positive_scalar(k2, "k2")
        self.elements = int(elements)
        self.support_amplitude = float(finite_array(support_amplitude, "support_amplitude"))
        self.support_frequency = positive_scalar(support_frequency, "support_frequency")
        self.lower, self.upper = float(lower), float(upper)
        if not (self.lower < 0.0 < self.upper):
            raise InvalidInputError(f"obstacles must satisfy lower < 0 < upper, got lower = {lower}, upper = {upper}")
        self.linear_density = positive_scalar(linear_density, "linear_density")
        self.radius = float(radius)
        self.tip = 2 * self.elements - 2
        self.element_length = self.length / self.elements
        self.nodes = self.element_length * np.arange(1, self.elements + 1)
        rho_s, h = self.linear_density, self.element_length
        stiffness = rho_s * assemble(element_stiffness(h, self.k2), self.elements)
        mass = rho_s * assemble(element_mass(h), self.elements)
        # F(t) = load_amplitude sin(w t): support inertia -h phi'' and -k^2 h'''' phi.
        w = self.support_frequency
        self.load_amplitude = (
            rho_s
            * self.support_amplitude
            * (
                w**2 * assemble_load(lambda x: lifting(x, self.length), self.length, self.elements)
                + 8.0 * self.k2 / self.length**4 * assemble_load(np.ones_like, self.length, self.elements)
            )
        )
        self.penalty = (
            None
            if penalty_stiffness is None
            else TipPenalty(self.tip, self.lower, self.upper, positive_scalar(penalty_stiffness, "penalty_stiffness"))
        )
        self.coordinate_bounds = None if self.penalty else (self.tip, self.lower, self.upper)
        q0 = np.zeros(2 * self.elements) if q0 is None else q0
        u0 = self.rest_velocity() if u0 is None else u0
        super().__init__(
            q0,
            u0,
            mass=mass,
            stiffness=stiffness,
            load=self.load,
            constraints=self._constraints(),
            potential=self._potential,
            drawing=self._drawing(),
        )
        self._template = super().constraints(self.t0, self.q0, 1.0) if self.constraint_list else None

    # -- loads -------------------------------------------------------------------------
    def support(self, t: float) -> float:
        """``phi(t)`` (m)."""
        return self.support_amplitude * np.sin(self.support_frequency * t)

    def load(self, t: float) -> np.ndarray:
        """``F(t)`` (2J,), generalised force (N with SI ``linear_density``)."""
        return self.load_amplitude * np.sin(self.support_frequency * t)

    def mean_load(self, t0: float, t1: float) -> np.ndarray:
        """``1/(t1 - t0) int_t0^t1 F(s) ds`` exactly (the paper's ``F^n`` over a step)."""
        # (cos w t0 - cos w t1) / (w (t1 - t0)) written without the cancellation of
        # the difference of cosines, which loses digits when w (t1 - t0) is ~1e-6.
        half = 0.5 * self.support_frequency * (t1 - t0)
        return self.load_amplitude * (np.sin(self.support_frequency * 0.5 * (t0 + t1)) * np.sin(half) / half)

    def harmonic_load(self):
        """``(P_sin, P_cos, w)`` with ``F(t) = P_sin sin(w t) + P_cos cos(w t)``;
        used by `granular.schemes.newmark.simulate_tip`."""
        return self.load_amplitude, np.zeros_like(self.load_amplitude), self.support_frequency

    def rest_velocity(self) -> np.ndarray:
        """``dq/dt`` of a beam at rest in the lab frame: interpolant of ``-phi'(0) h``."""
        rate = self.support_amplitude * self.support_frequency
        q = np.empty(2 * self.elements)
        q[0::2] = -rate * lifting(self.nodes, self.length)
        q[1::2] = -rate * lifting_slope(self.nodes, self.length)
        return q

    # -- the ConstrainedSystem pieces --------------------------------------------------
    def force(self, t, q, u):
        """``F(t) - S q``, plus the penalty's tip force on a penalised beam."""
        force = self.load(t) - self.stiffness @ q
        if self.penalty is not None:
            force[self.tip] += self.penalty.force(q[self.tip])
        return force

    def _potential(self, t, q):
        energy = 0.5 * float(q @ (self.stiffness @ q))
        return energy + (self.penalty.energy(q[self.tip]) if self.penalty is not None else 0.0)

    def _constraints(self):
        if self.penalty is not None:
            return []
        tip, lower, upper = self.tip, self.lower, self.upper
        e = np.zeros(2 * self.elements)
        e[tip] = 1.0
        constraints = []
        if np.isfinite(lower):
            constraints.append(
                Constraint(gap=lambda t, q: q[tip] - lower, gradient=lambda t, q: e, name="lower obstacle")
            )
        if np.isfinite(upper):
            constraints.append(
                Constraint(gap=lambda t, q: upper - q[tip], gradient=lambda t, q: -e, name="upper obstacle")
            )
        return constraints

    def constraints(self, t_next, q, h, max_speed=np.inf):
        """The tip constraints (same rows as `ConstrainedSystem.constraints`); only the
        gaps change, so the sparse Jacobian is built once rather than every step."""
        if self._template is None:
            return super().constraints(t_next, q, h, max_speed)
        x = q[self.tip]
        gaps = [
            gap for gap, bound in ((x - self.lower, self.lower), (self.upper - x, self.upper)) if np.isfinite(bound)
        ]
        return replace(self._template, gap=np.array(gaps))

    def _drawing(self) -> dict:
        return {
            "kind": "beam",
            "adapter": "beam",
            "length": self.length,
            "lower": self.lower,
            "upper": self.upper,
            "radius": self.radius,
        }

    # -- variants and diagnostics ------------------------------------------------------
    def penalised(self, stiffness: float) -> "Beam":
        """The same beam with normal compliance of ``stiffness`` (the paper's
        ``1/eps``, N/m with SI ``linear_density``) instead of the rigid obstacles."""
        return Beam(
            self.length,
            self.k2,
            self.elements,
            self.support_amplitude,
            self.support_frequency,
            self.lower,
            self.upper,
            self.linear_density,
            self.q0,
            self.u0,
            penalty_stiffness=stiffness,
            radius=self.radius,
        )

    def natural_frequencies(self, count: int = 5) -> np.ndarray:
        """The ``count`` lowest angular frequencies of the clamped-free beam (rad/s),
        from ``S v = w^2 M v``."""
        import scipy.linalg

        values = scipy.linalg.eigh(self.stiffness, self.mass, eigvals_only=True)
        return np.sqrt(values[:count])

    def displacement(self, q: np.ndarray, t: float, samples_per_element: int = 8):
        """Lab-frame ``(x, u~(x, t) = u(x) + h(x) phi(t))`` along the beam (m)."""
        x, u = interpolate(q, self.length, samples_per_element)
        return x, u + lifting(x, self.length) * self.support(t)
