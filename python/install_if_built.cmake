# Run by `cmake --install` around the Python package's install rules (python/CMakeLists.txt):
# when the module was not built (`scripts/run.sh` builds stragglesim alone), the OPTIONAL rules
# install no file but still create the package's folder, which Python would import as an empty
# namespace package. "before" notes the folders of the destination that do not exist yet;
# "after" removes those of them that are still empty (only what this install created) and says
# that the package was left out. Set by the caller: _ssim_core (the module's path in the build),
# _ssim_py_dest (the package's folder under the prefix), _ssim_py_step (before or after).
if(EXISTS "${_ssim_core}")
  return()
endif()
set(_dest "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${_ssim_py_dest}")
if(_ssim_py_step STREQUAL "before")
  set(_ssim_py_created "")
  set(_d "${_dest}")
  while(NOT EXISTS "${_d}" AND NOT _d STREQUAL "/")
    list(APPEND _ssim_py_created "${_d}")  # deepest first
    get_filename_component(_d "${_d}" DIRECTORY)
  endwhile()
else()
  foreach(_d IN LISTS _ssim_py_created)
    file(GLOB _left "${_d}/*" "${_d}/.*")
    if(IS_DIRECTORY "${_d}" AND NOT _left)
      file(REMOVE_RECURSE "${_d}")
    endif()
  endforeach()
  message(STATUS "stragglesim: the Python package is not built, not installed "
                 "(cmake --build build builds it)")
endif()
