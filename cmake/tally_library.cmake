# tally_library(NAME DEPS dep...): one library per folder under src/, built from every
# .cpp in it (and in sub-folders listed in SUBDIRS). Public include root is src/, so headers
# are included as "base/status.h", "io/gguf.h", ...
#
# With TALLY_UNITY_BUILD (on in every preset: the README's first build uses release, and CI
# compiles the libraries three times, for release, asan and fuzz) each library compiles as a
# few unity files of up to 16 sources: a cold build parses the common headers (fmt, spdlog,
# json, <regex>) once per batch instead of once per file, which is most of its time. The cost:
# names at file scope (anonymous namespaces, statics) must be unique within a library, or the
# batch will not compile; configure with -DTALLY_UNITY_BUILD=OFF to find which file a clash
# comes from. (Test binaries are not batched: their files reuse helper names freely.)
option(TALLY_UNITY_BUILD "Compile each tally library and the tally app as unity batches" OFF)

function(tally_unity_build target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${TALLY_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 16)
  if(TALLY_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC flags a class of a .cpp that uses that file's anonymous namespace once the .cpp is
    # included into a batch rather than compiled as the main file: a false positive there.
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()
function(tally_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;SUBDIRS;SOURCES" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(sub ${ARG_SUBDIRS})
    file(GLOB sub_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${sub}/*.cpp)
    list(APPEND srcs ${sub_srcs})
  endforeach()
  list(APPEND srcs ${ARG_SOURCES})
  if(srcs)
    add_library(tally_${name} STATIC ${srcs})
    target_include_directories(tally_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(tally_${name} PUBLIC ${ARG_DEPS})
    tally_unity_build(tally_${name})
  else()  # headers only (so far)
    add_library(tally_${name} INTERFACE)
    target_include_directories(tally_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(tally_${name} INTERFACE ${ARG_DEPS})
  endif()
  add_library(tally::${name} ALIAS tally_${name})
endfunction()
