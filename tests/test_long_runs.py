"""Runs that last: frames streamed to the run file as they are made, a file that survives
``kill -9``, SIGTERM handled like Ctrl-C, checkpoints that restart to round-off, and the
time-step guidance.

The killed and stopped runs are real subprocesses sent real signals; the parent reads
the file the child is writing only through the ``frames`` attribute (with HDF5's file
locking off, as a second process must), and re-computes the frames it finds in-process
to check them bit for bit (same machine, same code).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest

import granular as gr
from granular.cli import main
from granular.app.runs import load_run, restart_frame
from granular.records.streaming import frames_written

ROOT = Path(__file__).resolve().parents[1]
DT, EVERY = 1e-3, 2

WORLD = textwrap.dedent('''\
    import numpy as np
    import granular as gr


    def build():
        """Eight spheres 1 cm in radius, 2 cm apart, dropped in a box from rest."""
        grid = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
        positions = np.array([0.0205, 0.0205, 0.0305]) + grid * 0.0205
        return gr.SphereWorld(positions, 0.01, density=2500.0, restitution=0.3,
                              walls=[gr.Box([0, 0, 0], [0.062, 0.062, 0.2], open_top=True)])
    ''')

CHILD = WORLD + textwrap.dedent("""\

    import sys
    sim = gr.Simulation(build(), dt={dt})
    sim.run(duration=1000.0, record_every={every}, out=sys.argv[1], checkpoint_every=0.01, read_back=False)
    """).format(dt=DT, every=EVERY)

SCENE = (
    '"""Eight spheres dropped in a box (a test scene)."""\n'
    + WORLD
    + f"\nDEFAULTS = dict(duration=1000.0, dt={DT}, record_every={EVERY})\n"
)


def build():
    namespace = {}
    exec(WORLD, namespace)
    return namespace["build"]()


def environment():
    return dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", HDF5_USE_FILE_LOCKING="FALSE")


def wait_for_frames(process, path: Path, count: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        found = frames_written(path)
        if found >= count:
            return found
        time.sleep(0.02)
    process.kill()
    raise AssertionError(f"{path} did not reach {count} frames in {timeout} s")


def assert_same_frames(a, b, frames):
    for name in ("t", "positions", "velocities", "radii", "kinetic_energy", "dissipated_energy"):
        assert np.array_equal(getattr(a, name)[frames], getattr(b, name)[frames]), name
    for k in range(len(a))[frames]:
        assert np.array_equal(a.contacts[k].impulse, b.contacts[k].impulse)


def test_a_run_killed_with_sigkill_leaves_every_flushed_frame(tmp_path):
    """The child streams to ``out``; after SIGKILL the file opens with at least the
    frames it had flushed, at times k dt record_every, each the frame an in-memory run
    records (bit for bit), with the last checkpoint's warm state; continuing from that
    checkpoint gives the killed run's later frames again, bit for bit."""
    path = tmp_path / "killed.h5"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = wait_for_frames(child, path, 12)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    killed = load_run(path)
    assert len(killed) >= seen
    steps = killed.t / (DT * EVERY)
    np.testing.assert_allclose(steps, np.arange(len(killed)), rtol=0, atol=1e-9)
    assert np.all(np.isfinite(killed.positions)) and np.all(np.isfinite(killed.velocities))
    with h5py.File(path, "r") as h5:
        assert not h5.attrs["complete"]

    memory = gr.Simulation(build(), dt=DT).run(steps=(len(killed) - 1) * EVERY, record_every=EVERY)
    assert_same_frames(killed, memory, slice(None))

    k = restart_frame(killed)  # checkpoints every 0.01 s: 5 frames apart
    assert killed.warm_state["t"] == killed.t[k] and len(killed) - 1 - k < 0.01 / (DT * EVERY) + 1
    resumed = gr.Simulation.from_trajectory(killed, frame=k, world=build())
    later = resumed.run(steps=(len(killed) - 1 - k) * EVERY, record_every=EVERY)
    for name in ("positions", "velocities"):
        assert np.array_equal(getattr(later, name), getattr(killed, name)[k:]), name


