/* chrome_json.c: the Chrome-trace / PyTorch-Kineto JSON importer.
 *
 * A streaming parse: the input (plain or gzip, opened by import.c via
 * input.h) is fed to yajl in chunks and the callbacks build each event from its keys into a small
 * reusable scratch (name, cat, ph, ts, dur, pid, tid, id, bp, s and the
 * args as key/value spans over one byte buffer).  At the event's closing
 * brace the scratch becomes one model event (or a metadata record, a flow
 * end, a pushed B...) and is cleared.  Nothing else grows with the input
 * apart from the model itself and a few small tables (threads with open B
 * events, pending flow ends, M metadata, string pids).
 *
 * Layouts: the object form {"traceEvents": [...], ...} and the bare array
 * form [...], whose closing ']' may be missing (also after a trailing
 * comma), as a killed writer leaves it.  Top-level keys read: traceEvents,
 * deviceProperties, distributedInfo, baseTimeNanoseconds, traceName, and
 * our exporter's tbexportTrace, tbexportCollection, tbexportWarnings and
 * tbexportSteps (see apply_tbe_meta); the others are skipped.  Times are microseconds in decimal text; they are
 * converted to integer nanoseconds from the text itself (never through a
 * double): "1234.567" is exactly 1234567 ns.  With baseTimeNanoseconds
 * the ts values are relative to it, otherwise they are taken as they are
 * (epoch microseconds in older Kineto traces; a relative clock in JAX's).
 *
 * Mapping (Kineto's cat → tbe_event_kind; GPU kinds go on TBE_TRACK_STREAM
 * tracks, device = args.device or the pid's GPU, stream = args.stream or
 * tid; host kinds on TBE_TRACK_THREAD (pid, tid), or TBE_TRACK_OTHER when
 * the pid or tid is negative or a string):
 *   kernel, gpu_memcpy, gpu_memset, gpu_user_annotation, cuda_sync (GPU;
 *   a sync on args.stream, so that Kineto's "stream N (sync)" rows and a
 *   context sync's row fold back onto their stream);
 *   cuda_runtime, cuda_driver, cpu_op, user_annotation, python_function,
 *   overhead, nvtx (ours: ranges, and i events as marks; args domain,
 *   color, category, payload) (host); "[memory]" (and our "[cuda
 *   memory]") instants → TBE_EV_MEMORY (on the stream of the row when
 *   the pid is a GPU's); other i/I/R →
 *   TBE_EV_INSTANT; any other X or B/E pair → TBE_EV_GENERIC with its cat;
 *   C → one TBE_EV_COUNTER per numeric series (event name = series,
 *   track per pid + counter name).  Events of other producers on a pid
 *   whose metadata names it a GPU ("/device:GPU:N", labels "GPU N") go on
 *   stream tracks; XLA's kernel_details / memcpy_details / Memset_details
 *   make them kernels, copies and memsets, and host events with an XLA
 *   correlation_id become driver API calls.
 * Args consumed into typed fields (all others stay generic args, so an
 * export and a re-import give the same model): "External id",
 * "correlation" (all mapped kinds); device, stream, context (GPU kinds);
 * kernel: queued (when 0), registers per thread, shared memory (as
 * static_shared), blocks per SM, warps per SM, grid, block, est. achieved
 * occupancy %; memcpy: bytes, fromDevice/toDevice, memory bandwidth (GB/s)
 * (derived, dropped); memset: bytes, memory bandwidth (GB/s); cuda_sync:
 * cuda_sync_kind, wait_on_cuda_event_id; [memory]: Addr, Bytes, Total
 * Allocated, Total Reserved, Device Id, Device Type.  Nested arg values are
 * kept as TBE_ARG_JSON, re-serialized compactly; true/false/null as JSON
 * too; strings are interned with invalid UTF-8 and NUL replaced by U+FFFD.
 *
 * Flows: ac2g (launch → GPU) arrows are implied by correlation ids; they are
 * counted and checked against the correlation ids of API calls and GPU work
 * (a warning names any that do not match) but not stored.  Other s/f pairs
 * (fwdbwd, ...) are paired by (cat, id) into tbe_flow.  M metadata:
 * process_name → tbe_process.name (not for GPU pids), thread_name → the
 * track's name; process_labels only identify GPU pids; sort indexes are
 * dropped (the model has no place for them).  Unsupported phases (async
 * b/e/n, objects, samples, ...) are counted and named in a warning.
 *
 * Threads: for inputs of a few MB and more (or when forced) the parse is
 * parallel (chrome_json_pipeline.c): a driver thread reads the input and
 * runs a boundary scanner that finds the top-level elements of traceEvents
 * (or of the bare array) exactly (strings, escapes and nesting tracked,
 * 16 bytes at a time with SSE2); everything outside that array goes
 * through the main yajl handle as before, the array's elements are cut
 * into chunks of about 128 KB of whole events and parsed by N workers
 * (N = tbe_import_options.threads, else half the online CPUs, at least 2 and at
 * most 16), each with a
 * yajl handle of its own, into records (raw text, nothing interned).  The
 * calling thread applies all records strictly in file order with the same
 * code the one-thread path uses, so the model is identical to the byte
 * (same events, same string ids; tested).  A chunk that does not parse as
 * a clean run of events (malformed, empty elements, a cut input) is
 * replayed serially through the main handle from its first byte on, so
 * errors, truncations and trailing commas behave exactly as in one thread.
 * A ring of N+4 slots bounds the memory in flight.
 *
 * Hostile input (limits of tbe_import_options, resolved by import.c): the
 * main handle is fed through a token guard (chrome_json_guard.c) that
 * hands yajl whole tokens only (yajl re-lexes a token cut by a read from
 * its first byte: quadratic) and refuses strings, keys and nesting past
 * max_token_bytes / max_depth before yajl reads them; numbers and the size
 * of the event being parsed (max_event_bytes) are checked at every token by
 * the callbacks; max_events counts the events applied.  A worker that
 * meets a limit gives its chunk back and the serial replay refuses it at
 * the exact byte, so the limits behave as in one thread.  Times are
 * checked against the model's range (common/checked.h): ts and dur as
 * parsed, ts + baseTimeNanoseconds and the end of a complete event when
 * applied (the base may come last: finish_import checks those events).
 * A UTF-8 BOM is skipped; an object without traceEvents is no trace; a
 * typed field (ts, dur, ph, pid, ...) holding an object or array is an
 * error naming it, a pid or tid beyond int64 too.  Device ordinals are
 * checked before they are narrowed (importer.h; chrome_json_kineto.c says
 * which fields, and which take -1 for none).  A repeated key keeps its
 * last value and is named in one warning per file (chrome_json_parse.c).
 *
 * Errors: yajl's and our own ("ts is not a number") become one line with
 * the byte offset, line and column through tbe__import_fail and
 * TBE_EPARSE (TBE_ETOOBIG for a limit, naming its flag).  Line and column
 * are computed only on error, by re-reading the input up to the offset
 * (not for standard input), so the parse itself never counts newlines. */
