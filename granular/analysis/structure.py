"""The structure of a packing: coordination number, rattlers, fabric tensor and the
distribution of contact forces.

Coordination number ``Z = 2 C_pp / N + C_w / N`` counts each sphere's active
contacts (with spheres and walls) and averages them. Rattlers are the spheres that
carry no load: following Donev, Torquato and Stillinger (*Pair correlation
function characteristics of nearly jammed disordered and ordered hard-sphere
packings*, Phys. Rev. E, 2005) and O'Hern, Silbert, Liu and Nagel (*Jamming at zero
temperature and zero applied stress*, Phys. Rev. E, 2003), a sphere in 3D is a
rattler when it has fewer than ``d + 1 = 4`` contacts, the fewest that can hold it
in place against forces from any direction; removing its contacts may leave others
with fewer than four, so the rule is applied until no sphere changes. ``Z*`` is the
mean number of contacts among the spheres that are not rattlers, counting only
contacts between them (and with walls). A sphere of a pile at rest on three others
under gravity is a rattler by this rule although it carries its weight; the rule
describes jammed packings without body forces, and is reported as such.

Fabric tensor (Satake, *Fabric tensor in granular materials*, 1982; Oda, 1982):
``phi = (1/C) sum_c n_c (x) n_c`` over the ``C`` active contacts (unit normals ``n_c``),
trace 1; isotropic is ``I/3``.

Force distribution ``P(f / <f>)``: the histogram of the contact force magnitudes
divided by their mean, as a probability density (its integral is 1 and its mean 1;
Radjai, Jean, Moreau and Roux, *Force distributions in dense two-dimensional
granular systems*, Phys. Rev. Lett., 1996; Mueth, Jaeger and Nagel, *Force
distribution in a granular medium*, Phys. Rev. E, 1998).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .forces import FrameForces

#: The fewest contacts of a sphere held in place in three dimensions, ``d + 1``.
RIGID_CONTACTS = 4


def contact_counts(forces: FrameForces, keep: np.ndarray | None = None) -> np.ndarray:
    """Active contacts (N,) of each sphere (pairs count for both spheres); with
    ``keep`` (N,) bool, only the pairs between kept spheres (and walls)."""
    i, j = forces.pair_i, forces.pair_j
    if keep is not None:
        both = keep[i] & keep[j]
        i, j = i[both], j[both]
    return np.bincount(np.concatenate([i, j, forces.wall_sphere]), minlength=forces.n)


def rattlers(forces: FrameForces, minimum: int = RIGID_CONTACTS) -> np.ndarray:
    """Boolean (N,): the spheres with fewer than ``minimum`` contacts among the
    non-rattlers, found by removing them until none changes (module docstring)."""
    keep = np.ones(forces.n, bool)
    while True:
        fewer = keep & (contact_counts(forces, keep) < minimum)
        if not fewer.any():
            return ~keep
        keep &= ~fewer


@dataclass(frozen=True)
class Coordination:
    """``z`` the mean contacts per sphere; ``z_mechanical`` the mean among the
    non-rattlers (nan if every sphere rattles); ``rattler_fraction`` (1)."""

    z: float
    z_mechanical: float
    rattler_fraction: float


def coordination(forces: FrameForces) -> Coordination:
    """The coordination numbers with and without rattlers (module docstring)."""
    if forces.n == 0:
        return Coordination(float("nan"), float("nan"), float("nan"))
    loose = rattlers(forces)
    kept = contact_counts(forces, ~loose)[~loose]
    return Coordination(
        z=float(contact_counts(forces).mean()),
        z_mechanical=float(kept.mean()) if kept.size else float("nan"),
        rattler_fraction=float(loose.mean()),
    )


def fabric(forces: FrameForces, walls: bool = False) -> np.ndarray:
    """The fabric tensor (3, 3) of the pair contacts (and the wall contacts if
    ``walls``); zeros when there is none."""
    normals = [forces.pair_point[:0]]
    pair = forces.pair_vector
    normals.append(pair / np.linalg.norm(pair, axis=1, keepdims=True))
    if walls:
        arm = forces.centres[forces.wall_sphere] - forces.wall_point
        normals.append(arm / np.linalg.norm(arm, axis=1, keepdims=True))
    n = np.concatenate(normals)
    if n.shape[0] == 0:
        return np.zeros((3, 3))
    return np.einsum("ca,cb->ab", n, n) / n.shape[0]


def force_distribution(forces: FrameForces, bins=30, walls: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(density (B,), edges (B + 1,))`` of ``P(f / <f>)`` over the active contacts
    (pairs, and walls if ``walls``): a probability density of the normalised force."""
    magnitude = np.linalg.norm(forces.pair_force, axis=1)
    if walls:
        magnitude = np.concatenate([magnitude, np.linalg.norm(forces.wall_force, axis=1)])
    if magnitude.size == 0 or not magnitude.mean() > 0.0:
        raise ValueError("forces: no active contact carries a force in this frame")
    return np.histogram(magnitude / magnitude.mean(), bins=bins, density=True)