def test_a_file_whose_writer_was_killed_before_its_superblock_was_flushed_opens_whole(tmp_path):
    """The state a kill during a flush can leave (it failed the test above once in
    CI, HDF5 raising "addr overflow"): the metadata of frame k + 1 on disk, the superblock still stating the end of
    allocation (EOA) of frame k's flush. Made here by copying the open writer's file
    after frame k + 1's flush and writing frame k's EOA back into the copy. HDF5 alone
    reads nothing past that EOA; `load_run` reads all k + 1 frames, bit for bit,
    and leaves the file's bytes as they were."""
    from granular.records.stated_end import stated_end
    from granular.records.streaming import FrameWriter

    memory = gr.Simulation(build(), dt=DT).run(steps=20, record_every=EVERY)
    k = len(memory) - 1
    writer = FrameWriter(tmp_path / "live.h5", memory.system, memory.meta)
    writer.extend(memory.first_frames(k))
    at, end_k = stated_end(tmp_path / "live.h5")
    writer.extend(memory.frame(k))
    killed = tmp_path / "killed.h5"
    killed.write_bytes((tmp_path / "live.h5").read_bytes())
    writer.close()
    with open(killed, "r+b") as handle:
        handle.seek(at)
        assert int.from_bytes(handle.read(8), "little") > end_k  # frame k's flush allocated
        handle.seek(at)
        handle.write(end_k.to_bytes(8, "little"))
    stale = killed.read_bytes()
    with pytest.raises(OSError, match="addr overflow"), h5py.File(killed, "r") as h5:
        h5["positions"][:]

    read = load_run(killed)
    assert len(read) == k + 1
    assert_same_frames(read, memory, slice(None))
    assert killed.read_bytes() == stale


@pytest.mark.parametrize("short", ["positions", "contacts/widths/normal", "contacts/normal", "energy/kinetic"])
def test_a_frame_whose_flush_was_cut_between_two_metadata_writes_is_dropped(tmp_path, short):
    """A kill between two metadata writes of frame k's flush can leave the ``frames``
    attribute and some datasets grown to k + 1 frames and another still at k (seen once
    in 600 kills of the test above's child: ``contacts/rolling_impulse`` 12 rows short
    of ``contacts/offsets``). Made here by shrinking one dataset of a streamed file back to
    its extent before the last frame: `load_run` returns the first k frames, bit for
    bit, as if the kill had come before that flush."""
    memory = gr.Simulation(build(), dt=DT).run(steps=20, record_every=EVERY)
    k = len(memory) - 1
    path = tmp_path / "cut.h5"
    gr.Simulation(build(), dt=DT).run(steps=20, record_every=EVERY, out=path, read_back=False)
    with h5py.File(path, "a") as h5:
        assert h5.attrs["frames"] == k + 1
        before = int(h5["contacts/offsets"][k]) if short == "contacts/normal" else k
        assert h5[short].shape[0] > before  # the last frame grew it
        h5[short].resize(before, axis=0)
    read = load_run(path)
    assert len(read) == k
    assert_same_frames(read, memory, slice(0, k))


@pytest.mark.parametrize("userblock", [0, 512])
def test_the_stated_end_of_a_closed_file_is_its_length_and_other_layouts_are_left_to_hdf5(tmp_path, userblock):
    """A file HDF5 closed is cut to the end of allocation its version-0 superblock states
    (the rule `open_for_reading` relies on to tell a killed writer's file); a user block
    (superblock not at byte 0) or a later superblock version is not read (None)."""
    from granular.records.stated_end import stated_end

    plain, latest = tmp_path / "plain.h5", tmp_path / "latest.h5"
    with h5py.File(plain, "w", userblock_size=userblock) as h5:
        h5["x"] = np.arange(1000.0)
    with h5py.File(latest, "w", libver="latest") as h5:
        h5["x"] = np.arange(1000.0)
    if userblock:
        assert stated_end(plain) is None
    else:
        assert stated_end(plain) == (40, plain.stat().st_size)
    assert stated_end(latest) is None


