# Each Catch2 test case becomes a ctest test.
include(Catch)
catch_discover_tests(graphc_tests WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# ... and only if its name has no ';' (CMake would split it into a list: no test runs).
add_test(NAME test_case_names_run_under_ctest
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/check_test_names.sh ${PROJECT_SOURCE_DIR})

add_test(NAME docs_operators_current
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/check_docs_current.sh ${PROJECT_SOURCE_DIR} $<TARGET_FILE:graphc>)

# docs/inspect-json.md is the contract; this checks the binary keeps it.
add_test(NAME inspect_json_schema
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/check_inspect_json.py $<TARGET_FILE:graphc> ${PROJECT_SOURCE_DIR})

# scripts/compare_models.py, bench.py and gpu_models_session.sh on stand-ins for graphc
# and PyTorch, and through the real graphc on the stand-in libcuda. Needs numpy, onnx and
# onnxruntime: the .venv of scripts/setup.sh (configure with -DGRAPHC_TEST_PYTHON=... elsewhere).
if(EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python)
  set(GRAPHC_TEST_PYTHON_DEFAULT ${PROJECT_SOURCE_DIR}/.venv/bin/python)
else()
  set(GRAPHC_TEST_PYTHON_DEFAULT python3)
endif()
set(GRAPHC_TEST_PYTHON ${GRAPHC_TEST_PYTHON_DEFAULT} CACHE STRING "Python with numpy, onnx, onnxruntime for script tests")
add_test(NAME bench_scripts
         COMMAND ${GRAPHC_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_bench_tools.py
                 --graphc $<TARGET_FILE:graphc> --fake-cuda-dir ${CMAKE_CURRENT_BINARY_DIR}/fake_cuda)

# scripts/gpu_sanitize.sh's verdict on stand-ins for compute-sanitizer and the test binary:
# third-party (cuBLASLt nvjet_*) racecheck reports are counted apart, graphc's fail the run.
add_test(NAME gpu_sanitize_summary
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_gpu_sanitize_summary.sh ${PROJECT_SOURCE_DIR})

# The standalone cuBLASLt repro (run on the GPU by scripts/gpu_sanitize.sh) keeps compiling.
find_program(GRAPHC_NVCC nvcc HINTS /usr/local/cuda/bin)
if(GRAPHC_NVCC)
  add_test(NAME cublaslt_repro_compiles
           COMMAND ${GRAPHC_NVCC} -O2 -arch=sm_90 -o ${CMAKE_CURRENT_BINARY_DIR}/lt_race
                   ${CMAKE_CURRENT_SOURCE_DIR}/gpu/repro/cublaslt_gelubias_racecheck.cpp -lcublasLt)
endif()

# The installed runtime: files, link dependencies, exported symbols, and
# examples/ built against it (CMake package and pkg-config) run on the stand-in driver.
add_test(NAME install_runtime_and_examples
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install_test.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/fake_cuda)

# README.md, docs/ and models/README.md refer to nothing a reader of the repository cannot
# follow (issue numbers, paths outside it), and their relative links resolve.
add_test(NAME docs_references
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/check_docs_references.py ${PROJECT_SOURCE_DIR})

# RNN/GRU/LSTM and If/Loop/Scan on random inputs against onnxruntime, through
# `graphc conformance --backend reference` (tests/scripts/test_recurrent_control_flow.py).
add_test(NAME recurrent_control_flow_vs_onnxruntime
         COMMAND ${GRAPHC_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/test_recurrent_control_flow.py
                 --graphc $<TARGET_FILE:graphc>)
