# Each Catch2 test case becomes a ctest test.
include(Catch)
catch_discover_tests(graphc_tests WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
