"""``granular view``: a self-contained page that a real browser (headless Chromium,
driven by Playwright) loads without a console error, draws, and moves to the last frame."""
import io
import shutil

import numpy as np
import pytest

import granular as gr
from granular.cli import main
from granular.render import viewer

pytest.importorskip("k3d", reason="granular view needs k3d")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    """Eight spheres falling into a box, 0.1 s, 11 frames."""
    grid = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
    world = gr.SphereWorld(np.array([0.0205, 0.0205, 0.03]) + grid * 0.0205, 0.01, density=2500.0,
                           walls=[gr.Box([0, 0, 0], [0.062, 0.062, 0.2], open_top=True)])
    path = tmp_path_factory.mktemp("view") / "run.h5"
    gr.Simulation(world, dt=1e-3).run(duration=0.1, record_every=10, progress=None).save(path)
    return path


def test_the_page_embeds_its_library_and_needs_no_network(run_file, tmp_path):
    out = tmp_path / "run.html"
    assert main(["view", str(run_file), "-o", str(out)]) == 0
    page = out.read_text()
    assert "<script src=" not in page and "k3dSource" in page     # K3D's bundle inline, nothing fetched
    assert out.stat().st_size < 5e6


def test_the_frames_are_thinned_to_the_budget():
    """10,000 spheres: a frame's raw arrays take 16 + 3 x 28 = 100 bytes a sphere, 1 MB;
    a 20 MB budget keeps 20 of 100 frames, first and last included."""
    kept = viewer.kept_frames(100, 10_000, 20e6)
    assert len(kept) == 20 and kept[0] == 0 and kept[-1] == 99
    assert len(viewer.kept_frames(5, 10, 20e6)) == 5
    with pytest.raises(ValueError, match="max_bytes"):
        viewer.kept_frames(5, 10, 0)


def test_quantised_positions_stay_within_half_a_quantum():
    positions = np.random.default_rng(0).uniform(0.0, 0.2, (100, 3))
    step = viewer.QUANTUM * 0.01
    # half a step, plus float32's rounding of 0.2 m (2^-24 relative)
    assert np.abs(viewer.quantise(positions, step) - positions).max() <= 0.5 * step + 0.2 * 2.0 ** -24


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)")
def test_chromium_loads_the_page_draws_it_and_reaches_the_last_frame(run_file, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="the browser test drives chromium with playwright")
    from matplotlib.image import imread

    out = viewer.write_html(gr.Trajectory.load(run_file), tmp_path / "run.html")
    last = float(gr.Trajectory.load(run_file).t[-1])
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--enable-unsafe-swiftshader"])
        page = browser.new_page(viewport={"width": 640, "height": 480})
        errors = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(out.as_uri() + "#last")
        page.wait_for_selector(f"#{viewer.READY_ID}", state="attached", timeout=60_000)
        time = page.get_attribute(f"#{viewer.READY_ID}", "data-time")
        picture = imread(io.BytesIO(page.locator("canvas").first.screenshot()), format="png")
        browser.close()
    assert errors == []
    assert float(time) == pytest.approx(last, rel=1e-6)        # the slider's time at the last frame
    assert np.ptp(picture[..., :3].reshape(-1, 3), axis=0).max() > 0.2   # not a blank canvas
