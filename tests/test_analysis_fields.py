"""Coarse-grained fields: the density integrates to the mass whatever the kernel and
its width, and the velocity field of spheres moving together is theirs."""

import numpy as np
import pytest

import granular.analysis as A
from support.piles import SIDE, pile

EPS = np.finfo(float).eps


def _trapezoid_bound(kernel, dz):
    """What the trapezoid rule may miss of one sphere's unit mass on a grid of step
    ``dz``: the truncated Gaussian jumps by ``phi(c)`` at both ends of its support (a
    jump costs up to ``phi(c) dz / 2``); Lucy's kernel is C^2, and the rule errs by
    ``(2c) dz^2 / 12 max|phi''|``, ``max|phi''| = 15 / c^3`` (at its centre)."""
    if kernel.kind == "gaussian":
        return float(kernel.value(kernel.cutoff * (1 - 1e-12), 1)) * dz
    return 2.5 * (dz / kernel.cutoff) ** 2


@pytest.mark.parametrize("kind", A.coarse.KERNELS)
@pytest.mark.parametrize("width", [0.002, 0.01, 0.05])
def test_the_density_profile_integrates_to_the_total_mass(kind, width):
    trajectory = pile(0.0)
    forces = A.frame_forces(trajectory, -1)
    kernel = A.Kernel(kind, width)
    centres = forces.centres[:, 2]
    z = np.linspace(centres.min() - kernel.cutoff, centres.max() + kernel.cutoff, 6001)
    density = A.profile(forces, "z", z, kernel, SIDE**2).density
    mass = forces.masses.sum()
    integral = np.trapezoid(density * SIDE**2, z)
    assert integral == pytest.approx(mass, rel=_trapezoid_bound(kernel, z[1] - z[0]) + 1e3 * EPS)


def test_the_density_on_a_grid_integrates_to_the_total_mass():
    """A 3D grid (Lucy kernel, 3 mm cells for c = 2 cm): the Riemann sum of a C^2 kernel
    errs by O((dx/c)^2) = 2 %; its mean per sphere by much less, so 2 % bounds it."""
    forces = A.frame_forces(pile(0.0), -1)
    kernel = A.Kernel("lucy", 0.02)
    ticks = [np.arange(-0.03, 0.11, 0.003), np.arange(-0.03, 0.11, 0.003), np.arange(-0.03, 0.2, 0.003)]
    fields = A.grid(forces, "xyz", ticks, kernel)
    assert fields.density.sum() * 0.003**3 == pytest.approx(forces.masses.sum(), rel=(0.003 / 0.02) ** 2)


def test_spheres_moving_together_have_their_velocity_and_no_temperature():
    """Give every sphere the same velocity: the field is that velocity wherever there
    is mass, and the kinetic stress and temperature vanish (fluctuations are 0)."""
    forces = A.frame_forces(pile(0.0), -1)
    moving = A.FrameForces(**{**forces.__dict__, "velocities": np.tile([0.3, -0.1, 0.2], (forces.n, 1))})
    fields = A.profile(moving, "z", np.linspace(0.01, 0.1, 50), A.Kernel("gaussian", 0.005), SIDE**2)
    np.testing.assert_allclose(fields.velocity, np.tile([0.3, -0.1, 0.2], (50, 1)), rtol=1e-13)
    speed2 = 0.3**2 + 0.1**2 + 0.2**2  # |v|^2: the kinetic stress is rho v v - rho V V, cancelling
    assert np.abs(fields.kinetic_stress).max() <= 64 * EPS * fields.density.max() * speed2
    assert np.abs(fields.temperature).max() <= 64 * EPS * speed2
