# The bad-input corpus: one ctest per line of tests/bad_inputs/cases.txt, run through
# tests/cli/expect.sh (exit status + message fragment). Columns, separated by " | ":
#   entrance | file (relative to tests/bad_inputs; for cli, the case name) | exit status | ERE fragment | extra arguments
# Entrances and the command each runs:
#   model   meshplan plan --model FILE --system dgx-h100 --gpus 8 --seq-len 4096 --global-batch 64
#   gpu     the same with --model llama3.1-8b --system hwdb/systems/NAME.yaml, whose gpu: NAME is FILE
#   system  the same with --model llama3.1-8b --system FILE
#   recipe  meshplan_read_recipe FILE 32 (ParseAutoModelRecipe, the reader of check / explain)
#   measurements  meshplan calibrate FILE --system dgx-h200 -o BUILD/bad_input_calibrated.yaml --force
#   cli     meshplan EXTRA ARGUMENTS (@D@ = this directory)
# Lines starting with # are comments. No ";" and no unbalanced "[" or "]" (they break CMake lists): write . instead.
add_executable(meshplan_read_recipe ${CMAKE_CURRENT_LIST_DIR}/read_recipe.cpp)
target_link_libraries(meshplan_read_recipe PRIVATE meshplan_core)

set(BI ${CMAKE_CURRENT_LIST_DIR})
set(BI_SETUP --gpus 8 --seq-len 4096 --global-batch 64)
file(STRINGS ${BI}/cases.txt bi_lines)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${BI}/cases.txt)
set(bi_count 0)
foreach(line IN LISTS bi_lines)
  if(line MATCHES "^[ \t]*(#|$)")
    continue()
  endif()
  if(NOT line MATCHES "^([a-z]+) +\\| +([^ |]+) +\\| +([0-9]+) +\\| +([^|]*[^ |]) *(\\| +(.*))?$")
    message(FATAL_ERROR "tests/bad_inputs/cases.txt: malformed line: ${line}")
  endif()
  set(entrance ${CMAKE_MATCH_1})
  set(file ${CMAKE_MATCH_2})
  set(rc ${CMAKE_MATCH_3})
  set(fragment "${CMAKE_MATCH_4}")
  string(REPLACE "@D@" "${BI}" extra "${CMAKE_MATCH_6}")
  separate_arguments(extra UNIX_COMMAND "${extra}")
  if(entrance STREQUAL "model")
    set(cmd $<TARGET_FILE:meshplan> plan --model ${BI}/${file} --system dgx-h100 ${BI_SETUP} ${extra})
  elseif(entrance STREQUAL "gpu")
    get_filename_component(stem ${file} NAME_WE)
    set(cmd $<TARGET_FILE:meshplan> plan --model llama3.1-8b --system ${BI}/hwdb/systems/${stem}.yaml ${BI_SETUP} ${extra})
  elseif(entrance STREQUAL "system")
    set(cmd $<TARGET_FILE:meshplan> plan --model llama3.1-8b --system ${BI}/${file} ${BI_SETUP} ${extra})
  elseif(entrance STREQUAL "recipe")
    set(cmd $<TARGET_FILE:meshplan_read_recipe> ${BI}/${file} 32 ${extra})
  elseif(entrance STREQUAL "measurements")
    set(cmd $<TARGET_FILE:meshplan> calibrate ${BI}/${file} --system dgx-h200
        -o ${CMAKE_CURRENT_BINARY_DIR}/bad_input_calibrated.yaml --force ${extra})
  elseif(entrance STREQUAL "cli")
    set(cmd $<TARGET_FILE:meshplan> ${extra})
  else()
    message(FATAL_ERROR "tests/bad_inputs/cases.txt: unknown entrance '${entrance}' in: ${line}")
  endif()
  if(entrance STREQUAL "cli")
    set(name cli.${file})
  else()
    string(REGEX REPLACE "^(model|recipe|measurements|hwdb/gpus|hwdb/systems)/" "" name ${file})
    string(REGEX REPLACE "\\.[a-z0-9]+$" "" name ${name})
    set(name ${entrance}.${name})
  endif()
  add_test(NAME bad_input.${name} COMMAND ${MESHPLAN_EXPECT} ${rc} "${fragment}" "!internal error|Sanitizer|runtime error" -- ${cmd})
  set_tests_properties(bad_input.${name} PROPERTIES TIMEOUT 60)
  math(EXPR bi_count "${bi_count} + 1")
endforeach()
add_test(NAME bad_input.corpus_size COMMAND test ${bi_count} -ge 60)

# --out killed at any moment, missing / read-only directory, existing file (out_file.sh).
add_test(NAME bad_input.out_file_whole_or_absent COMMAND ${BI}/out_file.sh $<TARGET_FILE:meshplan>)
set_tests_properties(bad_input.out_file_whole_or_absent PROPERTIES TIMEOUT 120)
