"""Load a scene script of ``scenes/`` as a module, with the loader the command uses."""
from __future__ import annotations

from pathlib import Path

from granular import scenes

SCENES = Path(__file__).resolve().parents[1] / "scenes"


def load_scene(name: str):
    """The module ``scenes/<name>.py``, freshly executed (`granular.scenes.load_scene`)."""
    return scenes.load_scene(SCENES / f"{name}.py")
