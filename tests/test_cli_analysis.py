"""``granular analyse``, the measurement kinds of ``granular plot`` and ``granular view``
through `granular.cli.main`, on a small run file: the tables they write hold what
`granular.analysis` measures, the figures are drawn, the page fetches nothing."""

import io
import re

import numpy as np
import pandas
import pytest

import granular as gr
import granular.analysis as A
from support.falling import SIDE, save
from granular.cli import USAGE, main
from granular.walls import surface_names

EPS = np.finfo(float).eps


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("analyse") / "run.h5"
    save(path)
    return path


@pytest.fixture(scope="module")
def run(run_file):
    return gr.Trajectory.load(run_file)


@pytest.fixture(scope="module")
def analysed(run_file, tmp_path_factory):
    """``granular analyse`` with every table, averaged over frames 6 to 10."""
    out = tmp_path_factory.mktemp("tables")
    paths = {name: out / f"{name}.csv" for name in ("series", "walls", "profile")}
    paths["parquet"] = out / "series.parquet"
    arguments = [
        "analyse",
        str(run_file),
        "--frames",
        "6:",
        "--series",
        str(paths["series"]),
        "--walls",
        str(paths["walls"]),
        "--profile",
        str(paths["profile"]),
        "--kernel",
        "gaussian",
        "--width",
        "0.005",
    ]
    status = main(arguments)
    assert main(["analyse", str(run_file), "--series", str(paths["parquet"])]) == 0
    return status, {
        name: pandas.read_csv(p) if p.suffix == ".csv" else pandas.read_parquet(p) for name, p in paths.items()
    }


def test_the_series_holds_each_frames_coordination_and_floor_load(analysed, run):
    status, tables = analysed
    assert status == 0
    series = tables["series"]
    assert series["frame"].tolist() == list(range(1, len(run)))
    expected = [A.coordination(A.frame_forces(run, k)).z for k in series["frame"]]
    np.testing.assert_allclose(series["z"], expected, rtol=1e-12)  # CSV's decimal round trip: 1e-15
    assert series["z"].iloc[-1] > 0.0 and series["z"].iloc[0] == 0.0  # the spheres land
    # the floor's load from the solver's wall forces (gravity along -z)
    floor = surface_names(run.system["walls"]).index("floor")
    np.testing.assert_allclose(series["floor_load"], -run.wall_forces[1:, floor, 2], rtol=1e-12, atol=1e-15)
    assert series["floor_load"].iloc[-1] > 0.0
    pandas.testing.assert_frame_equal(tables["parquet"], series, check_dtype=False, rtol=1e-12)


def test_the_wall_table_sums_to_the_solvers_wall_forces(analysed, run):
    """Each surface's force is the sum of its contacts' (N): the run file's wall forces."""
    walls = analysed[1]["walls"]
    for k, rows in walls.groupby("frame"):
        total = rows[["force_x", "force_y", "force_z"]].to_numpy()
        np.testing.assert_allclose(total, run.wall_forces[k][: len(total)], atol=1e-9 * np.abs(run.wall_forces).max())
    assert set(walls["name"]) >= {"floor"}


def test_the_averaged_profile_integrates_to_the_mass(analysed, run):
    """The mean over frames of densities that each integrate to the mass integrates to
    it: trapezoids on the default 100 points for a Gaussian of width 5 mm, with a
    ~1 mm step, err by the kernel's jump at its cutoff (``phi(3w) dz``, 1e-3)."""
    profile = analysed[1]["profile"]
    position, density = profile["position"].to_numpy(), profile["density"].to_numpy()
    # the default cross-section: the spheres' bounding box across z at the last frame kept
    forces = A.frame_forces(run, -1, threshold=0.0)
    area = np.prod(np.ptp(forces.centres[:, :2], axis=0) + 2.0 * forces.radii.max())
    dz = position[1] - position[0]
    jump = float(A.Kernel("gaussian", 0.005).value(0.015 * (1 - 1e-12), 1)) * dz
    assert np.trapezoid(density, position) * area == pytest.approx(np.sum(run.meta["masses"]), rel=jump + 1e-9)
    assert area < SIDE**2


def test_analyse_prints_the_average_and_refuses_a_bad_range(run_file, capsys):
    assert main(["analyse", str(run_file), "--frames", "6:"]) == 0
    assert re.search(r"averaged over frames 6 to 10 \(5 frames", capsys.readouterr().out)
    assert main(["analyse", str(run_file), "--frames", "8:3"]) == USAGE
    assert "--frames" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["profile", "stress", "coordination", "forces", "wall-torque"])
def test_each_measurement_plot_is_drawn(run_file, tmp_path, kind):
    from matplotlib.image import imread

    out = tmp_path / f"{kind}.png"
    assert main(["plot", str(run_file), kind, str(out)]) == 0
    picture = imread(io.BytesIO(out.read_bytes()), format="png")[..., :3]
    # a figure has white paper and dark ink
    assert picture.min() < 0.3 and picture.max() > 0.9
    # drawn lines in colour: more than axes and text (which are black and white)
    assert np.any(np.ptp(picture, axis=2) > 0.2)


def test_view_writes_a_page_that_fetches_nothing_within_its_budget(run_file, tmp_path, capsys):
    pytest.importorskip("k3d", reason="granular view needs k3d")
    out = tmp_path / "run.html"
    assert main(["view", str(run_file), "-o", str(out), "--color", "force", "--max-mb", "5"]) == 0
    page = out.read_text()
    assert not re.search(r"<script[^>]*\bsrc=", page) and not re.search(r"<link[^>]*\bhref=\"?https?:", page)
    assert out.stat().st_size <= 5e6
    assert f"wrote {out}" in capsys.readouterr().out
    assert main(["view", str(run_file), "-o", str(tmp_path / "run.png")]) == USAGE
