# Two entry points (see README): `make run` (set up + main job), `make test` (set up + tests).
# Everything installs into .venv with the pinned versions of constraints.txt.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: setup run test check clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

# The main job.
run: setup
	$(BIN)/pinnspec check specs/*.pinn examples/*/*.pinn
	$(BIN)/pinnspec show specs/burgers.pinn --stage ir

test: setup
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -q

check: setup
	$(BIN)/pinnspec check specs/*.pinn examples/*/*.pinn

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
