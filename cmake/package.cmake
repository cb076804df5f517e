# The installed tree (`cmake --install`) and its packages (`cpack` in the build folder): a .tar.gz
# that runs wherever it is unpacked, and a .deb that installs it in /opt/traindoc with
# /usr/bin/traindoc as an alternative. traindoc finds its agent and hook relative to its own
# executable, so the tree is the same in every place: bin/, lib/, python/, share/doc/traindoc/.
install(FILES README.md DESTINATION share/doc/traindoc)
install(DIRECTORY docs/ DESTINATION share/doc/traindoc/docs)

set(CPACK_PACKAGE_NAME traindoc)
set(CPACK_PACKAGE_VENDOR traindoc)
set(CPACK_PACKAGE_CONTACT "traindoc maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Tells why a training job died, ran out of memory, leaked or hung, and how to fix it")
set(CPACK_PACKAGE_FILE_NAME traindoc-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR})
set(CPACK_GENERATOR TGZ DEB)
# The build's debug info is most of its size (the executable: 91 MB with it, 7 without); crash
# stacks of the job are read from the job's own libraries, not from traindoc's.
set(CPACK_STRIP_FILES ON)
set(CPACK_THREADS 0)

set(TRAINDOC_DEB_PREFIX /opt/traindoc)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The newest glibc symbol the binaries need is 2.29's (cmake/glibc_compat; test_install.py checks
# it). dpkg-shlibdeps would say libc6 (>= 2.34), since Debian marks sysconf so for programs that
# ask it for _SC_SIGSTKSZ, which the agent does and handles failing (thread_hooks.cpp).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.31), libgcc-s1 (>= 4.2)")
foreach(_script postinst prerm)
  configure_file(cmake/deb/${_script}.in ${PROJECT_BINARY_DIR}/deb/${_script} @ONLY
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
                     WORLD_EXECUTE)
  list(APPEND CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/${_script})
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The archive's tree starts at its top folder; only the .deb has a prefix of its own.
configure_file(cmake/cpack_options.cmake.in ${PROJECT_BINARY_DIR}/cpack_options.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/cpack_options.cmake)
include(CPack)
