# Run at every build (the graphc_build_info target): writes the header that
# names the commit graphc is built from, "+modified" when tracked files differ
# from it, "unknown" outside a git checkout. configure_file rewrites the header
# only when its text changes, so an unchanged commit recompiles nothing.
#   cmake -DGIT=... -DSOURCE_DIR=... -DIN=... -DOUT=... -P build_info.cmake
set(GRAPHC_GIT_COMMIT "unknown")
if(GIT)
  execute_process(COMMAND ${GIT} rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(rc EQUAL 0 AND out)
    set(GRAPHC_GIT_COMMIT ${out})
    execute_process(COMMAND ${GIT} diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR}
                    RESULT_VARIABLE dirty ERROR_QUIET)
    if(dirty EQUAL 1)
      set(GRAPHC_GIT_COMMIT "${GRAPHC_GIT_COMMIT}+modified")
    endif()
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)