def test_sigterm_stops_granular_run_cleanly_and_the_run_continues_exactly(tmp_path):
    """SIGTERM (a scheduler's stop) ends the command at the end of the current step with
    status 143 (128 + 15); ``RUN.partial.h5`` holds every frame to that step and its
    warm state, ``RUN.h5`` is not made; ``--from`` continues it to the state an
    uninterrupted run reaches, bit for bit."""
    (tmp_path / "drop.py").write_text(SCENE)
    command = [sys.executable, "-m", "granular", "run", "drop.py", "--out", "drop.h5", "--quiet"]
    child = subprocess.Popen(
        command, cwd=tmp_path, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for_frames(child, tmp_path / "drop.partial.h5", 6)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM" in err and "drop.partial.h5" in err
    assert not (tmp_path / "drop.h5").exists()

    stopped = load_run(tmp_path / "drop.partial.h5")
    stop = int(round(stopped.t[-1] / DT))
    np.testing.assert_allclose(stopped.t[:-1] / (DT * EVERY), np.arange(len(stopped) - 1), atol=1e-9)
    assert stopped.warm_state["t"] == stopped.t[-1]  # the step it stopped at, warm
    assert stopped.meta["scene"] == "drop"

    os.chdir(tmp_path)
    assert (
        main(
            [
                "run",
                "--from",
                "drop.partial.h5",
                "--scene",
                "drop.py",
                "--duration",
                "0.01",
                "--quiet",
                "--out",
                "continued.h5",
            ]
        )
        == 0
    )
    continued = load_run(tmp_path / "continued.h5")
    straight = gr.Simulation(build(), dt=DT).run(steps=stop + 10, record_every=stop + 10)
    assert continued.t[-1] == pytest.approx(straight.t[-1], abs=1e-12)
    assert np.array_equal(continued.positions[-1], straight.positions[-1])
    assert np.array_equal(continued.velocities[-1], straight.velocities[-1])


def test_streamed_frames_are_the_frames_kept_in_memory(tmp_path):
    """``run(out=...)`` returns, read back from the file, what the in-memory run returns."""
    streamed = gr.Simulation(build(), dt=DT).run(steps=40, record_every=EVERY, out=tmp_path / "s.h5")
    memory = gr.Simulation(build(), dt=DT).run(steps=40, record_every=EVERY)
    assert len(streamed) == len(memory) == 21
    assert_same_frames(streamed, memory, slice(None))
    assert np.array_equal(streamed.wall_forces, memory.wall_forces)
    assert load_run(tmp_path / "s.h5").warm_state["t"] == memory.t[-1]
    assert frames_written(tmp_path / "s.h5") == 21 and frames_written(tmp_path / "absent.h5") == 0


def test_memory_of_a_streamed_run_does_not_grow_with_its_frames(tmp_path):
    """Over the same 150 steps, recording every step (151 frames) or only the last (2
    frames): the peak of Python allocations (tracemalloc) of an in-memory run grows by
    at least the 149 extra frames' positions and velocities (their contacts add
    more), that of a streamed run by less than a tenth of the in-memory growth (what
    is left is the solver's allocation noise, about 20 kB either way). Equal step
    counts leave out what the solver allocates per step."""
    import tracemalloc

    def peak(every, **options):
        simulation = gr.Simulation(build(), dt=DT)
        simulation.run(steps=2, record_every=1)  # warm-up: imports, solver set-up
        tracemalloc.start()
        simulation.run(steps=150, record_every=every, **options)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    frame = 8 * 8 * 3 * 2  # positions and velocities of 8 spheres (bytes)
    streamed = [peak(every, out=tmp_path / f"m{every}.h5", read_back=False) for every in (150, 1)]
    kept = [peak(every) for every in (150, 1)]
    assert kept[1] - kept[0] >= 149 * frame
    assert abs(streamed[1] - streamed[0]) < 0.1 * (kept[1] - kept[0])


def test_a_time_step_that_moves_a_sphere_too_far_warns_once_with_the_largest_safe_step():
    """Falling from rest, a sphere's speed after n steps is g n dt; at dt = 0.05 s it
    travels 9.81 * 0.05^2 = 2.45 cm = 2.45 radii in the first step. The warning comes
    once and suggests dt <= 0.1 r / |u|, for which the travel of that step is 0.1 r."""
    world = gr.SphereWorld([[0.0, 0.0, 1.0]], 0.01, density=2500.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
    with pytest.warns(gr.TimeStepWarning) as caught:
        gr.Simulation(world, dt=0.05).run(steps=5)
    assert len([w for w in caught if issubclass(w.category, gr.TimeStepWarning)]) == 1
    warning = caught[0].message
    speed = 9.81 * 0.05
    assert warning.travel == pytest.approx(speed * 0.05 / 0.01, rel=1e-12)
    assert warning.suggested_dt <= 0.1 * 0.01 / speed < warning.suggested_dt * 1.1  # two digits, rounded down
    assert "dt <= " in str(warning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gr.TimeStepWarning)
        world = gr.SphereWorld([[0.0, 0.0, 1.0]], 0.01, density=2500.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
        gr.Simulation(world, dt=1e-3).run(steps=20)  # 0.02 radii a step: no warning


def test_granular_run_prints_the_suggested_time_step(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert (
        main(["run", "box_pour", "--set", "n=10", "--dt", "0.05", "--duration", "0.1", "--quiet", "--out", "pour.h5"])
        == 0
    )
    captured = capsys.readouterr()
    assert "warning: sphere" in captured.err and "(--dt " in captured.err
    assert "suggested --dt" in captured.out


@pytest.mark.parametrize("duration", [0.5, 2.0 - 1e-6])
def test_a_duration_shorter_than_one_step_is_refused_with_its_numbers(duration):
    simulation = gr.Simulation(build(), dt=2.0)
    with pytest.raises(gr.InvalidInputError, match=r"shorter than one time step dt = 2 s"):
        simulation.run(duration=duration)
    assert simulation.count_steps(2.0) == 1 and simulation.count_steps(0.0) == 0


def test_granular_run_refuses_a_duration_shorter_than_its_step(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "box_pour", "--set", "n=10", "--dt", "2", "--duration", "1", "--quiet"]) == 2
    assert "duration 1 s is shorter than one time step dt = 2 s" in capsys.readouterr().err
    assert not Path("runs/box_pour.h5").exists()


def test_a_user_scene_run_continues_with_scene_given_either_way(tmp_path, monkeypatch, capsys):
    """A run of a scene file outside the scenes directories continues with ``--scene FILE``
    or with the file as SCENE; by name alone it is refused, naming ``--scene``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRANULAR_SCENES", str(tmp_path / "nowhere"))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "drop.py").write_text(SCENE)
    assert main(["run", "mine/drop.py", "--duration", "0.01", "--quiet", "--out", "a.h5"]) == 0
    assert main(["run", "--from", "a.h5", "--duration", "0.01", "--quiet"]) == 2
    assert "give --scene FILE.py" in capsys.readouterr().err
    assert (
        main(["run", "--from", "a.h5", "--scene", "mine/drop.py", "--duration", "0.01", "--quiet", "--out", "b.h5"])
        == 0
    )
    assert main(["run", "mine/drop.py", "--from", "a.h5", "--duration", "0.01", "--quiet", "--out", "c.h5"]) == 0
    b, c = load_run("b.h5"), load_run("c.h5")
    assert b.t[-1] == pytest.approx(0.02) and np.array_equal(b.positions, c.positions)


def test_a_run_made_in_python_continues_with_its_world(tmp_path):
    """``from_trajectory(traj, world=...)`` takes dt, scheme and options from the run."""
    first = gr.Simulation(build(), dt=DT)
    first.run(steps=10, record_every=5, out=tmp_path / "py.h5")
    later = gr.Simulation.from_trajectory(load_run(tmp_path / "py.h5"), world=build()).run(steps=10, record_every=5)
    straight = gr.Simulation(build(), dt=DT).run(steps=20, record_every=5)
    assert np.array_equal(later.positions, straight.positions[2:])
    with pytest.raises(gr.InvalidInputError, match="world="):
        gr.Simulation.from_trajectory(load_run(tmp_path / "py.h5"))
