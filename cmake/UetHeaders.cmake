# Layering as a build rule (DESIGN.md, "Folders and the direction of dependencies"): no library
# puts the repository root on its include path. Each one owns some of the repository's headers,
# and its include folder is a tree in the build directory, build/include/<target>/, holding
# symbolic links named after the repository paths it owns (build/include/uet_cc/cc -> cc/,
# build/include/uet_api/transport/api.h -> transport/api.h). Headers keep their full
# repository paths ("cc/nscc.h"), and a target sees exactly the headers of the targets it links,
# directly or through them: an upward include is "No such file or directory" (tests/layering).
#
# To add a library: after add_library, name what it owns, a folder or a glob of files, and
# link the targets whose headers it includes (never ${PROJECT_SOURCE_DIR}):
#   uet_headers(uet_foo PUBLIC foo)                   # all of foo/
#   uet_headers(uet_bar PUBLIC dpdk-io/bar_*.h)       # some files of a shared folder
#   target_link_libraries(uet_foo PUBLIC uet_wire)
# A header belongs to one library; executables name their own headers PRIVATE. Globs are
# re-read at build time, so a new header in an owned glob needs no edit here.

# The trees are rebuilt at every configure, so a header that changed owner leaves no stale link.
# (REMOVE_RECURSE removes the links themselves, never what they point to.)
set(UET_HEADER_TREES "${PROJECT_BINARY_DIR}/include")
file(REMOVE_RECURSE "${UET_HEADER_TREES}")

# uet_headers(<target> <PUBLIC|PRIVATE|INTERFACE> <folder or glob>...): links each match into
# build/include/<target>/ and puts that tree on the target's include path with the scope given.
function(uet_headers target scope)
  set(tree "${UET_HEADER_TREES}/${target}")
  foreach(pattern IN LISTS ARGN)
    file(GLOB matches LIST_DIRECTORIES true CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}"
         "${PROJECT_SOURCE_DIR}/${pattern}")
    if(NOT matches)
      message(FATAL_ERROR "uet_headers(${target}): nothing in the repository matches ${pattern}")
    endif()
    foreach(path IN LISTS matches)
      get_filename_component(parent "${tree}/${path}" DIRECTORY)
      file(MAKE_DIRECTORY "${parent}")
      file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${path}" "${tree}/${path}" SYMBOLIC)
    endforeach()
  endforeach()
  target_include_directories(${target} ${scope} "${tree}")
endfunction()
