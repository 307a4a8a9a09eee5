# The two commands of the README: `make demo` and `make test`. Each installs what is
# missing, configures (Ninja, ccache when present), builds and runs.
BUILD_DIR := build
SANITIZE_DIR := build-sanitize
CHECKS_DIR := build-checks
DEMO_DIR  ?= $(BUILD_DIR)/demo-model
JOBS      ?= $(shell nproc)

.PHONY: demo test sanitize fuzz installed-example release-checks limit-checks quick-benchmarks optimized-tests bench \
  deps configure build \
  programs tensorboard tensorflow serving-clients sanitize-build checks-first-build checks-build gpu-pack clean

# Builds only est-train and the libraries it links, after installing only the packages that
# takes, so the first step comes soonest.
demo: DEPS_SET = demo
demo: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target est-train
	rm -rf $(DEMO_DIR)
	$(BUILD_DIR)/bin/est-train --model fashion_mnist_cnn --model-dir $(DEMO_DIR) \
	  --max-steps 3000 --batch-size 64 --save-checkpoints-steps 1000

# Every test runs once, in the sanitizer build (clang, ASan + UBSan, the kernels built), and
# the fuzzers run; the optimized gcc build without the kernels (EST_WITH_KERNELS=OFF, the
# `checks` preset, in build-checks/) compiles the programs, runs the test cases whose outcome
# depends on the kernels being built ([kernels_build]) and the checks below, runs the
# benchmarks once at a tiny size, and is installed into a temporary prefix, against which the
# standalone quick start project (examples/quickstart/) is built and run. The optimized tree
# builds from the start at the idle scheduling class, on the CPU time the sanitizer build and
# suite leave unused (cmake/make_test.sh says the order).
# `make build && cd build && ctest` runs the same tests on the gcc build. It ends with the list
# of the tests that did not run here, and why (cmake/skip_report.py).
test: deps
	@bash cmake/make_test.sh "$(MAKE)" $(CHECKS_DIR) $(SANITIZE_DIR)
	@python3 cmake/skip_report.py $(SANITIZE_DIR)/results-sanitize.xml $(SANITIZE_DIR)/results-fuzz.xml \
	  $(CHECKS_DIR)/results-release.xml

# In the optimized build without the kernels: the test cases whose assertions depend on the
# kernels being built; est-train under an address-space limit (ulimit -v) too small to load
# LibTorch, or to train, which AddressSanitizer's shadow memory cannot run under, and under a
# descriptor limit (ulimit -n) too small for its sockets, where the sanitizers' own checks fail
# for want of descriptors; glibc's malloc thresholds, which AddressSanitizer replaces; est-serve
# inside a 3 GiB memory cgroup under the largest requests its flags admit (skipped, saying why,
# where no memory cgroup can be made); and the benchmarks at a tiny size (the sanitizer tree
# does not build them).
release-checks: limit-checks quick-benchmarks optimized-tests

# CHECKS_BUILT=1: the checks tree is built, or being built, by the make that runs this one
# (cmake/make_test.sh); these then start no build of it.
limit-checks: $(if $(CHECKS_BUILT),,checks-first-build)
	cd $(CHECKS_DIR) && bin/apps_tests "[kernels_build]" -w NoTests && bin/optimizer_step_tests -w NoTests
	@bash tests/apps/address_space_limit_test.sh $(CHECKS_DIR)/bin/est-train
	@bash tests/apps/descriptor_limit_test.sh $(CHECKS_DIR)/bin/est-train
	$(CHECKS_DIR)/bin/common_tests "[malloc]"
	@bash tests/apps/serving_memory_limit_test.sh $(CHECKS_DIR)/bin/est-serve $(CHECKS_DIR)/bin/est-train \
	  $(CHECKS_DIR)/bin/serving_load_client || [ $$? -eq 77 ]

quick-benchmarks: $(if $(CHECKS_BUILT),,checks-build)
	cd $(CHECKS_DIR) && ctest --output-on-failure --no-tests=error -L bench -R _quick$$ --output-junit results-release.xml

# The tests that run a program of apps/bench/, which the sanitizer tree leaves out (label
# `optimized`): in the checks tree. tensorflow_canned_auc runs TensorFlow from build/tf-venv.
optimized-tests: tensorflow $(if $(CHECKS_BUILT),,checks-build)
	cd $(CHECKS_DIR) && ctest --output-on-failure --no-tests=error -L optimized --output-junit results-optimized.xml

