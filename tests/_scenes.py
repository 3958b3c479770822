"""Load a scene script of ``scenes/`` as a module (scenes are scripts, not a package)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SCENES = Path(__file__).resolve().parents[1] / "scenes"


def load_scene(name: str):
    """The module ``scenes/<name>.py``, freshly executed."""
    spec = importlib.util.spec_from_file_location(name, SCENES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
