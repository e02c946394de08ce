/* tbexport/version.h: the library version.
 *
 * CMake reads the three numbers below to version the package, so this
 * file is the one place the version lives.  Same major version means the
 * same ABI. */
#ifndef TBEXPORT_VERSION_H
#define TBEXPORT_VERSION_H

#define TBE_VERSION_MAJOR 0
#define TBE_VERSION_MINOR 1
#define TBE_VERSION_PATCH 0

#define TBE_VERSION_NUMBER \
  (TBE_VERSION_MAJOR * 10000 + TBE_VERSION_MINOR * 100 + TBE_VERSION_PATCH)

#define TBE__STR2(x) #x
#define TBE__STR(x) TBE__STR2(x)
#define TBE_VERSION_STRING \
  TBE__STR(TBE_VERSION_MAJOR) "." TBE__STR(TBE_VERSION_MINOR) "." TBE__STR(TBE_VERSION_PATCH)

#endif
