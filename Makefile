# ldpgraph: `make run` runs the default HoGS experiment, `make test` runs the test suite,
# `make test-gpu` the CUDA path's tests and benchmark (on a machine with a GPU).
# Both create .venv when missing and install into it; torch is pinned by constraints.txt
# (an unpinned torch would pull several GB of CUDA wheels).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
DATA   ?= $(if $(LDPGRAPH_DATA),$(LDPGRAPH_DATA),$(abspath ../shared/datasets))
RUN_ARGS ?= --dataset cora --protocol hogs --epsilon 8 --seed 0

export LDPGRAPH_DATA := $(DATA)
# The data root is also recorded in the venv: its `ldpgraph` falls back to it when neither
# --data-root nor LDPGRAPH_DATA is given, so `.venv/bin/ldpgraph run ...` typed after
# `make run` finds the same datasets (simulation/datasets/locations.py, recorded_data_root).
RECORD_DATA = printf '%s\n' '$(abspath $(DATA))' > $(VENV)/ldpgraph-data-root
export FLWR_TELEMETRY_ENABLED := 0

.PHONY: run test test-fast test-gpu canary-flwr install install-test lint bench clean

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e ".[all]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -q -c constraints.txt -e ".[all,test]"
	touch $@

install: $(VENV)/.installed
	@$(RECORD_DATA)

install-test: $(VENV)/.installed-test
	@$(RECORD_DATA)

run: $(VENV)/.installed
	@$(RECORD_DATA)
	$(VENV)/bin/ldpgraph run $(RUN_ARGS)

# The suite on TEST_WORKERS pytest-xdist workers (two: CI's cores). The tests marked `engine`
# (Ray, Flower, SuperLink deployments) run one at a time on one worker, the `wallclock` ones
# last among them; every other module runs whole on one worker (tests/conftest.py). A single
# test file runs serially as ever: `$(PY) -m pytest tests/...`.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadgroup

test: $(VENV)/.installed-test
	@$(RECORD_DATA)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q --durations=60 $(XDIST)

# The inner loop: everything but the end-to-end tests marked `slow` (Flower, Ray, deployments).
test-fast: $(VENV)/.installed-test
	@$(RECORD_DATA)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -m "not slow" $(XDIST)

# The CUDA path, on a machine with a CUDA GPU: the tests marked `gpu` (skipped elsewhere), then
# benchmarks/bench_gpu.py (HoGS's numpy curator beside the torch one on the GPU, n = 10^4 and
# 10^5). Without a GPU it says so and fails: there is nothing of the CUDA path to run.
test-gpu: $(VENV)/.installed-test
	@$(RECORD_DATA)
	@$(PY) -c "import sys, torch; ok = torch.cuda.is_available(); \
	why = 'this torch is a CPU-only build' if torch.version.cuda is None else 'torch sees no CUDA GPU'; \
	ok or print(f'make test-gpu: {why} on this machine, so there is no GPU test or benchmark to run (make test runs the rest)', file=sys.stderr); \
	sys.exit(0 if ok else 2)"
	$(PY) -m pytest -q -m gpu
	$(PY) benchmarks/bench_gpu.py

# Canary: the Flower backend against the newest flwr on PyPI (everything else at the lock), in
# a throwaway venv: the generated app, the Flower API we use, and a run through `flwr run`
# whose fingerprint equals the local backend's. A failure here is a Flower release to adapt to
# before the lock in constraints.txt moves.
CANARY := .venv-canary
canary-flwr:
	rm -rf $(CANARY) && $(PYTHON) -m venv $(CANARY)
	grep -v '^flwr==' constraints.txt > $(CANARY)/constraints.txt
	$(CANARY)/bin/python -m pip install -q -c $(CANARY)/constraints.txt torch==2.13.0
	$(CANARY)/bin/python -m pip install -q -c $(CANARY)/constraints.txt -e ".[flower,test]" "flwr[simulation]"
	$(CANARY)/bin/python -c "import flwr; print('flwr', flwr.__version__)"
	$(CANARY)/bin/python -m pytest -q -p no:cacheprovider tests/simulation/test_flwr_run.py \
	    -k "generated or exposes or api_flower_backend"
	rm -rf $(CANARY)

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check .

bench: $(VENV)/.installed
	$(PY) benchmarks/bench_hogs.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
