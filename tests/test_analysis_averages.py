"""Coarse-grained fields and region stresses averaged over frames: the means of the
frames' own fields, a steady pile's average is its frame's, and bad ranges are refused."""

import numpy as np
import pytest

import granular.analysis as A
from support.falling import SIDE, falling
from support.piles import SIDE as PILE_SIDE
from support.piles import pile

EPS = np.finfo(float).eps


def test_the_average_over_frames_is_the_mean_of_each_frames_fields():
    """Spheres landing in a box, frames 3 to 10: the mean density, packing fraction and
    contact stress of the frames' own profiles; the velocity their mean momentum over the
    mean density; the kinetic stress the mean of ``sum m v v phi`` (each frame's kinetic
    stress plus ``rho V V``) less ``<rho> V V``. Round-off: sums of 8 frames of ~1e3 terms."""
    run = falling()
    kernel, z = A.Kernel("gaussian", 0.008), np.linspace(-0.01, 0.08, 91)
    frames = [A.profile(A.frame_forces(run, k, threshold=0.0), "z", z, kernel, SIDE**2) for k in range(3, 11)]
    average = A.average_profile(run, slice(3, None), "z", z, kernel, SIDE**2)
    density = np.mean([f.density for f in frames], axis=0)
    momentum = np.mean([f.density[:, None] * f.velocity for f in frames], axis=0)
    second = np.mean(
        [f.kinetic_stress + f.density[:, None, None] * np.einsum("ma,mb->mab", f.velocity, f.velocity) for f in frames],
        axis=0,
    )
    assert np.abs(np.array([f.velocity for f in frames])).max() > 0.05  # the spheres move: V matters
    scale = 1e4 * EPS
    np.testing.assert_allclose(average.density, density, rtol=scale, atol=scale * density.max())
    np.testing.assert_allclose(
        average.packing_fraction, np.mean([f.packing_fraction for f in frames], axis=0), atol=scale
    )
    stress = np.mean([f.contact_stress for f in frames], axis=0)
    np.testing.assert_allclose(average.contact_stress, stress, atol=scale * np.abs(stress).max())
    np.testing.assert_allclose(
        average.density[:, None] * average.velocity, momentum, atol=scale * np.abs(momentum).max()
    )
    kinetic = second - density[:, None, None] * np.einsum("ma,mb->mab", average.velocity, average.velocity)
    np.testing.assert_allclose(average.kinetic_stress, kinetic, atol=scale * np.abs(second).max())
    assert np.all(np.trace(average.kinetic_stress, axis1=1, axis2=2) >= -scale * np.abs(second).max())


def test_the_region_stress_averaged_over_frames_is_their_mean():
    run = falling()
    region = A.BoxRegion([0, 0, 0], [SIDE, SIDE, 0.05])
    each = [A.region_stress(A.frame_forces(run, k), region, kinetic=True) for k in (4, 6, 8)]
    average = A.average_region_stress(run, region, [4, 6, -3], kinetic=True)
    np.testing.assert_allclose(average, np.mean(each, axis=0), atol=1e3 * EPS * np.abs(each).max())


def test_a_pile_at_rest_has_its_frames_density_on_average():
    """Over the five steps of a pile at rest the average density differs from the last
    frame's by at most what the spheres' motion can change: a sphere moved by ``dz``
    changes the Lucy profile by at most ``m dz max|phi'| / A``, with ``max|phi'| =
    20 / (9 c^2)`` (``phi = 5/(4c) (1 + 3x)(1 - x)^3``, ``x = |z|/c``, steepest at ``x = 1/3``),
    so the difference is at most ``sum_i m_i max_k |z_i(k) - z_i(last)| max|phi'| / A``."""
    run = pile(0.0)
    kernel, z = A.Kernel("lucy", 0.02), np.linspace(0.0, 0.1, 101)
    last = A.frame_forces(run, -1, threshold=0.0)
    average = A.average_profile(run, slice(1, None), "z", z, kernel, PILE_SIDE**2)
    frame = A.profile(last, "z", z, kernel, PILE_SIDE**2)
    moved = np.max(
        [np.abs(A.frame_forces(run, k).centres[:, 2] - last.centres[:, 2]) for k in range(1, len(run))], axis=0
    )
    bound = np.sum(last.masses * moved) * 20.0 / (9.0 * kernel.cutoff**2) / PILE_SIDE**2
    assert frame.density.max() > 1000.0  # a pile, 1000s of kg/m^3
    assert np.abs(average.density - frame.density).max() <= bound + 1e3 * EPS * frame.density.max()
    assert bound < 1e-2 * frame.density.max()  # the bound says something


def test_frame_ranges_are_read_and_bad_ones_refused():
    run = falling()
    assert A.frame_list(run, A.parse_frames("2:5")) == [2, 3, 4]
    assert A.frame_list(run, A.parse_frames("-2:")) == [9, 10]
    assert A.frame_list(run, None) == list(range(1, 11))
    for text in ("2", "a:b", "1:2:3"):
        with pytest.raises(ValueError, match="frames"):
            A.parse_frames(text)
    with pytest.raises(ValueError, match="frames"):
        A.frame_list(run, slice(5, 2))
    with pytest.raises(ValueError, match="frames"):
        A.frame_list(run, [3, 11])
