/* nvtx_abi_check.c: proves nvtx_abi.h says what NVTX's own headers say.
 *
 * Compiled with cupti_abi_check.c (an object linked into nothing, in every
 * build that has the CUDA toolkit); it does not compile when a module or
 * call id, an attribute enum value, the export tables' layout or a
 * handler's type differs from nvtx3's. */
#ifndef TBE_HAVE_CUPTI_HEADERS
#define TBE_HAVE_CUPTI_HEADERS 1 /* cupti_abi.h: NVIDIA's declarations */
#endif
#include <stddef.h>

#include <nvtx3/nvToolsExt.h>

#include "collect/nvtx_abi.h"

#define SAME(ours, theirs) _Static_assert((long long)(ours) == (long long)(theirs), #ours);

SAME(TBE__NVTX_ETID_CALLBACKS, NVTX_ETID_CALLBACKS)
SAME(TBE__NVTX_ETID_VERSIONINFO, NVTX_ETID_VERSIONINFO)
SAME(TBE__NVTX_MODULE_CORE, NVTX_CB_MODULE_CORE)
SAME(TBE__NVTX_MODULE_CORE2, NVTX_CB_MODULE_CORE2)
SAME(TBE__NVTX_CORE_MarkEx, NVTX_CBID_CORE_MarkEx)
SAME(TBE__NVTX_CORE_MarkA, NVTX_CBID_CORE_MarkA)
SAME(TBE__NVTX_CORE_MarkW, NVTX_CBID_CORE_MarkW)
SAME(TBE__NVTX_CORE_RangeStartEx, NVTX_CBID_CORE_RangeStartEx)
SAME(TBE__NVTX_CORE_RangeStartA, NVTX_CBID_CORE_RangeStartA)
SAME(TBE__NVTX_CORE_RangeStartW, NVTX_CBID_CORE_RangeStartW)
SAME(TBE__NVTX_CORE_RangeEnd, NVTX_CBID_CORE_RangeEnd)
SAME(TBE__NVTX_CORE_RangePushEx, NVTX_CBID_CORE_RangePushEx)
SAME(TBE__NVTX_CORE_RangePushA, NVTX_CBID_CORE_RangePushA)
SAME(TBE__NVTX_CORE_RangePushW, NVTX_CBID_CORE_RangePushW)
SAME(TBE__NVTX_CORE_RangePop, NVTX_CBID_CORE_RangePop)
SAME(TBE__NVTX_CORE_NameOsThreadA, NVTX_CBID_CORE_NameOsThreadA)
SAME(TBE__NVTX_CORE_NameOsThreadW, NVTX_CBID_CORE_NameOsThreadW)
SAME(TBE__NVTX_CORE_SIZE, NVTX_CBID_CORE_SIZE)
SAME(TBE__NVTX_CORE2_DomainMarkEx, NVTX_CBID_CORE2_DomainMarkEx)
SAME(TBE__NVTX_CORE2_DomainRangeStartEx, NVTX_CBID_CORE2_DomainRangeStartEx)
SAME(TBE__NVTX_CORE2_DomainRangeEnd, NVTX_CBID_CORE2_DomainRangeEnd)
SAME(TBE__NVTX_CORE2_DomainRangePushEx, NVTX_CBID_CORE2_DomainRangePushEx)
SAME(TBE__NVTX_CORE2_DomainRangePop, NVTX_CBID_CORE2_DomainRangePop)
SAME(TBE__NVTX_CORE2_DomainRegisterStringA, NVTX_CBID_CORE2_DomainRegisterStringA)
SAME(TBE__NVTX_CORE2_DomainRegisterStringW, NVTX_CBID_CORE2_DomainRegisterStringW)
SAME(TBE__NVTX_CORE2_DomainCreateA, NVTX_CBID_CORE2_DomainCreateA)
SAME(TBE__NVTX_CORE2_DomainCreateW, NVTX_CBID_CORE2_DomainCreateW)
SAME(TBE__NVTX_CORE2_DomainDestroy, NVTX_CBID_CORE2_DomainDestroy)
SAME(TBE__NVTX_CORE2_SIZE, NVTX_CBID_CORE2_SIZE)
SAME(TBE__NVTX_COLOR_ARGB, NVTX_COLOR_ARGB)
SAME(TBE__NVTX_MSG_ASCII, NVTX_MESSAGE_TYPE_ASCII)
SAME(TBE__NVTX_MSG_UNICODE, NVTX_MESSAGE_TYPE_UNICODE)
SAME(TBE__NVTX_MSG_REGISTERED, NVTX_MESSAGE_TYPE_REGISTERED)
SAME(TBE__NVTX_PAYLOAD_U64, NVTX_PAYLOAD_TYPE_UNSIGNED_INT64)
SAME(TBE__NVTX_PAYLOAD_I64, NVTX_PAYLOAD_TYPE_INT64)
SAME(TBE__NVTX_PAYLOAD_DOUBLE, NVTX_PAYLOAD_TYPE_DOUBLE)
SAME(TBE__NVTX_PAYLOAD_U32, NVTX_PAYLOAD_TYPE_UNSIGNED_INT32)
SAME(TBE__NVTX_PAYLOAD_I32, NVTX_PAYLOAD_TYPE_INT32)
SAME(TBE__NVTX_PAYLOAD_FLOAT, NVTX_PAYLOAD_TYPE_FLOAT)
SAME(TBE__NVTX_ATTR_SIZE, NVTX_EVENT_ATTRIB_STRUCT_SIZE)

