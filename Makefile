# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-long bench docs lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	MPLBACKEND=Agg $(PY) -m granular.scenes.box_pour

test: $(STAMP)
	MPLBACKEND=Agg $(PY) -m pytest -q --durations=15

test-long: $(STAMP)
	MPLBACKEND=Agg $(PY) -m pytest -q -m long

# The documentation site into site/ (MkDocs; --strict: any warning fails the build).
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# ruff's rules and mypy's modules are in pyproject.toml ([tool.ruff], [tool.mypy]).
LINT_STAMP := $(VENV)/.installed-lint
$(LINT_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[lint]'
	touch $(LINT_STAMP)

lint: $(LINT_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

bench: $(STAMP)
	$(PY) benchmarks/step_scaling.py
	cd benchmarks && ../$(PY) qp_forms.py
	$(PY) benchmarks/beam_speed.py

clean:
	rm -rf $(VENV) runs .pytest_cache site
