"""``granular sweep``: the product of values and seeds, failed runs, resume,
a worker killed mid-sweep, and the summary plot's aggregation. Tiny runs (a few
spheres, 20 steps) on a LocalCluster of two worker processes."""

from __future__ import annotations

import csv
import os
import signal
import threading
import time

import numpy as np
import pytest

import granular as gr
from granular.app import parameter_sweeps
from granular.cli import FAILURE, USAGE, main

distributed = pytest.importorskip("distributed")

SCENE = '''\
"""Sweepy: a few spheres dropped into a box (a sweep test scene)."""
import os
import time

import numpy as np

import granular as gr

DEFAULTS = dict(duration=0.02, dt=1e-3, record_every=5)
PARAMETERS = dict(n=6, restitution=0.5, seed=0, sleep=0.0)
COUNTER = {counter!r}


def build(n=6, restitution=0.5, seed=0, sleep=0.0):
    with open(COUNTER, "a") as counter:           # one line per build: how often runs were made
        counter.write(f"{{os.getpid()}} {{restitution}} {{seed}}\\n")
    time.sleep(sleep)
    rng = np.random.default_rng(seed)
    positions = np.array([[0.02 + 0.025 * (k % 3), 0.02 + 0.025 * (k // 3 % 3), 0.012 + 0.025 * (k // 9)]
                          for k in range(n)])
    return gr.SphereWorld(positions, 0.01, density=2500.0, restitution=restitution,
                          velocities=rng.normal(0.0, 0.2, (n, 3)),
                          walls=[gr.Box([0, 0, 0], [0.09, 0.09, 0.3], open_top=True)])


def summary(trajectory):
    return dict(mean_height=float(np.mean(trajectory.positions[-1][:, 2])),
                first_vz=float(trajectory.velocities[0][0, 2]))
'''


def write_scene(directory, name="sweepy"):
    directory.mkdir(parents=True, exist_ok=True)
    counter = directory / f"{name}.builds"
    path = directory / f"{name}.py"
    path.write_text(SCENE.format(counter=str(counter)))
    return path, counter


def builds(counter) -> list:
    return counter.read_text().splitlines() if counter.exists() else []


@pytest.fixture(scope="module")
def cluster():
    """Two single-threaded worker processes, shared by the tests that kill none."""
    import logging

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
        ) as local,
        distributed.Client(local) as client,
    ):
        yield local, client


def read_csv(path) -> list:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.exact
def test_product_of_values_and_seeds_gives_one_row_per_run(cluster, tmp_path):
    _, client = cluster
    scene, counter = write_scene(tmp_path / "scenes")
    plan = parameter_sweeps.plan_sweep(str(scene), ["restitution=0.3,0.8", "n=5"], seeds=3)
    result = parameter_sweeps.run_sweep(plan, tmp_path / "out", client)
    rows = read_csv(tmp_path / "out" / "summary.csv")
    assert len(rows) == 6 == result.ran and result.failed == 0
    assert sorted((float(r["restitution"]), int(r["seed"])) for r in rows) == sorted(
        (e, s) for e in (0.3, 0.8) for s in range(3)
    )
    assert {r["n"] for r in rows} == {"5"} and {r["status"] for r in rows} == {"ok"}
    assert len(builds(counter)) == 6
    assert len({r["file"] for r in rows}) == 6  # one file per run
    for row in rows:
        run = gr.Trajectory.load(tmp_path / "out" / row["file"])
        assert run.positions.shape[1] == 5
        assert run.meta["parameters"] == dict(
            n=5, restitution=float(row["restitution"]), seed=int(row["seed"]), sleep=0.0
        )
        # the summary's figures are the scene's, computed from this file's frames
        assert float(row["mean_height"]) == pytest.approx(float(np.mean(run.positions[-1][:, 2])), rel=1e-12)
        assert float(row["first_vz"]) == run.velocities[0][0, 2]
        assert float(row["wall_time"]) == run.meta["wall_time"]  # the summary repeats the file
    # the seed, not the restitution, draws the initial velocities
    by_seed = {}
    for row in rows:
        by_seed.setdefault(row["seed"], set()).add(row["first_vz"])
    assert all(len(values) == 1 for values in by_seed.values()) and len(set.union(*by_seed.values())) == 3
    pyarrow = pytest.importorskip("pyarrow.parquet")
    table = pyarrow.read_table(tmp_path / "out" / "summary.parquet").to_pylist()
    assert sorted(r["file"] for r in table) == sorted(r["file"] for r in rows)


