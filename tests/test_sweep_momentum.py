"""The momentum of the Coulomb sweeps (`friction_gauss_seidel._Momentum`): its size is the
Fletcher-Reeves ratio of the sweeps' squared fixed-point residuals, never above 1 (an
extrapolation beyond the last step would amplify the sweeps' oscillations), and it
restarts once the residual grows by more than `MOMENTUM_RESTART`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import scipy.sparse as sp

from granular.contact import coulomb_rows
from granular.contact import friction_gauss_seidel as gauss_seidel
from support.systems import InverseMassDiagonal

DATA = Path(__file__).parent / "data" / "stalled_turning_cluster.npz"


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


def test_extrapolated_velocities_are_those_of_the_extrapolated_impulses():
    """``u = v + M^{-1} H^T r`` is affine in ``r``, so extrapolating ``r`` and ``u`` with the
    same ``beta`` from the same previous pair keeps them consistent without a pass over
    the rows. Checked on the captured cluster of turning spheres
    (`data/stalled_turning_cluster.npz`, `test_friction_stall`) against the velocities
    recomputed from the extrapolated impulses (`coulomb_rows.velocities`).

    Tolerance: each velocity is a sum of a prediction and a few dozen products
    ``M^{-1} H^T r`` per coordinate, in both computations; the two differ by the
    round-off of those sums and of the extrapolation (``beta`` <= 1), a few ulps of the
    sum of the terms' magnitudes ``|v| + |M^{-1}| |H|^T (|r| + |r_before| + |r_now|)``;
    64 eps times it bounds the difference with room."""
    data = dict(np.load(DATA))
    G, T = sp.csr_matrix(data["G"]), sp.csr_matrix(data["T"])
    rows = coulomb_rows.sweep_rows(InverseMassDiagonal(data["inverse_mass"]), G, T, data["mu"], data["lower"])
    predicted = data["predicted"]
    r_before = coulomb_rows.onto_cones(rows, data["start"])
    u_before = coulomb_rows.velocities(rows, predicted, r_before)
    momentum = gauss_seidel._Momentum(r_before, u_before)
    r, u = r_before.copy(), u_before.copy()
    rows.compiled.sweep(u, r)  # one sweep: the iterate momentum extrapolates from
    r_now, u_now = r.copy(), u.copy()
    momentum.judge(1.0)
    momentum.judge(0.6)
    assert momentum.beta == pytest.approx(0.6, rel=1e-15)
    momentum.extrapolate(r, u)
    assert np.array_equal(r, r_now + 0.6 * (r_now - r_before))
    assert np.array_equal(u, u_now + 0.6 * (u_now - u_before))
    recomputed = coulomb_rows.velocities(rows, predicted, r)
    products = np.zeros(rows.inverse_mass.size)  # per coordinate, |H|^T (|r| + |r_before| + |r_now|)
    for impulses in (r, r_before, r_now):
        np.add.at(products, rows.cols, np.einsum("kap,ka->kp", np.abs(rows.values), np.abs(impulses)))
    terms = np.abs(np.append(predicted, 0.0)) + rows.inverse_mass * products
    assert np.max(np.abs(u - recomputed)) <= 64 * np.finfo(float).eps * terms.max()
    assert np.max(np.abs(u - u_now)) > 1e6 * np.finfo(float).eps * terms.max()  # the extrapolation moved u
