/* cupti_load.c: fills the CUPTI function table (collector.h) from libcupti.
 *
 * The library is found at run time so that libtbexport itself never has a
 * link-time dependency on CUDA: a libcupti already loaded in the process
 * wins (the injection library links it; PyTorch may have loaded its own),
 * then $TBEXPORT_CUPTI_LIB, the usual sonames, and last the location CMake
 * found at build time (TBE_CUPTI_LIBRARY, when defined).  Functions a CUPTI
 * version may lack are left NULL and the collector does without them. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collector.h"
#include "tbexport/error.h"

static void *open_cupti(char *why, size_t whylen) {
  static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  void *h;
  for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++)
    if ((h = dlopen(sonames[i], RTLD_NOW | RTLD_NOLOAD))) return h;
  const char *env = getenv("TBEXPORT_CUPTI_LIB");
  if (env && *env) {
    if ((h = dlopen(env, RTLD_NOW | RTLD_GLOBAL))) return h;
    snprintf(why, whylen, "cannot load TBEXPORT_CUPTI_LIB=%s: %s", env, dlerror());
    return NULL;
  }
  for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++)
    if ((h = dlopen(sonames[i], RTLD_NOW | RTLD_GLOBAL))) return h;
#ifdef TBE_CUPTI_LIBRARY
  if ((h = dlopen(TBE_CUPTI_LIBRARY, RTLD_NOW | RTLD_GLOBAL))) return h;
#endif
  snprintf(why, whylen,
           "libcupti not found (set TBEXPORT_CUPTI_LIB to its path, or add its folder to "
           "LD_LIBRARY_PATH)");
  return NULL;
}

int tbe__cupti_load(tbe__cupti_api *api, char *why, size_t whylen) {
  memset(api, 0, sizeof *api);
  if (whylen) why[0] = '\0';
  void *h = open_cupti(why, whylen);
  if (!h) return TBE_ENOCUPTI;
#define SYM(field, name)                          \
  do {                                            \
    void *p_ = dlsym(h, name);                    \
    memcpy(&api->field, &p_, sizeof p_);          \
  } while (0)
  SYM(activity_enable, "cuptiActivityEnable");
  SYM(activity_disable, "cuptiActivityDisable");
  SYM(activity_enable_and_dump, "cuptiActivityEnableAndDump");
  SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
  SYM(get_next_record, "cuptiActivityGetNextRecord");
  SYM(get_num_dropped, "cuptiActivityGetNumDroppedRecords");
  SYM(flush_all, "cuptiActivityFlushAll");
  SYM(set_attribute, "cuptiActivitySetAttribute");
  SYM(enable_runtime_api, "cuptiActivityEnableRuntimeApi");
  SYM(enable_driver_api, "cuptiActivityEnableDriverApi");
  SYM(get_callback_name, "cuptiGetCallbackName");
  SYM(get_version, "cuptiGetVersion");
  SYM(get_result_string, "cuptiGetResultString");
  SYM(set_thread_id_type, "cuptiSetThreadIdType");
  SYM(get_timestamp, "cuptiGetTimestamp");
  SYM(nvtx_init, "InitializeInjectionNvtx2");
  /* Hardware metrics (hwmetrics.h); a CUPTI older than 12.6 lacks PM
   * sampling and the range profiler: those stay NULL. */
  SYM(m.subscribe, "cuptiSubscribe");
  SYM(m.unsubscribe, "cuptiUnsubscribe");
  SYM(m.enable_callback, "cuptiEnableCallback");
  SYM(m.get_device_id, "cuptiGetDeviceId");
  SYM(m.profiler_init, "cuptiProfilerInitialize");
  SYM(m.chip_name, "cuptiDeviceGetChipName");
  SYM(m.pm_availability, "cuptiPmSamplingGetCounterAvailability");
  SYM(m.pm_enable, "cuptiPmSamplingEnable");
  SYM(m.pm_disable, "cuptiPmSamplingDisable");
  SYM(m.pm_set_config, "cuptiPmSamplingSetConfig");
  SYM(m.pm_start, "cuptiPmSamplingStart");
  SYM(m.pm_stop, "cuptiPmSamplingStop");
  SYM(m.pm_decode, "cuptiPmSamplingDecodeData");
  SYM(m.pm_data_size, "cuptiPmSamplingGetCounterDataSize");
  SYM(m.pm_data_init, "cuptiPmSamplingCounterDataImageInitialize");
  SYM(m.pm_data_info, "cuptiPmSamplingGetCounterDataInfo");
  SYM(m.pm_sample_info, "cuptiPmSamplingCounterDataGetSampleInfo");
  SYM(m.rp_availability, "cuptiProfilerGetCounterAvailability");
  SYM(m.rp_enable, "cuptiRangeProfilerEnable");
  SYM(m.rp_disable, "cuptiRangeProfilerDisable");
  SYM(m.rp_set_config, "cuptiRangeProfilerSetConfig");
  SYM(m.rp_start, "cuptiRangeProfilerStart");
  SYM(m.rp_stop, "cuptiRangeProfilerStop");
  SYM(m.rp_push, "cuptiRangeProfilerPushRange");
  SYM(m.rp_pop, "cuptiRangeProfilerPopRange");
  SYM(m.rp_decode, "cuptiRangeProfilerDecodeData");
  SYM(m.rp_data_size, "cuptiRangeProfilerGetCounterDataSize");
  SYM(m.rp_data_init, "cuptiRangeProfilerCounterDataImageInitialize");
  SYM(m.rp_data_info, "cuptiRangeProfilerGetCounterDataInfo");
  SYM(m.host.initialize, "cuptiProfilerHostInitialize");
  SYM(m.host.deinitialize, "cuptiProfilerHostDeinitialize");
  SYM(m.host.metric_properties, "cuptiProfilerHostGetMetricProperties");
  SYM(m.host.add_metrics, "cuptiProfilerHostConfigAddMetrics");
  SYM(m.host.config_image_size, "cuptiProfilerHostGetConfigImageSize");
  SYM(m.host.config_image, "cuptiProfilerHostGetConfigImage");
  SYM(m.host.num_passes, "cuptiProfilerHostGetNumOfPasses");
  SYM(m.host.evaluate, "cuptiProfilerHostEvaluateToGpuValues");
#undef SYM
  const char *missing = !api->activity_enable       ? "cuptiActivityEnable"
                        : !api->activity_disable    ? "cuptiActivityDisable"
                        : !api->register_callbacks  ? "cuptiActivityRegisterCallbacks"
                        : !api->get_next_record     ? "cuptiActivityGetNextRecord"
                        : !api->flush_all           ? "cuptiActivityFlushAll"
                        : !api->get_callback_name   ? "cuptiGetCallbackName"
                        : NULL;
  if (missing) {
    snprintf(why, whylen, "libcupti lacks %s", missing);
    memset(api, 0, sizeof *api);
    return TBE_ENOCUPTI;
  }
  return 0;
}
