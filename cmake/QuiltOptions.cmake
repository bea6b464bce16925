# Build settings shared by every quilt target: ccache, warnings as errors on our code,
# sanitizers on request.

find_program(QUILT_CCACHE ccache)
if(QUILT_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${QUILT_CCACHE})
endif()

if(QUILT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
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
