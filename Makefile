# The two commands of the README: `make run` (dashboard on the demo bank) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BANK ?= data/demo.duckdb
PORT ?= 8501
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup run test demo clean

setup: $(VENV)/.installed

# torch goes first and pinned: sentence-transformers would otherwise pull a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $@

demo: setup
	@test -f $(BANK) || $(VENV)/bin/memctl --bank $(BANK) demo

run: demo
	$(VENV)/bin/streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false -- --bank $(BANK)

test: setup
	$(PY) -m pytest

clean:
	rm -rf $(VENV) $(BANK) $(BANK).wal $(BANK).index
