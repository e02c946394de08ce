/* nvtx_abi.h: what an NVTX injection library needs of NVTX's ABI, declared
 * by us (nvtx3's headers are in the CUDA toolkit, which a build need not
 * have; nvtx_abi_check.c compares every value and type below with them
 * wherever the toolkit is).
 *
 * How NVTX finds its tool: a program's first NVTX call loads the library
 * named by NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2
 * with a function that returns export tables by id.  The callbacks table
 * gives, per module (core, core2 for domains, ...), an array of pointers
 * to the program's function-pointer slots, indexed by call id: the tool
 * writes its handler into each slot it wants; the slots it leaves become
 * no-ops.  Every library that carries its own copy of NVTX's header-only
 * code (libtorch, cuDNN, a user's program) has its own slots and calls
 * InitializeInjectionNvtx2 once for itself. */
#ifndef TBE_COLLECT_NVTX_ABI_H
#define TBE_COLLECT_NVTX_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "collect/cupti_abi.h" /* nvtxEventAttributes_v2, nvtxDomainHandle_t, nvtxRangeId_t */

/* Export table ids (NvtxExportTableID). */
#define TBE__NVTX_ETID_CALLBACKS 1
#define TBE__NVTX_ETID_VERSIONINFO 3
/* Callback modules (NvtxCallbackModule). */
#define TBE__NVTX_MODULE_CORE 1
#define TBE__NVTX_MODULE_CORE2 5
/* Core call ids (NvtxCallbackIdCore). */
#define TBE__NVTX_CORE_MarkEx 1
#define TBE__NVTX_CORE_MarkA 2
#define TBE__NVTX_CORE_MarkW 3
#define TBE__NVTX_CORE_RangeStartEx 4
#define TBE__NVTX_CORE_RangeStartA 5
#define TBE__NVTX_CORE_RangeStartW 6
#define TBE__NVTX_CORE_RangeEnd 7
#define TBE__NVTX_CORE_RangePushEx 8
#define TBE__NVTX_CORE_RangePushA 9
#define TBE__NVTX_CORE_RangePushW 10
#define TBE__NVTX_CORE_RangePop 11
#define TBE__NVTX_CORE_NameOsThreadA 14
#define TBE__NVTX_CORE_NameOsThreadW 15
#define TBE__NVTX_CORE_SIZE 16
/* Core2 (domain) call ids (NvtxCallbackIdCore2). */
#define TBE__NVTX_CORE2_DomainMarkEx 1
#define TBE__NVTX_CORE2_DomainRangeStartEx 2
#define TBE__NVTX_CORE2_DomainRangeEnd 3
#define TBE__NVTX_CORE2_DomainRangePushEx 4
#define TBE__NVTX_CORE2_DomainRangePop 5
#define TBE__NVTX_CORE2_DomainRegisterStringA 10
#define TBE__NVTX_CORE2_DomainRegisterStringW 11
#define TBE__NVTX_CORE2_DomainCreateA 12
#define TBE__NVTX_CORE2_DomainCreateW 13
#define TBE__NVTX_CORE2_DomainDestroy 14
#define TBE__NVTX_CORE2_SIZE 16
/* nvtxEventAttributes_t's enums. */
#define TBE__NVTX_COLOR_ARGB 1
#define TBE__NVTX_MSG_ASCII 1
#define TBE__NVTX_MSG_UNICODE 2
#define TBE__NVTX_MSG_REGISTERED 3
#define TBE__NVTX_PAYLOAD_U64 1
#define TBE__NVTX_PAYLOAD_I64 2
#define TBE__NVTX_PAYLOAD_DOUBLE 3
#define TBE__NVTX_PAYLOAD_U32 4
#define TBE__NVTX_PAYLOAD_I32 5
#define TBE__NVTX_PAYLOAD_FLOAT 6
/* The attributes' size at version 2 (NVTX_EVENT_ATTRIB_STRUCT_SIZE). */
#define TBE__NVTX_ATTR_SIZE ((uint16_t)sizeof(nvtxEventAttributes_v2))

/* A slot: a generic function pointer, cast to the call's type. */
typedef void (*tbe__nvtx_fn)(void);
typedef tbe__nvtx_fn **tbe__nvtx_table; /* table[cbid] points at a slot */

typedef struct tbe__nvtx_callbacks {
  size_t struct_size;
  int (*get_module_table)(int module, tbe__nvtx_table *out_table, unsigned int *out_size);
} tbe__nvtx_callbacks;

typedef struct tbe__nvtx_version_info {
  size_t struct_size;
  uint32_t version;
  uint32_t reserved0;
  void (*set_injection_version)(uint32_t version);
} tbe__nvtx_version_info;

typedef const void *(*tbe__nvtx_get_export_table)(uint32_t id);

/* A registered string's handle (nvtxStringHandle_t: a pointer). */
typedef void *tbe__nvtx_string_handle;

/* The handlers' types, by call. */
typedef void (*tbe__nvtx_mark_ex_fn)(const nvtxEventAttributes_v2 *);
typedef void (*tbe__nvtx_mark_a_fn)(const char *);
typedef void (*tbe__nvtx_mark_w_fn)(const wchar_t *);
typedef nvtxRangeId_t (*tbe__nvtx_start_ex_fn)(const nvtxEventAttributes_v2 *);
typedef nvtxRangeId_t (*tbe__nvtx_start_a_fn)(const char *);
typedef nvtxRangeId_t (*tbe__nvtx_start_w_fn)(const wchar_t *);
typedef void (*tbe__nvtx_end_fn)(nvtxRangeId_t);
typedef int (*tbe__nvtx_push_ex_fn)(const nvtxEventAttributes_v2 *);
typedef int (*tbe__nvtx_push_a_fn)(const char *);
typedef int (*tbe__nvtx_push_w_fn)(const wchar_t *);
typedef int (*tbe__nvtx_pop_fn)(void);
typedef void (*tbe__nvtx_name_thread_a_fn)(uint32_t, const char *);
typedef void (*tbe__nvtx_name_thread_w_fn)(uint32_t, const wchar_t *);
typedef void (*tbe__nvtx_dmark_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_v2 *);
typedef nvtxRangeId_t (*tbe__nvtx_dstart_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_v2 *);
typedef void (*tbe__nvtx_dend_fn)(nvtxDomainHandle_t, nvtxRangeId_t);
typedef int (*tbe__nvtx_dpush_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_v2 *);
typedef int (*tbe__nvtx_dpop_fn)(nvtxDomainHandle_t);
typedef tbe__nvtx_string_handle (*tbe__nvtx_dreg_a_fn)(nvtxDomainHandle_t, const char *);
typedef tbe__nvtx_string_handle (*tbe__nvtx_dreg_w_fn)(nvtxDomainHandle_t, const wchar_t *);
typedef nvtxDomainHandle_t (*tbe__nvtx_dcreate_a_fn)(const char *);
typedef nvtxDomainHandle_t (*tbe__nvtx_dcreate_w_fn)(const wchar_t *);
typedef void (*tbe__nvtx_ddestroy_fn)(nvtxDomainHandle_t);

#endif
