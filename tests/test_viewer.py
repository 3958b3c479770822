"""``granular view``: a self-contained page that a real browser (headless Chromium,
driven by Playwright) loads without a console error, draws, and moves to the last frame."""

import io
import shutil

import numpy as np
import pytest

import granular as gr
import granular.analysis as A
from support.falling import save
from granular.cli import main
from granular.constraints import Contacts
from granular.render import viewer

pytest.importorskip("k3d", reason="granular view needs k3d")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    """Eight spheres falling into a box, 0.1 s, 11 frames (`support.falling`)."""
    path = tmp_path_factory.mktemp("view") / "run.h5"
    save(path)
    return path


def test_the_page_embeds_its_library_and_needs_no_network(run_file, tmp_path):
    out = tmp_path / "run.html"
    assert main(["view", str(run_file), "-o", str(out)]) == 0
    page = out.read_text()
    assert "<script src=" not in page and "k3dSource" in page  # K3D's bundle inline, nothing fetched
    assert out.stat().st_size < 5e6


def test_the_first_guess_fits_the_raw_arrays_to_the_budget():
    """10,000 spheres with 4 segments each: a frame's raw arrays take 20 + 4 x 32 = 148
    bytes a sphere, 1.48 MB; a 20 MB budget keeps 13 of 100 frames, first and last included."""
    kept = viewer.kept_frames(100, 10_000, 20e6, 4.0)
    assert len(kept) == 13 and kept[0] == 0 and kept[-1] == 99
    assert len(viewer.kept_frames(5, 10, 20e6)) == 5
    with pytest.raises(ValueError, match="max_bytes"):
        viewer.kept_frames(5, 10, 0)


def _random_run(spheres: int, frames: int) -> gr.Trajectory:
    """Spheres wandering at random in a box with three random contacts each (no simulation):
    arrays that zlib cannot shrink much."""
    rng = np.random.default_rng(1)
    positions = rng.uniform(0.0, 0.5, (spheres, 3)) + rng.normal(0.0, 0.01, (frames, spheres, 3)).cumsum(axis=0)
    contacts = []
    for _ in range(frames):
        i = rng.integers(0, spheres, 3 * spheres)
        j = (i + 1 + rng.integers(0, spheres - 1, 3 * spheres)) % spheres
        normal = rng.normal(size=(3 * spheres, 3))
        normal /= np.linalg.norm(normal, axis=1)[:, None]
        contacts.append(
            Contacts(i, j, np.full(3 * spheres, -1), np.zeros(3 * spheres), normal, rng.exponential(1e-3, 3 * spheres))
        )
    zeros = np.zeros(frames)
    return gr.Trajectory(
        t=np.arange(frames) * 0.01,
        positions=positions,
        velocities=np.ones_like(positions),
        radii=np.full((frames, spheres), 0.005),
        kinetic_energy=zeros,
        potential_energy=zeros,
        dissipated_energy=zeros,
        contacts=contacts,
        system={"kind": "spheres", "walls": []},
        meta={"dt": 1e-3, "masses": [1e-3] * spheres},
    )


def test_the_written_page_is_within_its_budget():
    """2,000 spheres x 12 frames of random data: the raw arrays' estimate (3 pairs a
    sphere: 6 segments, 212 bytes a sphere, 0.42 MB a frame) would keep 5 frames in
    2.3 MB, but the bundle (about 1.2 MB) and base64 make the page larger; the page is
    thinned until its bytes fit, keeping more than one frame."""
    run = _random_run(2000, 12)
    budget = 2.3e6
    guess = viewer.kept_frames(12, 2000, budget, viewer.segments_per_sphere(run))
    page, frames = viewer.fitted_page(run, max_bytes=budget)
    assert len(page.encode("utf-8")) <= budget
    assert 1 < len(frames) < len(guess) and frames[0] == 0 and frames[-1] == 11
    with pytest.raises(ValueError, match="max_bytes"):
        viewer.fitted_page(run, max_bytes=1e6)  # less than K3D's bundle


