# torch-rngx. `make test` and `make demo` set up everything themselves on a bare machine.
PY ?= python3
VENV := .venv
PYTHON := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
# torch_rngx.triton's tests run its kernels on the CPU through Triton's interpreter (a 285 MB wheel, ~1 GB installed).
TRITON_VERSION ?= 3.9.0
SO := torch_rngx/_C.abi3.so
KERNELS := $(wildcard csrc/kernels/*.c)
SOURCES := setup.py tools/build_backend.py $(KERNELS) $(wildcard csrc/*.c csrc/*.cpp csrc/*.h csrc/kernels/*.h)
# The wheels' name (make wheel) and nvcc, if any (the CUDA targets need it).
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' torch_rngx/_version.py)
PLATFORM := $(shell $(PY) -c "import sysconfig; print(sysconfig.get_platform().replace('-', '_').replace('.', '_'))")
WHEEL_NAME := torch_rngx-$(VERSION)-cp39-abi3-$(PLATFORM).whl
NVCC := $(or $(shell command -v nvcc),$(wildcard /usr/local/cuda/bin/nvcc))

# The C tests cross-check against Random123 when its header is installed (Debian: librandom123-dev).
RANDOM123 := $(wildcard /usr/include/Random123/philox.h)
C_TEST_FLAGS := -std=c11 -O2 -g -ffp-contract=off -Wall -Wextra -Werror -Icsrc -Itorch_rngx/include $(if $(RANDOM123),-DRNGX_HAVE_RANDOM123)
C_TESTS := $(patsubst tests/c/%.c,tests/c/bin/%,$(filter-out tests/c/check.c,$(wildcard tests/c/test_*.c)))

.PHONY: all setup build test ctest pytest opcheck inductor-models opinfo opinfo-sweep demo bench stats huge sanitize abi-check interop cuda-build-check dist clean \
	aoti-cpp test-key-reuse test-quick test-isa wheel wheel-cuda wheel-test wheel-matrix deploy-check install-check docs-check \
	docs docs-test lint venvs

all: build

# The venvs' packages are installed by uv (pinned; pip puts it in build/uv), which takes the same pins as pip, unpacks
# in parallel and hard-links from one cache the venvs share: on a 2-core EPYC, `make venvs` (torch 2.14.1's CUDA build
# with torchvision, Lightning and the rest, and torch 2.15.0's) took 85 s, where pip's installs took about 400 s of a
# CI lane. uv does not read pip's settings, so the folders pip finds wheels in (where a machine keeps a CPU build of
# torch) are passed on.
# The build (pip install -e .) and the README's line (make install-check) stay pip's.
UV_VERSION ?= 0.13.10
UV := build/uv/bin/uv
FIND_LINKS = $(sort $(PIP_FIND_LINKS) $(shell $(PY) -m pip config get global.find-links 2>/dev/null))
# $(1): the venv's python; then the packages.
uv_install = $(UV) pip install -q --python $(1) $(addprefix --find-links ,$(FIND_LINKS))

$(UV):
	$(PY) -m venv build/uv
	build/uv/bin/python -m pip install -q "uv==$(UV_VERSION)"

# The venv with what the build needs: torch (its headers and libraries) and the build tools. The rest comes in
# .test-stamp, which make test installs beside the build.
$(VENV)/.stamp: | $(UV)
	$(PY) -m venv $(VENV)
	$(call uv_install,$(PYTHON)) "torch==$(TORCH_VERSION)" setuptools wheel numpy
	touch $@

# What the suite, the examples, the docs' blocks and the benchmarks need beyond the build's venv, in one install, with
# torch pinned so that none of them moves it; a stamp of its own, so that an existing venv gets them too. make test
# installs it beside the build (on a 2-core EPYC the venv took 118 s, then the build 82, one after the other, when
# this was part of the venv's run; Triton alone is 1 GB installed):
# - Triton (its kernels run on the CPU through TRITON_INTERPRET=1), ninja (torch's C++ extension builds), pytest,
#   hypothesis, matplotlib, scipy;
# - transformers (~150 MB with its dependencies, no torch pin of its own): tests/test_third_party.py trains tiny
#   BERT and ConvNeXt models built from configs, nothing downloaded;
# - pytest-xdist: the suite on every core, a module per worker at a time (--dist loadfile), so that a module's
#   fixtures and compiled models are built once;
# - diffusers (no torchvision, no torch pin of its own): tests/test_diffusers.py trains its UNet2DModel with its
#   DDPMScheduler;
# - albumentations (OpenCV's headless wheel with it, ~180 MB installed): tests/test_data.py runs its Compose in
#   torch_rngx.data.DataLoader's workers;
# - ml-dtypes (float8 in NumPy): tests/reference.py encodes stochastic_round's float8 and bfloat16 values with it;
# - expecttest: torch.testing._internal needs it, whose OpInfo samples tests/test_mode_opinfo.py runs under the mode.
TRANSFORMERS_VERSION ?= 5.23.0
DIFFUSERS_VERSION ?= 0.42.1
ALBUMENTATIONS_VERSION ?= 2.0.8
ML_DTYPES_VERSION ?= 0.6.0
EXPECTTEST_VERSION ?= 0.3.0

$(VENV)/.test-stamp: $(VENV)/.stamp | $(UV)
	$(call uv_install,$(PYTHON)) "torch==$(TORCH_VERSION)" "triton==$(TRITON_VERSION)" ninja pytest hypothesis matplotlib \
	  scipy "transformers==$(TRANSFORMERS_VERSION)" pytest-xdist "diffusers==$(DIFFUSERS_VERSION)" \
	  "albumentations==$(ALBUMENTATIONS_VERSION)" "ml-dtypes==$(ML_DTYPES_VERSION)" "expecttest==$(EXPECTTEST_VERSION)"
	touch $@

setup: $(VENV)/.test-stamp  # and the venv it stands on

# pyproject.toml and _version.py: the installed metadata (the version importlib.metadata reports) is made here too.
$(SO): $(VENV)/.stamp $(SOURCES) pyproject.toml torch_rngx/_version.py
	$(PYTHON) -m pip install -q --no-build-isolation --no-deps -e .
	touch $@

build: $(SO)

# The C tests also built with -DRNGX_SCALAR_ONLY (the portable Philox alone, as on a CPU without AVX2) and under
# ASan+UBSan (make sanitize; the first report fails the run). One rule builds all three, by folder.
SCALAR_TESTS := $(patsubst tests/c/bin/%,tests/c/bin/scalar/%,$(C_TESTS))
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_TESTS := $(patsubst tests/c/bin/%,tests/c/bin/san/%,$(C_TESTS))
VARIANT_FLAGS = $(if $(findstring /scalar/,$@),-DRNGX_SCALAR_ONLY) $(if $(findstring /san/,$@),$(SAN_FLAGS))

# The kernels are compiled once per folder (loops.c's clones take most of the build) and linked into each test.
KERNEL_HEADERS := $(wildcard csrc/kernels/*.h)
define KERNEL_OBJECT_RULE
$(1)obj/%.o: csrc/kernels/%.c $$(KERNEL_HEADERS)
	@mkdir -p $$(@D)
	$$(CC) $$(C_TEST_FLAGS) $$(VARIANT_FLAGS) -c -o $$@ $$<
endef
$(foreach folder,tests/c/bin/ tests/c/bin/scalar/ tests/c/bin/san/,$(eval $(call KERNEL_OBJECT_RULE,$(folder))))

.SECONDEXPANSION:
$(C_TESTS) $(SCALAR_TESTS) $(SAN_TESTS): tests/c/$$(notdir $$@).c $$(patsubst csrc/kernels/%.c,$$(dir $$@)obj/%.o,$(KERNELS)) $(wildcard tests/c/*.h) $(wildcard torch_rngx/include/torch_rngx/*.h)
	@mkdir -p $(@D)
	$(CC) $(C_TEST_FLAGS) $(VARIANT_FLAGS) $(C_TEST_EXTRA) -o $@ $< $(filter %.o,$^) -lm

# Built and run one per core: each test binary is independent; each prints its report in one piece when it ends.
CORES := $(shell nproc 2>/dev/null || echo 1)
ctest:  # one job per core, or make test's job slots when it runs this beside the venv's setup
	@$(MAKE) --no-print-directory $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(CORES)) $(C_TESTS) $(SCALAR_TESTS)
	@$(if $(RANDOM123),echo "Random123 found: the C tests cross-check against it.",echo "NOTE: Random123 (librandom123-dev) is not installed: the C tests skip the cross-check against it.")
	@printf '%s\n' $(C_TESTS) $(SCALAR_TESTS) | xargs -P $(CORES) -I{} sh -c 'out=$$({} 2>&1); s=$$?; printf "== %s\n%s\n" {} "$$out"; exit $$s'

sanitize: $(SAN_TESTS)
	@set -e; for t in $(SAN_TESTS); do echo "== $$t"; UBSAN_OPTIONS=print_stacktrace=1 $$t; done

PYTEST_WORKERS ?= auto
PYTEST := $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile
KEY_REUSE_CHECKED := RNGX_DEBUG_KEY_REUSE=raise
PYTEST_DEPS := $(SO) $(VENV)/.test-stamp

OPCHECK_EVERY_SAMPLE := tests/test_opcheck_all.py::test_opcheck_every_sample
INDUCTOR_MODELS := tests/test_third_party.py::test_converted_model_under_inductor_differs_only_by_inductors_arithmetic \
  tests/test_third_party.py::test_convnext_at_a_second_size_fails_under_inductor_as_torchs_own_does

# Left out, each run by a target of its own: the ranks' processes (make dist), the docs site (make docs-test), the
# OpInfo samples (make opinfo), opcheck's every sample (make opcheck), the Hugging Face models compiled with Inductor
# (make inductor-models) and the AOTInductor packages (make aoti-cpp, in deploy-check, with the C++ program: 59 s of
# one worker here, on a 2-core EPYC).
pytest: $(PYTEST_DEPS)
	$(KEY_REUSE_CHECKED) $(PYTEST) tests --ignore=tests/test_distributed.py --ignore=tests/test_docs_site.py \
	  --ignore=tests/test_mode_opinfo.py --ignore=tests/test_aoti.py --deselect $(OPCHECK_EVERY_SAMPLE) \
	  $(addprefix --deselect ,$(INDUCTOR_MODELS))

# BERT and ConvNeXt compiled with Inductor (tests/test_third_party.py, whose aot_eager models make test runs), a CI
# target of its own: 178 s of one core in make test on a 2-core EPYC, most of it Inductor's C++ compiles (82, 55 and
# 41 s), which put make test at 738 s, over its 12 minutes. Spread over the workers one by one (--dist load).
inductor-models: $(PYTEST_DEPS)
	$(KEY_REUSE_CHECKED) $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist load $(INDUCTOR_MODELS)

# torch.library.opcheck on every sample (1706; tests/test_opcheck_all.py, whose quick subset make test runs), a CI
# target of its own: about 220 s of one core, AOTAutograd on each sample, so it keeps make test within 12 minutes on
# two cores. The samples are spread over the workers one by one (--dist load): they share nothing a module builds.
opcheck: $(PYTEST_DEPS)
	$(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist load $(OPCHECK_EVERY_SAMPLE)

# PyTorch's OpInfo samples of its random ops under torch_rngx.mode (issue 43), a CI target of its own (minutes of
# one core, finding the samples that draw among all of op_db's): `make opinfo` runs every sample eager and each
# op's first compiled with Inductor, in float32 and bfloat16; `make opinfo-sweep` every sample in every float dtype,
# both ways.
opinfo: $(PYTEST_DEPS)
	$(KEY_REUSE_CHECKED) $(PYTEST) tests/test_mode_opinfo.py

opinfo-sweep: $(PYTEST_DEPS)
	RNGX_OPINFO_ALL=1 $(KEY_REUSE_CHECKED) $(PYTEST) tests/test_mode_opinfo.py

# The C tests run beside the venv's installs and the build, and the test packages (.test-stamp) beside the build, then
# the suite: on a clean clone of a 2-core EPYC, 156 s from make test's start to the suite's, where waiting for the
# whole venv before the build took 199-201 (on the Xeon, 166 s with the C tests beside, 208 with nothing beside).
test:
	@$(MAKE) --no-print-directory -j2 ctest $(PYTEST_DEPS)
	@$(MAKE) --no-print-directory pytest

# The edit loop: the suite without the tests marked slow (models trained under Inductor, AOTInductor packages, C++
# and Triton builds, opcheck over every sample, processes of their own), under 3 minutes on 2 cores
# (docs/development.md). `make test` runs them all.
test-quick: $(PYTEST_DEPS)
	$(KEY_REUSE_CHECKED) $(PYTEST) tests --ignore=tests/test_distributed.py --ignore=tests/test_docs_site.py \
	  --ignore=tests/test_mode_opinfo.py -m "not slow"

# The tests that compare compiled with eager, on other CPU paths than the machine's best (which `make test` runs):
# torch's kernels and Inductor's code for AVX2 (ATEN_CPU_CAPABILITY=avx2 steers both), and our Philox on its scalar
# path (RNGX_SIMD=scalar). ATEN_CPU_CAPABILITY=default is left out: Inductor's C++ then fails to compile ("'at::vec'
# has not been declared"), an error of torch's own. CI runs this after make test.
# Inductor's compile cache does not tell the capabilities apart (code cached under AVX-512 is reused under
# ATEN_CPU_CAPABILITY=avx2, and crashed there once): on a CPU with more than AVX2 this run keeps a cache of its own.
# On one whose best is AVX2, Inductor's code here is make test's own, so it shares make test's cache (on a 2-core
# EPYC: 2 min 9 s warm against 6 min 12 s cold, docs/development.md).
# Left out: the tests that compile only with aot_eager (the sweep of torch's random functions, the diffusers step, the
# Hugging Face models' bitwise steps), whose compiled code runs eager's kernels, so there is no Inductor code to vary;
# and the ConvNeXt that torch's Inductor fails to compile at a second size, a torch bug whatever the CPU path (24 s).
COMPILED_VS_EAGER := -k "(compile or inductor or export) and not trains_bitwise_compiled_as_eager and not second_size_fails" \
  --ignore=tests/test_mode_sweep.py --ignore=tests/test_diffusers.py --ignore=tests/test_mode_opinfo.py
test-isa: $(PYTEST_DEPS)
	@cap=$$($(PYTHON) -c "import torch; print(torch.backends.cpu.get_cpu_capability())"); \
	  if [ "$$cap" != AVX2 ]; then export TORCHINDUCTOR_CACHE_DIR=$(CURDIR)/build/inductor-avx2; fi; \
	  echo "test-isa: this CPU's best is $$cap; Inductor cache: $${TORCHINDUCTOR_CACHE_DIR:-torch's default, shared with make test}"; \
	  set -x; ATEN_CPU_CAPABILITY=avx2 RNGX_SIMD=scalar $(PYTEST) tests --ignore=tests/test_distributed.py \
	  --ignore=tests/test_docs_site.py $(COMPILED_VS_EAGER)

# ruff (check and format --check) and mypy on torch_rngx/, configured in pyproject.toml; both pinned, installed into
# the venv on first use. `ruff format torch_rngx` fixes what format --check reports.
RUFF_VERSION ?= 0.17.5
MYPY_VERSION ?= 2.4.1

$(VENV)/.lint-stamp: $(VENV)/.test-stamp | $(UV)  # mypy sees the packages the code imports
	$(call uv_install,$(PYTHON)) "ruff==$(RUFF_VERSION)" "mypy==$(MYPY_VERSION)"
	touch $@

lint: $(VENV)/.lint-stamp
	$(VENV)/bin/ruff check torch_rngx
	$(VENV)/bin/ruff format --check torch_rngx
	$(VENV)/bin/mypy

# The key-reuse checker (docs/guide.md, "Catching key reuse") over our own code: `make test` and `make test-quick` run
# the suite under RNGX_DEBUG_KEY_REUSE=raise (tests/conftest.py says which modules and tests it leaves alone, and
# why). This target runs the single-process examples under it too: the demo with examples/entropy_bottleneck.py, the
# Triton kernel through Triton's interpreter and the C++ extension, whose build the suite has made. `make dist` runs
# ddp_train.py under it.
test-key-reuse: $(PYTEST_DEPS)
	cd examples && RNGX_DEBUG_KEY_REUSE=raise ../$(PYTHON) demo.py
	RNGX_DEBUG_KEY_REUSE=raise TRITON_INTERPRET=1 $(PYTHON) examples/triton_fused_dropout.py
	RNGX_DEBUG_KEY_REUSE=raise $(PYTHON) examples/cpp_extension/draw.py

# Optional long runs (docs/guarantees.md). stats: independence across offsets and seeds (SciPy p-values), then the
# distributions of normal, truncated normal, bernoulli and randint on 16x the samples of `make test`.
# huge: real tensors past 2^31 and 2^32 elements (~10 GiB of memory, minutes).
stats: $(PYTEST_DEPS)
	$(PYTHON) tests/stats_independence.py
	cd tests && ../$(PYTHON) stats_dists.py

huge: $(PYTEST_DEPS)
	RNGX_HUGE=1 $(PYTHON) -m pytest -q tests/test_huge.py

demo: $(PYTEST_DEPS)
	cd examples && ../$(PYTHON) demo.py

# The docs name only what exists (tools/docs_names.py: every torch_rngx.<name> they and the docstrings write, every
# `docs: <page>/` reference of a docstring or message), then every ```python block of README.md and docs/*.md, each in
# a fresh process (tools/docs_check.py: first-line markers for blocks that need a GPU or several ranks).
docs-check: $(PYTEST_DEPS)
	$(PYTHON) tools/docs_names.py
	$(PYTHON) tools/docs_check.py

# The documentation site (mkdocs.yml): mkdocs-material, the API reference rendered from the docstrings by
# mkdocstrings' Python handler; playwright drives a Chromium for make docs-test. All pinned, in a stamp of their own.
MKDOCS_VERSION ?= 1.6.1
MKDOCS_MATERIAL_VERSION ?= 9.8.1
MKDOCSTRINGS_VERSION ?= 1.0.8
MKDOCSTRINGS_PYTHON_VERSION ?= 2.0.11
GRIFFE_VERSION ?= 2.4.1
PLAYWRIGHT_VERSION ?= 1.65.2

$(VENV)/.docs-stamp: $(VENV)/.stamp | $(UV)
	$(call uv_install,$(PYTHON)) "mkdocs==$(MKDOCS_VERSION)" "mkdocs-material==$(MKDOCS_MATERIAL_VERSION)" \
	  "mkdocstrings==$(MKDOCSTRINGS_VERSION)" "mkdocstrings-python==$(MKDOCSTRINGS_PYTHON_VERSION)" \
	  "griffelib==$(GRIFFE_VERSION)" "playwright==$(PLAYWRIGHT_VERSION)"
	touch $@

# build/site, with --strict: a broken link, a missing page or a docstring mkdocstrings cannot read fails the build.
# NO_MKDOCS_2_WARNING: mkdocs-material's banner about its successor, printed on every build.
docs: $(VENV)/.docs-stamp
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The built site in headless Chromium (tests/test_docs_site.py): Debian's chromium (apt-get install chromium; .ci/run
# installs it), or the one RNGX_CHROMIUM names. playwright drives it; its own browser download is not used.
docs-test: docs $(VENV)/.test-stamp
	RNGX_REQUIRE_DOCS_SITE=1 $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_docs_site.py

# CPU speed against torch (docs/performance.md; every run in benchmarks/results/perf-log.md): a table on stdout,
# benchmarks/out/bench.{json,png}.
bench: $(PYTEST_DEPS)
	$(PYTHON) benchmarks/bench.py

# stochastic_round against x.to(bfloat16) and torchao's _fp32_to_bf16_sr, and the optimizer's step (docs/performance.md,
# "Stochastic rounding"). torchao goes into the venv over the CPU torch without its dependencies: the function timed is
# torch ops. sround-plot draws docs/stochastic_rounding.png (docs/training.md).
TORCHAO_VERSION ?= 0.18.0

$(VENV)/.torchao-stamp: $(VENV)/.stamp | $(UV)
	$(call uv_install,$(PYTHON)) --no-deps "torchao==$(TORCHAO_VERSION)"
	touch $@

.PHONY: bench-sround sround-plot
bench-sround: $(PYTEST_DEPS) $(VENV)/.torchao-stamp
	$(PYTHON) benchmarks/sround.py

sround-plot: $(PYTEST_DEPS)
	$(PYTHON) benchmarks/sround_training.py

# The CUDA kernels, run on the CPU through a stand-in runtime (tests/cuda_emu), must write the C kernels' bytes.
# Needs only a C++ compiler; binaries in tests/c/bin/emu/.
.PHONY: cuda-emu
EMU_DIR := tests/c/bin/emu
EMU_OBJS := $(patsubst csrc/kernels/%.c,$(EMU_DIR)/%.o,$(KERNELS))

$(EMU_DIR)/%.o: csrc/kernels/%.c $(wildcard csrc/kernels/*.h)
	@mkdir -p $(EMU_DIR)
	$(CC) -std=c11 -O2 -ffp-contract=off -Icsrc -c -o $@ $<

$(EMU_DIR)/test_cuda_emu: tests/cuda_emu/test_cuda_emu.cpp tests/cuda_emu/cuda_runtime.h tests/c/check.h tests/kat/stream-1.0.h $(wildcard csrc/kernels/*.cu csrc/kernels/*.cuh csrc/kernels/*.h) $(EMU_OBJS)
	$(CXX) -std=c++17 -O2 -ffp-contract=off -Wall -Wextra -Wno-unknown-pragmas -Itests/cuda_emu -Icsrc/kernels -Itests/c -Itests/kat \
	  -o $@ -x c++ csrc/kernels/kernels_cuda.cu -x none tests/cuda_emu/test_cuda_emu.cpp $(EMU_OBJS) -lm

cuda-emu: $(EMU_DIR)/test_cuda_emu
	$<

# The CUDA path, proven to compile and link without a GPU (CI). It gets its own venv with torch's CUDA build
# (~5.5 GB, from the local wheel store); the CUDA wheel (make wheel-cuda: torch_rngx._C and _C_cuda) is unpacked
# into its own folder, so .venv and torch_rngx/_C.abi3.so are never touched, and tests/test_cuda_build.py imports
# it from there on the CPU. install-check installs the same wheel. `make test` never comes here.
CUDA_VENV := .venv-cuda
CUDA_TORCH_VERSION ?= 2.14.1
CUDA_BUILD := build/cuda

$(CUDA_VENV)/.stamp: | $(UV)
	$(PY) -m venv $(CUDA_VENV)
	$(call uv_install,$(CUDA_VENV)/bin/python) "torch==$(CUDA_TORCH_VERSION)" setuptools wheel numpy pytest
	touch $@

# One abi3 binary, two torch versions: the CPU build made against torch $(TORCH_VERSION) (.venv) runs the stream and
# op tests under torch $(CUDA_TORCH_VERSION) (.venv-cuda), imported from this folder.
abi-check: $(SO) $(CUDA_VENV)/.stamp
	$(CUDA_VENV)/bin/python -c "import torch, torch_rngx; print('torch', torch.__version__, 'loads', torch_rngx._C.__file__)"
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_stream.py tests/test_ops.py

# CompressAI and timm, unmodified, trained under torch_rngx.mode and after nn.convert (tests/test_compressai_mode.py,
# tests/test_timm.py): both need torchvision, whose PyPI wheels need torch's CUDA build, so they go into .venv-cuda,
# torchvision at the release made for torch $(CUDA_TORCH_VERSION). compressai pins numpy < 2, which torch's wheels
# also run with.
CUDA_TORCHVISION_VERSION ?= 0.29.1
COMPRESSAI_VERSION ?= 1.2.8
TIMM_VERSION ?= 1.0.31

$(CUDA_VENV)/.vision-stamp: $(CUDA_VENV)/.stamp | $(UV)
	$(call uv_install,$(CUDA_VENV)/bin/python) "torch==$(CUDA_TORCH_VERSION)" "torchvision==$(CUDA_TORCHVISION_VERSION)" \
	  "compressai==$(COMPRESSAI_VERSION)" "timm==$(TIMM_VERSION)"
	touch $@

# Lightning, Accelerate and Hugging Face's Trainer, which run training loops over a user's DataLoader
# (tests/test_lightning_data.py: torch_rngx.data in Lightning's single-device and DDP training, its checkpoints and
# resume; Accelerate's prepare(); tests/test_hf_trainer_data.py: the Trainer's workers and resume). A stamp of its own.
LIGHTNING_VERSION ?= 2.6.6
ACCELERATE_VERSION ?= 1.16.0

$(CUDA_VENV)/.frameworks-stamp: $(CUDA_VENV)/.stamp | $(UV)
	$(call uv_install,$(CUDA_VENV)/bin/python) "torch==$(CUDA_TORCH_VERSION)" "lightning==$(LIGHTNING_VERSION)" \
	  "accelerate==$(ACCELERATE_VERSION)" "transformers==$(TRANSFORMERS_VERSION)"
	touch $@

# The other torches' venvs, which interop, dist, cuda-build-check, install-check and wheel-test stand on: CI makes
# them once before its lanes, so that no two lanes make one.
venvs: $(CUDA_VENV)/.stamp $(CUDA_VENV)/.vision-stamp $(CUDA_VENV)/.frameworks-stamp .venv-2.15/.stamp

# Bitwise interop with torch.func._random, whose CPU kernels arrived in torch 2.14: the torch $(TORCH_VERSION) build
# (.venv) imported from this folder by torch $(CUDA_TORCH_VERSION) (.venv-cuda), and by torch 2.15.0 (.venv-2.15,
# make wheel-matrix's; ~5 GB, a minute from the local wheel store), whose torch.func._random has bits. Under `make
# test` these tests skip. Under both torch versions, the private names we read and the checkpoint tests (the journal
# reads torch's checkpoint internals); under 2.14.1, the docs' blocks that need torch >= 2.14, CompressAI under
# torch_rngx.mode and timm models after nn.convert, and torch_rngx.data under Lightning, Accelerate and the Trainer.
interop: $(SO) $(CUDA_VENV)/.stamp $(CUDA_VENV)/.vision-stamp $(CUDA_VENV)/.frameworks-stamp .venv-2.15/.stamp
	RNGX_REQUIRE_VISION=1 RNGX_REQUIRE_LIGHTNING=1 $(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider \
	  tests/test_interop.py tests/test_compressai_mode.py tests/test_timm.py tests/test_torchvision_data.py \
	  tests/test_lightning_data.py tests/test_hf_trainer_data.py
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_torch_private.py  # torch's private names on 2.14
	RNGX_REQUIRE_BITS=1 .venv-2.15/bin/python -m pytest -q -p no:cacheprovider tests/test_interop.py tests/test_torch_private.py
	.venv-2.15/bin/python -m pytest -q -p no:cacheprovider tests/test_training.py -k "checkpointing or reentrant or recomputation"
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_training.py -k "checkpointing or reentrant or recomputation"
	$(CUDA_VENV)/bin/python tools/docs_check.py --needing "torch>=2.14"

# Ranks in separate processes over gloo on the CPU (docs/distributed.md): DTensor and global-view sharding
# invariance under torch $(TORCH_VERSION) on every mesh, and under torch $(CUDA_TORCH_VERSION) (the same build, imported
# from this folder) on two ranks, where what differs is torch's DTensor code and not our layouts; then the two examples. Several minutes: each rank imports torch and compiles, so `make test` leaves these out.
# ddp_train.py runs under the key-reuse checker; dtensor_dropout.py draws one key in five layouts on purpose.
dist: $(PYTEST_DEPS) $(CUDA_VENV)/.stamp
	$(PYTHON) -m pytest -q -p no:cacheprovider tests/test_distributed.py
	$(CUDA_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_distributed.py -k "two_ranks or cache"
	$(PYTHON) examples/dtensor_dropout.py
	RNGX_DEBUG_KEY_REUSE=raise $(PYTHON) examples/ddp_train.py

$(CUDA_BUILD)/lib/.stamp: dist/cuda/$(WHEEL_NAME)
	rm -rf $(@D) && mkdir -p $(@D) && $(PYTHON) -m zipfile -e $< $(@D) && touch $@

cuda-build-check: cuda-emu abi-check $(CUDA_BUILD)/lib/.stamp
	RNGX_CUDA_BUILD=$(CUDA_BUILD)/lib PYTHONPATH=$(CUDA_BUILD)/lib $(CUDA_VENV)/bin/pytest -q --noconftest -p no:cacheprovider tests/test_cuda_build.py

# ---- Deployment (docs/deploy.md) ----
# AOTInductor in C++: examples/aoti_cpp/main.cpp built against the libtorch inside the installed torch wheel (its
# include/ and lib/; nothing is downloaded), then tests/test_aoti.py: packages run in a fresh Python process and
# by that program give eager's bytes.
# $(1): the python whose torch to build against, $(2): the program. C++20: torch 2.15's headers require it.
aoti_cpp_build = t=$$($(1) -c "import os, torch; print(os.path.dirname(torch.__file__))") && \
  abi=$$($(1) -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))") && mkdir -p $(dir $(2)) && \
  $(CXX) -std=c++20 -O2 -D_GLIBCXX_USE_CXX11_ABI=$$abi -isystem $$t/include -isystem $$t/include/torch/csrc/api/include \
  -o $(2) examples/aoti_cpp/main.cpp -L$$t/lib -Wl,-rpath,$$t/lib -ltorch -ltorch_cpu -lc10 -ldl
AOTI_CPP := build/aoti_cpp/rngx_aoti

$(AOTI_CPP): examples/aoti_cpp/main.cpp $(VENV)/.stamp
	$(call aoti_cpp_build,$(PYTHON),$@)

aoti-cpp: $(PYTEST_DEPS) $(AOTI_CPP)
	RNGX_AOTI_CPP=$(AOTI_CPP) $(PYTHON) -m pytest -q -p no:cacheprovider tests/test_aoti.py

# Wheels: dist/torch_rngx-<version>-cp39-abi3-<platform>.whl, the CPU build against torch $(TORCH_VERSION) (.venv);
# with nvcc, also the CUDA build against torch's CUDA build (.venv-cuda) in dist/cuda/: the same CPU library _C
# plus _C_cuda. setup.py compiles each from scratch and drops a _C_cuda it did not build, so no object or library
# of another torch or variant is reused; each also starts from an empty build/lib, which keeps a module removed
# from torch_rngx/ out of the wheel.
# pip wheel for the checkout at hand: $(1) python, $(2) USE_CUDA, $(3) output folder. Every build works in build/, so
# it holds a lock there: two started side by side (make -j, or CI's lanes) run one after the other.
build_wheel = mkdir -p build && flock build/.wheel-lock sh -c "rm -rf build/lib.* build/bdist.* && \
  USE_CUDA=$(2) $(1) -m pip wheel -q --no-build-isolation --no-deps -w $(3) ."

dist/$(WHEEL_NAME): $(VENV)/.stamp $(SOURCES) $(wildcard torch_rngx/*.py torch_rngx/*/*.py) pyproject.toml
	$(call build_wheel,$(PYTHON),0,dist)

