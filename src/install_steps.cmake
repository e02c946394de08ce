# install_steps.cmake: what `cmake --install` does beyond copying files,
# run by install(CODE) of the top CMakeLists.txt with TBE_INSTALL_STEP:
#   pc        writes and installs tbexport.pc (TBE_PC_IN, TBE_PC_OUT,
#             TBE_PC_LIBDIR, TBE_PC_INCLUDEDIR and PROJECT_VERSION set)
#             and, from tbexport-static.pc.in beside TBE_PC_IN,
#             tbexport-static.pc: the static library, both tiers (the
#             experimental one is not in the shared library);
#   ldconfig  refreshes ld.so's cache when root installs in place (no
#             DESTDIR) into one of the folders it searches (TBE_PC_LIBDIR
#             set): else a program linked to the library cannot start
#             until someone runs ldconfig.  Not for a package: its
#             trigger does it.
#
# Invariants: the paths in the file are the final ones of this install:
# CMAKE_INSTALL_PREFIX here is the prefix installed to (also under
# `cmake --install --prefix P` and CPack with CPACK_SET_DESTDIR), and
# DESTDIR only stages the file.  A libdir given absolute is kept as it is.
# Libs carries -Wl,-rpath,LIBDIR unless LIBDIR is one of the folders the
# dynamic linker searches without being told (/lib, /usr/lib, their
# lib64 and multiarch forms): so `cc app.c $(pkg-config --libs tbexport)`
# makes a program that starts without LD_LIBRARY_PATH or ldconfig.
set(_prefix "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "(.)/+$" "\\1" _prefix "${_prefix}")
foreach(v LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${TBE_PC_${v}}")
    set(TBE_PC_${v}_FULL "${TBE_PC_${v}}")
  elseif(_prefix STREQUAL "/")
    set(TBE_PC_${v}_FULL "/${TBE_PC_${v}}")
  else()
    set(TBE_PC_${v}_FULL "${_prefix}/${TBE_PC_${v}}")
  endif()
endforeach()
set(TBE_PC_PREFIX "${_prefix}")

if(TBE_INSTALL_STEP STREQUAL "ldconfig")
  if(NOT "$ENV{DESTDIR}" STREQUAL "")
    return()
  endif()
  execute_process(COMMAND id -u OUTPUT_VARIABLE _uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  find_program(_ldconfig ldconfig PATHS /sbin /usr/sbin)
  if(NOT _uid STREQUAL "0" OR NOT _ldconfig)
    return()
  endif()
  set(_dirs /lib /usr/lib /lib64 /usr/lib64)
  file(GLOB _confs /etc/ld.so.conf /etc/ld.so.conf.d/*.conf)
  foreach(c ${_confs})
    file(STRINGS "${c}" _lines REGEX "^/")
    list(APPEND _dirs ${_lines})
  endforeach()
  string(REGEX REPLACE "/+$" "" _libdir "${TBE_PC_LIBDIR_FULL}")
  list(FIND _dirs "${_libdir}" _known)
  if(NOT _known EQUAL -1 OR _libdir MATCHES "^/(usr/)?lib/[a-z0-9_]+-linux-[a-z0-9_]+$")
    message(STATUS "Running: ldconfig (${_libdir} is one of ld.so's folders)")
    execute_process(COMMAND "${_ldconfig}")
  endif()
  return()
endif()

set(TBE_PC_RPATH "")
if(NOT TBE_PC_LIBDIR_FULL MATCHES "^/(usr/)?lib(64|32|/[a-z0-9_]+-linux-[a-z0-9_]+)?/*$")
  set(TBE_PC_RPATH "-Wl,-rpath,\${libdir} ")
endif()
get_filename_component(_pc_in_dir "${TBE_PC_IN}" DIRECTORY)
get_filename_component(_pc_out_dir "${TBE_PC_OUT}" DIRECTORY)
configure_file("${TBE_PC_IN}" "${TBE_PC_OUT}" @ONLY)
configure_file("${_pc_in_dir}/tbexport-static.pc.in" "${_pc_out_dir}/tbexport-static.pc" @ONLY)
file(INSTALL DESTINATION "${TBE_PC_LIBDIR_FULL}/pkgconfig" TYPE FILE
  FILES "${TBE_PC_OUT}" "${_pc_out_dir}/tbexport-static.pc")
