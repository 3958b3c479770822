"""The velocity-based scheme (9) of Dzonou, Monteiro Marques and Paoli (*A convergence
result for a vibro-impact problem with a general inertia operator*, 2009) is named
"dzonou-monteiro-marques"; its former name "seed000" still works, with a
DeprecationWarning, in `Simulation`, in imports and in stored run files."""

from __future__ import annotations

import importlib
import json
import sys
import warnings

import h5py
import numpy as np
import pytest

import granular as gr
from granular.cli import main
from granular.schemes.dzonou_monteiro_marques import DzonouMonteiroMarquesScheme
from granular.simulation import SCHEMES
from granular.systems.examples import bouncing_ball

NAME = "dzonou-monteiro-marques"


def test_the_scheme_has_its_name_and_the_old_one_is_not_listed():
    assert NAME in SCHEMES and "seed000" not in SCHEMES
    assert DzonouMonteiroMarquesScheme.name == NAME
    with pytest.raises(gr.InvalidInputError, match=NAME):
        gr.Simulation(bouncing_ball(), 1e-3, scheme="seed-000")


@pytest.mark.exact
def test_the_old_scheme_name_warns_and_runs_the_same_scheme():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name does not warn
        new = gr.Simulation(bouncing_ball(height=0.3), 1e-3, scheme=NAME).run(steps=300)
    with pytest.warns(DeprecationWarning, match=f"'seed000' is deprecated: use scheme='{NAME}'") as caught:
        old = gr.Simulation(bouncing_ball(height=0.3), 1e-3, scheme="seed000").run(steps=300)
    assert caught[0].filename == __file__  # points at the caller's line
    assert old.meta["scheme"] == new.meta["scheme"] == NAME
    assert max(len(c) for c in new.contacts) > 0  # the run reaches the floor
    np.testing.assert_array_equal(old.positions, new.positions)
    np.testing.assert_array_equal(old.velocities, new.velocities)


def test_the_old_module_still_imports_with_a_warning(monkeypatch):
    monkeypatch.delitem(sys.modules, "granular.schemes.seed000", raising=False)
    with pytest.warns(DeprecationWarning, match="granular.schemes.seed000 is deprecated.*DzonouMonteiroMarquesScheme"):
        module = importlib.import_module("granular.schemes.seed000")
    assert module.Seed000Scheme is DzonouMonteiroMarquesScheme


def test_a_stored_run_that_says_seed000_still_loads_and_is_inspected(tmp_path, capsys):
    path = tmp_path / "old.h5"
    gr.Simulation(bouncing_ball(height=0.3), 1e-3, scheme=NAME).run(steps=20).save(path)
    with h5py.File(path, "r+") as h5:
        meta = json.loads(h5.attrs["meta"])
        meta["scheme"] = "seed000"
        h5.attrs["meta"] = json.dumps(meta)
    assert gr.Trajectory.load(path).meta["scheme"] == "seed000"
    assert main(["inspect", str(path)]) == 0
    assert "scheme seed000" in capsys.readouterr().out
