"""Coarse-grained continuum fields of a frame: density, packing fraction, velocity,
stress and granular temperature, along an axis or on a 2D or 3D grid.

Each sphere's mass is spread by a kernel ``phi`` of unit integral (Goldhirsch,
*Stress, stress asymmetry and couple stress: from discrete particles to continuous
fields*, Granular Matter, 2010; Weinhart, Thornton, Luding and Bokhove, *From
discrete particles to continuum fields near a boundary*, Granular Matter, 2012)::

    rho(r)      = sum_i m_i phi(r - q_i)                              (kg/m^3)
    nu(r)       = sum_i V_i phi(r - q_i)                              (packing fraction)
    V(r)        = sum_i m_i v_i phi(r - q_i) / rho(r)                 (m/s)
    sigma_k(r)  = sum_i m_i v'_i (x) v'_i phi(r - q_i),  v'_i = v_i - V(r)
    sigma_c(r)  = sum_pairs F_j (x) (q_j - q_i) int_0^1 phi(r - q_i - s (q_j - q_i)) ds
                - sum_walls F_i (x) (x_c - q_i) int_0^1 phi(r - q_i - s (x_c - q_i)) ds
    T(r)        = tr(sigma_k) / (3 rho)                               (m^2/s^2)

``sigma = sigma_c + sigma_k`` (Pa), compression positive as in
`granular.analysis.stress`: ``F_j`` is the force on ``j`` from ``i`` and ``F_i`` the force
on sphere ``i`` from the wall at ``x_c``. The wall term is Weinhart et al.'s: a
contact with a boundary is a bond from the centre to the contact point, so that
the stress field balances the boundary's force where it acts and the momentum
balance ``div sigma = rho g`` holds up to the wall (a pile's ``sigma_zz`` just above
the floor carries the floor's load). The spheres are those of
`granular.analysis.forces` (centres at the start of the frame's step).

Fields along an axis (``d = 1``) or on a plane (``d = 2``) use the kernel in ``d``
dimensions and are divided by the extent across (an area, a length): the mean over
the cross-section. A field's integral over its ``d`` coordinates times that extent
is the total: ``integral rho = sum m_i`` for every kernel and width whose support
the points cover. Along an axis the bond integrals are exact (the kernel's
cumulative distribution); on a grid they use Gauss–Legendre nodes along each bond.

Kernels (``width``): ``"gaussian"``, ``exp(-r^2 / (2 w^2))`` cut at ``3 w`` and
renormalised (Weinhart et al. 2012's choice), ``w = width``; ``"lucy"``, Lucy's
polynomial ``(1 + 3 r/c)(1 - r/c)^3`` for ``r < c`` (Lucy, *A numerical approach to
the testing of the fission hypothesis*, 1977), ``c = width``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import erf

from .forces import FrameForces
from .regions import axis_index
from .stress import sphere_volumes

KERNELS = ("gaussian", "lucy")
#: The Gaussian kernel's cutoff in widths (Weinhart et al. 2012: c = 3 w).
GAUSSIAN_CUTOFF = 3.0


@dataclass(frozen=True)
class Kernel:
    """A radial coarse-graining kernel of unit integral in ``d`` dimensions (module docstring)."""

    kind: str
    width: float

    def __post_init__(self):
        if self.kind not in KERNELS:
            raise ValueError(f"kernel: expected one of {', '.join(KERNELS)}, got {self.kind!r}")
        if not (np.isfinite(self.width) and self.width > 0.0):
            raise ValueError(f"width: expected a positive length (m), got {self.width!r}")

    @property
    def cutoff(self) -> float:
        """Radius (m) beyond which the kernel is 0."""
        return GAUSSIAN_CUTOFF * self.width if self.kind == "gaussian" else self.width

    def value(self, r, d: int) -> np.ndarray:
        """``phi(r)`` (1/m^d) at distances ``r`` (m), in ``d`` = 1, 2 or 3 dimensions."""
        r = np.asarray(r, float)
        inside = r < self.cutoff
        if self.kind == "gaussian":
            shape = np.exp(-0.5 * (r / self.width) ** 2)
        else:
            x = np.minimum(r / self.width, 1.0)
            shape = (1.0 + 3.0 * x) * (1.0 - x) ** 3
        return np.where(inside, shape, 0.0) / self._norm(d)

    def _norm(self, d: int) -> float:
        """The integral of the unnormalised kernel over ``R^d`` (m^d)."""
        w = self.width
        if self.kind == "lucy":
            return {1: 4.0 * w / 5.0, 2: math.pi * w**2 / 5.0, 3: 16.0 * math.pi * w**3 / 105.0}[d]
        s = GAUSSIAN_CUTOFF
        if d == 1:
            return w * math.sqrt(2.0 * math.pi) * math.erf(s / math.sqrt(2.0))
        if d == 2:
            return 2.0 * math.pi * w**2 * (1.0 - math.exp(-0.5 * s * s))
        return (
            4.0
            * math.pi
            * w**3
            * (math.sqrt(math.pi / 2.0) * math.erf(s / math.sqrt(2.0)) - s * math.exp(-0.5 * s * s))
        )

    def cumulative(self, x) -> np.ndarray:
        """``Phi(x) = integral_{-inf}^x phi`` in one dimension (dimensionless)."""
        x = np.asarray(x, float)
        c, w = self.cutoff, self.width
        clipped = np.clip(x, -c, c)
        if self.kind == "gaussian":
            half = (
                0.5
                * w
                * math.sqrt(2.0 * math.pi)
                * (erf(clipped / (w * math.sqrt(2.0))) + math.erf(GAUSSIAN_CUTOFF / math.sqrt(2.0)))
            )
            return half / self._norm(1)
        u = np.abs(clipped) / w
        # integral_0^u (1 - 6 t^2 + 8 t^3 - 3 t^4) dt, the expanded Lucy polynomial
        part = w * (u - 2.0 * u**3 + 2.0 * u**4 - 0.6 * u**5)
        return (0.5 * self._norm(1) + np.sign(clipped) * part) / self._norm(1)


@dataclass(frozen=True)
class Fields:
    """Coarse-grained fields at ``M`` points (module docstring for the definitions).

    points : (M, d) coordinates (m) along ``axes``.
    axes : the ``d`` axis indices (0 x, 1 y, 2 z) of ``points``.
    density : (M,) kg/m^3. packing_fraction : (M,). velocity : (M, 3) m/s (0 where
    there is no mass). contact_stress, kinetic_stress, stress : (M, 3, 3) Pa.
    temperature : (M,) m^2/s^2.
    """

    points: np.ndarray
    axes: tuple
    density: np.ndarray
    packing_fraction: np.ndarray
    velocity: np.ndarray
    contact_stress: np.ndarray
    kinetic_stress: np.ndarray
    temperature: np.ndarray

    @property
    def stress(self) -> np.ndarray:
        return self.contact_stress + self.kinetic_stress


def _axes(axes) -> tuple:
    if isinstance(axes, (int, np.integer)):
        axes = [axes]
    indices = tuple(axis_index(a) for a in (list(axes) if isinstance(axes, str) else axes))
    if not 1 <= len(indices) <= 3 or len(set(indices)) != len(indices):
        raise ValueError(f"axes: expected one to three different axes among x, y, z, got {axes!r}")
    return indices


def _weights(points: np.ndarray, sources: np.ndarray, kernel: Kernel):
    """Sparse (M, S) matrix of ``phi(points_m - sources_s)`` in ``d`` dimensions."""
    from scipy.sparse import coo_matrix

    d = points.shape[1]
    if sources.shape[0] == 0:
        return coo_matrix((points.shape[0], 0)).tocsr()
    near = cKDTree(points).sparse_distance_matrix(cKDTree(sources), kernel.cutoff, output_type="ndarray")
    return coo_matrix(
        (kernel.value(near["v"], d), (near["i"], near["j"])), shape=(points.shape[0], sources.shape[0])
    ).tocsr()


def _bonds(forces: FrameForces) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(start (b, 3), vector (b, 3), tensor (b, 3, 3))`` of the contact bonds: pairs
    ``q_i -> q_j`` with ``F_j (x) (q_j - q_i)``, walls ``q_i -> x_c`` with ``-F_i (x) (x_c - q_i)``."""
    pair_vector = forces.pair_vector
    wall_vector = forces.wall_point - forces.centres[forces.wall_sphere]
    start = np.concatenate([forces.centres[forces.pair_i], forces.centres[forces.wall_sphere]])
    vector = np.concatenate([pair_vector, wall_vector])
    tensor = np.concatenate(
        [
            np.einsum("ca,cb->cab", forces.pair_force, pair_vector),
            -np.einsum("ca,cb->cab", forces.wall_force, wall_vector),
        ]
    )
    return start, vector, tensor


