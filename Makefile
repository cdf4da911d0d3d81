# kfmt: `make demo` runs the main job, `make test` the tests; both set themselves up.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP := 127.0.0.1
# Python keeps its compiled bytecode (__pycache__/, ignored by git) even where the shell says not to: the suite
# starts hundreds of Python processes (the CLI, Spark's workers), each of which would otherwise compile kfmt and
# generated/ afresh (0.1-0.2 s a start)
export PYTHONDONTWRITEBYTECODE :=

.PHONY: docs setup generate check-generated import-kafka-specs test test-full test-backends test-cluster test-writers test-streams demo bench bench-callgrind bench-floor bench-spark bench-scaling lint fuzz fuzz-jvm fuzz-native fuzz-protocol fuzz-protocol-native fuzz-capture clean

setup: $(VENV)/.installed $(VENV)/.native $(VENV)/.jvm $(VENV)/.capture

$(VENV)/.installed: pyproject.toml setup.py
	@echo "== kfmt set-up (once; 2-3 minutes): a virtual environment in $(VENV), then the project and its extras"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@echo "== installing kfmt with its dependencies from PyPI (PySpark is the largest) ..."
	$(PY) -m pip install -q -e '.[generate,test,spark,plot,progress,docs]'
	test -e $(VENV)/.generated || touch $(VENV)/.generated  # a fresh set-up: generated/ is the committed one
	touch $@

# Debian's tshark (dumpcap and tshark: Wireshark's capture and dissector), for the tests that capture real clients'
# traffic against librdkafka's mock cluster (tests/wire.py): installed where apt-get may run, else they skip, saying so
$(VENV)/.capture: | $(VENV)/.installed
	@if ! command -v dumpcap >/dev/null || ! command -v tshark >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "== installing Debian's tshark (dumpcap) for the captured-traffic tests ..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tshark >/dev/null \
	      || echo "== apt-get could not install tshark: the captured-traffic tests will skip"; \
	  else echo "== tshark is not installed (and apt-get may not run here): the captured-traffic tests will skip"; fi; \
	fi
	touch $@

