"""The single-body scenes: their systems and the numbers they print."""

from __future__ import annotations

import numpy as np
import pytest

import granular as gr
from support.scenes import load_scene as load


@pytest.fixture(scope="module")
def oscillator():
    return load("impact_oscillator")


@pytest.mark.parametrize("frequency, period", [(1.8, 1), (3.8, 2)])
def test_impact_oscillator_sections_show_the_periods_of_the_diagram(oscillator, frequency, period):
    """One point on the section at w = 1.8 (period 1), two at w = 3.8 (period 2),
    and both orbits hit the stop within one of their periods (impacting orbits)."""
    samples = oscillator.section(frequency, transient=30, periods=8)
    assert oscillator.period_of(samples) == period
    system = oscillator.build(frequency)
    dt = 2.0 * np.pi / frequency / oscillator.STEPS_PER_PERIOD
    trajectory = gr.Simulation(system, dt, scheme=oscillator.SCHEME).run(steps=32 * oscillator.STEPS_PER_PERIOD)
    last_period = trajectory.contacts[-period * oscillator.STEPS_PER_PERIOD :]
    assert any(c.impulse.sum() > 0.0 for c in last_period)


def test_period_one_orbit_is_exact(oscillator):
    """The exact period-1 section value satisfies its own definition: leaving the
    stop at -e v and coming back one period later at +v."""
    x = oscillator.period_one_orbit(1.8)
    assert x == pytest.approx(-0.6992634341628, abs=1e-9)  # event-driven integration, rtol 1e-12


@pytest.mark.long
def test_impact_oscillator_section_converges_to_the_exact_period_one_orbit(oscillator):
    exact = oscillator.period_one_orbit(1.8)
    errors = np.array(
        [
            abs(oscillator.section(1.8, 30, 1, steps, scheme="paoli-schatzman")[0, 0] - exact)
            for steps in (200, 400, 800)
        ]
    )
    assert np.all(errors[:-1] / errors[1:] >= 1.6), errors
    assert errors[-1] < 0.02 * abs(exact)


def test_scene_systems_start_admissible_and_draw():
    from granular.drawing.adapters import shapes_of

    for name in ("bouncing_ball_1dof", "double_pendulum_wall"):
        system = load(name).build()
        t, q, _ = system.initial_state()
        assert np.all(system.gaps(t, q) >= 0.0)
        shapes = shapes_of(system.describe(), q)
        assert len(shapes.sphere_centres) >= 1 and len(shapes.planes) == 1
