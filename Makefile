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

# The same C tests under ASan+UBSan (issue 5); the first report fails the run. Binaries in tests/c/bin/san/.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_TESTS := $(patsubst tests/c/bin/%,tests/c/bin/san/%,$(C_TESTS))

tests/c/bin/san/%: tests/c/%.c $(KERNELS) $(wildcard csrc/kernels/*.h tests/c/*.h)
	@mkdir -p tests/c/bin/san
	$(CC) $(C_TEST_FLAGS) $(SAN_FLAGS) -o $@ $< $(KERNELS) -lm

sanitize: $(SAN_TESTS)
	@set -e; for t in $(SAN_TESTS); do echo "== $$t"; UBSAN_OPTIONS=print_stacktrace=1 $$t; done

pytest: $(SO)
	$(PYTHON) -m pytest -q tests

test: ctest pytest

demo: $(SO)
	$(PYTHON) examples/demo.py

# The CUDA path, proven to compile and link without a GPU (CI). It gets its own venv with torch's CUDA build
# (~5.5 GB, from the local wheel store) and its own build folder, so .venv and torch_rngx/_C.abi3.so are never
# touched; tests/test_cuda_build.py then imports that build on the CPU. `make test` never comes here.
CUDA_VENV := .venv-cuda
CUDA_TORCH_VERSION ?= 2.14.1
CUDA_BUILD := build/cuda

$(CUDA_VENV)/.stamp:
	$(PY) -m venv $(CUDA_VENV)
	$(CUDA_VENV)/bin/python -m pip install -q "torch==$(CUDA_TORCH_VERSION)" setuptools wheel numpy pytest
	touch $@

cuda-build-check: $(CUDA_VENV)/.stamp
	USE_CUDA=1 $(CUDA_VENV)/bin/python setup.py -q build --build-base $(CUDA_BUILD) --build-lib $(CUDA_BUILD)/lib
	RNGX_CUDA_BUILD=$(CUDA_BUILD)/lib PYTHONPATH=$(CUDA_BUILD)/lib $(CUDA_VENV)/bin/pytest -q --noconftest -p no:cacheprovider tests/test_cuda_build.py

clean:
	rm -rf build tests/c/bin $(SO) *.egg-info
