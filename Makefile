# `make demo` and `make test` create .venv in the repo root and install into it.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# llama-cpp-python compiles from source (~7-10 min on 2 cores): build its wheel once, keep it here.
# The build is portable (AVX2, no -march=native): a native build on these CPUs enables
# llama.cpp's AMX kernels, which crash (SIGSEGV in ggml_backend_amx_mul_mat) in our VMs.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
WHEEL_CACHE ?= $(HOME)/.cache/misguard/wheels/llama-avx2
LLAMA_VERSION := $(shell sed -n 's/^llama-cpp-python==//p' constraints.txt)
# /opt/wheels holds the CPU torch wheel on these machines; keep it when we add our cache.
export PIP_FIND_LINKS := $(strip $(PIP_FIND_LINKS) $(wildcard /opt/wheels) $(WHEEL_CACHE))
export PIP_DISABLE_PIP_VERSION_CHECK := 1
PIP := $(BIN)/python -m pip install --quiet --constraint constraints.txt

DEMO_EXTRAS := local,openai,claims,mas,memory
TEST_EXTRAS := $(DEMO_EXTRAS),st,test,ray,postgres
PYTEST_ARGS ?=

.PHONY: demo test bench install-demo install-test llama-wheel clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel

llama-wheel: $(BIN)/python
	@mkdir -p $(WHEEL_CACHE)
	@if ls $(WHEEL_CACHE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
	  echo "llama-cpp-python $(LLAMA_VERSION): cached wheel in $(WHEEL_CACHE)"; \
	else \
	  echo "llama-cpp-python $(LLAMA_VERSION): building the wheel once (about 9-10 minutes on 2 idle cores)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel --quiet --no-cache-dir --no-deps \
	    -w $(WHEEL_CACHE) llama-cpp-python==$(LLAMA_VERSION); \
	fi

$(VENV)/.demo-installed: pyproject.toml constraints.txt | llama-wheel
	$(PIP) -e '.[$(DEMO_EXTRAS)]'
	@touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt | llama-wheel
	$(PIP) -e '.[$(TEST_EXTRAS)]'
	@touch $@ $(VENV)/.demo-installed

install-demo: $(VENV)/.demo-installed
install-test: $(VENV)/.test-installed

demo: install-demo
	$(BIN)/misguard demo

test: install-test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Every benchmark writes runs/<name>/runlog.jsonl first, then its tables; figures and
# commands are recorded in docs/BENCHMARKS.md. The claims and MisInfoTask suites need the
# shared data (SHARED_DATA); they are skipped with a message when it is absent.
SHARED_DATA ?= ../shared/data
bench: install-test
	$(BIN)/misguard bench backends --output runs/bench-backends
	$(BIN)/misguard bench mas-overhead --sizes 5,50,200,500 --rounds 3 --repeats 3 --output runs/bench-mas-overhead
	$(BIN)/misguard bench memory --ratio 0.05 --type II --seeds 5 --output runs/bench-memory
	@if [ -d "$(SHARED_DATA)/claims" ]; then \
	  $(BIN)/misguard bench claims --data $(SHARED_DATA) --output runs/bench-claims --paper 300; \
	else echo "bench claims skipped: no shared data at $(SHARED_DATA)"; fi

clean:
	rm -rf $(VENV) runs .pytest_cache