# The user's view: examples/quickstart/ against an installed copy (public headers only).
installed-example: $(if $(CHECKS_BUILT),,checks-build)
	@bash tests/install/example_against_install.sh $(CHECKS_DIR)

# The whole test suite again, built with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer (the `sanitize` preset, in build-sanitize/), each libFuzzer
# harness's corpus replayed included.
sanitize: sanitize-build tensorboard serving-clients
	cd $(SANITIZE_DIR) && ctest --output-on-failure --no-tests=error -j $(JOBS) -LE fuzzing --output-junit results-sanitize.xml

# Each libFuzzer harness mutates its corpus (tests/fuzz/corpus/) for EST_FUZZ_SECONDS (25).
fuzz: sanitize-build
	cd $(SANITIZE_DIR) && ctest --output-on-failure --no-tests=error -j $(JOBS) -L fuzzing --output-junit results-fuzz.xml

# The benchmarks of the README's Performance section, against their peers (PyTorch DDP
# from Debian's python3-torch, a hand-written LibTorch loop, raw Gloo, raw file I/O, tf.data,
# tf.estimator, TorchServe). The input and estimator groups install TensorFlow into
# $(BUILD_DIR)/tf-venv themselves (`make tensorflow`'s script), the serve group TorchServe into
# $(BUILD_DIR)/torchserve-venv, and skip those figures with a line saying why when they cannot.
# The bench package set adds Java, which TorchServe's frontend runs on.
bench: DEPS_SET = bench
bench: build
	/usr/bin/python3 apps/bench/run_benchmarks.py --build $(BUILD_DIR)

DEPS_SET ?= all
# DEPS_DONE=1: the packages were installed by the make that runs this one (cmake/make_test.sh).
deps:
	@[ -n "$(DEPS_DONE)" ] || bash cmake/install_deps.sh $(DEPS_SET)

configure: deps
	@cmake --preset default >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

programs: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target programs

sanitize-build: deps
	@cmake --preset sanitize >/dev/null
	@cmake --build $(SANITIZE_DIR) -j $(JOBS)

# make test's optimized tree, without the kernels: first what limit-checks runs, then the
# programs (as `programs`: the benchmarks too) and the rest.
CHECKS_FIRST := est-train est-serve serving_load_client apps_tests optimizer_step_tests common_tests
checks-first-build: deps
	@cmake --preset checks >/dev/null
	@cmake --build $(CHECKS_DIR) -j $(JOBS) --target $(CHECKS_FIRST)

checks-build: checks-first-build
	@cmake --build $(CHECKS_DIR) -j $(JOBS) --target programs

# A virtual environment with TensorBoard, whose own event reader checks our event files.
tensorboard: deps
	@bash cmake/install_venv.sh $(BUILD_DIR)/tb-venv tensorboard tensorboard

# A virtual environment with TensorFlow (CPU), for the tf.data peer of `make bench`'s input group.
TENSORFLOW_SPEC := 'tensorflow-cpu==2.15.*'
tensorflow: deps
	@bash cmake/install_venv.sh $(BUILD_DIR)/tf-venv tensorflow $(TENSORFLOW_SPEC)

# The Python clients of est-serve's protocols, which the test serving_real_clients runs against
# our server: Triton's tritonclient[grpc,http] and grpcio-health-checking (gRPC's health stub) in
# triton-venv, and tensorflow-serving-api added to tf-venv without its dependencies (it names
# tensorflow; tf-venv has tensorflow-cpu, and requests for TF Serving's REST API). triton-venv
# also holds onnxruntime and onnx, which run exports' model.onnx (serving_onnx_runtime,
# serving_example_end_to_end). The tests fail where one is not installed (make test installs them).
serving-clients: tensorflow
	@bash cmake/install_venv.sh $(BUILD_DIR)/triton-venv onnxruntime 'tritonclient[grpc,http]==2.73.*' \
	  grpcio-health-checking 'onnxruntime==1.*' 'onnx==1.*'
	@bash cmake/add_to_venv.sh $(BUILD_DIR)/tf-venv tensorflow_serving 'tensorflow-serving-api==2.15.*'

# The Debian packages a GPU machine without network lacks, packed into .gpu-deps/ for
# cmake/gpu_check.sh's run there (docs/cuda.md, "Checking on a GPU machine").
gpu-pack:
	@bash cmake/gpu_check.sh pack .gpu-deps

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(CHECKS_DIR)
