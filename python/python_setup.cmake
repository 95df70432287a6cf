# Decides whether the Python package (python/) is built; included by the top CMakeLists.txt
# before the layers, because a built package makes every layer's objects position-independent
# (they are linked into the extension module, a shared object).
#   STRAGGLESIM_PYTHON=AUTO (default): built when Python 3's headers and pybind11 are found,
#     except in a sanitizer build (an ASan module cannot be loaded into an uninstrumented
#     interpreter); ON: required; OFF: never.
# The interpreter is Debian's /usr/bin/python3 unless -DPython3_EXECUTABLE=... names another
# (the python3 first on PATH may be a pyenv shim without python3-torch or numpy).
set(STRAGGLESIM_PYTHON "AUTO" CACHE STRING "Python package (pybind11): AUTO, ON or OFF")
set_property(CACHE STRAGGLESIM_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(STRAGGLESIM_PYTHON_ENABLED OFF)
set(_ssim_py_why "")
if(STRAGGLESIM_PYTHON STREQUAL "AUTO" AND "${CMAKE_CXX_FLAGS}" MATCHES "-fsanitize")
  set(_ssim_py_why "a sanitizer build (-fsanitize in CMAKE_CXX_FLAGS)")
elseif(NOT STRAGGLESIM_PYTHON STREQUAL "OFF")
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_FOUND)
    find_package(pybind11 2.6 CONFIG QUIET)  # with Python3 found, pybind11 uses its targets
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(STRAGGLESIM_PYTHON_ENABLED ON)
  elseif(NOT Python3_FOUND)
    set(_ssim_py_why "no Python 3 with headers (apt-get install python3-dev)")
  else()
    set(_ssim_py_why "no pybind11 (apt-get install pybind11-dev python3-pybind11)")
  endif()
endif()
if(STRAGGLESIM_PYTHON_ENABLED)
  message(STATUS "stragglesim: Python package: built for ${Python3_EXECUTABLE} (${Python3_VERSION}), pybind11 ${pybind11_VERSION}")
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  # -fPIC lets every exported function be interposed, which stops GCC inlining them within a
  # translation unit; nothing interposes ours, so keep -fPIE's code generation.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
elseif(STRAGGLESIM_PYTHON STREQUAL "ON")
  message(FATAL_ERROR "STRAGGLESIM_PYTHON=ON but the Python package cannot be built: ${_ssim_py_why}")
elseif(NOT STRAGGLESIM_PYTHON STREQUAL "OFF")
  message(STATUS "stragglesim: Python package: not built: ${_ssim_py_why}")
endif()
