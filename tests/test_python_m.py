"""``python -m granular`` is the `granular` command: same output, same exit statuses."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*arguments):
    return subprocess.run(arguments, capture_output=True, text=True, cwd=ROOT, timeout=120)


def _console_script() -> str:
    script = Path(sys.executable).with_name("granular")
    if not script.exists():
        pytest.skip("the granular console script is not installed beside this Python")
    return str(script)


def test_python_m_granular_lists_the_same_scenes_as_the_command():
    module = _run(sys.executable, "-m", "granular", "scenes")
    command = _run(_console_script(), "scenes")
    assert module.returncode == command.returncode == 0
    assert module.stdout == command.stdout
    assert "box_pour" in module.stdout


def test_python_m_granular_exits_2_with_one_line_for_an_unknown_scene():
    module = _run(sys.executable, "-m", "granular", "run", "no_such_scene_here")
    assert module.returncode == 2
    lines = module.stderr.strip().splitlines()
    assert len(lines) == 1 and "no_such_scene_here" in lines[0]
    assert lines[0].startswith("granular")  # named like the command, not "__main__.py"
