"""Defects a new user hit with the `granular` command, one regression test each.

Each test builds the smallest input that showed the defect and asserts the fixed
behaviour: a one-line error with the documented exit status, or the honest output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import granular as gr
from granular.cli import FILE_ERROR, USAGE, main

from support.scenes import tiny_scene

TINY_SCENE = tiny_scene(0.012)


def one_line_error(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A scenes directory with the tiny scene and its run file (made in-process)."""
    root = tmp_path_factory.mktemp("defects")
    (root / "scenes").mkdir()
    (root / "scenes" / "tiny.py").write_text(TINY_SCENE)
    old, cwd = os.environ.get("GRANULAR_SCENES"), os.getcwd()
    os.environ["GRANULAR_SCENES"] = str(root / "scenes")
    os.chdir(root)
    try:
        assert main(["run", "tiny", "--quiet", "--out", "runs/tiny.h5"]) == 0
    finally:
        os.chdir(cwd)
        if old is None:
            del os.environ["GRANULAR_SCENES"]
        else:
            os.environ["GRANULAR_SCENES"] = old
    return root


@pytest.fixture
def here(made, monkeypatch):
    monkeypatch.chdir(made)
    monkeypatch.setenv("GRANULAR_SCENES", str(made / "scenes"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return made


def damaged(root: Path, name: str, change) -> Path:
    """A copy of the tiny run with ``change(trajectory)`` applied, saved as ``name``."""
    trajectory = gr.Trajectory.load(root / "runs" / "tiny.h5")
    change(trajectory)
    path = root / "runs" / name
    trajectory.save(path)
    return path


# -- 1. a NaN position is refused by every command that reads the run ------------------------
def _nan_in_frame_2(trajectory):
    trajectory.positions[2, 3, 1] = np.nan


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "{run}", "out.png"],
        ["inspect", "{run}"],
        ["plot", "{run}", "energy", "energy.png"],
        ["export", "{run}", "vtk", "--vtk", "--quiet"],
    ],
)
def test_a_nan_position_is_refused_naming_the_frame(here, capsys, argv):
    path = damaged(here, "nan.h5", _nan_in_frame_2)
    status = main([a.format(run=path) for a in argv])
    error = one_line_error(capsys.readouterr().err)
    assert status == FILE_ERROR
    assert "frame 2" in error and "position" in error
    assert not (here / "out.png").exists()


def test_an_infinite_impulse_is_refused_too(here, capsys):
    def change(trajectory):
        trajectory.contacts[-1].impulse[0] = np.inf

    path = damaged(here, "inf.h5", change)
    assert main(["inspect", str(path)]) == FILE_ERROR
    assert f"frame {len(gr.Trajectory.load(path)) - 1}" in one_line_error(capsys.readouterr().err)


# -- 2. tracebacks instead of one-line errors ------------------------------------------------
def test_a_sphere_run_without_radii_is_refused_in_one_line(here, capsys):
    def change(trajectory):
        trajectory.radii = None

    path = damaged(here, "noradii.h5", change)
    assert main(["render", str(path), "out.png"]) == FILE_ERROR
    assert "radii" in one_line_error(capsys.readouterr().err)


def test_a_misspelled_defaults_key_names_it_the_valid_keys_and_the_closest(here, capsys):
    (here / "scenes" / "typo.py").write_text(TINY_SCENE.replace("duration=0.012", "duraton=0.012"))
    try:
        status = main(["run", "typo", "--quiet"])
    finally:
        (here / "scenes" / "typo.py").unlink()
    error = one_line_error(capsys.readouterr().err)
    assert status == 1
    assert "'duraton'" in error and "did you mean 'duration'" in error and "record_every" in error


def test_a_misspelled_simulation_keyword_is_named_with_the_closest():
    world = gr.SphereWorld(np.zeros((1, 3)), 0.1)
    with pytest.raises(gr.InvalidInputError, match="'shceme'.*did you mean 'scheme'"):
        gr.Simulation(world, 1e-3, shceme="velocity")
    with pytest.raises(TypeError, match="'warm_strat'.*did you mean 'warm_start'"):  # still a TypeError
        gr.Simulation(world, 1e-3, warm_strat=False)
    gr.Simulation(world, 1e-3, warm_start=False)  # a scheme option is still accepted