def test_a_failing_run_is_a_failed_row_and_the_others_go_on(cluster, tmp_path, capsys):
    local, _ = cluster
    scene, _ = write_scene(tmp_path / "scenes")
    status = main(
        [
            "sweep",
            str(scene),
            "--set",
            "restitution=0.4,1.5",
            "--seeds",
            "2",
            "--out",
            str(tmp_path / "out"),
            "--scheduler",
            local.scheduler_address,
            "--quiet",
        ]
    )
    assert status == FAILURE
    rows = read_csv(tmp_path / "out" / "summary.csv")
    assert len(rows) == 4
    for row in rows:
        if row["restitution"] == "1.5":  # the system refuses e > 1: one line saying so
            assert row["status"].startswith("failed: ") and "restitution" in row["status"]
            assert "\n" not in row["status"] and row["file"] == ""
        else:
            assert row["status"] == "ok"
            assert gr.Trajectory.load(tmp_path / "out" / row["file"]).meta["parameters"]["restitution"] == 0.4
    out = capsys.readouterr().out
    assert "2 failed" in out


def test_resume_skips_finished_runs_and_force_runs_them_again(cluster, tmp_path):
    _, client = cluster
    scene, counter = write_scene(tmp_path / "scenes")
    plan = parameter_sweeps.plan_sweep(str(scene), ["restitution=0.3,0.6"], seeds=2)
    out = tmp_path / "out"
    first = parameter_sweeps.run_sweep(plan, out, client)
    files = sorted(out.glob("*.h5"))
    stamps = {f: f.stat().st_mtime_ns for f in files}
    assert len(files) == 4 and len(builds(counter)) == 4 and first.skipped == 0

    again = parameter_sweeps.run_sweep(plan, out, client)
    assert again.skipped == 4 and again.ran == 0
    assert len(builds(counter)) == 4  # nothing was built
    assert {f: f.stat().st_mtime_ns for f in files} == stamps
    assert [r["file"] for r in read_csv(out / "summary.csv")] == [r["file"] for r in first.rows]
    assert [r["figures"] for r in again.rows] == [r["figures"] for r in first.rows]

    # a damaged file is run again, the others are not
    files[0].write_bytes(files[0].read_bytes()[:200])
    repaired = parameter_sweeps.run_sweep(plan, out, client)
    assert repaired.ran == 1 and repaired.skipped == 3 and len(builds(counter)) == 5
    gr.Trajectory.load(files[0])

    forced = parameter_sweeps.run_sweep(plan, out, client, force=True)
    assert forced.ran == 4 and forced.skipped == 0 and len(builds(counter)) == 9
    assert all(f.stat().st_mtime_ns != stamps[f] for f in files)

    # an edited scene file makes every run stale
    scene.write_text(scene.read_text() + "\n# edited\n")
    edited = parameter_sweeps.run_sweep(
        parameter_sweeps.plan_sweep(str(scene), ["restitution=0.3,0.6"], seeds=2), out, client
    )
    assert edited.ran == 4 and len(builds(counter)) == 13


