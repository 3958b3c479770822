"""The README and the documentation pages: the example runs, the README stays a
first-day page, and the pages the docs include from other files find their sections."""

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("<!-- --8<-- [start:example] -->")[1].split("<!-- --8<-- [end:example] -->")[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_and_reports_a_pile(tmp_path, monkeypatch, capsys):
    """The fifteen-line example, run for a fifth of its duration: the spheres fall,
    touch the floor and each other, and the run file loads back."""
    monkeypatch.chdir(tmp_path)
    source = _readme_example()
    assert len(source.strip().splitlines()) <= 16
    shortened = source.replace("duration=0.5", "duration=0.1")
    assert shortened != source
    namespace: dict = {}
    exec(compile(shortened, "README.md", "exec"), namespace)
    traj = namespace["traj"]
    assert len(traj) == 11
    assert traj.kinetic_energy[-1] > 0.0 and traj.dissipated_energy[-1] >= 0.0
    assert np.all(traj.positions[-1, :, 2] > 0.0)  # above the box's floor
    assert (tmp_path / "runs" / "pile.h5").is_file()
    assert "frames; strongest contact" in capsys.readouterr().out


def test_the_readme_is_a_first_day_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250
    text = "\n".join(lines)
    for command in ("make demo", "make test"):
        assert command in text


def test_sections_the_docs_include_exist():
    """``--8<-- "FILE:SECTION"`` in docs/ needs ``[start:SECTION]`` and ``[end:SECTION]`` in FILE."""
    for page in (ROOT / "docs").rglob("*.md"):
        for name, section in re.findall(r'--8<-- "([^":]+)(?::(\w+))?"', page.read_text(encoding="utf-8")):
            target = (ROOT / name).read_text(encoding="utf-8")
            if section:
                assert f"[start:{section}]" in target and f"[end:{section}]" in target, (page, name, section)


def _readme_section(name: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"<!-- --8<-- [start:{name}] -->")[1].split(f"<!-- --8<-- [end:{name}] -->")[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_walls_example_runs_and_counts_the_walls_work(tmp_path, monkeypatch, capsys):
    """The turning drum drags the spheres (its work is positive) and the contacts
    dissipate (never a negative total)."""
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(_readme_section("walls"), "README walls", "exec"), names)
    assert names["sim"].wall_work > 0.0 and names["sim"].dissipated_energy >= 0.0
    assert "the walls' work" in capsys.readouterr().out


def test_the_readme_flows_example_feeds_at_its_rate(tmp_path, monkeypatch, capsys):
    """The inlet inserts 0.5 kg/s x 0.1 s to within the largest sphere's mass below,
    and the frames count the spheres present."""
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(_readme_section("flows"), "README flows", "exec"), names)
    world, traj = names["world"], names["traj"]
    largest = 2500.0 * 4.0 / 3.0 * np.pi * 0.006**3
    assert 0.05 - largest < world.flow.inserted_mass.sum() <= 0.05 * (1 + 1e-12)
    assert traj.sphere_counts()[-1] == world.n == world.flow.ids_assigned - world.flow.removed.sum()
    assert "spheres per frame" in capsys.readouterr().out
