# Duet — top-level entry points. Everything builds with CMake into build/.
#
#   make run        build, then the main job: the benchmark sweep on the default backend
#   make test       build, then every test that can run here (unit, mp)
#   make install    build, then install under PREFIX (default /usr/local)
#   make test-gpu   the gpu tests (on a machine with a GPU)
#   make asan       build and test with AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      Duet against Open MPI's OpenSHMEM, side by side (bench/vs_oshmem.sh)
#   make examples   build the examples (examples/); make run-examples runs each once
#                   (make run-examples-gpu: their GPU variants, on a GPU machine)

BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
CTEST_ARGS ?=
NP         ?= 2

PREFIX     ?= /usr/local

.PHONY: all deps configure build install run test test-gpu asan bench examples run-examples run-examples-gpu clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# headers, libraries, tools, pkg-config files and the CMake package under PREFIX
# (cmake/duet_install.cmake lists what goes where; the prefix may be moved afterwards)
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The main job: the allreduce sweep (8 B .. 64 MiB) with every algorithm on NP ranks, the
# alpha-beta fit per algorithm, the crossovers, and a plot (build/perf-allreduce.png).
run: build
	$(BUILD)/bin/duet-info | head -8
	tools/run-main.sh $(BUILD) $(NP)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE gpu $(CTEST_ARGS)

test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu $(CTEST_ARGS)

asan:
	@$(MAKE) --no-print-directory test BUILD=build-asan CMAKE_ARGS="-DDUET_SANITIZE=ON -DDUET_WERROR=ON"

bench: build
	bench/vs_oshmem.sh

examples: configure
	cmake --build $(BUILD) -j $(JOBS) --target all_examples

run-examples: examples
	$(BUILD)/bin/duetrun -n $(NP) $(BUILD)/bin/hello
	$(BUILD)/bin/duetrun -n $(NP) $(BUILD)/bin/stencil
	$(BUILD)/bin/duetrun -n $(NP) $(BUILD)/bin/oneshot
	$(BUILD)/bin/duetrun -n $(NP) $(BUILD)/bin/devput
	$(BUILD)/bin/duetrun -n $(NP) $(BUILD)/bin/moe -t 128
	BUILD=$(BUILD) examples/crossover/crossover.sh -n $(NP)
	$(BUILD)/bin/duetrun -n 4 --ft $(BUILD)/bin/ft_survive

# the GPU variants (on a GPU machine; several ranks on one GPU under MPS)
run-examples-gpu: examples
	BUILD=$(BUILD) scripts/with-mps.sh examples/run-gpu.sh $(BUILD)/plots

clean:
	rm -rf $(BUILD) build-asan
