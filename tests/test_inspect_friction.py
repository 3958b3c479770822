"""`granular inspect` shows the friction and rolling-resistance impulses of the active
contacts in columns when a frame has them, and no such columns otherwise."""

import numpy as np

import granular as gr
from granular.cli import main


def _table(out: str) -> tuple[str, list[str]]:
    lines = out.splitlines()
    header = next(k for k, line in enumerate(lines) if line.lstrip().startswith("rank"))
    rows = [line for line in lines[header + 1 :] if line.strip() and line.split()[0].isdigit()]
    return lines[header], rows


def test_inspect_shows_friction_and_rolling_impulses_of_a_sliding_ball(tmp_path, capsys):
    """A ball launched sliding on a floor with mu = 0.5 and mu_r = 0.05: at the last
    frame (0.05 s, still sliding) the floor contact carries a friction impulse of mu
    times its normal impulse and a rolling impulse; the columns show their norms as
    the run file holds them."""
    world = gr.SphereWorld(
        [[0, 0, 0.05]],
        0.05,
        masses=1.0,
        velocities=[[2.0, 0.0, 0.0]],
        walls=[gr.Plane([0, 0, 0], [0, 0, 1], friction=0.5, rolling_friction=0.05)],
    )
    path = gr.Simulation(world, 1e-3).run(steps=50, record_every=10).save(tmp_path / "ball.h5")
    assert main(["inspect", str(path)]) == 0
    header, rows = _table(capsys.readouterr().out)
    assert "friction (N s)" in header and "rolling (N m s)" in header
    contacts = gr.Trajectory.load(path).contacts[-1]
    k = int(np.argmax(contacts.impulse))
    # the row ends with impulse, force, friction, rolling, gap, then the normal "(0, 0, 1)"
    numbers = [float(v) for v in rows[0].split() if _is_number(v)]
    impulse, _, friction, rolling, _ = numbers[-5:]
    assert impulse == np.float64(f"{contacts.impulse[k]:.6g}")
    assert friction == np.float64(f"{np.linalg.norm(contacts.tangential_impulse[k]):.6g}")
    assert rolling == np.float64(f"{np.linalg.norm(contacts.rolling_impulse[k]):.6g}")
    assert abs(friction - 0.5 * impulse) <= 1e-5 * impulse  # sliding: on the cone's boundary
    assert rolling > 0.0


def test_inspect_of_a_frictionless_run_has_no_friction_columns(tmp_path, capsys):
    world = gr.SphereWorld([[0, 0, 0.05]], 0.05, masses=1.0, walls=[gr.Plane([0, 0, 0], [0, 0, 1])])
    path = gr.Simulation(world, 1e-3).run(steps=20).save(tmp_path / "rest.h5")
    assert main(["inspect", str(path)]) == 0
    header, rows = _table(capsys.readouterr().out)
    assert rows and "friction" not in header and "rolling" not in header


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