#include "import/chrome_json_int.h"

/* ---- driver ---- */

/* Line and column (1-based, column in bytes) of byte `off`, by re-reading
 * the input: the parse itself never counts newlines. */
static void line_col(const char *path, const tbe_allocator *a, uint64_t off, uint64_t *line,
                     uint64_t *col) {
  *line = 0;
  *col = 0;
  tbe__input in;
  if (tbe__input_open(&in, path, a)) return;
  uint64_t ln = 1, last_nl_end = 0, pos = 0;
  for (;;) {
    const uint8_t *d;
    size_t n;
    if (tbe__input_next(&in, &d, &n) && n == 0) break;
    if (n == 0) break;
    size_t lim = off - pos < n ? (size_t)(off - pos) : n;
    const uint8_t *p = d, *end = d + lim;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
      ln++;
      p++;
      last_nl_end = pos + (uint64_t)(p - d);
    }
    pos += n;
    if (pos >= off) break;
  }
  tbe__input_close(&in);
  *line = ln;
  *col = off - last_nl_end + 1;
}

static void cj_free(cj *c) {
  if (c->h) yajl_free(c->h);
  tbe__buf_deinit(&c->pe.text);
  tbe__buf_deinit(&c->capbuf);
  for (int i = 0; i < K_TBE_N; i++) tbe__buf_deinit(&c->tbe_meta[i]);
  tbe__buf_deinit(&c->tmp);
  tbe__buf_deinit(&c->devname);
  tbe__buf_deinit(&c->distname);
  tbe__buf_deinit(&c->batch);
  tbe__buf_deinit(&c->fill);
  tbe__free(c->a, c->capst);
  tbe__free(c->a, c->icache);
  tbe__free(c->a, c->pe.args);
  tbe__free(c->a, c->gpus);
  tbe__free(c->a, c->metas);
  tbe__free(c->a, c->strpids);
  tbe__map_deinit(&c->gmap);
  tbe__map_deinit(&c->smap);
  tbe__index_deinit(&c->argix);
  for (size_t i = 0; i < c->nstacks; i++) {
    for (size_t k = 0; k < c->stacks[i].cap; k++) tbe__free(c->a, c->stacks[i].v[k].args);
    tbe__free(c->a, c->stacks[i].v);
  }
  tbe__free(c->a, c->stacks);
  tbe__intern_deinit(&c->flow_keys);
  tbe__vec_deinit(&c->flow_q);
  tbe__vec_deinit(&c->flow_nodes);
  tbe__vec_deinit(&c->ac2g_s);
  tbe__vec_deinit(&c->ac2g_f);
  tbe__free(c->a, c->targs);
  tbe__buf_deinit(&c->carry);
  const tbe_allocator *a = c->a;
  tbe__free(a, c);
}