dist/cuda/$(WHEEL_NAME): $(CUDA_VENV)/.stamp $(SOURCES) $(wildcard csrc/kernels/*.cu csrc/kernels/*.cuh) $(wildcard torch_rngx/*.py torch_rngx/*/*.py) pyproject.toml
	$(call build_wheel,$(CUDA_VENV)/bin/python,1,dist/cuda)

wheel-cuda: dist/cuda/$(WHEEL_NAME)

wheel: dist/$(WHEEL_NAME) $(if $(NVCC),wheel-cuda)
	@ls -l dist/$(WHEEL_NAME) $(if $(NVCC),dist/cuda/$(WHEEL_NAME))

# The CPU wheel (built against torch $(TORCH_VERSION)) installed over torch $(CUDA_TORCH_VERSION): stream, op and
# library-alone tests from outside the source tree (tests/wheel_check.sh).
wheel-test: dist/$(WHEEL_NAME) $(CUDA_VENV)/.stamp
	tests/wheel_check.sh $(CUDA_VENV) dist/$(WHEEL_NAME)

# What CI runs for deployment: the wheel test and AOTInductor in Python and C++.
deploy-check: wheel-test aoti-cpp

# The README's install line and the CUDA wheel where users meet them (docs/deploy.md, "Installing from source"):
# (i) `pip install .` (build isolation on) from a copy of this checkout into a fresh venv over the CPU torch
#     $(TORCH_VERSION): a CPU-only build though nvcc is here, no torch fetched; the README's quick start runs, and
#     inside the tree the ImportError names the shadowing (tests/install_check.sh);
# with nvcc, the CUDA wheel (built against torch $(CUDA_TORCH_VERSION)'s CUDA build, as cuda-build-check uses it)
# (ii) over the CPU torch $(TORCH_VERSION): it loads _C alone and runs the stream, op and library-alone tests;
# (iii) over torch's CUDA build: _C_cuda loads and the CUDA kernels are registered (tests/wheel_check.sh).
install-check: $(VENV)/.test-stamp $(if $(NVCC),dist/cuda/$(WHEEL_NAME) $(CUDA_VENV)/.stamp)
	tests/install_check.sh $(VENV)
	$(if $(NVCC),tests/wheel_check.sh $(VENV) dist/cuda/$(WHEEL_NAME))
	$(if $(NVCC),tests/wheel_check.sh $(CUDA_VENV) dist/cuda/$(WHEEL_NAME))