def test_other_settings_are_other_runs(cluster, tmp_path):
    _, client = cluster
    scene, counter = write_scene(tmp_path / "scenes")
    out = tmp_path / "out"
    parameter_sweeps.run_sweep(parameter_sweeps.plan_sweep(str(scene), ["restitution=0.3"], seeds=2), out, client)
    longer = parameter_sweeps.run_sweep(
        parameter_sweeps.plan_sweep(str(scene), ["restitution=0.3"], seeds=2, duration=0.03), out, client
    )
    assert longer.skipped == 0 and longer.ran == 2 and len(builds(counter)) == 4
    assert len(list(out.glob("*.h5"))) == 4
    assert all(gr.Trajectory.load(out / r["file"]).t[-1] == pytest.approx(0.03) for r in longer.rows)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", "2", "--set", "seed=1"], "--seeds K and --set seed"),
        (["--set", "nn=3"], "unknown parameter 'nn'"),
        (["--set", "restitution=0.3,0.3"], "lists 0.3 twice"),
        (["--workers", "1", "--scheduler", "tcp://127.0.0.1:1"], "give one of them"),
    ],
)
def test_bad_sweeps_are_one_line_usage_errors(tmp_path, capsys, argv, message):
    scene, counter = write_scene(tmp_path / "scenes")
    assert main(["sweep", str(scene), *argv, "--out", str(tmp_path / "out")]) == USAGE
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert not counter.exists() and not (tmp_path / "out").exists()


def test_seeds_need_a_seed_parameter(tmp_path, capsys):
    (tmp_path / "plain.py").write_text(
        '"""Plain."""\nimport granular as gr\n\n'
        "PARAMETERS = dict(height=1.0)\n\n\ndef build(height=1.0):\n"
        "    return gr.SphereWorld([[0, 0, height]], 0.1)\n"
    )
    assert main(["sweep", str(tmp_path / "plain.py"), "--seeds", "3", "--out", str(tmp_path / "out")]) == USAGE
    assert "has no 'seed' parameter" in capsys.readouterr().err


def test_a_worker_killed_mid_sweep_leaves_a_complete_summary_of_valid_files(tmp_path):
    """Fault injection: SIGKILL one of two worker processes while it runs a task; the
    scheduler reruns the task on a worker the nanny restarts, and the sweep ends
    with every run ok and every file listed loading as a Trajectory."""
    import logging

    scene, counter = write_scene(tmp_path / "scenes")
    plan = parameter_sweeps.plan_sweep(str(scene), ["sleep=0.8"], seeds=6)
    out = tmp_path / "out"
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.CRITICAL
        ) as local,
        distributed.Client(local) as client,
        distributed.Client(local) as spy,
    ):
        pids = spy.run(os.getpid)
        outcome = {}

        def work():
            outcome["result"] = parameter_sweeps.run_sweep(plan, out, client)

        thread = threading.Thread(target=work)
        thread.start()
        victim, deadline = None, time.monotonic() + 60
        while victim is None and time.monotonic() < deadline:
            started = [int(line.split()[0]) for line in builds(counter)]  # pids that entered build()
            victim = next((pid for pid in started if pid in pids.values()), None)
            time.sleep(0.05)
        assert victim is not None, "no task started"
        os.kill(victim, signal.SIGKILL)  # within build()'s 0.8 s sleep: mid-run
        thread.join(timeout=120)
        assert not thread.is_alive()
        assert victim not in spy.run(os.getpid).values()  # that process is gone (the nanny made another)
    result = outcome["result"]
    rows = read_csv(out / "summary.csv")
    assert len(rows) == 6 and sorted(int(r["seed"]) for r in rows) == list(range(6))
    assert {r["status"] for r in rows} == {"ok"}
    assert result.failed == 0
    assert len(builds(counter)) > 6  # the killed run was built again
    for row in rows:
        run = gr.Trajectory.load(out / row["file"])
        assert run.meta["parameters"]["seed"] == int(row["seed"])
        assert len(run) == 5 and np.all(np.isfinite(run.positions))
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [r["file"] for r in rows] + ["summary.csv", "summary.parquet", "sweep.json"]
    )


