# End-to-end CLI cases. meshplan_cli_case(NAME EXIT_CODE "regex" ... -- args...)
# A regex starting with ! must not match.
set(MESHPLAN_EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.sh)
function(meshplan_cli_case name)
  add_test(NAME cli.${name} COMMAND ${MESHPLAN_EXPECT} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
set(MP $<TARGET_FILE:meshplan>)
