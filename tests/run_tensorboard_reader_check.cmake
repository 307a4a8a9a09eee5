# Runs WRITER into a fresh OUTPUT_DIR, then SCRIPT with TensorBoard's Python over what it wrote
# (SCRIPT OUTPUT_DIR ARGS...), so an independent reader checks our files. Called by CTest as:
#   cmake -D WRITER=... -D PYTHON=... -D SCRIPT=... -D OUTPUT_DIR=... ["-DARGS=a b ..."]
#     -P run_tensorboard_reader_check.cmake
if(NOT EXISTS "${PYTHON}")
  message(FATAL_ERROR "TensorBoard's Python environment ${PYTHON} is missing: run `make tensorboard` "
    "(or bash cmake/install_venv.sh <build dir>/tb-venv tensorboard tensorboard) to create it.")
endif()

file(REMOVE_RECURSE "${OUTPUT_DIR}")
execute_process(COMMAND "${WRITER}" "${OUTPUT_DIR}" RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${WRITER} ${OUTPUT_DIR} failed: ${status}")
endif()

separate_arguments(script_args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${PYTHON}" "${SCRIPT}" "${OUTPUT_DIR}" ${script_args} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  get_filename_component(script_name "${SCRIPT}" NAME)
  message(FATAL_ERROR "${script_name} did not read what ${WRITER} wrote as expected (exit status ${status})")
endif()