# -- the summary plot --------------------------------------------------------------------------
def test_aggregate_gives_mean_and_seed_spread_per_x_and_group():
    description = dict(scene="s", parameters=["e", "n", "seed"], varying=["e", "n", "seed"], figures=["tau"])
    rows = [
        dict(e=0.5, n=10, seed=0, tau=1.0, status="ok"),
        dict(e=0.5, n=10, seed=1, tau=2.0, status="ok"),
        dict(e=0.5, n=10, seed=2, tau=6.0, status="ok"),
        dict(e=0.9, n=10, seed=0, tau=4.0, status="ok"),
        dict(e=0.9, n=10, seed=1, tau=8.0, status="ok"),
        dict(e=0.9, n=10, seed=2, tau=99.0, status="failed: jammed"),  # not counted
        dict(e=0.9, n=10, seed=3, tau=float("nan"), status="ok"),  # no value: not counted
        dict(e=0.5, n=20, seed=0, tau=3.0, status="ok"),
    ]
    series = parameter_sweeps.aggregate(description, rows, "e", "tau")
    assert [s.group for s in series] == [{"n": 10}, {"n": 20}]
    ten, twenty = series
    assert ten.x == [0.5, 0.9] and ten.count == [3, 2]
    assert ten.mean == pytest.approx([3.0, 6.0])
    # sample standard deviations: sqrt(((1-3)^2 + (2-3)^2 + (6-3)^2) / 2) = sqrt(7); sqrt(8)
    assert ten.std == pytest.approx([7.0**0.5, 8.0**0.5])
    assert twenty.x == [0.5] and twenty.mean == [3.0] and np.isnan(twenty.std[0])
    with pytest.raises(gr.InvalidInputError, match="not a figure"):
        parameter_sweeps.aggregate(description, rows, "e", "taux")
    with pytest.raises(gr.InvalidInputError, match="not a parameter"):
        parameter_sweeps.aggregate(description, rows, "tau", "tau")


def test_plot_summary_writes_a_png_of_the_sweep(cluster, tmp_path, capsys):
    _, client = cluster
    scene, _ = write_scene(tmp_path / "scenes")
    out = tmp_path / "out"
    parameter_sweeps.run_sweep(parameter_sweeps.plan_sweep(str(scene), ["restitution=0.2,0.9"], seeds=2), out, client)
    assert main(["plot", str(out), "summary", "--x", "restitution", "--y", "mean_height"]) == 0
    png = out / "summary_mean_height_vs_restitution.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    printed = capsys.readouterr().out
    assert printed.count("(2 runs)") == 2  # two seeds averaged at each restitution
    assert main(["plot", str(out), "summary", "--x", "restitution"]) == USAGE
    assert main(["plot", str(tmp_path / "scenes"), "summary", "--x", "restitution", "--y", "h"]) == USAGE


# -- the energy-decay regression as a sweep (long) ---------------------------------------------
@pytest.mark.long
def test_haff_time_follows_kinetic_theorys_dependence_on_restitution(tmp_path):
    """Haff's tau is 6 / ((1 - e^2) omega0) (omega0 the Enskog collision frequency,
    independent of e): log tau against log(1 - e^2) has slope -1. A sweep of 200
    spheres at packing 0.1 over e = 0.6 ... 0.95, four seeds each, 3 s (t / tau from
    2.5 at e = 0.95 to 16 at e = 0.6). The tolerance is the slope's own standard
    error, from a least-squares fit weighted by the seeds' spread of each mean:
    |slope + 1| <= 3 sigma. Measured: slope -0.963 +- 0.025 (about 3 min on 2 workers)."""
    plan = parameter_sweeps.plan_sweep(
        "granular_gas_cooling", ["n=200", "packing=0.1", "restitution=0.6,0.7,0.8,0.9,0.95"], seeds=4, duration=3.0
    )
    with parameter_sweeps.connect(workers=2) as client:
        result = parameter_sweeps.run_sweep(plan, tmp_path, client)
    assert result.failed == 0 and len(result.rows) == 20
    description, rows = parameter_sweeps.read_summary(tmp_path)
    (series,) = parameter_sweeps.aggregate(description, rows, "restitution", "tau")
    e, mean, count = np.array(series.x), np.array(series.mean), np.array(series.count)
    standard_error = np.array(series.std) / np.sqrt(count)
    x, y, sigma = np.log(1.0 - e**2), np.log(mean), standard_error / mean  # sigma of log(mean tau)
    design = np.stack([np.ones_like(x), x], axis=1)
    weights = 1.0 / sigma**2
    covariance = np.linalg.inv(design.T @ (design * weights[:, None]))
    intercept, slope = covariance @ (design.T @ (weights * y))
    slope_error = float(np.sqrt(covariance[1, 1]))
    assert abs(slope + 1.0) <= 3.0 * slope_error, (slope, slope_error)
    assert slope_error < 0.1  # the test can tell -1 from -0.7
    # and the magnitude: kinetic theory's tau to the accuracy of 200 spheres and dt = 5e-4 s
    (ratios,) = parameter_sweeps.aggregate(description, rows, "restitution", "tau_ratio")
    assert np.all(np.abs(np.array(ratios.mean) - 1.0) < 0.25), ratios.mean