def test_a_misspelled_sphere_world_keyword_is_named_by_python():
    with pytest.raises(TypeError, match="restitutoin"):
        gr.SphereWorld(np.zeros((1, 3)), 0.1, restitutoin=0.5)


def test_a_scene_whose_build_returns_none_is_one_line(here, capsys):
    (here / "scenes" / "none.py").write_text('"""Returns nothing."""\ndef build():\n    return None\n')
    try:
        status = main(["run", "none", "--quiet"])
    finally:
        (here / "scenes" / "none.py").unlink()
    assert status == 1
    assert "returned None" in one_line_error(capsys.readouterr().err)


# -- 3. a zero duration would replace the run file with one frame ---------------------------
def test_a_zero_duration_is_refused_and_the_run_file_kept(here, capsys):
    before = (here / "runs" / "tiny.h5").read_bytes()
    assert main(["run", "tiny", "--duration", "0", "--out", "runs/tiny.h5", "--quiet"]) == USAGE
    assert "positive duration" in one_line_error(capsys.readouterr().err)
    assert (here / "runs" / "tiny.h5").read_bytes() == before


# -- 4. a negative --dt is refused like --dt 0, not as a missing argument --------------------
@pytest.mark.parametrize("value", ["-1e-3", "-0.001", "-1", "0"])
def test_a_negative_or_zero_dt_gets_the_same_message(here, capsys, value):
    assert main(["run", "tiny", "--dt", value, "--quiet"]) == USAGE
    error = one_line_error(capsys.readouterr().err)
    assert f"expected a positive number, got '{value}'" in error
    assert "expected one argument" not in error


