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

# quilt_target(NAME): our warnings, and the repository root as the include root.
function(quilt_target name)
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wswitch -Werror)
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
endfunction()
