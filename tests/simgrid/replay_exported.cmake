# Exports schedules with `stragglesim schedule --format json` and replays each file on SimGrid
# (simgrid_replay --schedule), so the check covers the JSON form other tools read, too.
cmake_minimum_required(VERSION 3.22)
foreach(spec "stragglar;8;ring" "rhd;16;fat_tree" "ring;7;switch")
  list(GET spec 0 alg)
  list(GET spec 1 n)
  list(GET spec 2 topo)
  set(file ${WORK}/exported_${alg}_${n}.json)
  execute_process(COMMAND ${STRAGGLESIM} schedule ${alg} --ranks ${n} --format json -o ${file}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "stragglesim schedule ${alg} --ranks ${n} failed (${rc})")
  endif()
  execute_process(COMMAND ${REPLAY} --schedule ${file} --topology ${topo} --size 100000007
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "replay of ${file} on ${topo} failed (${rc})")
  endif()
endforeach()
