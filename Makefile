# torch-rngx. `make test` and `make demo` set up everything themselves on a bare machine.
PY ?= python3
VENV := .venv
PYTHON := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
SO := torch_rngx/_C.abi3.so
KERNELS := $(wildcard csrc/kernels/*.c)
SOURCES := setup.py $(KERNELS) $(wildcard csrc/*.c csrc/*.cpp csrc/*.h csrc/kernels/*.h)

# The C tests cross-check against Random123 when its header is installed (Debian: librandom123-dev).
RANDOM123 := $(wildcard /usr/include/Random123/philox.h)
C_TEST_FLAGS := -std=c11 -O2 -g -ffp-contract=off -Wall -Wextra -Werror -Icsrc $(if $(RANDOM123),-DRNGX_HAVE_RANDOM123)
C_TESTS := $(patsubst tests/c/%.c,tests/c/bin/%,$(filter-out tests/c/check.c,$(wildcard tests/c/test_*.c)))

.PHONY: all setup build test ctest pytest demo bench stats huge sanitize abi-check interop cuda-build-check dist clean

all: build

$(VENV)/.stamp:
	$(PY) -m venv $(VENV)
	$(PYTHON) -m pip install -q "torch==$(TORCH_VERSION)" setuptools wheel numpy pytest hypothesis matplotlib scipy
	touch $@

setup: $(VENV)/.stamp

$(SO): $(VENV)/.stamp $(SOURCES)
	$(PYTHON) -m pip install -q --no-build-isolation --no-deps -e .
	touch $@

build: $(SO)

# The C tests also built with -DRNGX_SCALAR_ONLY (the portable Philox alone, as on a CPU without AVX2) and under
# ASan+UBSan (make sanitize; the first report fails the run). One rule builds all three, by folder.
SCALAR_TESTS := $(patsubst tests/c/bin/%,tests/c/bin/scalar/%,$(C_TESTS))
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_TESTS := $(patsubst tests/c/bin/%,tests/c/bin/san/%,$(C_TESTS))
VARIANT_FLAGS = $(if $(findstring /scalar/,$@),-DRNGX_SCALAR_ONLY) $(if $(findstring /san/,$@),$(SAN_FLAGS))

.SECONDEXPANSION:
$(C_TESTS) $(SCALAR_TESTS) $(SAN_TESTS): tests/c/$$(notdir $$@).c $(KERNELS) $(wildcard csrc/kernels/*.h tests/c/*.h)
	@mkdir -p $(@D)
	$(CC) $(C_TEST_FLAGS) $(VARIANT_FLAGS) $(C_TEST_EXTRA) -o $@ $< $(KERNELS) -lm

ctest: $(C_TESTS) $(SCALAR_TESTS)
	@$(if $(RANDOM123),echo "Random123 found: the C tests cross-check against it.",echo "NOTE: Random123 (librandom123-dev) is not installed: the C tests skip the cross-check against it.")
	@set -e; for t in $(C_TESTS) $(SCALAR_TESTS); do echo "== $$t"; $$t; done

sanitize: $(SAN_TESTS)
	@set -e; for t in $(SAN_TESTS); do echo "== $$t"; UBSAN_OPTIONS=print_stacktrace=1 $$t; done

pytest: $(SO)
	$(PYTHON) -m pytest -q tests --ignore=tests/test_distributed.py

test: ctest pytest

# Optional long runs (docs/guarantees.md). stats: independence across offsets and seeds (SciPy p-values), then the
# distributions of normal, truncated normal, bernoulli and randint on 16x the samples of `make test`.
# huge: real tensors past 2^31 and 2^32 elements (~10 GiB of memory, minutes).
stats: $(SO)
	$(PYTHON) tests/stats_independence.py
	cd tests && ../$(PYTHON) stats_dists.py

huge: $(SO)
	RNGX_HUGE=1 $(PYTHON) -m pytest -q tests/test_huge.py

demo: $(SO)
	cd examples && ../$(PYTHON) demo.py

# CPU speed against torch (docs/performance.md): a table on stdout, benchmarks/out/bench.{json,png}.
bench: $(SO)
	$(PYTHON) benchmarks/bench.py

# The CUDA kernels, run on the CPU through a stand-in runtime (tests/cuda_emu), must write the C kernels' bytes.
# Needs only a C++ compiler; binaries in tests/c/bin/emu/.
.PHONY: cuda-emu
EMU_DIR := tests/c/bin/emu
EMU_OBJS := $(patsubst csrc/kernels/%.c,$(EMU_DIR)/%.o,$(KERNELS))

$(EMU_DIR)/%.o: csrc/kernels/%.c $(wildcard csrc/kernels/*.h)
	@mkdir -p $(EMU_DIR)
	$(CC) -std=c11 -O2 -ffp-contract=off -Icsrc -c -o $@ $<

$(EMU_DIR)/test_cuda_emu: tests/cuda_emu/test_cuda_emu.cpp tests/cuda_emu/cuda_runtime.h tests/c/check.h $(wildcard csrc/kernels/*.cu csrc/kernels/*.cuh csrc/kernels/*.h) $(EMU_OBJS)
	$(CXX) -std=c++17 -O2 -ffp-contract=off -Wall -Wextra -Wno-unknown-pragmas -Itests/cuda_emu -Icsrc/kernels -Itests/c \
	  -o $@ -x c++ csrc/kernels/ops_cuda.cu -x none tests/cuda_emu/test_cuda_emu.cpp $(EMU_OBJS) -lm

cuda-emu: $(EMU_DIR)/test_cuda_emu
	$<

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

# --force: setuptools alone would miss a change to a header.
$(CUDA_BUILD)/lib/$(SO): $(CUDA_VENV)/.stamp $(SOURCES) $(wildcard csrc/kernels/*.cu csrc/kernels/*.cuh csrc/*.h) $(wildcard torch_rngx/*.py)
	USE_CUDA=1 $(CUDA_VENV)/bin/python setup.py -q build --force --build-base $(CUDA_BUILD) --build-lib $(CUDA_BUILD)/lib

# One abi3 binary, two torch versions: the CPU build made against torch $(TORCH_VERSION) (.venv) runs the stream and
# op tests under torch $(CUDA_TORCH_VERSION) (.venv-cuda), imported from this folder.
abi-check: $(SO) $(CUDA_VENV)/.stamp
	$(CUDA_VENV)/bin/python -c "import torch, torch_rngx; print('torch', torch.__version__, 'loads', torch_rngx._C.__file__)"
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_stream.py tests/test_ops.py

# Bitwise interop with torch.func._random, whose CPU kernels arrived in torch 2.14: the torch $(TORCH_VERSION) build
# (.venv) imported from this folder by torch $(CUDA_TORCH_VERSION) (.venv-cuda). Under `make test` these tests skip.
# Also the checkpoint tests there: the journal reads torch's checkpoint internals, so a second torch version checks it.
interop: $(SO) $(CUDA_VENV)/.stamp
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_interop.py
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_training.py -k "checkpointing or reentrant or recomputation"

# Ranks in separate processes over gloo on the CPU (docs/distributed.md): DTensor and global-view sharding
# invariance under torch $(TORCH_VERSION) and torch $(CUDA_TORCH_VERSION) (the same build, imported from this folder),
# then the two examples. Several minutes: each rank imports torch and compiles, so `make test` leaves these out.
dist: $(SO) $(CUDA_VENV)/.stamp
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/test_distributed.py
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_distributed.py
	$(PYTHON) examples/dtensor_dropout.py
	$(PYTHON) examples/ddp_train.py

cuda-build-check: cuda-emu abi-check $(CUDA_BUILD)/lib/$(SO)
	RNGX_CUDA_BUILD=$(CUDA_BUILD)/lib PYTHONPATH=$(CUDA_BUILD)/lib $(CUDA_VENV)/bin/pytest -q --noconftest -p no:cacheprovider tests/test_cuda_build.py

clean:
	rm -rf build tests/c/bin $(SO) *.egg-info