# -- 5. a reader that closes the pipe early ----------------------------------------------------
def test_a_closed_pipe_stops_quietly_like_a_unix_tool(made, tmp_path):
    scenes = made / "scenes"
    for k in range(2000):  # more output than a pipe buffer holds (64 kB)
        (scenes / f"many_{k:04d}.py").write_text(f'"""Scene number {k} {"x" * 40}."""\n')
    try:
        environment = dict(os.environ, GRANULAR_SCENES=str(scenes))
        process = subprocess.Popen(
            [sys.executable, "-m", "granular.cli", "scenes"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            cwd=tmp_path,
        )
        first = process.stdout.readline()
        process.stdout.close()  # head -1
        error = process.stderr.read().decode()
        status = process.wait(timeout=120)
    finally:
        for path in scenes.glob("many_*.py"):
            path.unlink()
    assert first.startswith(b"many_0000")
    assert error == ""  # no "cannot access: Broken pipe", no "Exception ignored"
    assert status == 141


# -- 6. an unwritable output is named as the user wrote it ---------------------------------------
def test_an_unwritable_output_names_the_file_asked_for_not_its_temporary(here, capsys):
    status = main(["render", "runs/tiny.h5", "/proc/e.png"])  # /proc refuses new files, even to root
    error = one_line_error(capsys.readouterr().err)
    assert status == FILE_ERROR
    assert "/proc/e.png:" in error and ".tmp" not in error


def test_atomic_path_names_the_target_when_the_directory_refuses_the_temporary(tmp_path):
    from granular.records.files import atomic_path

    with pytest.raises(OSError) as caught:
        with atomic_path("/proc/e.png"):  # /proc refuses new files, even to root
            pass
    assert caught.value.filename == "/proc/e.png"


# -- 7. inspect counts active contacts and names the walls ---------------------------------------
def test_inspect_counts_the_active_contacts_and_names_the_walls(here, capsys):
    trajectory = gr.Trajectory.load(here / "runs" / "tiny.h5")
    active = int(trajectory.n_contacts[-1])
    considered = len(trajectory.contacts[-1])
    assert considered > active > 1  # the defect needs rows that carry nothing
    assert main(["inspect", "runs/tiny.h5", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert f"... {active - 1} more active contacts" in out
    assert f"{considered - 1} more" not in out
    assert " - floor " in out  # the settled spheres rest on the box's floor
    assert "wall 0" not in out and "wall 4" not in out


def test_wall_names_follow_the_worlds_plane_order():
    from granular.cli import wall_names

    world = gr.SphereWorld(
        np.array([[0.5, 0.5, 0.5]]),
        0.1,
        walls=[gr.Box([0, 0, 0], [1, 1, 1], open_top=True), gr.Plane([0, 0, 2], [0, 0, -1])],
    )
    names = wall_names(world.describe())
    assert len(names) == len(world.planes)
    for name, plane in zip(names, world.planes):
        if name == "floor":
            assert plane.normal.tolist() == [0, 0, 1]
    assert names[:4] == ["box x-min", "box x-max", "box y-min", "box y-max"]
    assert names[4] == "floor" and names[5] == "plane 5 (normal 0, 0, -1)"


# -- 8. multipliers below the solver's tolerance are zeros -----------------------------------------
def _with_noise(trajectory):
    """Two noise multipliers (1e-136 and 1e-13 N s) on rows the last step left at zero."""
    impulse = trajectory.contacts[-1].impulse
    zeros = np.flatnonzero(impulse == 0)
    impulse[zeros[:2]] = (1e-136, 1e-13)


def test_noise_multipliers_are_neither_counted_nor_plotted(here, capsys):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from granular.render import plots
    from granular.records.active_contacts import active_counts, noise_impulse

    clean = gr.Trajectory.load(here / "runs" / "tiny.h5")
    path = damaged(here, "noisy.h5", _with_noise)
    noisy = gr.Trajectory.load(path)
    assert int(noisy.n_contacts[-1]) == int(clean.n_contacts[-1]) + 2  # impulse > 0 counts the noise
    assert 1e-13 < noise_impulse(noisy, len(noisy) - 1) < 1e-3 * clean.contacts[-1].impulse.max()
    assert active_counts(noisy)[-1] == clean.n_contacts[-1]
    assert main(["inspect", str(path)]) == 0
    assert f"{clean.n_contacts[-1]} active" in capsys.readouterr().out
    figure = plots.figure(plt, noisy, "multipliers")
    bars = figure.axes[0].patches
    low = min(bar.get_x() for bar in bars)
    high = max(bar.get_x() + bar.get_width() for bar in bars)
    plt.close(figure)
    assert low > 1e-12 and high / low < 1e6  # the histogram's bins span the real impulses only


# -- 9. a negative "dissipation" is never printed --------------------------------------------------
def test_growth_work_is_printed_as_energy_supplied_not_negative_dissipation(here, capsys):
    from granular.app.runs import dissipation_text

    def grow(trajectory):  # what growing_spheres saved: swelling radii, contacts doing work
        trajectory.radii = trajectory.radii * (1.0 + 0.01 * np.arange(len(trajectory)))[:, None]
        trajectory.dissipated_energy = trajectory.dissipated_energy - 0.01474 * trajectory.t / trajectory.t[-1]

    path = damaged(here, "grew.h5", grow)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "-0.01" not in out and "energy supplied since the start by growth" in out
    grown = gr.Trajectory.load(path)
    assert dissipation_text(grown).startswith("energy supplied by growth")
    assert dissipation_text(grown, 0) == "dissipated 0 J"


def test_negative_round_off_prints_zero_and_force_work_names_the_contacts(here):
    from granular.app.runs import dissipation_text

    trajectory = gr.Trajectory.load(here / "runs" / "tiny.h5")
    trajectory.dissipated_energy = np.full(len(trajectory), -1e-18)  # round-off of a J-scale run
    assert dissipation_text(trajectory) == "dissipated 0 J"
    trajectory.dissipated_energy = np.full(len(trajectory), -1e-3)
    assert dissipation_text(trajectory) == "energy supplied by contacts (impulses working with forces) 0.001 J"


# -- 12. a single body on a wide floor: --fit bodies, and a caption on every frame ------------------
def test_render_fit_bodies_frames_the_bodies_not_the_walls(here, capsys):
    assert main(["render", "runs/tiny.h5", "scene.png", "--size", "160x128"]) == 0
    assert main(["render", "runs/tiny.h5", "bodies.png", "--size", "160x128", "--fit", "bodies"]) == 0
    import imageio.v3 as iio

    def drawn(name):  # the spheres' pixels: coloured by speed, where walls and background are grey
        image = iio.imread(here / name)[..., :3].astype(int)
        return int((image.max(axis=-1) - image.min(axis=-1) > 60).sum())

    assert drawn("bodies.png") > 1.3 * drawn("scene.png")  # the spheres fill more of the picture