def test_the_force_network_runs_from_each_centre_to_the_contact_point(run_file):
    """A pair of spheres in contact gives two segments meeting at the point of contact,
    ``r_i`` from centre i along the normal; a wall contact one, from the centre to the
    sphere's point facing the wall. Both end where `granular.analysis` puts the contact."""
    run = gr.Trajectory.load(run_file)
    k = len(run) - 1
    segments, force = viewer.network_segments(run, k)
    forces = A.frame_forces(run, k)
    positions, radii = run.positions[k], run.radii[k]
    pairs = len(forces.pair_i)
    assert pairs > 0 and len(forces.wall_sphere) > 0
    assert segments.shape == (2 * pairs + len(forces.wall_sphere), 2, 3)
    starts = np.concatenate([forces.pair_i, forces.pair_j, forces.wall_sphere])
    np.testing.assert_array_equal(segments[:, 0], positions[starts])
    # the contact is centre to centre apart by r_i + r_j (touching): both halves end at one point
    np.testing.assert_allclose(segments[:pairs, 1], segments[pairs : 2 * pairs, 1], atol=1e-6)
    lengths = np.linalg.norm(segments[:, 1] - segments[:, 0], axis=1)
    np.testing.assert_allclose(lengths, radii[starts], rtol=1e-6)  # touching within the solver's 1e-8 m gaps
    magnitudes = forces.contact_force_magnitudes()  # pairs, then walls
    np.testing.assert_allclose(force, np.concatenate([magnitudes[:pairs], magnitudes]), rtol=1e-12)


def test_quantised_positions_stay_within_half_a_quantum():
    positions = np.random.default_rng(0).uniform(0.0, 0.2, (100, 3))
    step = viewer.QUANTUM * 0.01
    # half a step, plus float32's rounding of 0.2 m (2^-24 relative)
    assert np.abs(viewer.quantise(positions, step) - positions).max() <= 0.5 * step + 0.2 * 2.0**-24


def _time(page) -> float:
    """The time (s) K3D shows: the Animation panel's slider."""
    return float(page.evaluate("window.GRANULAR_K3D.parameters.time"))


def _samples(page, count: int) -> list[float]:
    """``count`` readings of the time, 37 ms apart (not a divisor of the loop's period)."""
    readings = []
    for _ in range(count):
        readings.append(_time(page))
        page.wait_for_timeout(37)
    return readings


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)")
def test_chromium_draws_the_page_reaches_the_last_frame_plays_and_pauses(run_file, tmp_path):
    """Headless Chromium: no console error, a canvas that is not blank, the slider at
    the last frame (0.1 s) from ``#last``; then from the start, K3D's "Play loop" button
    (its panel's Controls > Animation) makes the time advance, and "Stop loop" freezes it."""
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
        page.goto(out.as_uri())
        page.wait_for_selector(f"#{viewer.READY_ID}", state="attached", timeout=60_000)
        start = _time(page)
        for folder in ("Controls", "Animation"):  # K3D panel > Controls > Animation
            page.get_by_text(folder, exact=True).click()
        page.get_by_text("Play loop", exact=True).click()
        page.wait_for_function(f"window.GRANULAR_K3D.parameters.time != {start!r}", timeout=10_000)
        playing = _samples(page, 6)
        page.get_by_text("Stop loop", exact=True).click()
        stopped = _samples(page, 4)
        browser.close()
    assert errors == []
    assert float(time) == pytest.approx(last, rel=1e-6)  # the slider's time at the last frame
    assert np.ptp(picture[..., :3].reshape(-1, 3), axis=0).max() > 0.2  # not a blank canvas
    assert start == 0.0 and len(set(playing)) > 1  # playing: the time moves
    assert len(set(stopped)) == 1 and 0.0 <= stopped[0] <= last  # stopped: it stays
