# The two set-up commands of the README:
#   make demo   installs what is missing, builds, runs the default simulation
#   make test   installs what is missing, builds, runs every test
BUILD ?= build
JOBS  ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps configure build demo test bench sanitize fuzz format clean

deps:
	@./scripts/install_deps.sh

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/memwall run examples/gpt2-1gpu-a100.yaml

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	./$(BUILD)/bench/bench_simulation
	./$(BUILD)/bench/bench_sweep
	./$(BUILD)/bench/bench_optimize

# The mutation fuzzer of the command line (tests/fuzz/fuzz_cli.py) on the AddressSanitizer
# and UndefinedBehaviorSanitizer build: N cases from SEED (a new one each time unless
# given); findings land in fuzz-findings/. Debian's python3 has h5py for the forged files.
N    ?= 5000
SEED ?= $(shell date +%s)
FUZZ_PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
fuzz:
	$(MAKE) build BUILD=build-asan CMAKE_FLAGS="-DMEMWALL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"
	$(FUZZ_PYTHON) tests/fuzz/fuzz_cli.py --binary build-asan/memwall --cases $(N) --seed $(SEED) --timeout 180 \
		--keep fuzz-findings

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DMEMWALL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

# Lays out every C++ file by .clang-format (clang-format from Debian's clang-format).
format:
	git ls-files '*.cpp' '*.hpp' '*.cu' | xargs clang-format -i

clean:
	rm -rf build build-asan
