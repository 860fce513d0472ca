# Third-party libraries, all from Debian packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)

function(vt_find_lib var name header)
    find_library(${var}_LIB NAMES ${name} REQUIRED)
    find_path(${var}_INC NAMES ${header} REQUIRED)
    set(${var}_LIB ${${var}_LIB} PARENT_SCOPE)
    set(${var}_INC ${${var}_INC} PARENT_SCOPE)
endfunction()

vt_find_lib(CK ck ck_ring.h)
vt_find_lib(YAML yaml yaml.h)
vt_find_lib(CMOCKA cmocka cmocka.h)
vt_find_lib(JEMALLOC jemalloc jemalloc/jemalloc.h)
vt_find_lib(RAFT raft raft.h)

# BoringSSL from android-libboringssl-dev. It lives outside the default
# search path on purpose; never fall back to the system OpenSSL.
set(VT_BSSL_INC /usr/include/android)
set(VT_BSSL_LIBDIR /usr/lib/x86_64-linux-gnu/android)
if(NOT EXISTS ${VT_BSSL_INC}/openssl/base.h OR NOT EXISTS ${VT_BSSL_LIBDIR}/libssl.so)
    message(FATAL_ERROR "BoringSSL not found under ${VT_BSSL_INC} / ${VT_BSSL_LIBDIR}; "
                        "run scripts/install-deps.sh")
endif()
add_library(vt_bssl_crypto SHARED IMPORTED)
set_target_properties(vt_bssl_crypto PROPERTIES
    IMPORTED_LOCATION ${VT_BSSL_LIBDIR}/libcrypto.so
    INTERFACE_INCLUDE_DIRECTORIES ${VT_BSSL_INC})
add_library(vt_bssl_ssl SHARED IMPORTED)
set_target_properties(vt_bssl_ssl PROPERTIES
    IMPORTED_LOCATION ${VT_BSSL_LIBDIR}/libssl.so
    INTERFACE_INCLUDE_DIRECTORIES ${VT_BSSL_INC}
    INTERFACE_LINK_LIBRARIES vt_bssl_crypto)
# Every binary finds BoringSSL at run time through its rpath.
set(CMAKE_BUILD_RPATH ${VT_BSSL_LIBDIR})
set(CMAKE_INSTALL_RPATH ${VT_BSSL_LIBDIR})
