/* cupti_host.h: the CUPTI entry points of hardware metrics: the profiler
 * host API declared for C, and the function table of everything metrics
 * call (a part of the collector's table, collector.h).
 *
 * CUDA 13's cupti_profiler_host.h includes <string> and so cannot be
 * included from C.  The structs below have the layout that header gives
 * its parameter structs (the same member types in the same order; each
 * call's structSize is the offset of its last member plus its size, as
 * CUPTI_PROFILER_STRUCT_SIZE computes it), and the enum values are
 * CUPTI's.  The functions are reached through the collector's function
 * table (collector.h), filled by dlsym in cupti_load.c, so no prototype
 * of CUPTI's is needed.  The host API runs on the CPU alone: given a chip
 * name ("GH100") it checks metric names, builds configuration images and
 * evaluates counter data, GPU or not. */
#ifndef TBE_COLLECT_CUPTI_HOST_H
#define TBE_COLLECT_CUPTI_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "collect/cupti_abi.h" /* CUPTI's headers, or our declarations of them */

#define TBE__PSIZE(type_, last_) (offsetof(type_, last_) + sizeof(((type_ *)0)->last_))

enum { TBE__PH_RANGE_PROFILER = 0, TBE__PH_PM_SAMPLING = 1 }; /* CUpti_ProfilerType */

typedef struct tbe__ph_object tbe__ph_object; /* CUpti_Profiler_Host_Object */

typedef struct tbe__ph_init {
  size_t structSize;
  void *pPriv;
  int profilerType;
  const char *pChipName;
  const uint8_t *pCounterAvailabilityImage;
  tbe__ph_object *pHostObject;
} tbe__ph_init;

typedef struct tbe__ph_deinit {
  size_t structSize;
  void *pPriv;
  tbe__ph_object *pHostObject;
} tbe__ph_deinit;

typedef struct tbe__ph_props {
  size_t structSize;
  void *pPriv;
  tbe__ph_object *pHostObject;
  const char *pMetricName;
  const char *pDescription;
  const char *pHwUnit;
  const char *pDimUnit;
  int metricType;
} tbe__ph_props;

typedef struct tbe__ph_add {
  size_t structSize;
  void *pPriv;
  tbe__ph_object *pHostObject;
  const char **ppMetricNames;
  size_t numMetrics;
} tbe__ph_add;

typedef struct tbe__ph_image_size {
  size_t structSize;
  void *pPriv;
  tbe__ph_object *pHostObject;
  size_t configImageSize;
} tbe__ph_image_size;

typedef struct tbe__ph_image {
  size_t structSize;
  void *pPriv;
  tbe__ph_object *pHostObject;
  size_t configImageSize;
  uint8_t *pConfigImage;
} tbe__ph_image;

typedef struct tbe__ph_passes {
  size_t structSize;
  void *pPriv;
  size_t configImageSize;
  uint8_t *pConfigImage;
  size_t numOfPasses;
} tbe__ph_passes;

typedef struct tbe__ph_eval {
  size_t structSize;
  void *pPriv;
  tbe__ph_object *pHostObject;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t rangeIndex;
  const char **ppMetricNames;
  size_t numMetrics;
  double *pMetricValues;
} tbe__ph_eval;

typedef struct tbe__cupti_host_api {
  CUptiResult (*initialize)(tbe__ph_init *p);
  CUptiResult (*deinitialize)(tbe__ph_deinit *p);
  CUptiResult (*metric_properties)(tbe__ph_props *p);
  CUptiResult (*add_metrics)(tbe__ph_add *p);
  CUptiResult (*config_image_size)(tbe__ph_image_size *p);
  CUptiResult (*config_image)(tbe__ph_image *p);
  CUptiResult (*num_passes)(tbe__ph_passes *p);
  CUptiResult (*evaluate)(tbe__ph_eval *p);
} tbe__cupti_host_api;

/* The entry points of hardware metrics (PM sampling, the range profiler,
 * the profiler host API, and the callback subscription both use: see
 * hwmetrics.h).  Each may be NULL: a CUPTI without them leaves metrics
 * "unsupported" and the activity trace as it is. */
typedef struct tbe__cupti_metrics_api {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle s);
  CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle s,
                                 CUpti_CallbackDomain d, CUpti_CallbackId cbid);
  CUptiResult (*get_device_id)(CUcontext ctx, uint32_t *device);
  CUptiResult (*profiler_init)(CUpti_Profiler_Initialize_Params *p);
  CUptiResult (*chip_name)(CUpti_Device_GetChipName_Params *p);
  CUptiResult (*pm_availability)(CUpti_PmSampling_GetCounterAvailability_Params *p);
  CUptiResult (*pm_enable)(CUpti_PmSampling_Enable_Params *p);
  CUptiResult (*pm_disable)(CUpti_PmSampling_Disable_Params *p);
  CUptiResult (*pm_set_config)(CUpti_PmSampling_SetConfig_Params *p);
  CUptiResult (*pm_start)(CUpti_PmSampling_Start_Params *p);
  CUptiResult (*pm_stop)(CUpti_PmSampling_Stop_Params *p);
  CUptiResult (*pm_decode)(CUpti_PmSampling_DecodeData_Params *p);
  CUptiResult (*pm_data_size)(CUpti_PmSampling_GetCounterDataSize_Params *p);
  CUptiResult (*pm_data_init)(CUpti_PmSampling_CounterDataImage_Initialize_Params *p);
  CUptiResult (*pm_data_info)(CUpti_PmSampling_GetCounterDataInfo_Params *p);
  CUptiResult (*pm_sample_info)(CUpti_PmSampling_CounterData_GetSampleInfo_Params *p);
  CUptiResult (*rp_availability)(CUpti_Profiler_GetCounterAvailability_Params *p);
  CUptiResult (*rp_enable)(CUpti_RangeProfiler_Enable_Params *p);
  CUptiResult (*rp_disable)(CUpti_RangeProfiler_Disable_Params *p);
  CUptiResult (*rp_set_config)(CUpti_RangeProfiler_SetConfig_Params *p);
  CUptiResult (*rp_start)(CUpti_RangeProfiler_Start_Params *p);
  CUptiResult (*rp_stop)(CUpti_RangeProfiler_Stop_Params *p);
  CUptiResult (*rp_push)(CUpti_RangeProfiler_PushRange_Params *p);
  CUptiResult (*rp_pop)(CUpti_RangeProfiler_PopRange_Params *p);
  CUptiResult (*rp_decode)(CUpti_RangeProfiler_DecodeData_Params *p);
  CUptiResult (*rp_data_size)(CUpti_RangeProfiler_GetCounterDataSize_Params *p);
  CUptiResult (*rp_data_init)(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p);
  CUptiResult (*rp_data_info)(CUpti_RangeProfiler_GetCounterDataInfo_Params *p);
  tbe__cupti_host_api host;
} tbe__cupti_metrics_api;

#endif
