# Run by CTest (spec_docs_detect_stale): uet-spec-doc --check must notice a hand edit inside a
# generated block and name it; --update must restore the block.
#   cmake -DTOOL=<uet-spec-doc> -DDOC=<spec/uet.md> -DWORK=<scratch dir>
#         -P specdoc_detect_stale_test.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(copy "${WORK}/uet.md")
file(READ "${DOC}" text)

# Change the width of the PDS prologue's type field from 2 to 3 bytes in the generated table.
string(FIND "${text}" "<!-- fields:pds_prologue -->" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} has no <!-- fields:pds_prologue --> block")
endif()
string(SUBSTRING "${text}" 0 ${at} head)
string(SUBSTRING "${text}" ${at} -1 tail)
string(REPLACE "| `type` | 0 | 2 |" "| `type` | 0 | 3 |" edited "${tail}")
if(edited STREQUAL tail)
  message(FATAL_ERROR "pds_prologue block has no row '| `type` | 0 | 2 |' to edit")
endif()
file(WRITE "${copy}" "${head}${edited}")

execute_process(COMMAND "${TOOL}" --check "${copy}" RESULT_VARIABLE rc ERROR_VARIABLE err
                OUTPUT_QUIET)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "--check on an edited block exited ${rc}, expected 1:\n${err}")
endif()
if(NOT err MATCHES "<!-- fields:pds_prologue -->: stale")
  message(FATAL_ERROR "--check did not name the stale block:\n${err}")
endif()

execute_process(COMMAND "${TOOL}" --update "${copy}" RESULT_VARIABLE rc ERROR_VARIABLE err
                OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--update exited ${rc}:\n${err}")
endif()
file(READ "${copy}" repaired)
if(NOT repaired STREQUAL text)
  message(FATAL_ERROR "--update did not restore ${copy} to ${DOC}")
endif()
