"""The scenes fed by inlets: the silo fills at its inlet's rate without overlaps, and
the silo with an orifice drains through it while its inlet feeds it."""

import warnings

import numpy as np

import granular as gr
from granular.scenes import load_scene, resolve_scene


def run(world, dt, steps, every):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gr.TimeStepWarning)
        return gr.Simulation(world, dt=dt).run(steps=steps, record_every=every)


def test_the_silo_fills_at_its_inlets_rate_without_overlaps():
    """After 60 steps the mass inserted lies within one largest sphere's mass below the
    rate times the time (the inlet's counting rule), and the spheres present are
    admissible (no gap below -OVERLAP_TOLERANCE r)."""
    scene = load_scene(resolve_scene("silo_filling"))
    world = scene.build()
    trajectory = run(world, scene.DEFAULTS["dt"], 60, 20)
    figures = scene.summary(trajectory)
    largest = scene.DENSITY * 4.0 / 3.0 * np.pi * scene.RADII[1] ** 3
    assert figures["expected_mass"] - largest < figures["inserted_mass"] <= figures["expected_mass"] * (1 + 1e-12)
    assert figures["inserted"] == world.n > 0
    world.check_admissible(float(trajectory.t[-1]), trajectory.positions[-1][trajectory.present(-1)])


def test_the_hopper_drains_through_its_orifice_while_the_inlet_feeds_it():
    """A small silo (radius 12 mm, bed 2 cm, orifice 4 d): after 0.07 s grains have
    left through the orifice (the summary's mass flow rate is positive), the inlet
    has inserted some, and the grains turn (friction)."""
    scene = load_scene(resolve_scene("hopper_discharge"))
    world = scene.build(orifice=4.0, silo_radius=0.012, fill_height=0.02)
    assert world.rotates
    trajectory = run(world, scene.DEFAULTS["dt"], 280, 40)
    figures = scene.summary(trajectory)
    assert figures["removed"] > 0 and figures["inserted"] > 0
    assert scene.mass_flow_rate(trajectory, since=0.0) > 0.0
    assert np.any(np.abs(trajectory.angular_velocities[-1][trajectory.present(-1)]) > 0.0)


def test_the_drum_read_from_its_stl_lifts_grains_and_needs_a_torque():
    """The drum is the STL's 48-facet closed cylinder (4 x 48 triangles) and four
    12-triangle bars: 240 triangles. Turning at 3 rad/s for 0.25 s, the drum does
    positive work on the grains (the torque of the summary is positive), the
    dissipated energy never falls, and no grain sinks into the mesh by more than a
    turning wall's linearisation allows: a contact point carried on a circle of
    radius rho <= R leaves the tangent line the step follows by (omega rho h)^2 /
    (2 rho) <= omega^2 R h^2 / 2 = 9e-8 m."""
    scene = load_scene(resolve_scene("drum_with_lifters"))
    world = scene.build(n=30)
    assert len(world.walls[0].faces) == 4 * 48 + 4 * 12
    trajectory = run(world, scene.DEFAULTS["dt"], 500, 50)
    figures = scene.summary(trajectory)
    assert figures["torque"] > 0.0 and trajectory.wall_work[-1] > 0.0
    assert np.all(np.diff(trajectory.dissipated_energy) >= 0.0)
    t, h = float(trajectory.t[-1]), scene.DEFAULTS["dt"]
    rows = world.surfaces[0].rows(trajectory.positions[-1], trajectory.radii[-1], 0.0, t)
    assert rows.gaps.min(initial=0.0) >= -0.5 * 3.0**2 * scene.RADIUS * h**2


def test_the_command_and_a_sweep_task_run_a_scene_fed_by_an_inlet(tmp_path, monkeypatch, capsys):
    """``granular run`` writes a run file whose checks accept the NaN of absent ids,
    ``granular inspect`` reports the frame's count and the counters, ``--from``
    continues it, and a sweep's task returns the scene's summary and a run file that
    loads with its flow counters."""
    from granular import scenes
    from granular.cli.__main__ import main
    from granular.app.parameter_sweeps import run_task

    monkeypatch.chdir(tmp_path)
    assert main(["run", "silo_filling", "--duration", "0.01", "--every", "10", "--out", "silo.h5", "--quiet"]) == 0
    assert main(["inspect", "silo.h5"]) == 0
    silo = gr.Trajectory.load("silo.h5")
    last = len(silo) - 1
    assert f"{silo.present(last).size} spheres in frame {last}" in capsys.readouterr().out
    assert main(["run", "--from", "silo.h5", "--duration", "0.01", "--out", "more.h5", "--quiet"]) == 0
    more = gr.Trajectory.load("more.h5")
    assert more.flow[-1, 1] > silo.flow[-1, 1]
    path = scenes.resolve_scene("silo_filling")
    result = run_task(
        path.read_text(),
        str(path),
        "silo_filling",
        {"mass_rate": 0.5},
        scenes.RunSettings(duration=0.01, dt=5e-4, record_every=10),
        {},
    )
    assert result["status"] == "ok" and result["figures"]["inserted"] > 0
    (tmp_path / "task.h5").write_bytes(result["data"])
    assert gr.Trajectory.load(tmp_path / "task.h5").flow[-1, 1] == result["figures"]["inserted"]
