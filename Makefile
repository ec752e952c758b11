# The commands of the README: `make run` (the dashboard on the bank every face uses by default,
# data/memory.duckdb, with the demo built into it while it is empty), `make test` (the whole suite,
# what CI runs) and `make check` (the fast loop: no slow, browser, soak or crash tests).
VENV ?= .venv
PY := $(VENV)/bin/python
BANK ?= data/memory.duckdb
PORT ?= 8501
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup browser run test check demo clean

setup: $(VENV)/.installed

# The browser tests drive Debian's chromium (Playwright cannot download its own browsers here), with
# the CJK and colour emoji fonts users' browsers have, so that screenshots show memories in Chinese
# or Japanese and the pages' icons as users see them, not as empty boxes. As root the missing ones
# are installed; otherwise the command to run is printed (a missing chromium stops here, missing
# fonts only warn: the tests pass without them, the screenshots do not look right).
BROWSER_FONTS := fonts-noto-cjk fonts-noto-color-emoji
browser:
	@missing=""; \
	if [ ! -x /usr/bin/chromium ] && [ -z "$$CHROMIUM" ]; then missing="chromium"; fi; \
	if command -v dpkg-query >/dev/null; then \
		for pkg in $(BROWSER_FONTS); do \
			dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "ok installed" || missing="$$missing $$pkg"; \
		done; \
	fi; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then \
			echo "installing for the browser tests:$$missing" >&2; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || \
			{ echo "apt-get could not install$$missing" >&2; exit 1; }; \
		elif echo " $$missing " | grep -q " chromium "; then \
			echo "the browser tests need chromium: sudo apt-get install$$missing (or set CHROMIUM=/path)" >&2; exit 1; \
		else \
			echo "warning: without$$missing, pages show CJK text and emoji as boxes: sudo apt-get install$$missing" >&2; \
		fi; \
	fi

# torch goes first and pinned: sentence-transformers would otherwise pull a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,bench,langgraph]'
	touch $@

# Builds the demo into a missing or empty bank (a file created by opening the dashboard first holds
# no memories); a bank with memories is left as it is.
demo: setup
	@$(VENV)/bin/memctl --bank $(BANK) demo --if-empty

run: demo
	$(VENV)/bin/streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false -- --bank $(BANK)

# Everything, in two passes: the unit, page and slow tests in two processes (pytest-xdist, a file per
# process), then the tests that time real processes against each other (soak, crash) and drive
# the browser, alone, so that nothing else competes with them for the two cores.
test: setup browser
	$(PY) -m pytest -n 2 --dist loadfile -m "not soak and not crash and not browser"
	$(PY) -m pytest -m "soak or crash or browser"

# The fast loop while working: unit and page tests on DuckDB, without the markers registered in
# pyproject.toml (no chromium, no PostgreSQL needed), in two processes (pytest-xdist; a file stays in one process, so its module
# fixtures are built once).
check: setup
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow and not browser and not soak and not crash and not postgres"

# The venv only: the bank holds memories (delete data/memory.duckdb* yourself to start afresh).
clean:
	rm -rf $(VENV)
