# `make demo` and `make test` create .venv in the repo root and install into it.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv resolves and installs about six times faster than pip (a fresh test install: 29 s with
# an empty cache vs more than 3 minutes), and it is itself a pinned wheel from PyPI.
UV_VERSION := 0.13.8
# A local folder of wheels (for example a CPU torch wheel) joins the find-links when present.
FIND_LINKS := $(sort $(PIP_FIND_LINKS) $(wildcard /opt/wheels))
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Bytecode is compiled at install, as pip does (uv does not by default): without it, every
# CLI start compiles ~600 modules when .pyc files cannot be written (PYTHONDONTWRITEBYTECODE,
# read-only installs), 0.8 s of a 1.3 s `misguard check` of one text.
INSTALL := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --constraint constraints.txt \
	$(addprefix --find-links ,$(FIND_LINKS))
# The editable package's own sources are outside site-packages: compile them too.
COMPILE_SRC := $(BIN)/python -m compileall -q src >/dev/null

# The demo runs the 1.5B pack; the tests need only the 0.5B one (1.1 GB less to download in CI).
DEMO_EXTRAS := local,qwen-1-5b,openai,claims,mas,memory,memory-env,service,onnx
TEST_EXTRAS := local,qwen-0-5b,openai,claims,scale,qdrant,mas,memory,memory-env,service,st,test,ray,postgres,langgraph,openai-agents,autogen,redteam,onnx,train
PYTEST_ARGS ?=
# Two workers, one file each at a time: the real-model tests run beside the rest. Each
# worker computes on one OpenMP thread (e5, torch): on two cores, multi-threaded kernels
# stall at every barrier while the other worker holds a core.
TEST_WORKERS ?= 2

.PHONY: demo test bench docs install-demo install-test system-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet 'uv==$(UV_VERSION)'

$(VENV)/.demo-installed: pyproject.toml constraints.txt | $(BIN)/uv
	$(INSTALL) -e '.[$(DEMO_EXTRAS)]'
	$(COMPILE_SRC)
	@touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt | $(BIN)/uv
	$(INSTALL) -e '.[$(TEST_EXTRAS)]'
	$(COMPILE_SRC)
	@touch $@

install-demo: $(VENV)/.demo-installed
install-test: $(VENV)/.test-installed

demo: install-demo
	$(BIN)/misguard demo

# The tests drive a real browser (the extension) and a real PostgreSQL server (the memory
# guard): Debian's packages, installed when absent (never `playwright install`, which
# downloads a browser of its own).
APT := $(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get
system-deps:
	@if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then \
	  $(APT) update -qq && $(APT) install -y -qq --no-install-recommends chromium; fi
	@if ! command -v pg_ctl >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then \
	  $(APT) update -qq && $(APT) install -y -qq --no-install-recommends postgresql; fi

test: install-test system-deps
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# Every benchmark writes runs/<name>/runlog.jsonl first, then its tables; figures and
# commands are recorded in docs/BENCHMARKS.md. The claims and MisInfoTask suites need the
# shared data (SHARED_DATA); they are skipped with a message when it is absent.
SHARED_DATA ?= ../shared/data
bench: install-test install-demo
	$(BIN)/misguard bench backends --output runs/bench-backends
	$(BIN)/misguard bench mas-overhead --sizes 5,50,200,500 --rounds 3 --repeats 3 --output runs/bench-mas-overhead
	$(BIN)/misguard bench memory --ratio 0.05 --type II --seeds 5 --output runs/bench-memory
	$(BIN)/misguard --llm local/qwen2.5-0.5b bench memory-nl --type II --seeds 2 --output runs/bench-memory-nl
	@if [ -d "$(SHARED_DATA)/claims" ]; then \
	  $(BIN)/misguard bench claims --data $(SHARED_DATA) --output runs/bench-claims --paper 300; \
	else echo "bench claims skipped: no shared data at $(SHARED_DATA)"; fi
	@if [ -d "$(SHARED_DATA)/claims/liar" ]; then \
	  $(BIN)/misguard claims add --db runs/bench-service-store src/misguard/claims/data/sample_claims.jsonl $(SHARED_DATA)/claims/liar/test.tsv && \
	  $(BIN)/misguard bench service --db runs/bench-service-store --texts $(SHARED_DATA)/claims/liar/train.tsv --output runs/bench-service; \
	else echo "bench service skipped: no LIAR texts at $(SHARED_DATA)/claims/liar"; fi
	@if [ -d "$(SHARED_DATA)/claims/liar" ] && [ -d "$(SHARED_DATA)/claims/snopes-cs598gw" ]; then \
	  $(BIN)/misguard claims add --db runs/bench-long-text-store src/misguard/claims/data/sample_claims.jsonl $(SHARED_DATA)/claims/liar/train.tsv && \
	  $(BIN)/misguard bench long-text --db runs/bench-long-text-store --texts $(SHARED_DATA)/claims/snopes-cs598gw/snopes_claims.jsonl --output runs/bench-long-text; \
	else echo "bench long-text skipped: no LIAR or Snopes data at $(SHARED_DATA)/claims"; fi

# The parameter tables in docs/ are generated from the settings models; `make docs` refreshes
# them after a parameter changes (a test fails until it is run).
docs: install-test
	$(BIN)/python -m misguard.cli._reference README.md docs/*.md

clean:
	rm -rf $(VENV) runs .pytest_cache
