/* error.c: messages and names for the codes of tbexport/error.h.
 *
 * Everything returned here is a static string, so callers never free and
 * never race: negative errno values that are not in the map go through
 * strerrordesc_np/strerrorname_np (glibc, static tables). */
#include <string.h>

#include "tbexport/error.h"
#include "tbexport/version.h"

const char *tbe_strerror(int err) {
  switch (err) {
    case 0: return "success";
#define TBE__ERR_MSG(name, value, msg) case (value): return msg;
    TBE_ERRNO_MAP(TBE__ERR_MSG)
#undef TBE__ERR_MSG
    default: break;
  }
  if (err < 0 && err > TBE__ERRNO_LIMIT) {
    const char *s = strerrordesc_np(-err);
    if (s) return s;
  }
  return "unknown error";
}

const char *tbe_err_name(int err) {
  switch (err) {
    case 0: return "TBE_OK";
#define TBE__ERR_NAME(name, value, msg) case (value): return "TBE_" #name;
    TBE_ERRNO_MAP(TBE__ERR_NAME)
#undef TBE__ERR_NAME
    default: break;
  }
  if (err < 0 && err > TBE__ERRNO_LIMIT) {
    const char *s = strerrorname_np(-err);
    if (s) return s;
  }
  return "TBE_EUNKNOWN";
}

unsigned tbe_version_number(void) { return TBE_VERSION_NUMBER; }
const char *tbe_version_string(void) { return TBE_VERSION_STRING; }