static int import_chrome_json(tbe_trace *t, tbe__input *in, const char *path,
                              const tbe_import_options *o, tbe_import_error *err) {
  uint64_t t_start = mono_ns();
  cj *c = tbe__calloc(in->a, 1, sizeof *c);
  if (!c) return tbe__import_fail(err, TBE_ENOMEM, path, UINT64_MAX, 0, 0, "out of memory");
  c->in = in;
  c->t = t;
  c->path = path;
  c->err = err;
  c->o = o;
  c->a = in->a;
  int rc;
  tbe__buf_init(&c->carry, c->a);
  tbe__map_init(&c->gmap, c->a, TBE__SEED_PROCESS);
  tbe__map_init(&c->smap, c->a, TBE__SEED_PROCESS);
  tbe__index_init(&c->argix, c->a, TBE__SEED_PROCESS);
  tbe__vec_init(&c->ac2g_s, c->a, sizeof(uint64_t));
  tbe__intern_init(&c->flow_keys, c->a, TBE__SEED_PROCESS);
  tbe__vec_init(&c->flow_q, c->a, sizeof(flow_queue));
  tbe__vec_init(&c->flow_nodes, c->a, sizeof(flow_end));
  tbe__vec_init(&c->ac2g_f, c->a, sizeof(uint64_t));
  tbe__buf_init(&c->pe.text, c->a);
  tbe__buf_init(&c->capbuf, c->a);
  for (int i = 0; i < K_TBE_N; i++) tbe__buf_init(&c->tbe_meta[i], c->a);
  tbe__buf_init(&c->tmp, c->a);
  tbe__buf_init(&c->devname, c->a);
  tbe__buf_init(&c->distname, c->a);
  tbe__buf_init(&c->batch, c->a);
  tbe__buf_init(&c->fill, c->a);
  c->icache = tbe__calloc(c->a, CJ_ICACHE, sizeof *c->icache);
  c->h = tbe__cj_yajl_alloc(c);
  c->ev_first = c->ev_mark = t->nevents;
  c->flow_first = c->flow_mark = t->nflows;
  c->source0 = t->source;
  c->prof = o && o->on_profile;
  if (!c->h || c->ynomem || !c->icache) {
    cj_free(c);
    return tbe__import_fail(err, TBE_ENOMEM, path, UINT64_MAX, 0, 0, "out of memory");
  }
  /* Strings are checked (and repaired) when interned: yajl's own UTF-8
   * check would reject whole traces for one bad name. */
  yajl_config(c->h, yajl_dont_validate_strings, 1);
  /* A UTF-8 byte order mark (some editors and Windows tools write one) is
   * no JSON: skipped, the offsets still count it. */
  const uint8_t *head;
  size_t hn;
  if (tbe__input_peek(in, 3, &head, &hn) == 0 && hn >= 3 && head[0] == 0xEF && head[1] == 0xBB &&
      head[2] == 0xBF) {
    uint8_t bom[3];
    size_t got;
    (void)tbe__input_read(in, bom, 3, &got);
  }

  /* Threads pay off once parsing and model building each take a while:
   * the driver and the parse workers run on threads of their own and hand
   * records over in file order. */
  int want = tbe__chrome_json_threads;
  int nw = tbe__cj_workers_wanted(o);
  if (want < 0) {
    uint64_t sz = tbe__input_size(in);
    want = (in->gzip ? sz >= (1u << 20) : sz >= (8u << 20)) && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
           nw > 0;
  }
  if (nw < 1) nw = 1;
  if (!want || tbe__cj_run_threaded(c, nw, o) != 0) tbe__cj_produce(c);

  /* The first error in input order: the consumer only ever sees records
   * from before the producer's error. */
  if (c->crc) {
    c->rc = c->crc;
    c->err_off = c->cerr_off;
    snprintf(c->emsg, sizeof c->emsg, "%s", c->cmsg[0] ? c->cmsg : tbe_strerror(c->crc));
  }
  if (!c->rc && c->form == 1 && !c->saw_events) {
    c->rc = TBE_EFORMAT;
    c->err_off = 0;
    snprintf(c->emsg, sizeof c->emsg,
             "a JSON object without a traceEvents array: not a Chrome or Kineto trace");
  }
  if (!c->rc && c->truncated) {
    t->ended_early = 1;
    tbe_trace_warn(t, "%s: the gzip stream is truncated; the events before the cut were kept", path);
  }
  uint64_t t_fin = c->prof ? mono_ns() : 0;
  if (!c->rc) {
    rc = tbe__cj_finish_import(c);
    if (rc && !c->rc) {
      c->rc = rc;
      c->err_off = UINT64_MAX;
      snprintf(c->emsg, sizeof c->emsg, "%s", tbe_strerror(rc));
    }
  }
  if (c->prof) {
    uint64_t end = mono_ns();
    c->p_finish = end - t_fin;
    /* Wall times, and the CPU time of the thread(s) in [brackets]: the
     * serial parts (model building, the driver's read and scan, the end)
     * bound the speed whatever the number of workers. */
    char text[1024];
    snprintf(text, sizeof text,
             "chrome_json profile: %s: %.3f s total, %d parse workers%s\n"
             "  model building (serial, calling thread): %.3f s [cpu %.3f s], waiting for "
             "records %.3f s\n"
             "  chunk parsing (workers, summed): %.3f s [cpu %.3f s] over %llu chunks\n"
             "  driver (serial: read, scan, cut): [cpu %.3f s], waiting for free slots %.3f s\n"
             "  end of import (serial: ac2g check, metadata): %.3f s\n",
             path, (double)(end - t_start) / 1e9, want ? nw : 0, want ? "" : " (one thread)",
             (double)c->p_apply / 1e9, (double)c->p_apply_cpu / 1e9, (double)c->p_wait / 1e9,
             (double)c->p_parse / 1e9, (double)c->p_parse_cpu / 1e9,
             (unsigned long long)c->p_chunks, (double)c->p_drv_cpu / 1e9,
             (double)c->p_drv_wait / 1e9, (double)c->p_finish / 1e9);
    /* one call per line, each in line form (the path is anyone's) */
    for (char *line = text, *nl; *line; line = nl + 1) {
      if ((nl = strchr(line, '\n'))) *nl = '\0';
      char shown[2048];
      tbe__text_term_z(shown, sizeof shown, line, 1);
      o->on_profile(o->profile_ctx, TBE_MSG_NOTE, shown);
      if (!nl) break;
    }
  }
  if (o->progress && !c->rc) o->progress(o->progress_ctx, tbe__input_done(in), tbe__input_size(in));
  rc = c->rc;
  if (rc) {
    uint64_t line = 0, col = 0;
    if (rc == TBE_EPARSE && c->err_off != UINT64_MAX && !in->stream)
      line_col(path, c->a, c->err_off, &line, &col);
    tbe__import_fail(err, rc, path, c->err_off, line, col, "%s", c->emsg);
  }
  cj_free(c);
  return rc;
}

/* ---- detection (the table's sniff test) ---- */

static int json_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Whether b[0..n) begins a JSON trace: an optional UTF-8 BOM, whitespace,
 * then '{' followed by a key or '}', or '[' followed by the start of a
 * value or ']' (the window may end anywhere in between). */
static int json_start(const uint8_t *b, size_t n) {
  size_t i = 0;
  if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) i = 3;
  while (i < n && json_space(b[i])) i++;
  if (i == n || (b[i] != '{' && b[i] != '[')) return 0;
  uint8_t open = b[i++];
  while (i < n && json_space(b[i])) i++;
  if (i == n) return 1;
  if (open == '{') return b[i] == '"' || b[i] == '}';
  return strchr("{[]\"-0123456789tfn", b[i]) != NULL && b[i];
}

static int chrome_json_sniff(const tbe__sniff *s) {
  return json_start(s->head, s->n) ? TBE__SNIFF_SURE : TBE__SNIFF_NO;
}

const tbe__importer tbe__importer_chrome_json = {TBE_FORMAT_CHROME_JSON, "chrome-json",
                                                 chrome_json_sniff, import_chrome_json, 0, NULL};
