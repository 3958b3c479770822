"""The repository's ``scenes/``, listed and loaded by `granular.scenes`, as the command does."""
from __future__ import annotations

from pathlib import Path

from granular import scenes

SCENES = Path(__file__).resolve().parents[1] / "scenes"


def load_scene(name: str):
    """The module ``scenes/<name>.py``, freshly executed (`granular.scenes.load_scene`)."""
    return scenes.load_scene(SCENES / f"{name}.py")


def repository_scenes() -> list[str]:
    """The names of the scenes in ``scenes/`` (`granular.scenes.scenes_in`)."""
    return sorted(scenes.scenes_in(SCENES))
