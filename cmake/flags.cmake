# Compiler flags per build type (STYLE.md "Build").
set(VT_WARNINGS
    -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wpointer-arith -Wimplicit-fallthrough -Wformat=2 -Wundef)
if(VT_WERROR)
    list(APPEND VT_WARNINGS -Werror)
endif()
add_compile_options(${VT_WARNINGS} -D_GNU_SOURCE -fno-strict-aliasing -msse4.2 -mpclmul)

set(CMAKE_C_FLAGS_RELEASE "-O2 -g -DNDEBUG")
set(CMAKE_C_FLAGS_DEBUG "-O0 -g3 -DVT_DEBUG_BUILD=1")
set(CMAKE_C_FLAGS_ASAN
    "-O1 -g -DVT_DEBUG_BUILD=1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer")
set(CMAKE_EXE_LINKER_FLAGS_ASAN "-fsanitize=address,undefined")
set(CMAKE_SHARED_LINKER_FLAGS_ASAN "-fsanitize=address,undefined")
set(CMAKE_C_FLAGS_TSAN
    "-O1 -g -DVT_DEBUG_BUILD=1 -fsanitize=thread -fno-sanitize-recover=all -fno-omit-frame-pointer")
set(CMAKE_EXE_LINKER_FLAGS_TSAN "-fsanitize=thread")
set(CMAKE_SHARED_LINKER_FLAGS_TSAN "-fsanitize=thread")

# Sanitizer builds use the sanitizer's allocator; every other build links jemalloc.
if(CMAKE_BUILD_TYPE STREQUAL "Asan" OR CMAKE_BUILD_TYPE STREQUAL "Tsan")
    set(VT_USE_JEMALLOC OFF)
else()
    set(VT_USE_JEMALLOC ON)
endif()