def test_the_command_prints_the_dashboard_and_progress(cluster, tmp_path, capsys):
    local, _ = cluster
    scene, _ = write_scene(tmp_path / "scenes")
    assert (
        main(
            [
                "sweep",
                str(scene),
                "--set",
                "restitution=0.3,0.6",
                "--out",
                str(tmp_path / "out"),
                "--scheduler",
                local.scheduler_address,
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "dashboard http" in captured.out  # bokeh serves it (the cluster extra)
    progress = captured.err.strip().splitlines()
    assert progress[-1] == "runs: 2/2 done, 0 failed, 0 running"
    assert all(line.startswith("runs: ") for line in progress)


FAILING_LATE = '''\
"""Late: spheres whose force raises after 10 ms (a sweep test scene)."""
import numpy as np

import granular as gr

DEFAULTS = dict(duration=0.04, dt=1e-3, record_every=5)
PARAMETERS = dict(fail_after=1.0, seed=0)


def build(fail_after=1.0, seed=0):
    def force(t, q, u):
        if t > fail_after:
            raise RuntimeError(f"force field undefined after t = {fail_after} s")
        return np.zeros_like(q)

    positions = np.array([[0.02, 0.02, 0.02], [0.05, 0.02, 0.02]])
    return gr.SphereWorld(positions, 0.01, density=2500.0, force=force,
                          walls=[gr.Box([0, 0, 0], [0.09, 0.09, 0.3], open_top=True)])


def summary(trajectory):
    return dict(t_end=float(trajectory.t[-1]))
'''


def test_a_run_failing_midway_keeps_its_frames_in_a_partial_file(cluster, tmp_path):
    _, client = cluster
    (tmp_path / "late.py").write_text(FAILING_LATE)
    # the command runs 20 steps at a time and keeps the complete ones' frames
    plan = parameter_sweeps.plan_sweep(str(tmp_path / "late.py"), ["fail_after=0.0305,1.0"])
    result = parameter_sweeps.run_sweep(plan, tmp_path / "out", client)
    failed, ok = sorted(result.rows, key=lambda row: row["parameters"]["fail_after"])
    assert ok["status"] == "ok" and ok["figures"]["t_end"] == pytest.approx(0.04)
    assert failed["status"].startswith("failed: RuntimeError: force field undefined after t = 0.0305 s")
    assert failed["file"].endswith(".partial.h5")
    frames = gr.Trajectory.load(tmp_path / "out" / failed["file"])
    assert 0.0 < frames.t[-1] < 0.0305 and failed["figures"]["t_end"] == frames.t[-1]
    assert "force field undefined" in frames.meta["failure"]
    listed = {row["file"] for row in read_csv(tmp_path / "out" / "summary.csv")}
    assert listed == {ok["file"], failed["file"]}
    # resuming runs the failed one again (and only it)
    again = parameter_sweeps.run_sweep(plan, tmp_path / "out", client)
    assert again.skipped == 1 and again.ran == 1
