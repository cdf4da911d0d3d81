# kfmt: `make demo` runs the main job, `make test` the tests; both set themselves up.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP := 127.0.0.1

.PHONY: setup generate check-generated test demo bench bench-floor bench-spark lint fuzz clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[generate,test,spark,plot,progress]'
	touch $@

generate: setup
	$(VENV)/bin/kfmt generate

check-generated: setup
	$(VENV)/bin/kfmt generate --check

test: setup check-generated lint
	$(PY) -m pytest

demo: setup generate
	$(VENV)/bin/kfmt demo $(DEMO_ARGS)

bench: setup
	$(PY) bench/bench_codecs.py

bench-floor: setup
	cd bench && ../$(PY) v2_decode_floor.py

bench-spark: setup
	$(PY) bench/bench_spark.py

fuzz: setup
	$(PY) -m pip install -q -e '.[fuzz]' || echo "atheris not installable here: running the mutation campaign only"
	if $(PY) -c "import atheris" 2>/dev/null; then $(PY) fuzz/campaign.py --atheris 100000 $(FUZZ_ARGS); \
	else $(PY) fuzz/campaign.py $(FUZZ_ARGS); fi

lint: setup
	$(VENV)/bin/ruff check kfmt generator tests bench fuzz
	$(VENV)/bin/ruff format --check kfmt generator tests bench fuzz
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
