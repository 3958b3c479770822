"""The momentum of the Coulomb sweeps (`friction_gauss_seidel._Momentum`): its size is the
Fletcher-Reeves ratio of the sweeps' squared fixed-point residuals, never above 1 (an
extrapolation beyond the last step would amplify the sweeps' oscillations), and it
restarts once the residual grows by more than `MOMENTUM_RESTART`."""

from __future__ import annotations

import numpy as np
import pytest

from granular.contact import friction_gauss_seidel as gauss_seidel


@pytest.fixture
def momentum():
    return gauss_seidel._Momentum(np.zeros((2, 3)), np.zeros(7))


def test_the_first_sweep_has_no_momentum(momentum):
    momentum.judge(5.0)
    assert momentum.beta == 0.0


@pytest.mark.parametrize("ratio", [0.1, 0.5, 0.99])
def test_a_falling_residual_gives_its_ratio(momentum, ratio):
    momentum.judge(4.0)
    momentum.judge(4.0 * ratio)
    assert momentum.beta == pytest.approx(ratio, rel=1e-15)


def test_a_small_rise_keeps_the_largest_momentum_and_a_larger_one_restarts(momentum):
    assert gauss_seidel.MOMENTUM_RESTART > 1.0
    momentum.judge(1.0)
    momentum.judge(0.5 * (1.0 + gauss_seidel.MOMENTUM_RESTART))  # a rise below the threshold
    assert momentum.beta == 1.0
    momentum.judge(2.0 * gauss_seidel.MOMENTUM_RESTART)  # a rise above it
    assert momentum.beta == 0.0


def test_the_extrapolation_moves_impulses_and_velocities_alike():
    """``u`` is affine in ``r``: extrapolated with the same ``beta`` from the same
    previous pair, the two stay consistent."""
    r_before, u_before = np.zeros((2, 3)), np.zeros(7)
    r_now = np.arange(6.0).reshape(2, 3)
    u_now = np.linspace(1.0, 2.0, 7)
    momentum = gauss_seidel._Momentum(r_before, u_before)
    momentum.judge(1.0)
    momentum.judge(0.25)
    r, u = r_now.copy(), u_now.copy()
    momentum.extrapolate(r, u)
    assert np.array_equal(r, r_now + 0.25 * (r_now - r_before))
    assert np.array_equal(u, u_now + 0.25 * (u_now - u_before))