def _contact_stress(forces: FrameForces, points: np.ndarray, axes: tuple, kernel: Kernel, nodes: int) -> np.ndarray:
    start, vector, tensor = _bonds(forces)
    flat = tensor.reshape(-1, 9)
    if len(axes) == 1:
        # exact: int_0^1 phi(x - a - s L) ds = (Phi(x - a) - Phi(x - a - L)) / L, phi(x - a) as L -> 0
        a, length = start[:, axes[0]], vector[:, axes[0]]
        x = points[:, :1]
        short = np.abs(length) < 1e-12 * kernel.width
        safe = np.where(short, 1.0, length)
        share = (kernel.cumulative(x - a) - kernel.cumulative(x - a - length)) / safe
        share = np.where(short, kernel.value(np.abs(x - a), 1), share)
        return (share @ flat).reshape(-1, 3, 3)
    s, w = np.polynomial.legendre.leggauss(nodes)
    s, w = 0.5 * (s + 1.0), 0.5 * w
    along = (start[:, None, :] + s[None, :, None] * vector[:, None, :])[:, :, list(axes)].reshape(-1, len(axes))
    values = (w[None, :, None] * flat[:, None, :]).reshape(-1, 9)
    return (_weights(points, along, kernel) @ values).reshape(-1, 3, 3)