/* The export tables, field by field. */
#define AT(ours, theirs, f_ours, f_theirs)                                         \
  _Static_assert(offsetof(ours, f_ours) == offsetof(theirs, f_theirs), #ours "." #f_ours); \
  _Static_assert(sizeof(((ours *)0)->f_ours) == sizeof(((theirs *)0)->f_theirs), #ours "." #f_ours);
AT(tbe__nvtx_callbacks, NvtxExportTableCallbacks, struct_size, struct_size)
AT(tbe__nvtx_callbacks, NvtxExportTableCallbacks, get_module_table, GetModuleFunctionTable)
_Static_assert(sizeof(tbe__nvtx_callbacks) == sizeof(NvtxExportTableCallbacks), "callbacks size");
AT(tbe__nvtx_version_info, NvtxExportTableVersionInfo, struct_size, struct_size)
AT(tbe__nvtx_version_info, NvtxExportTableVersionInfo, version, version)
AT(tbe__nvtx_version_info, NvtxExportTableVersionInfo, set_injection_version, SetInjectionNvtxVersion)
_Static_assert(sizeof(tbe__nvtx_version_info) == sizeof(NvtxExportTableVersionInfo), "version size");
_Static_assert(sizeof(tbe__nvtx_table) == sizeof(NvtxFunctionTable), "function table");
_Static_assert(sizeof(tbe__nvtx_string_handle) == sizeof(nvtxStringHandle_t), "string handle");
_Static_assert(_Generic((NvtxGetExportTableFunc_t)0, tbe__nvtx_get_export_table: 1, default: 0),
               "export table getter");

/* Each handler's type is NVTX's for its slot. */
#define TYPE(ours, theirs) _Static_assert(_Generic((ours)0, theirs: 1, default: 0), #ours);
TYPE(tbe__nvtx_mark_ex_fn, nvtxMarkEx_impl_fntype)
TYPE(tbe__nvtx_mark_a_fn, nvtxMarkA_impl_fntype)
TYPE(tbe__nvtx_mark_w_fn, nvtxMarkW_impl_fntype)
TYPE(tbe__nvtx_start_ex_fn, nvtxRangeStartEx_impl_fntype)
TYPE(tbe__nvtx_start_a_fn, nvtxRangeStartA_impl_fntype)
TYPE(tbe__nvtx_start_w_fn, nvtxRangeStartW_impl_fntype)
TYPE(tbe__nvtx_end_fn, nvtxRangeEnd_impl_fntype)
TYPE(tbe__nvtx_push_ex_fn, nvtxRangePushEx_impl_fntype)
TYPE(tbe__nvtx_push_a_fn, nvtxRangePushA_impl_fntype)
TYPE(tbe__nvtx_push_w_fn, nvtxRangePushW_impl_fntype)
TYPE(tbe__nvtx_pop_fn, nvtxRangePop_impl_fntype)
TYPE(tbe__nvtx_name_thread_a_fn, nvtxNameOsThreadA_impl_fntype)
TYPE(tbe__nvtx_name_thread_w_fn, nvtxNameOsThreadW_impl_fntype)
TYPE(tbe__nvtx_dmark_fn, nvtxDomainMarkEx_impl_fntype)
TYPE(tbe__nvtx_dstart_fn, nvtxDomainRangeStartEx_impl_fntype)
TYPE(tbe__nvtx_dend_fn, nvtxDomainRangeEnd_impl_fntype)
TYPE(tbe__nvtx_dpush_fn, nvtxDomainRangePushEx_impl_fntype)
TYPE(tbe__nvtx_dpop_fn, nvtxDomainRangePop_impl_fntype)
TYPE(tbe__nvtx_dcreate_a_fn, nvtxDomainCreateA_impl_fntype)
TYPE(tbe__nvtx_dcreate_w_fn, nvtxDomainCreateW_impl_fntype)
TYPE(tbe__nvtx_ddestroy_fn, nvtxDomainDestroy_impl_fntype)
/* The string registrations return a handle of NVTX's pointer type, ours
 * void *: the same size and passing, checked above. */
