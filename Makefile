# torch-rngx. `make test` and `make demo` set up everything themselves on a bare machine.
PY ?= python3
VENV := .venv
PYTHON := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
SO := torch_rngx/_C.abi3.so
KERNELS := $(wildcard csrc/kernels/*.c)
SOURCES := setup.py $(KERNELS) $(wildcard csrc/*.c csrc/*.cpp csrc/kernels/*.h)

# The C tests cross-check against Random123 when its header is installed (Debian: librandom123-dev).
RANDOM123 := $(wildcard /usr/include/Random123/philox.h)
C_TEST_FLAGS := -std=c11 -O2 -g -ffp-contract=off -Wall -Wextra -Werror -Icsrc $(if $(RANDOM123),-DRNGX_HAVE_RANDOM123)
C_TESTS := $(patsubst tests/c/%.c,tests/c/bin/%,$(filter-out tests/c/check.c,$(wildcard tests/c/test_*.c)))

.PHONY: all setup build test ctest pytest demo bench stats sanitize cuda-build-check clean

all: build

$(VENV)/.stamp:
	$(PY) -m venv $(VENV)
	$(PYTHON) -m pip install -q "torch==$(TORCH_VERSION)" setuptools wheel numpy pytest hypothesis matplotlib
	touch $@

setup: $(VENV)/.stamp

$(SO): $(VENV)/.stamp $(SOURCES)
	$(PYTHON) -m pip install -q --no-build-isolation --no-deps -e .
	touch $@

build: $(SO)

tests/c/bin/%: tests/c/%.c $(KERNELS) $(wildcard csrc/kernels/*.h tests/c/*.h)
	@mkdir -p tests/c/bin
	$(CC) $(C_TEST_FLAGS) $(C_TEST_EXTRA) -o $@ $< $(KERNELS) -lm

ctest: $(C_TESTS)
	@$(if $(RANDOM123),echo "Random123 found: the C tests cross-check against it.",echo "NOTE: Random123 (librandom123-dev) is not installed: the C tests skip the cross-check against it.")
	@set -e; for t in $(C_TESTS); do echo "== $$t"; $$t; done

pytest: $(SO)
	$(PYTHON) -m pytest -q tests

test: ctest pytest

demo: $(SO)
	$(PYTHON) examples/demo.py

clean:
	rm -rf build tests/c/bin $(SO) *.egg-info