def coarse_grain(forces: FrameForces, points, axes, kernel: Kernel, across: float = 1.0, nodes: int = 8) -> Fields:
    """The fields (`Fields`) at ``points`` (M, d) (m) along ``axes`` (``"z"``, ``"xz"``,
    ``"xyz"``), averaged over ``across`` (m^(3-d): the cross-section's area along one
    axis, its length on a plane, 1 in 3D). ``nodes``: Gauss–Legendre nodes per bond on a grid."""
    axes = _axes(axes)
    points = np.asarray(points, float).reshape(-1, len(axes))
    if not (np.isfinite(across) and across > 0.0):
        raise ValueError(f"across: expected a positive extent (m^{3 - len(axes)}), got {across!r}")
    weights = _weights(points, forces.centres[:, list(axes)], kernel) / across
    density = weights @ forces.masses
    momentum = weights @ (forces.masses[:, None] * forces.velocities)
    velocity = np.divide(momentum, density[:, None], out=np.zeros_like(momentum), where=density[:, None] > 0.0)
    # sum_i m_i v'v' phi with v' = v_i - V(r): sum m v v phi - rho V V
    second = weights @ np.einsum("i,ia,ib->iab", forces.masses, forces.velocities, forces.velocities).reshape(-1, 9)
    kinetic = second.reshape(-1, 3, 3) - density[:, None, None] * np.einsum("ma,mb->mab", velocity, velocity)
    temperature = np.divide(
        np.trace(kinetic, axis1=1, axis2=2), 3.0 * density, out=np.zeros_like(density), where=density > 0.0
    )
    contact = _contact_stress(forces, points, axes, kernel, nodes) / across
    return Fields(
        points=points,
        axes=axes,
        density=density,
        packing_fraction=weights @ sphere_volumes(forces.radii),
        velocity=velocity,
        contact_stress=contact,
        kinetic_stress=kinetic,
        temperature=temperature,
    )


def profile(forces: FrameForces, axis, positions, kernel: Kernel, area: float) -> Fields:
    """The fields along ``axis`` at ``positions`` (M,) (m), averaged over the
    cross-section ``area`` (m^2) the sample fills."""
    return coarse_grain(forces, np.asarray(positions, float).reshape(-1, 1), axis_index(axis), kernel, area)


def grid(forces: FrameForces, axes, ticks, kernel: Kernel, across: float = 1.0) -> Fields:
    """The fields on the grid of ``ticks`` (one (M_a,) array per axis of ``axes``),
    points in C order (the last axis fastest); `grid_shape` gives the shape."""
    axes = _axes(axes)
    if len(ticks) != len(axes):
        raise ValueError(f"ticks: expected one array per axis of {axes}, got {len(ticks)}")
    mesh = np.meshgrid(*[np.asarray(t, float) for t in ticks], indexing="ij")
    return coarse_grain(forces, np.stack([m.ravel() for m in mesh], axis=1), axes, kernel, across)
