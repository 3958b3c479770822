"""The Love–Weber stress of a packing: per sphere, over a region, and its invariants.

Sign convention: compression positive (soil mechanics'), so a pile's pressure is
positive. For a sphere ``i`` of volume ``V_i`` touched at contacts ``c`` by the forces
``F_c`` (on the sphere, N; `granular.analysis.forces`) at branch vectors ``l_c``
(from its centre to the contact point, m), the force the sphere exerts on its
neighbours is ``f_c = -F_c`` and its mean stress is (Love, *A treatise on the
mathematical theory of elasticity*, 1927; Weber, *Recherches concernant les
contraintes intergranulaires dans les milieux pulvérulents*, 1966)::

    sigma_i = (1/V_i) sum_c f_c (x) l_c          (Pa, 3 x 3; row: force, column: arm)

Over a region of volume ``V`` holding the centres of a set of spheres
(Christoffersen, Mehrabadi and Nemat-Nasser, *A micromechanical description of
granular material behavior*, 1981)::

    sigma = (1/V) [ sum_i V_i sigma_i  +  sum_i m_i v'_i (x) v'_i ]

the second, kinetic part with the velocity fluctuations ``v'_i = v_i - <v>`` about the
region's mass-weighted mean (optional: it is the momentum flux of agitated grains, 0
for a pile at rest).

A sphere at rest under contact forces alone has a symmetric stress (its torque
balance); the stress of a frictionless pile is symmetric to round-off for every
sphere, as its forces lie along the branch vectors. At rest under gravity the
total satisfies the virial balance (`virial_balance`).
"""

from __future__ import annotations

import numpy as np

from .forces import FrameForces


def sphere_volumes(radii) -> np.ndarray:
    """``4/3 pi r^3`` (N,) (m^3)."""
    return 4.0 / 3.0 * np.pi * np.asarray(radii, float) ** 3


def sphere_moments(forces: FrameForces) -> np.ndarray:
    """``V_i sigma_i = sum_c f_c (x) l_c`` (N, 3, 3) (N m): each sphere's stress times its volume."""
    sphere, force, branch = forces.sphere_rows()
    moments = np.zeros((forces.n, 3, 3))
    np.add.at(moments, sphere, -np.einsum("ca,cb->cab", force, branch))
    return moments


def sphere_stress(forces: FrameForces) -> np.ndarray:
    """The Love–Weber stress ``sigma_i`` (N, 3, 3) (Pa) of each sphere (module docstring)."""
    return sphere_moments(forces) / sphere_volumes(forces.radii)[:, None, None]


def kinetic_moments(masses, velocities) -> np.ndarray:
    """``sum_i m_i v'_i (x) v'_i`` (3, 3) (J) over the given spheres, ``v'`` about their
    mass-weighted mean velocity."""
    masses, velocities = np.asarray(masses, float), np.asarray(velocities, float).reshape(-1, 3)
    if masses.size == 0:
        return np.zeros((3, 3))
    fluctuation = velocities - (masses @ velocities) / masses.sum()
    return np.einsum("i,ia,ib->ab", masses, fluctuation, fluctuation)


def region_stress(forces: FrameForces, region, kinetic: bool = False) -> np.ndarray:
    """The mean stress (3, 3) (Pa) over ``region`` (`granular.analysis.regions`) of the
    spheres whose centre it holds (module docstring), with the kinetic part if ``kinetic``."""
    inside = region.contains(forces.centres)
    total = sphere_moments(forces)[inside].sum(axis=0)
    if kinetic:
        total = total + kinetic_moments(forces.masses[inside], forces.velocities[inside])
    return total / region.volume


def virial_balance(forces: FrameForces, gravity) -> tuple[np.ndarray, np.ndarray]:
    """The two sides of the virial balance of a packing at rest (3, 3) (N m).

    Summing the Love–Weber moments of every sphere, each pair's two branch vectors add
    to the centre-to-centre vector and only the walls' contacts and each sphere's net
    force remain::

        sum_i V_i sigma_i = sum_w f_w (x) x_w  +  sum_i F_i (x) q_i

    with ``f_w`` the force on the wall at ``x_w`` and ``F_i`` the net contact force on
    sphere ``i``, which at rest is ``-m_i g``. Returns ``(sum_i V_i sigma_i, sum_w f_w (x)
    x_w - sum_i m_i g (x) q_i)``: equal for spheres at rest. The second term vanishes
    in the rows orthogonal to gravity, where the balance reads ``sum_i V_i sigma_i = sum_w
    f_w (x) x_w`` alone.
    """
    gravity = np.asarray(gravity, float).reshape(3)
    walls = -np.einsum("wa,wb->ab", forces.wall_force, forces.wall_point)
    body = -np.einsum("i,a,ib->ab", forces.masses, gravity, forces.centres)
    return sphere_moments(forces).sum(axis=0), walls + body


def pressure(stress) -> np.ndarray:
    """``p = tr(sigma) / 3`` (Pa), for (..., 3, 3) stresses."""
    return np.trace(np.asarray(stress, float), axis1=-2, axis2=-1) / 3.0


def deviator(stress) -> np.ndarray:
    """``s = sigma - p I`` (..., 3, 3) (Pa)."""
    stress = np.asarray(stress, float)
    return stress - pressure(stress)[..., None, None] * np.eye(3)


def deviatoric_stress(stress) -> np.ndarray:
    """``q = sqrt(3/2 s : s)`` (Pa), the von Mises equivalent of the deviator (0 for
    an isotropic stress; ``|sigma_1 - sigma_3|`` for an axisymmetric one)."""
    s = deviator(stress)
    return np.sqrt(1.5 * np.einsum("...ab,...ab->...", s, s))


def principal(stress) -> tuple[np.ndarray, np.ndarray]:
    """Principal stresses (..., 3) (Pa), largest (most compressive) first, and their
    directions as the columns of (..., 3, 3), of the symmetric part of ``stress``."""
    stress = np.asarray(stress, float)
    values, vectors = np.linalg.eigh(0.5 * (stress + np.swapaxes(stress, -1, -2)))
    return values[..., ::-1], vectors[..., ::-1]
