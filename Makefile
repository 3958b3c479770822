# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-long bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	MPLBACKEND=Agg $(PY) scenes/box_pour.py

test: $(STAMP)
	MPLBACKEND=Agg $(PY) -m pytest -q

test-long: $(STAMP)
	MPLBACKEND=Agg $(PY) -m pytest -q -m long

bench: $(STAMP)
	$(PY) benchmarks/step_scaling.py
	cd benchmarks && ../$(PY) qp_forms.py
	$(PY) benchmarks/beam_speed.py

clean:
	rm -rf $(VENV) runs .pytest_cache
