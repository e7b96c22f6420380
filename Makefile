# Two entry points (see README): `make run` (set up + main job), `make test` (set up + tests).
# Everything installs into .venv with the pinned versions of constraints.txt.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: setup run test check clean editor editor-grammar

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

# The main job: Burgers (2-loss, ConFIG + Adam) for 2000 epochs with GUA and without, then their comparison.
# Each `make run` replaces its previous runs in runs/main (--overwrite).
MAIN_EPOCHS ?= 2000
run: setup
	$(BIN)/pinnspec check specs examples
	@echo "make run: training into runs/main/config-gua and runs/main/config (replaces the previous make run's output in runs/main)"
	$(BIN)/pinnspec train specs/burgers.pinn --epochs $(MAIN_EPOCHS) --out runs/main/config-gua --overwrite --quiet
	$(BIN)/pinnspec train specs/burgers.pinn --epochs $(MAIN_EPOCHS) --align none --out runs/main/config --overwrite --quiet
	$(BIN)/pinnspec plot runs/main/config-gua
	$(BIN)/pinnspec compare runs/main/config-gua runs/main/config --out runs/main/comparison.png

# One worker per core (pytest-xdist), each with one torch thread: two multi-threaded torch processes on
# the same cores slow each other down many times over.  tests/conftest.py compiles the CPU kernels without
# SIMD (TORCHINDUCTOR_VEC_ISA_OK=0 unless set): the suite checks pinnspec's graphs, and those compile faster.
# Where npm is on the PATH, the VS Code extension's Node packages come first (tests/editor tokenizes every spec with
# them; without them those tests are skipped, saying why).
NODE_PACKAGES = editors/vscode/node_modules/.package-lock.json
test: setup $(if $(shell command -v npm),$(NODE_PACKAGES))
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -q -n auto --dist worksteal

$(NODE_PACKAGES): editors/vscode/package-lock.json
	cd editors/vscode && npm ci --no-audit --no-fund || echo "npm ci failed: the TextMate tests will be skipped"

check: setup
	$(BIN)/pinnspec check specs/*.pinn examples/*/*.pinn

# Editor support (docs/editor.md): the VS Code extension's Node packages (tests/editor runs vscode-textmate from
# them) and its package, editors/vscode/pinnspec.vsix.  editor-grammar regenerates the TextMate grammar from the
# language's vocabulary (tests/editor says when it is stale).
editor: $(NODE_PACKAGES)
	cd editors/vscode && npx vsce package --skip-license --allow-missing-repository --out pinnspec.vsix

editor-grammar: setup
	$(BIN)/python -c "from pinnspec.editor import write_textmate_grammar; \
	write_textmate_grammar('editors/vscode/syntaxes/pinn.tmLanguage.json')"

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
