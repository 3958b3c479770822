"""The scenes ship inside the package: found without a repository around it, and
importable as modules, which is what ``python -m granular.scenes.NAME`` runs."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import granular
from granular import scenes


def test_the_packaged_scenes_are_the_package_directory_not_the_repository():
    assert scenes.PACKAGED_SCENES == Path(granular.__file__).resolve().parent / "scenes"
    names = scenes.scenes_in(scenes.PACKAGED_SCENES)
    assert "box_pour" in names and "__init__" not in names
    assert len(names) >= 18


def test_every_packaged_scene_imports_as_a_module_of_the_package():
    for name, path in scenes.scenes_in(scenes.PACKAGED_SCENES).items():
        module = importlib.import_module(f"granular.scenes.{name}")
        assert Path(module.__file__).resolve() == path.resolve()
        assert callable(module.build)


def test_scenes_are_found_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRANULAR_SCENES", raising=False)
    assert scenes.scene_directories() == [scenes.PACKAGED_SCENES]
    assert scenes.resolve_scene("box_pour") == scenes.PACKAGED_SCENES / "box_pour.py"


def test_python_m_runs_a_packaged_scene_as_a_script(tmp_path):
    """``python -m granular.scenes.block_on_incline`` runs the scene's demo and writes
    its outputs under the working directory, not inside the package."""
    result = subprocess.run(
        [sys.executable, "-m", "granular.scenes.block_on_incline"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "outputs").is_dir()
    assert not (scenes.PACKAGED_SCENES / "outputs").exists()