# the native backend: one C extension per format, rebuilt whenever a generated source or the runtime header
# changes (optional: without a C compiler kfmt uses the python backend, and says so in kfmt --version)
NATIVE_SRC := $(wildcard generated/*/_native.c generated/*/*/_native.c kfmt/runtime/native/*.c kfmt/runtime/native/*.h)
$(VENV)/.native: $(VENV)/.installed $(NATIVE_SRC)
	@echo "== building the native backend (one C extension per format) ..."
	$(PY) setup.py -q build_ext --inplace --parallel $(shell nproc 2>/dev/null || echo 2) 2>&1 | grep -iE "error|warning: [^S]" || true
	$(PY) -c "from kfmt.codec.formats import available_backends as a; print('kfmt backends built here:', ', '.join(a()))"
	touch $@

# the kafka-log Spark source's jar: the jvm backend's generated decoders and the runtime in kfmt/runtime/jvm,
# compiled against the pyspark jars, with the source's columns (kfmt/log/arrow.py) (optional: without a JDK
# kafka-log is kfmt's Python data source alone)
JVM_SRC := $(wildcard generated/jvm/*.java generated/*/jvm/*.java generated/*/*/jvm/*.java kfmt/runtime/jvm/kfmt/jvm/*.java) kfmt/log/arrow.py kfmt/logdir/names.py
$(VENV)/.jvm: $(VENV)/.installed $(JVM_SRC)
	@echo "== building the JVM engine's jar (the kafka-log Spark source) ..."
	$(PY) -c 'import sys; from kfmt.spark.jvm import main; sys.exit(main(["build"]))' || true
	touch $@

generate: setup
	$(VENV)/bin/kfmt generate
	touch $(VENV)/.generated
	$(MAKE) --no-print-directory $(VENV)/.native $(VENV)/.jvm

# generated/ as of the schemas and the generator: rendered again (by the demo) only when one of them changed
# since it was last generated or checked, or since the set-up (a clone's generated/ is the committed one, which
# the suite holds fresh: tests/test_generated.py)
GEN_INPUTS := $(shell find schemas generator -type f \( -name '*.yaml' -o -name '*.py' -o -name '*.j2' \) 2>/dev/null)
$(VENV)/.generated: $(GEN_INPUTS) | $(VENV)/.installed
	$(VENV)/bin/kfmt generate
	touch $@

check-generated: setup
	$(VENV)/bin/kfmt generate --check
	touch $(VENV)/.generated

# schemas/messages from Kafka's JSON message specs: by default the pinned copies under tests/fixtures/kafka;
# KAFKA=<a Kafka source tree> KAFKA_CHECK=1 says what a newer Kafka changes instead of writing
KAFKA ?= tests/fixtures/kafka
# the protocol's versions the tree lacks: Kafka 4.1's specs, as kafka-python 3.0.12 ships them
KAFKA_NEWER ?= tests/fixtures/kafka-4.1
KAFKA_COMMIT ?= $(shell cat $(KAFKA)/COMMIT 2>/dev/null || git -C $(KAFKA) rev-parse HEAD 2>/dev/null)
import-kafka-specs: setup
	$(VENV)/bin/kfmt import-kafka-spec --kafka-tree $(KAFKA) --kafka-commit "$(KAFKA_COMMIT)" \
		$(if $(KAFKA_CHECK),--check schemas/messages,--out schemas/messages)
	$(VENV)/bin/kfmt import-kafka-spec --protocol --kafka-tree $(KAFKA) --kafka-commit "$(KAFKA_COMMIT)" \
		--newer-specs $(KAFKA_NEWER) $(if $(KAFKA_CHECK),--check schemas/protocol,--out schemas/protocol)
	$(if $(KAFKA_CHECK),,$(MAKE) --no-print-directory generate)

# generated/'s freshness: tests/test_generated.py renders every schema afresh and compares it with generated/ file
# for file (what `make check-generated` does, which would only render it a second time here)
#
# The backend passes (test-backends) run beside the main suite at the lowest priority (nice 19): they take the CPU
# the main suite leaves idle (JVMs starting, servers and streams awaited, its last long tests) and yield it
# otherwise; their output follows the main suite's.
test: BACKEND_NICE = 19
test: setup lint
	@($(PASSES)) > $(VENV)/passes.log 2>&1 & b=$$!; \
	$(PY) -m pytest -n 2 --dist loadgroup --durations=25; m=$$?; \
	wait $$b; p=$$?; cat $(VENV)/passes.log; test $$m -eq 0 -a $$p -eq 0

# the behavioural suite once more per other backend of the registry, as the default of read_batches / scan /
# encode_batch: first as an installation without the native backend (KFMT_DISABLE_NATIVE: python is the
# default and the native tests skip, as on a machine without a compiler), then with the Construct reference.
# Only what depends on the default backend runs again: tests that name their backend ran for each in the main
# pass (KFMT_SUITE_AGAIN leaves them out, tests/conftest.py), and these files do not read or write through the
# default: generation and the IR, the schema language and the spec importer, the layout, the README (its own
# pass), CLI usage, Java's UTF-8, Kafka's payloads and protocol (every backend by name), what measures or times a backend
# (memory probes, kill timing, the fuzz and bench slices), the native backend against python (each by name), packaging, Spark and the standalone cluster, and the
# writers' commit campaign (storage steps, not decoding)
NOT_AGAIN = test_spark test_streaming test_jvm test_cluster test_memory test_interrupted_writes test_fuzz_slice \
	test_packaging test_commits test_readme test_generated test_ir_golden test_schema_language test_schema_hostile \
	test_kafka_spec_import test_layout test_cli_usage test_java_utf8 test_kafka_payloads test_payload_properties test_protocol \
	test_bench_slices test_writer_names test_spark_sessions test_unreadable test_newcomer test_native test_wire_clients test_capture test_capture_native test_dump_jobs \
	test_shapes test_sealed test_capture_summary
SUITE_AGAIN = KFMT_SUITE_AGAIN=1 $(if $(BACKEND_NICE),nice -n $(BACKEND_NICE)) $(PY) -m pytest tests $(NOT_AGAIN:%=--ignore=tests/%.py)
# The two passes run at once (nothing they run measures time or memory, each has its own temporary folders
# and ports), each into its own log, shown when both are done.
PASSES = echo "== the suite as an installation without the native backend (python the default), and with \
KFMT_BACKEND=construct, at once"; \
	KFMT_DISABLE_NATIVE=1 $(SUITE_AGAIN) > $(VENV)/pass-python.log 2>&1 & p=$$!; \
	KFMT_BACKEND=construct $(SUITE_AGAIN) > $(VENV)/pass-construct.log 2>&1; c=$$?; wait $$p; a=$$?; \
	echo "== without the native backend (exit $$a)"; tail -n 40 $(VENV)/pass-python.log; \
	echo "== KFMT_BACKEND=construct (exit $$c)"; tail -n 40 $(VENV)/pass-construct.log; \
	test $$a -eq 0 -a $$c -eq 0
test-backends: setup
	@$(PASSES)

# every case the suite has, the further cases marked `full` included (make test runs one case of each of those
# capabilities: the JVM engine's option sets beyond read_committed, the differential's fail and quarantine
# inputs, the overwrite commit killed at every step, two appenders racing on S3)
test-full: setup lint
	KFMT_FULL=1 $(PY) -m pytest -n 2 --dist loadgroup --durations=25
	$(MAKE) --no-print-directory test-backends

# the cluster recipes on a standalone master and two workers on 127.0.0.1 (`make test` runs one of them), and the
# spark-submit --jars session
test-cluster: setup
	KFMT_ALL_CLUSTER_RECIPES=1 $(PY) -m pytest tests/test_cluster.py tests/test_spark_sessions.py

demo: setup $(VENV)/.generated
	$(MAKE) --no-print-directory $(VENV)/.native $(VENV)/.jvm
	$(VENV)/bin/kfmt demo $(DEMO_ARGS)

bench: setup
	$(PY) bench/bench_codecs.py
	$(PY) bench/bench_payloads.py
	$(PY) bench/bench_protocol.py
	$(PY) bench/bench_capture.py

# instructions per record under valgrind's callgrind: deterministic on a busy machine (needs valgrind)
bench-callgrind: setup
	cd bench && ../$(PY) callgrind_v2.py $(CALLGRIND_ARGS)

bench-floor: setup
	cd bench && ../$(PY) v2_decode_floor.py

bench-spark: setup
	$(PY) bench/bench_spark.py

# time per record and peak memory from a 10 KB to a 1 GB segment (read_batches, read_arrow, read_arrow_batches,
# dump --summary, the Spark source); SCALING_ARGS="--sizes 10K,1M" for a short run
bench-scaling: setup
	$(PY) bench/bench_scaling.py --spark $(SCALING_ARGS)

fuzz: setup
	$(PY) -m pip install -q -e '.[fuzz]' || echo "atheris not installable here: running the mutation campaign only"
	if $(PY) -c "import atheris" 2>/dev/null; then $(PY) fuzz/campaign.py --atheris 100000 $(FUZZ_ARGS); \
	else $(PY) fuzz/campaign.py $(FUZZ_ARGS); fi

# the native backend compiled with AddressSanitizer + UndefinedBehaviorSanitizer, then the mutation campaign on it
# the writers' long campaign: every kill point of every commit (local overwrite and append, S3), and racing
# appenders, locally and on an S3 API server, KFMT_WRITER_TRIALS times each (the suite runs 4)
test-writers: setup
	KFMT_WRITER_TRIALS=$(or $(TRIALS),100) $(PY) -m pytest -s tests/test_commits.py

# a streaming query SIGKILLed and restarted TRIALS times per engine while a producer appends (a slice runs in the suite)
test-streams: setup
	KFMT_STREAM_TRIALS=$(or $(TRIALS),14) KFMT_STREAM_SEED=$(or $(SEED),$$(date +%s)) $(PY) -m pytest -s tests/test_streaming.py -k killed_and_restarted

# the JVM engine against the Python engine on damaged logs (one JVM for every input; a slice runs in the suite)
fuzz-jvm: setup
	$(PY) fuzz/jvm_differential.py $(FUZZ_ARGS)

# every API's reader on mutated frames of every API x version x kind (FRAMES=N, default 1,000,000)
fuzz-protocol: setup
	$(PY) fuzz/protocol.py --frames $(or $(FRAMES),1000000) $(FUZZ_ARGS)

# the protocol's readers on mutated frames with the native decoders built with ASan and UBSan (APIS=keys or all,
# default all; FRAMES=N, default 200,000), held to the python backend
fuzz-protocol-native: setup
	$(PY) fuzz/sanitized.py --inputs 200 --framing 20 --payloads 200 --protocol $(or $(FRAMES),200000) --apis $(or $(APIS),all)

# the public captures damaged as captures are in life (packets twice, swapped, dropped, the file cut, a byte
# flipped), each copy read by kfmt dump and held to what it reads from the whole (ROUNDS=N copies per capture)
fuzz-capture: setup
	$(PY) fuzz/capture.py --rounds $(or $(ROUNDS),1000) $(FUZZ_ARGS)

fuzz-native: setup
	$(PY) fuzz/sanitized.py $(FUZZ_ARGS)

# the documentation (docs/, the schema language's reference, the changelog) as a site in site/, offline, strict:
# a warning (a broken link or anchor) fails the build
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

lint: setup
	$(VENV)/bin/ruff check kfmt generator tests bench fuzz
	$(VENV)/bin/ruff format --check kfmt generator tests bench fuzz
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis
