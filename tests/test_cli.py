"""The `granular` command, end to end and headless.

A tiny scene (eight spheres settling in a box, 27 steps, 10 frames) is run through the command
in a subprocess; the run file is then rendered, inspected, plotted and exported.
Bad inputs are checked in-process through `granular.cli.main` (same code, exit
status returned) and a few through a subprocess to see the real exit code and that
no traceback is printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import granular as gr
from granular.cli import FILE_ERROR, FAILURE, USAGE, main

from support.scenes import repository_scenes, tiny_scene

TINY_SCENE = tiny_scene(0.027)


def granular(*args, cwd, env=None):
    """Run the command as users do (``python -m granular.cli`` is the console script's code)."""
    environment = dict(os.environ, MPLBACKEND="Agg", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "granular.cli", *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_line_error(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A scenes directory with the tiny scene, and the run made by ``granular run``."""
    root = tmp_path_factory.mktemp("cli")
    (root / "scenes").mkdir()
    (root / "scenes" / "tiny.py").write_text(TINY_SCENE)
    (root / "scenes" / "broken.py").write_text('"""Broken: raises on import."""\nraise RuntimeError("boom")\n')
    (root / "scenes" / "nobuild.py").write_text('"""No build function here."""\n')
    result = granular("run", "tiny", "--out", "runs/tiny.h5", cwd=root, env={"GRANULAR_SCENES": str(root / "scenes")})
    return root, result


@pytest.fixture
def in_workspace(workspace, monkeypatch):
    root, _ = workspace
    monkeypatch.chdir(root)
    monkeypatch.setenv("GRANULAR_SCENES", str(root / "scenes"))
    return root


@pytest.fixture(scope="module")
def run(workspace):
    root, _ = workspace
    return gr.Trajectory.load(root / "runs" / "tiny.h5")


# -- run -------------------------------------------------------------------------------
def test_run_writes_the_trajectory_of_the_scene(workspace, run):
    root, result = workspace
    assert result.returncode == 0, result.stderr
    assert "saved runs/tiny.h5" in result.stdout
    assert len(run) == 10  # frame 0 and every 3rd of 27 steps
    np.testing.assert_allclose(run.t[[0, -1]], [0.0, 0.027])
    assert run.n_contacts[-1] >= 4  # the bottom spheres rest on the floor
    assert run.system["kind"] == "spheres" and run.meta["record_every"] == 3


def test_run_shows_progress_on_stderr(workspace):
    _, result = workspace
    last = result.stderr.strip().splitlines()[-1]
    assert re.search(r"27/27 steps .* steps/s.* t = 0\.027 s .* \d+ contacts", last), result.stderr


@pytest.mark.exact
def test_hdf5_round_trip_keeps_contacts(run, tmp_path):
    path = run.save(tmp_path / "copy.h5")
    again = gr.Trajectory.load(path)
    assert len(again) == len(run)
    for name in ("t", "positions", "velocities", "radii", "kinetic_energy", "dissipated_energy"):
        np.testing.assert_array_equal(getattr(again, name), getattr(run, name))
    assert sum(len(c) for c in run.contacts) > 0
    for before, after in zip(run.contacts, again.contacts):
        for name in ("i", "j", "wall", "gap", "normal", "impulse"):
            np.testing.assert_array_equal(getattr(after, name), getattr(before, name))


def test_every_overrides_the_scene_default(in_workspace, capsys):
    assert main(["run", "tiny", "--duration", "0.01", "--every", "5", "--out", "runs/short.h5", "--quiet"]) == 0
    assert len(gr.Trajectory.load("runs/short.h5")) == 3  # frames at 0, 5 and 10 steps
    assert capsys.readouterr().err == ""  # --quiet: no progress bar


# -- render --------------------------------------------------------------------------------
def test_render_mp4_of_ten_frames(workspace, run):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    root, _ = workspace
    result = granular("render", "runs/tiny.h5", "out/tiny.mp4", "--size", "320x240", cwd=root)
    assert result.returncode == 0, result.stderr
    frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(root / "out" / "tiny.mp4"))
    assert frames == len(run) == 10
    assert seconds == pytest.approx(10 / 25, abs=0.05)  # --fps 25 by default
    reader = imageio_ffmpeg.read_frames(str(root / "out" / "tiny.mp4"))
    meta = next(reader)
    reader.close()
    assert tuple(meta["size"]) == (320, 240)


def test_render_png_is_not_blank_and_forces_change_it(workspace):
    imageio = pytest.importorskip("imageio.v2")
    root, _ = workspace
    plain = granular("render", "runs/tiny.h5", "out/plain.png", "--size", "240x176", cwd=root)
    forces = granular("render", "runs/tiny.h5", "out/forces.png", "--forces", "--size", "240x176", cwd=root)
    assert plain.returncode == 0 and forces.returncode == 0, plain.stderr + forces.stderr
    a = imageio.imread(root / "out" / "plain.png")[..., :3].astype(int)
    b = imageio.imread(root / "out" / "forces.png")[..., :3].astype(int)
    background = np.array([255, 255, 255])
    assert (np.abs(a - background).sum(axis=-1) > 60).mean() > 0.05  # something is drawn
    assert a.std() > 20
    assert np.abs(a - b).mean() > 2.0  # the overlay changes the picture
    red = (b[..., 0] > b[..., 1] + 50) & (b[..., 0] > b[..., 2] + 50)  # force chains: orange to red
    assert red.sum() > 30


# -- inspect, plot, export -----------------------------------------------------------------------
def table_rows(text: str) -> list[list[str]]:
    rows = [line.split() for line in text.splitlines() if re.match(r"^\s+\d+\s+\d+ - ", line)]
    assert rows, text
    return rows


def test_inspect_lists_the_largest_impulse_first(in_workspace, run, capsys):
    assert main(["inspect", "runs/tiny.h5", "--top", "5"]) == 0
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert len(rows) == min(5, int(run.n_contacts[-1]))  # active contacts only
    header = next(line for line in out.splitlines() if "impulse (N s)" in line)
    end = header.index("impulse (N s)") + len("impulse (N s)")  # the column is right-aligned
    impulses = [float(line[:end].split()[-1]) for line in out.splitlines() if re.match(r"^\s+\d+\s+\d+ - ", line)]
    assert impulses[0] == pytest.approx(run.contacts[-1].impulse.max(), rel=1e-5)
    assert impulses == sorted(impulses, reverse=True)
    assert "kinetic" in out and "dissipated" in out and "frame 9 at t = 0.027 s" in out


def test_inspect_an_earlier_frame(in_workspace, run, capsys):
    assert main(["inspect", "runs/tiny.h5", "--frame", "-2", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "frame 8 at t = 0.024 s" in out


@pytest.mark.parametrize("kind", ["energy", "multipliers", "contacts", "wall-forces"])
def test_plot_writes_a_png(in_workspace, kind):
    imageio = pytest.importorskip("imageio.v2")
    assert main(["plot", "runs/tiny.h5", kind, f"plots/{kind}.png"]) == 0
    path = Path("plots") / f"{kind}.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    assert imageio.imread(path)[..., :3].std() > 5


def test_export_vtk_is_readable_by_pyvista(in_workspace, run):
    pv = pytest.importorskip("pyvista")
    assert main(["export", "runs/tiny.h5", "vtk", "--vtk", "--quiet"]) == 0
    reader = pv.get_reader(str(Path("vtk") / "tiny.pvd"))
    assert reader.number_time_points == len(run)
    np.testing.assert_allclose(reader.time_values, run.t)
    reader.set_active_time_point(len(run) - 1)
    spheres, contacts, walls = reader.read()
    assert {"radius", "velocity", "speed", "id"} <= set(spheres.point_data.keys())
    np.testing.assert_allclose(spheres.points, run.positions[-1])
    np.testing.assert_allclose(spheres.point_data["radius"], run.radii[-1])
    np.testing.assert_allclose(spheres.point_data["velocity"], run.velocities[-1])
    assert {"impulse", "force", "gap", "i", "j", "wall"} <= set(contacts.cell_data.keys())
    np.testing.assert_allclose(contacts.cell_data["impulse"], run.contacts[-1].impulse)
    np.testing.assert_allclose(contacts.cell_data["force"], run.contacts[-1].impulse / run.meta["dt"])
    assert contacts.n_cells == len(run.contacts[-1])


@pytest.mark.exact
def test_export_active_only_writes_the_flagged_contacts(in_workspace, run):
    """--active-only keeps exactly the contacts the full export flags active, with
    their impulses, and every one of them pushes."""
    pv = pytest.importorskip("pyvista")
    assert main(["export", "runs/tiny.h5", "all", "--vtk", "--quiet"]) == 0
    assert main(["export", "runs/tiny.h5", "active", "--vtk", "--quiet", "--active-only"]) == 0
    flagged = 0
    for k in range(len(run)):
        full = pv.get_reader(str(Path("all") / "tiny.pvd"))
        full.set_active_time_point(k)
        contacts = full.read()[1]
        kept = pv.get_reader(str(Path("active") / "tiny.pvd"))
        kept.set_active_time_point(k)
        active = kept.read()[1]
        mask = np.asarray(contacts.cell_data["active"], bool) if contacts.n_cells else np.zeros(0, bool)
        assert active.n_cells == mask.sum()
        if active.n_cells:
            assert np.all(active.cell_data["impulse"] > 0.0)
            np.testing.assert_array_equal(active.cell_data["impulse"], contacts.cell_data["impulse"][mask])
        flagged += int(mask.sum())
    assert 0 < flagged < sum(len(c) for c in run.contacts)  # the tiny run has both kinds


def vtp_files(directory: Path) -> set[str]:
    return {p.name for p in directory.glob("*.vtp")}


def test_export_again_replaces_the_series_and_keeps_other_files(in_workspace, run):
    """Ten frames, then every third frame into the same folder: the folder holds the
    four listed frames' files and nothing of the first export; foreign files stay."""
    import xml.etree.ElementTree as ElementTree

    folder = in_workspace / "vtk_again"
    assert main(["export", "runs/tiny.h5", str(folder), "--vtk", "--quiet"]) == 0
    assert len(vtp_files(folder)) == 3 * len(run)  # spheres, contacts and walls
    (folder / "notes.txt").write_text("mine")
    (folder / "other_spheres_00003.vtp").write_text("another series")
    assert main(["export", "runs/tiny.h5", str(folder), "--vtk", "--quiet", "--every", "3"]) == 0
    listed = {entry.get("file") for entry in ElementTree.parse(folder / "tiny.pvd").iter("DataSet")}
    assert len(listed) == 3 * len(range(0, len(run), 3)) == 12
    assert vtp_files(folder) == listed | {"other_spheres_00003.vtp"}
    assert (folder / "notes.txt").read_text() == "mine"


def test_inspect_never_prints_minus_zero(in_workspace, run, capsys):
    """A zero-gravity run has potential energy -0.0 (-g . x with g = 0): printed as 0."""
    from dataclasses import replace

    zero = np.zeros(len(run))
    replace(run, potential_energy=-zero, kinetic_energy=-zero, dissipated_energy=-zero).save("runs/zero.h5")
    assert main(["inspect", "runs/zero.h5"]) == 0
    out = capsys.readouterr().out
    assert "kinetic 0 J, potential 0 J, total 0 J, dissipated since the start 0 J" in out
    assert "-0 " not in out


# -- scenes and help ----------------------------------------------------------------------------
def test_scenes_lists_the_repository_scenes_with_descriptions(tmp_path):
    result = granular("scenes", cwd=tmp_path, env={"GRANULAR_SCENES": ""})
    assert result.returncode == 0, result.stderr
    listed = dict(line.split(None, 1) for line in result.stdout.splitlines())
    for name in (
        "box_pour",
        "hopper_discharge",
        "growing_spheres",
        "newton_cradle",
        "two_spheres_headon",
        "billiards_break",
    ):
        assert name in listed and len(listed[name]) > 10
    assert listed["box_pour"].startswith("Box pour:")


def test_scenes_directory_from_the_environment(in_workspace, capsys):
    assert main(["scenes"]) == 0
    out = capsys.readouterr().out
    assert "tiny" in out and "Tiny: eight spheres" in out and "box_pour" not in out


@pytest.mark.parametrize("command", [[], ["run"], ["render"], ["inspect"], ["plot"], ["export"], ["scenes"]])
def test_help_everywhere(command, capsys):
    assert main([*command, "--help"]) == 0
    assert "usage: granular" in capsys.readouterr().out


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("granular")
    if not script.exists():
        pytest.skip("console script not installed next to this interpreter")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "inspect" in result.stdout


# -- bad input: one line, a non-zero status, never a traceback --------------------------------------
BAD_INPUTS = [
    (["inspect", "missing.h5"], FILE_ERROR, "no trajectory file at missing.h5"),
    (["inspect", "corrupt.h5"], FILE_ERROR, "cannot read trajectory"),
    (["inspect", "foreign.h5"], FILE_ERROR, "not a granular trajectory"),
    (["render", "missing.h5", "out.png"], FILE_ERROR, "no trajectory file"),
    (["run", "no_such_scene"], USAGE, "unknown scene 'no_such_scene'"),
    (["run", "broken"], FAILURE, "scene 'broken' failed to import: RuntimeError: boom"),
    (["run", "nobuild"], FAILURE, "has no build() function"),
    (["inspect", "runs/tiny.h5", "--frame", "10"], USAGE, "frame 10 is out of range"),
    (["inspect", "runs/tiny.h5", "--frame", "-11"], USAGE, "out of range"),
    (["render", "runs/tiny.h5", "out.png", "--frame", "99"], USAGE, "frame 99 is out of range"),
    (["render", "runs/tiny.h5", "out.avi"], USAGE, "unsupported output extension '.avi'"),
    (["render", "runs/tiny.h5", "picture"], USAGE, "unsupported output extension '(none)'"),
    (["render", "runs/tiny.h5", "out.png", "--camera", "orbit"], USAGE, "--camera orbit needs an animation"),
    (["run", "tiny", "--render", "movie.webm"], USAGE, "unsupported output extension '.webm'"),
    (["run", "tiny", "--out", "run.txt"], USAGE, "must end in .h5"),
    (["plot", "runs/tiny.h5", "energy", "energy.jpg"], USAGE, "unsupported figure extension '.jpg'"),
    (["plot", "runs/tiny.h5", "temperature", "t.png"], USAGE, "invalid choice: 'temperature'"),
    (["export", "runs/tiny.h5", "vtkdir"], USAGE, "choose an export format: --vtk"),
    (["run", "tiny", "--dt", "-1"], USAGE, "expected a positive number"),
    (["render", "runs/tiny.h5", "out.mp4", "--size", "big"], USAGE, "expected WIDTHxHEIGHT"),
    (["frobnicate"], USAGE, "invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize("argv, status, message", BAD_INPUTS, ids=[" ".join(a) for a, _, _ in BAD_INPUTS])
def test_bad_input_gives_one_line_and_a_status(in_workspace, capsys, argv, status, message):
    (in_workspace / "corrupt.h5").write_bytes(b"\x89HDF\r\n\x1a\n but not really")
    import h5py

    with h5py.File(in_workspace / "foreign.h5", "w") as h5:
        h5["x"] = np.arange(3)
    assert main(argv) == status
    captured = capsys.readouterr()
    line = one_line_error(captured.err)
    assert message in line
    assert line.startswith("granular")
    for name in ("out.png", "out.avi", "picture", "movie.webm", "run.txt", "energy.jpg", "t.png"):
        assert not (in_workspace / name).exists()


def test_bad_input_through_the_real_command(workspace):
    root, _ = workspace
    env = {"GRANULAR_SCENES": str(root / "scenes")}
    for argv, status, message in [
        (["inspect", "missing.h5"], FILE_ERROR, "no trajectory file"),
        (["run", "no_such_scene"], USAGE, "unknown scene"),
        (["render", "runs/tiny.h5", "x.avi"], USAGE, "unsupported output extension"),
    ]:
        result = granular(*argv, cwd=root, env=env)
        assert result.returncode == status
        assert message in one_line_error(result.stderr)


def test_a_failing_render_keeps_the_previous_output(in_workspace, capsys):
    good = in_workspace / "keep.png"
    good.write_bytes(b"a good picture")
    (in_workspace / "corrupt.h5").write_bytes(b"garbage")
    assert main(["render", "corrupt.h5", "keep.png"]) == FILE_ERROR
    assert good.read_bytes() == b"a good picture"
    assert not [p for p in in_workspace.iterdir() if ".tmp" in p.name]


def test_a_simulation_failure_saves_the_frames_before_it(in_workspace, capsys):
    (in_workspace / "scenes" / "jams.py").write_text(
        textwrap.dedent('''\
        """Jams: two spheres grow into each other between two walls."""
        import numpy as np
        import granular as gr

        DEFAULTS = dict(duration=0.1, dt=1e-3, record_every=2)


        def build():   # 4 mm to spare, radii growing by 0.2 mm/s each: jammed after 50 steps
            return gr.SphereWorld([[0.011, 0, 0], [0.033, 0, 0]], lambda t: np.full(2, 0.01 * (1 + 2 * t)),
                                  gravity=(0, 0, 0), walls=[gr.Plane([0, 0, 0], [1, 0, 0]),
                                                            gr.Plane([0.044, 0, 0], [-1, 0, 0])])
        ''')
    )
    status = main(["run", "jams", "--out", "runs/jams.h5", "--quiet"])
    captured = capsys.readouterr()
    assert status == FAILURE
    line = one_line_error(captured.err)
    assert "simulation failed" in line and "are in runs/jams.partial.h5" in line
    saved = gr.Trajectory.load("runs/jams.partial.h5")
    assert len(saved) >= 10 and 0.02 <= saved.t[-1] < 0.05


def test_a_failed_run_keeps_the_previous_run_file(in_workspace, capsys):
    """keep.h5 holds a good run; a failing run with --out keep.h5 leaves it byte for
    byte and saves its frames to keep.partial.h5 instead."""
    test_a_simulation_failure_saves_the_frames_before_it(in_workspace, capsys)  # writes scenes/jams.py
    assert main(["run", "tiny", "--out", "runs/keep.h5", "--quiet"]) == 0
    good = (in_workspace / "runs" / "keep.h5").read_bytes()
    capsys.readouterr()
    assert main(["run", "jams", "--out", "runs/keep.h5", "--quiet"]) == FAILURE
    line = one_line_error(capsys.readouterr().err)
    assert "runs/keep.partial.h5" in line and "runs/keep.h5 is left as it was" in line
    assert (in_workspace / "runs" / "keep.h5").read_bytes() == good
    assert gr.Trajectory.load("runs/keep.h5").positions.shape[1] == 8  # still the tiny run
    assert gr.Trajectory.load("runs/keep.partial.h5").positions.shape[1] == 2  # the two jammed spheres


def test_run_files_get_the_permissions_of_the_umask(in_workspace, capsys):
    """Not mkstemp's 0600: 0666 & ~umask for a new file, for complete and partial runs."""
    test_a_simulation_failure_saves_the_frames_before_it(in_workspace, capsys)
    previous = os.umask(0o027)
    try:
        for name in ("perm.h5", "perm.partial.h5"):
            (in_workspace / "runs" / name).unlink(missing_ok=True)
        assert main(["run", "tiny", "--out", "runs/perm.h5", "--quiet"]) == 0
        assert main(["run", "jams", "--out", "runs/perm.h5", "--quiet"]) == FAILURE
    finally:
        os.umask(previous)
    for name in ("perm.h5", "perm.partial.h5"):
        assert (in_workspace / "runs" / name).stat().st_mode & 0o777 == 0o640


# -- the repository's scenes through the command ---------------------------------------------------
def test_two_spheres_scene_matches_newtons_law_through_the_command(tmp_path):
    result = granular(
        "run", "two_spheres_headon", "--quiet", "--out", "headon.h5", cwd=tmp_path, env={"GRANULAR_SCENES": ""}
    )
    assert result.returncode == 0, result.stderr
    after = gr.Trajectory.load(tmp_path / "headon.h5").velocities[-1][:, 0]
    np.testing.assert_allclose(after, [-1.025, 0.175], atol=1e-6)  # m1 = 1, m2 = 3 kg, e = 0.8


#: Scenes whose total energy may rise from frame to frame, and why. Work is done on the
#: first four; the last is undriven but integrated by a first-order scheme with a
#: configuration-dependent M(q), whose energy drifts by O(dt) between impacts (about
#: 6e-6 of the kinetic energy per step at dt = 1e-3), checked against a looser bound.
DRIVEN = {
    "beam_between_obstacles": "the clamped support moves, phi(t) = 0.2 sin(10 t) m",
    "impact_oscillator": "harmonic forcing cos(w t)",
    "growing_spheres": "the radii grow and push the spheres apart",
    "piston_compression": "the piston moves into the packing at a prescribed speed",
}
#: Scenes fed by an inlet: the spheres inserted bring their kinetic and potential
#: energy (a silo filled from empty starts at 0 J), so no bound on the total holds;
#: their energy balance is checked per sphere in tests/test_flows.py.
FED = {"hopper_discharge", "silo_filling"}
DRIFTING = {"double_pendulum_wall": 1e-3}  # largest rise over the run / energy scale
ROUND_OFF = 1e-9  # relative to the energy scale of the run
#: Scenes whose time step exceeds 0.02 s run for one step (a duration shorter than a step is refused);
#: chung_ooi's impact takes microseconds (dt = 1e-6 s): its own default duration, 10 steps,
#: instead of 20,000.
DURATION = {
    "impact_oscillator": 0.035,  # its dt is 0.0349 s
    "chung_ooi": 1e-5,
}


@pytest.mark.parametrize("scene", repository_scenes())
def test_every_scene_runs_through_the_command(scene, tmp_path):
    """The scene's DEFAULTS integrate it: finite energies, and an undriven scene's
    kinetic + potential energy never rises from one frame to the next beyond round-off
    (contacts, restitution e <= 1 and friction only remove energy); a driven scene's
    stays within 10 times its initial scale. An undriven double pendulum under a
    drifting scheme beyond round-off fails this (the beam under the default velocity
    scheme, which reached 1e155 J after 0.02 s, is now refused before its first step)."""
    duration = DURATION.get(scene, 0.02)
    result = granular(
        "run",
        scene,
        "--duration",
        str(duration),
        "--quiet",
        "--out",
        "run.h5",
        cwd=tmp_path,
        env={"GRANULAR_SCENES": ""},
    )
    assert result.returncode == 0, result.stderr
    run = gr.Trajectory.load(tmp_path / "run.h5")
    assert len(run) >= 2 and run.t[-1] == pytest.approx(duration, abs=run.meta["dt"])
    energies = np.stack([run.kinetic_energy, run.potential_energy, run.dissipated_energy])
    present = [run.positions[k][run.present(k)] for k in range(len(run))]  # NaN marks absent ids
    assert np.all(np.isfinite(energies)) and all(np.all(np.isfinite(p)) for p in present)
    if scene in FED:
        assert np.all(np.diff(run.dissipated_energy) >= 0.0)
        return
    scale = np.abs(run.kinetic_energy).max() + np.abs(run.potential_energy).max()
    if scene in DRIVEN:  # 0.02 s of driving cannot multiply the energy by 10
        assert scale <= 10.0 * (run.kinetic_energy[0] + abs(run.potential_energy[0])), DRIVEN[scene]
        return
    assert scale > 0.0
    rise = np.diff(run.total_energy).max() / scale
    assert rise <= DRIFTING.get(scene, ROUND_OFF), f"total energy rose by {rise:.3g} of its scale"


def test_a_blow_up_fails_with_the_time_of_the_first_non_finite_step(in_workspace, capsys):
    """dt omega = 10: explicit integration multiplies the amplitude by about 100 a step,
    so the energy overflows at step 77 (t = 0.77 s); the frames before it are kept."""
    (in_workspace / "scenes" / "unstable.py").write_text(
        textwrap.dedent('''\
        """Unstable: a stiff spring (omega = 1000 rad/s) integrated explicitly at dt = 10 / omega."""
        import granular as gr

        DEFAULTS = dict(duration=2.0, dt=1e-2, record_every=5)


        def build():
            return gr.ConstrainedSystem([0.1], [0.0], mass=[[1.0]], force=lambda t, q, u: -1e6 * q,
                                        constraints=[], potential=lambda t, q: 0.5e6 * q[0] ** 2)
        ''')
    )
    status = main(["run", "unstable", "--out", "runs/unstable.h5", "--quiet"])
    line = one_line_error(capsys.readouterr().err)
    assert status == FAILURE
    assert "non-finite at t = 0.77 s (step 77)" in line and "runs/unstable.partial.h5" in line
    saved = gr.Trajectory.load("runs/unstable.partial.h5")
    assert 2 <= len(saved) and saved.t[-1] < 0.77
    assert np.all(np.isfinite(saved.total_energy)) and np.all(np.isfinite(saved.positions))


# -- progress (tqdm) -------------------------------------------------------------------------
def test_progress_bar_shows_steps_rate_time_and_contacts_and_is_quiet_when_asked():
    import io

    from granular.progress import ProgressBar

    stream = io.StringIO()
    bar = ProgressBar(40, stream=stream)
    bar.update(40, t=0.04, contacts=5)
    bar.finish()
    last = stream.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert re.search(r"40/40 steps .* steps/s, t = 0\.04 s  5 contacts", last), stream.getvalue()
    quiet = io.StringIO()
    bar = ProgressBar(40, stream=quiet, enabled=False)
    bar.update(40, t=0.04, contacts=5)
    bar.finish()
    assert quiet.getvalue() == ""


def test_progress_callback_draws_a_simulation_run_and_chains_another(capsys):
    from granular.progress import progress

    seen = []
    world = gr.SphereWorld(np.array([[0.0, 0.0, 0.01]]), 0.01, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
    gr.Simulation(world, 1e-3).run(steps=30, progress=progress().also(lambda k, n, r: seen.append(k)))
    err = capsys.readouterr().err.replace("\r", "\n")
    assert seen == list(range(1, 31))
    assert re.search(r"30/30 steps .* t = 0\.03 s  1 contacts", err), err
