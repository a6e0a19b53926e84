# Each Catch2 test case becomes a ctest test.
include(Catch)
catch_discover_tests(graphc_tests WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

add_test(NAME docs_operators_current
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/check_docs_current.sh ${PROJECT_SOURCE_DIR} $<TARGET_FILE:graphc>)

# docs/inspect-json.md is the contract; this checks the binary keeps it.
add_test(NAME inspect_json_schema
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/check_inspect_json.py $<TARGET_FILE:graphc> ${PROJECT_SOURCE_DIR})
