# Helpers: executables get the linkage check; unit tests are discovered by glob.

# vt_executable(name src...): a vtop binary in build/bin that links jemalloc
# (except under sanitizers) and is checked never to load the system OpenSSL.
function(vt_executable name)
    add_executable(${name} ${ARGN})
    if(VT_USE_JEMALLOC)
        target_link_libraries(${name} PRIVATE ${JEMALLOC_LIB})
        target_compile_definitions(${name} PRIVATE VT_HAVE_JEMALLOC=1)
    endif()
    add_custom_command(TARGET ${name} POST_BUILD
        COMMAND ${CMAKE_SOURCE_DIR}/scripts/check-linkage.sh $<TARGET_FILE:${name}>
        VERBATIM)
endfunction()

# vt_unit_tests(module libs...): one cmocka executable per
# tests/unit/<module>/test_*.c, registered with CTest and labelled by module.
function(vt_unit_tests module)
    file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/test_*.c)
    foreach(src ${srcs})
        get_filename_component(base ${src} NAME_WE)
        set(t ${module}_${base})
        vt_executable(${t} ${src})
        target_link_libraries(${t} PRIVATE ${ARGN} vt_testfixtures ${CMOCKA_LIB})
        target_include_directories(${t} PRIVATE ${CMOCKA_INC} ${CMAKE_SOURCE_DIR}/tests/fixtures)
        target_compile_definitions(${t} PRIVATE
            VT_SOURCE_DIR="${CMAKE_SOURCE_DIR}" VT_BINARY_DIR="${CMAKE_BINARY_DIR}")
        add_test(NAME ${t} COMMAND ${t})
        set_tests_properties(${t} PROPERTIES LABELS "${module};unit" TIMEOUT 300
            ENVIRONMENT "VT_SOURCE_DIR=${CMAKE_SOURCE_DIR};VT_BINARY_DIR=${CMAKE_BINARY_DIR}")
    endforeach()
endfunction()

# vt_header_check(target dir includes...): every public header vt_*.h in `dir`
# compiles on its own (STYLE.md); builds an object library `target`.
function(vt_header_check target dir)
    file(GLOB hdrs CONFIGURE_DEPENDS ${dir}/vt_*.h)
    set(srcs)
    foreach(h ${hdrs})
        get_filename_component(base ${h} NAME_WE)
        set(out ${CMAKE_CURRENT_BINARY_DIR}/hdrcheck_${base}.c)
        file(GENERATE OUTPUT ${out} CONTENT "#include \"${base}.h\"\n")
        list(APPEND srcs ${out})
    endforeach()
    add_library(${target} OBJECT ${srcs})
    target_include_directories(${target} PRIVATE ${dir} ${ARGN})
endfunction()
