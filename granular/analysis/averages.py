"""Measurements averaged over a range of frames: coarse-grained fields and the stress
over a region, the means a steady flow or a pile at rest is described by.

Frames count equally (a run records at a fixed interval, so this is the time
average over the frames' span). The number of spheres may change from frame to
frame: each frame is measured on the same points or region, then averaged.

Coarse-grained fields (`granular.analysis.coarse`) are averaged as Weinhart,
Thornton, Luding and Bokhove do (*From discrete particles to continuum fields near
a boundary*, Granular Matter, 2012; Goldhirsch, *Stress, stress asymmetry and
couple stress: from discrete particles to continuous fields*, Granular Matter,
2010): the fields that are linear in the spheres' data are plain means, the velocity
is the mean momentum over the mean density, and the kinetic stress is about that
mean velocity::

    <rho>(r)     = mean_k rho_k(r)                    (kg/m^3; likewise nu, sigma_c)
    V(r)         = mean_k [rho_k V_k](r) / <rho>(r)   (m/s, mass-weighted)
    sigma_k(r)   = mean_k [sum_i m_i v_i (x) v_i phi] - <rho> V (x) V     (Pa)
    T(r)         = tr(sigma_k) / (3 <rho>)            (m^2/s^2)

so the velocity fluctuations between frames count as temperature, as they do
between spheres. The stress over a region is the mean of each frame's
(`granular.analysis.stress.region_stress`).
"""

from __future__ import annotations

import numpy as np

from .coarse import Fields, Kernel, coarse_grain
from .forces import frame_forces
from .regions import axis_index
from .stress import region_stress


def frame_list(trajectory, frames=None) -> list[int]:
    """The frame indices of ``frames``: a slice, or indices (negative from the end);
    None for every frame but the first (which has no step, hence no forces). A
    ValueError names ``frames`` when it selects none or one out of range."""
    count = len(trajectory)
    if frames is None:
        return list(range(1, count)) or [0]
    if isinstance(frames, slice):
        indices = list(range(count))[frames]
    else:
        indices = [int(k) for k in np.atleast_1d(np.asarray(frames))]
        outside = [k for k in indices if not -count <= k < count]
        if outside:
            raise ValueError(f"frames: {outside[0]} is out of range for a run of {count} frames")
        indices = [k % count for k in indices]
    if not indices:
        raise ValueError(f"frames: {frames!r} selects no frame of a run of {count} frames")
    return indices


def parse_frames(text: str) -> slice:
    """``"A:B"`` (either end may be left out, negative from the end) as ``slice(A, B)``;
    a ValueError naming ``frames`` otherwise."""
    start, colon, stop = str(text).partition(":")
    try:
        bounds = [int(v) if v.strip() else None for v in (start, stop)]
    except ValueError:
        bounds = []
    if not colon or len(bounds) != 2:
        raise ValueError(f"frames: expected A:B (frame indices, either may be left out), got {text!r}")
    return slice(bounds[0], bounds[1])


def average_fields(trajectory, frames, points, axes, kernel: Kernel, across: float = 1.0, nodes: int = 8) -> Fields:
    """The coarse-grained fields (`Fields`) at ``points`` (M, d) (m), averaged over
    ``frames`` (`frame_list`) as the module docstring defines; the other arguments are
    `granular.analysis.coarse.coarse_grain`'s."""
    indices = frame_list(trajectory, frames)
    total: dict = {}
    for k in indices:
        fields = coarse_grain(frame_forces(trajectory, k, threshold=0.0), points, axes, kernel, across, nodes)
        momentum = fields.density[:, None] * fields.velocity
        parts = {
            "density": fields.density,
            "packing_fraction": fields.packing_fraction,
            "momentum": momentum,
            "contact_stress": fields.contact_stress,
            "second": fields.kinetic_stress + np.einsum("ma,mb->mab", momentum, fields.velocity),
        }
        for name, value in parts.items():
            total[name] = total.get(name, 0.0) + value
    mean = {name: value / len(indices) for name, value in total.items()}
    density = mean["density"]
    velocity = np.divide(
        mean["momentum"], density[:, None], out=np.zeros_like(mean["momentum"]), where=density[:, None] > 0.0
    )
    kinetic = mean["second"] - density[:, None, None] * np.einsum("ma,mb->mab", velocity, velocity)
    temperature = np.divide(
        np.trace(kinetic, axis1=1, axis2=2), 3.0 * density, out=np.zeros_like(density), where=density > 0.0
    )
    return Fields(
        points=fields.points,
        axes=fields.axes,
        density=density,
        packing_fraction=mean["packing_fraction"],
        velocity=velocity,
        contact_stress=mean["contact_stress"],
        kinetic_stress=kinetic,
        temperature=temperature,
    )


def average_profile(trajectory, frames, axis, positions, kernel: Kernel, area: float) -> Fields:
    """`average_fields` along ``axis`` at ``positions`` (M,) (m), over the cross-section ``area`` (m^2)."""
    return average_fields(
        trajectory, frames, np.asarray(positions, float).reshape(-1, 1), axis_index(axis), kernel, area
    )


def average_region_stress(
    trajectory, region, frames=None, kinetic: bool = False, threshold: float | None = None
) -> np.ndarray:
    """The mean over ``frames`` (`frame_list`) of the Love–Weber stress (3, 3) (Pa) over
    ``region`` (`granular.analysis.stress.region_stress`); ``threshold`` is
    `granular.analysis.forces.frame_forces`'s."""
    indices = frame_list(trajectory, frames)
    return sum(
        (region_stress(frame_forces(trajectory, k, threshold), region, kinetic) for k in indices), np.zeros((3, 3))
    ) / len(indices)