# The oldest torch the README claims and the newest release, each in its own venv (.venv-2.10, .venv-2.15; PyPI's
# builds, with CUDA: ~4 GB each; a cap that pip's settings put on torch's version is not uv's): the CPU wheel
# installed over it, then wheels built from source against it (CPU; and CUDA with nvcc), each tested the same way;
# and AOTInductor (tests/test_aoti.py) under that torch, with the C++ program built against its libtorch.
MATRIX := 2.10 2.15
.venv-%/.stamp: | $(UV)
	$(PY) -m venv $(@D)
	$(call uv_install,$(@D)/bin/python) "torch==$*.0" setuptools wheel numpy pytest
	touch $@

wheel-matrix: $(SO) dist/$(WHEEL_NAME) $(foreach v,$(MATRIX),.venv-$(v)/.stamp)
	@set -e; for v in $(MATRIX); do \
	  echo "== torch $$v: the CPU wheel built against torch $(TORCH_VERSION)"; \
	  tests/wheel_check.sh .venv-$$v dist/$(WHEEL_NAME); \
	  echo "== torch $$v: built from source (CPU)"; \
	  $(call build_wheel,.venv-$$v/bin/python,0,build/matrix/$$v/cpu); \
	  tests/wheel_check.sh .venv-$$v build/matrix/$$v/cpu/$(WHEEL_NAME); \
	  if [ -n "$(NVCC)" ]; then \
	    echo "== torch $$v: built from source (CUDA; runs its CPU ops here)"; \
	    $(call build_wheel,.venv-$$v/bin/python,1,build/matrix/$$v/cuda); \
	    tests/wheel_check.sh .venv-$$v build/matrix/$$v/cuda/$(WHEEL_NAME); \
	  fi; \
	  echo "== torch $$v: AOTInductor in Python and C++"; \
	  $(call aoti_cpp_build,.venv-$$v/bin/python,build/matrix/$$v/rngx_aoti); \
	  RNGX_AOTI_CPP=build/matrix/$$v/rngx_aoti .venv-$$v/bin/python -m pytest -q -p no:cacheprovider tests/test_aoti.py; \
	done

clean:
	rm -rf build dist tests/c/bin $(SO) *.egg-info
