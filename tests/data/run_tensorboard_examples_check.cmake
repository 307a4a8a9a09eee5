# Runs write_test_examples into a fresh OUTPUT_DIR, then tensorboard_reads_examples.py over it
# with TensorBoard's Python. Called by CTest as:
#   cmake -D WRITER=... -D PYTHON=... -D SCRIPT=... -D OUTPUT_DIR=... -P run_tensorboard_examples_check.cmake
if(NOT EXISTS "${PYTHON}")
  message(FATAL_ERROR "TensorBoard's Python environment ${PYTHON} is missing: run `make tensorboard` "
    "(or bash cmake/install_tensorboard.sh <build dir>/tb-venv) to create it.")
endif()

file(REMOVE_RECURSE "${OUTPUT_DIR}")
execute_process(COMMAND "${WRITER}" "${OUTPUT_DIR}" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${WRITER} ${OUTPUT_DIR} failed: ${status}")
endif()

execute_process(COMMAND "${PYTHON}" "${SCRIPT}" "${OUTPUT_DIR}" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "TensorBoard and protobuf could not read our Example files as expected (exit status ${status})")
endif()
