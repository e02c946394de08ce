/* tbexport/version.h: the library version.
 *
 * CMake reads the three numbers below to version the package, so this
 * file is the one place the version lives.
 *
 * The rule, honest about 0.x: while TBE_VERSION_MAJOR is 0, each minor
 * version may change the API and the ABI of both tiers (tbexport.h), so
 * the shared library's soname is libtbexport.so.0.MINOR and the CMake
 * package only satisfies a request for the same 0.MINOR; a patch version
 * changes neither.  From 1.0 on: the stable tier keeps its API and ABI
 * for a whole major version (soname libtbexport.so.MAJOR), and the
 * experimental tier may still change at any minor version.
 *
 * 0.2 broke the ABI of 0.1 (soname libtbexport.so.0.2): the option
 * structs begin with a size field (common.h), so that from here on they
 * grow without breaking binaries, and the shared library exports only
 * the stable tier. */
#ifndef TBEXPORT_VERSION_H
#define TBEXPORT_VERSION_H

#define TBE_VERSION_MAJOR 0
#define TBE_VERSION_MINOR 2
#define TBE_VERSION_PATCH 0

#define TBE_VERSION_NUMBER \
  (TBE_VERSION_MAJOR * 10000 + TBE_VERSION_MINOR * 100 + TBE_VERSION_PATCH)

#define TBE__STR2(x) #x
#define TBE__STR(x) TBE__STR2(x)
#define TBE_VERSION_STRING \
  TBE__STR(TBE_VERSION_MAJOR) "." TBE__STR(TBE_VERSION_MINOR) "." TBE__STR(TBE_VERSION_PATCH)

#endif
