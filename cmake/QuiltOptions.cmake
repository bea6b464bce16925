# Build settings shared by every quilt target: ccache, warnings as errors on our code,
# sanitizers on request (ASan+UBSan, the fuzz build, TSan; at most one of them).

find_program(QUILT_CCACHE ccache)
if(QUILT_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${QUILT_CCACHE})
endif()

if(QUILT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

# The fuzz build (fuzz/README.md): every object carries libFuzzer's coverage hooks, ASan and UBSan;
# the fuzz targets link libFuzzer itself (-fsanitize=fuzzer, fuzz/CMakeLists.txt). Clang only.
if(QUILT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "QUILT_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(QUILT_SANITIZE OR QUILT_TSAN)
    message(FATAL_ERROR "QUILT_FUZZ brings its own sanitizers: leave QUILT_SANITIZE and QUILT_TSAN off")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

# ThreadSanitizer, for the runtime's concurrency tests (tests/CMakeLists.txt,
# runtime_concurrency_tests). GCC and clang both have it.
if(QUILT_TSAN)
  if(QUILT_SANITIZE)
    message(FATAL_ERROR "QUILT_TSAN and QUILT_SANITIZE do not mix: one sanitizer build each")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# Our warnings, as errors. GCC 12 at -O3 reports -Wrestrict inside std::string's operator+
# where no overlap is possible (GCC bug 105329), so that one warning is off for GCC 12.
set(QUILT_WARNINGS -Wall -Wextra -Wswitch -Werror)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND QUILT_WARNINGS -Wno-restrict)
endif()

# quilt_target(NAME): our warnings, and the repository root as the include root.
function(quilt_target name)
  target_compile_options(${name} PRIVATE ${QUILT_WARNINGS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()
