/* test_nvtx_hook.c: the collector's own NVTX handlers (collect/nvtxhook.c)
 * and PyTorch's operator messages read back (common/torchnvtx.c).
 *
 * The handlers are attached to a fake NVTX copy: slot arrays shaped as
 * NVTX's export table hands them to a tool, called as a program's NVTX
 * calls would call them; the blocks are then drained into a spool batch
 * and its items read back.  What must never happen:
 *   - a pop ending the wrong range (domains, an operator inside a user
 *     range, ranges of two threads interleaved);
 *   - a user's range with a comma taken for an operator, or an operator's
 *     message misread (the messages are PyTorch 2.11's, as recorded on the
 *     H200 under emit_nvtx(record_shapes=True));
 *   - a record lost or read twice when blocks fill and threads exit;
 *   - chaining that calls NVTX's own initializing stub (recursion) or
 *     skips libcupti's handler.
 * Needs no CUDA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "collect/collector_decode.h"
#include "collect/nvtxhook.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/torchnvtx.h"
#include "events/spool.h"
#include "testutil.h"

/* ---- the parser ---- */

static void parses(const char *text, const char *name, int64_t seq, uint64_t op_id,
                   const char *sizes, uint32_t ninputs) {
  tbe__torch_op_text o;
  int ok = tbe__torch_nvtx_parse(text, strlen(text), &o);
  if (!ok) fail_msg("not parsed: %s", text);
  assert_int_equal(o.name_len, strlen(name));
  assert_memory_equal(text, name, o.name_len);
  assert_int_equal(o.seq, seq);
  assert_int_equal(o.op_id, op_id);
  if (sizes) {
    assert_non_null(o.sizes);
    assert_int_equal(o.sizes_len, strlen(sizes));
    assert_memory_equal(o.sizes, sizes, o.sizes_len);
    assert_int_equal(o.ninputs, ninputs);
  } else {
    assert_null(o.sizes);
  }
}

static void rejects(const char *text) {
  tbe__torch_op_text o;
  if (tbe__torch_nvtx_parse(text, strlen(text), &o)) fail_msg("taken for an operator: %s", text);
}

static void test_parse_real_messages(void **state) {
  (void)state;
  /* emit_nvtx(record_shapes=True), torch 2.11, H200 */
  parses("aten::mm, op_id = 423, sizes = [[8192, 4096], [4096, 512]], input_op_ids = [(420,0), "
         "(377,0)]",
         "aten::mm", -1, 423, "[[8192, 4096], [4096, 512]]", 2);
  parses("NllLossBackward0, seq = 134, op_id = 403, sizes = [[]], input_op_ids = [(398,0)]",
         "NllLossBackward0", 134, 403, "[[]]", 1);
  parses("aten::nll_loss_backward, op_id = 404, sizes = [[], [4096, 8192], [4096], [], [], [], "
         "[]], input_op_ids = [(398,0), (390,0), (383,0), (0,-1), (0,-1), (0,-1), (395,1)]",
         "aten::nll_loss_backward", -1, 404, "[[], [4096, 8192], [4096], [], [], [], []]", 7);
  parses("autograd::engine::evaluate_function: NllLossBackward0, op_id = 402",
         "autograd::engine::evaluate_function: NllLossBackward0", -1, 402, NULL, 0);
  parses("aten::empty, op_id = 447, sizes = [[], [], [], [], [], []], input_op_ids = [(0,-1), "
         "(0,-1), (0,-1), (0,-1), (0,-1), (0,-1)]",
         "aten::empty", -1, 447, "[[], [], [], [], [], []]", 6);
  /* without shapes (Nsight Systems' autograd-nvtx: golden/nsys) */
  parses("aten::view, op_id = 314290", "aten::view", -1, 314290, NULL, 0);
  parses("aten::addmm, seq = 12, op_id = 7", "aten::addmm", 12, 7, NULL, 0);
  /* what the collector keeps (input_op_ids cut on the calling thread) */
  parses("aten::mm, seq = 5, op_id = 9, sizes = [[2, 3], [3, 4]]", "aten::mm", 5, 9,
         "[[2, 3], [3, 4]]", 2);
  parses("aten::add_, op_id = 1, sizes = []", "aten::add_", -1, 1, "[]", 0);
}

static void test_parse_rejects(void **state) {
  (void)state;
  rejects("train_step");
  rejects("forward, backward");
  rejects("loss, seq = x");
  rejects(", op_id = 3");                         /* no name */
  rejects("aten::mm, op_id = 3, sizes = [[2, 3]"); /* unbalanced */
  rejects("aten::mm, op_id = 3, sizes = [[2, a]]");
  rejects("aten::mm, op_id = 3 trailing");
  rejects("aten::mm, op_id = 3, seq = 4"); /* out of order */
  rejects("aten::mm, seq = 3, seq = 4");
  rejects("aten::mm, op_id = 99999999999999999999"); /* too many digits */
  rejects("");
}

static void test_shapes_canon(void **state) {
  (void)state;
  char out[64];
  const char *in = "[[32,10],  [],[ 4 ,5]]";
  size_t n = tbe__shapes_canon(in, strlen(in), out, sizeof out);
  assert_int_equal(n, strlen("[[32, 10], [], [4, 5]]"));
  assert_memory_equal(out, "[[32, 10], [], [4, 5]]", n);
  /* canonical stays canonical; a short buffer is cut but the length is whole */
  n = tbe__shapes_canon(out, n, out, 5);
  assert_int_equal(n, strlen("[[32, 10], [], [4, 5]]"));
}

/* ---- a fake NVTX copy ---- */

static tbe__nvtx_fn core_slots[TBE__NVTX_CORE_SIZE], core2_slots[TBE__NVTX_CORE2_SIZE];
static tbe__nvtx_fn *core_table[TBE__NVTX_CORE_SIZE], *core2_table[TBE__NVTX_CORE2_SIZE];
static unsigned version_set;

static void stub(void) {} /* stands for NVTX's initializing stubs */

static int get_module(int module, tbe__nvtx_table *out, unsigned *size) {
  if (module == TBE__NVTX_MODULE_CORE) {
    *out = core_table;
    *size = TBE__NVTX_CORE_SIZE;
    return 1;
  }
  if (module == TBE__NVTX_MODULE_CORE2) {
    *out = core2_table;
    *size = TBE__NVTX_CORE2_SIZE;
    return 1;
  }
  return 0;
}
static void set_version(uint32_t v) { version_set = v; }
static const tbe__nvtx_callbacks callbacks = {sizeof(tbe__nvtx_callbacks), get_module};
static const tbe__nvtx_version_info vinfo = {sizeof(tbe__nvtx_version_info), 3, 0, set_version};
static const void *get_table(uint32_t id) {
  if (id == TBE__NVTX_ETID_CALLBACKS) return &callbacks;
  if (id == TBE__NVTX_ETID_VERSIONINFO) return &vinfo;
  return NULL;
}

static void fresh_copy(void) {
  for (unsigned i = 0; i < TBE__NVTX_CORE_SIZE; i++) {
    core_slots[i] = stub;
    core_table[i] = i ? &core_slots[i] : NULL;
  }
  for (unsigned i = 0; i < TBE__NVTX_CORE2_SIZE; i++) {
    core2_slots[i] = stub;
    core2_table[i] = i ? &core2_slots[i] : NULL;
  }
}

#define CALL(tab, id, type) ((type)(void (*)(void))tab##_slots[id])

static uint64_t clock_ns;
static CUptiResult fake_now(uint64_t *ts) {
  *ts = __atomic_add_fetch(&clock_ns, 10, __ATOMIC_RELAXED);
  return CUPTI_SUCCESS;
}

/* ---- reading a batch ---- */

typedef struct item {
  unsigned type;
  const uint8_t *body; /* an aligned copy (the batch packs items unaligned) */
  size_t len;
} item;

typedef struct items {
  item v[4096];
  size_t n;
  char *str[4096]; /* spool string id -> text */
} items;

static void read_items(const tbe__buf *b, items *out) {
  memset(out, 0, sizeof *out);
  size_t off = 0;
  while (off + 4 <= b->len) {
    uint16_t type, len;
    memcpy(&type, b->data + off, 2);
    memcpy(&len, b->data + off + 2, 2);
    const uint8_t *body = b->data + off + 4;
    if (type == TBE__SP_STR) {
      uint32_t id;
      memcpy(&id, body, 4);
      if (id < 4096) {
        out->str[id] = calloc(1, len - 4 + 1);
        memcpy(out->str[id], body + 4, len - 4u);
      }
    } else if (out->n < 4096) {
      uint8_t *copy = malloc(len ? len : 1);
      memcpy(copy, body, len);
      out->v[out->n++] = (item){type, copy, len};
    }
    off += 4 + (size_t)len;
  }
}

static void free_items(items *it) {
  for (size_t i = 0; i < 4096; i++) free(it->str[i]), it->str[i] = NULL;
  for (size_t i = 0; i < it->n; i++) free((void *)it->v[i].body);
  it->n = 0;
}

static const char *str_of(const items *it, uint32_t id) { return id && id < 4096 ? it->str[id] : ""; }

static tbe_allocator al;

typedef struct fixture {
  tbe__buf batch;
  tbe__decoder dc;
  items it;
} fixture;

static void drain(fixture *f) {
  free_items(&f->it);
  tbe__buf_clear(&f->batch);
  tbe__nvtx_drain(&f->dc, 4242);
  read_items(&f->batch, &f->it);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  tbe__allocator_init(&al, NULL);
  tbe__buf_init(&f->batch, &al);
  f->dc.batch = &f->batch;
  fresh_copy();
  assert_int_equal(tbe__nvtx_start(fake_now, NULL), 0);
  assert_int_equal(tbe__nvtx_attach(get_table, NULL), 1);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  tbe__nvtx_stop();
  free_items(&f->it);
  tbe__decoder_reset(&f->dc);
  tbe__buf_deinit(&f->batch);
  free(f);
  return 0;
}

static const tbe__sp_op *op_at(const items *it, size_t i) {
  assert_true(i < it->n);
  assert_int_equal(it->v[i].type, TBE__SP_OP);
  return (const tbe__sp_op *)it->v[i].body;
}

static const tbe__sp_marker *marker_at(const items *it, size_t i) {
  assert_true(i < it->n);
  assert_int_equal(it->v[i].type, TBE__SP_MARKER);
  return (const tbe__sp_marker *)it->v[i].body;
}

/* ---- the handlers ---- */

static void test_attach_installs(void **state) {
  (void)state;
  assert_int_equal(version_set, 3);
  assert_ptr_not_equal(core_slots[TBE__NVTX_CORE_RangePushA], stub);
  assert_ptr_not_equal(core_slots[TBE__NVTX_CORE_RangePop], stub);
  assert_ptr_not_equal(core2_slots[TBE__NVTX_CORE2_DomainCreateA], stub);
  /* what we do not handle stays as NVTX left it (it becomes a no-op) */
  assert_ptr_equal(core_slots[12], stub); /* NameCategoryA */
}

/* An operator inside a user range inside an operator: each pop ends the
 * innermost open range; operators become TBE__SP_OP, the user range a
 * marker; the input_op_ids tail is gone before the decoder sees it. */
static void test_ops_and_ranges(void **state) {
  fixture *f = *state;
  tbe__nvtx_push_a_fn push = CALL(core, TBE__NVTX_CORE_RangePushA, tbe__nvtx_push_a_fn);
  tbe__nvtx_pop_fn pop = CALL(core, TBE__NVTX_CORE_RangePop, tbe__nvtx_pop_fn);
  assert_int_equal(push("aten::linear, seq = 3, op_id = 10, sizes = [[4, 8], [16, 8], [16]], "
                        "input_op_ids = [(0,-1), (0,-1), (0,-1)]"),
                   0);
  assert_int_equal(push("forward"), 1);
  assert_int_equal(push("aten::mm, op_id = 11, sizes = [[4, 8], [8, 16]]"), 2);
  assert_int_equal(pop(), 2);
  assert_int_equal(pop(), 1);
  assert_int_equal(pop(), 0);
  drain(f);
  assert_int_equal(f->it.n, 6);
  const tbe__sp_op *a = op_at(&f->it, 0);
  assert_int_equal(a->flags, TBE__OPF_BEGIN);
  assert_string_equal(str_of(&f->it, a->name), "aten::linear");
  assert_string_equal(str_of(&f->it, a->shapes), "[[4, 8], [16, 8], [16]]");
  assert_int_equal(a->seq, 3);
  assert_int_equal(a->ninputs, 3);
  assert_int_equal(a->pid, 4242);
  const tbe__sp_marker *m = marker_at(&f->it, 1);
  assert_int_equal(m->flags, TBE__MK_START);
  assert_string_equal(str_of(&f->it, m->name), "forward");
  const tbe__sp_op *b = op_at(&f->it, 2);
  assert_string_equal(str_of(&f->it, b->name), "aten::mm");
  assert_int_equal(b->seq, -1);
  const tbe__sp_op *be = op_at(&f->it, 3);
  assert_int_equal(be->flags, TBE__OPF_END);
  assert_int_equal(be->id, b->id);
  assert_true(be->ts > b->ts);
  const tbe__sp_marker *me = marker_at(&f->it, 4);
  assert_int_equal(me->flags, TBE__MK_END);
  assert_int_equal(me->id, m->id);
  const tbe__sp_op *ae = op_at(&f->it, 5);
  assert_int_equal(ae->id, a->id);
  assert_int_equal(ae->tid, a->tid);
  /* the names are interned once: a second round defines no new string */
  push("aten::mm, op_id = 12, sizes = [[4, 8], [8, 16]]");
  pop();
  drain(f);
  assert_int_equal(f->it.n, 2);
  for (size_t i = 0; i < 4096; i++) assert_null(f->it.str[i]);
}

/* Domain pushes and pops pair within their domain; a pop with nothing
 * open is counted, not turned into an end. */
static void test_domains(void **state) {
  fixture *f = *state;
  tbe__nvtx_dcreate_a_fn create =
      CALL(core2, TBE__NVTX_CORE2_DomainCreateA, tbe__nvtx_dcreate_a_fn);
  tbe__nvtx_dpush_fn dpush = CALL(core2, TBE__NVTX_CORE2_DomainRangePushEx, tbe__nvtx_dpush_fn);
  tbe__nvtx_dpop_fn dpop = CALL(core2, TBE__NVTX_CORE2_DomainRangePop, tbe__nvtx_dpop_fn);
  tbe__nvtx_dreg_a_fn reg = CALL(core2, TBE__NVTX_CORE2_DomainRegisterStringA, tbe__nvtx_dreg_a_fn);
  tbe__nvtx_push_a_fn push = CALL(core, TBE__NVTX_CORE_RangePushA, tbe__nvtx_push_a_fn);
  tbe__nvtx_pop_fn pop = CALL(core, TBE__NVTX_CORE_RangePop, tbe__nvtx_pop_fn);
  nvtxDomainHandle_t d = create("mylib");
  assert_non_null(d);
  tbe__nvtx_string_handle s = reg(d, "registered step");
  nvtxEventAttributes_v2 a;
  memset(&a, 0, sizeof a);
  a.version = 3;
  a.size = TBE__NVTX_ATTR_SIZE;
  a.messageType = TBE__NVTX_MSG_REGISTERED;
  memcpy(&a.message, &s, sizeof s);
  a.colorType = TBE__NVTX_COLOR_ARGB;
  a.color = 0xff00ff00u;
  a.payloadType = TBE__NVTX_PAYLOAD_I64;
  int64_t payload = -7;
  memcpy(&a.payload, &payload, 8);
  push("outer");
  dpush(d, &a);
  pop();     /* ends "outer" (the default domain), not the domain's range */
  dpop(d);   /* ends the domain's range */
  dpop(d);   /* nothing open there */
  drain(f);
  /* outer START, domain START + DATA, outer END, domain END */
  assert_int_equal(f->it.n, 5);
  const tbe__sp_marker *outer = marker_at(&f->it, 0);
  const tbe__sp_marker *dm = marker_at(&f->it, 1);
  assert_string_equal(str_of(&f->it, dm->name), "registered step");
  assert_string_equal(str_of(&f->it, dm->domain), "mylib");
  assert_int_equal(f->it.v[2].type, TBE__SP_MARKER_DATA);
  const tbe__sp_marker_data *md = (const tbe__sp_marker_data *)f->it.v[2].body;
  assert_int_equal(md->id, dm->id);
  assert_int_equal(md->color, 0xff00ff00u);
  assert_int_equal(md->payload_kind, 4);
  int64_t got;
  memcpy(&got, &md->payload, 8);
  assert_int_equal(got, -7);
  assert_int_equal(marker_at(&f->it, 3)->id, outer->id);
  assert_int_equal(marker_at(&f->it, 4)->id, dm->id);
  tbe__sp_nvtx_stats st;
  tbe__nvtx_stats(&st);
  assert_int_equal(st.unclosed, 1);
}

/* Start/end ranges (ids returned to the program), marks, thread names, wide
 * messages. */
static void test_start_end_mark_name(void **state) {
  fixture *f = *state;
  tbe__nvtx_start_a_fn start = CALL(core, TBE__NVTX_CORE_RangeStartA, tbe__nvtx_start_a_fn);
  tbe__nvtx_end_fn end = CALL(core, TBE__NVTX_CORE_RangeEnd, tbe__nvtx_end_fn);
  tbe__nvtx_mark_w_fn markw = CALL(core, TBE__NVTX_CORE_MarkW, tbe__nvtx_mark_w_fn);
  tbe__nvtx_name_thread_a_fn name =
      CALL(core, TBE__NVTX_CORE_NameOsThreadA, tbe__nvtx_name_thread_a_fn);
  nvtxRangeId_t r1 = start("load"), r2 = start("save");
  assert_true(r1 != 0 && r2 != r1);
  end(r1);
  markw(L"\u00e9t\u00e9");
  name(77, "dataloader");
  end(r2);
  drain(f);
  assert_int_equal(f->it.n, 6);
  const tbe__sp_marker *s1 = marker_at(&f->it, 0), *s2 = marker_at(&f->it, 1);
  assert_int_equal(marker_at(&f->it, 2)->id, s1->id);
  assert_int_equal(marker_at(&f->it, 2)->flags, TBE__MK_END);
  const tbe__sp_marker *mk = marker_at(&f->it, 3);
  assert_int_equal(mk->flags, TBE__MK_INSTANT);
  assert_string_equal(str_of(&f->it, mk->name), "\xc3\xa9t\xc3\xa9");
  assert_int_equal(f->it.v[4].type, TBE__SP_THREAD_NAME);
  const tbe__sp_thread_name *tn = (const tbe__sp_thread_name *)f->it.v[4].body;
  assert_int_equal(tn->tid, 77);
  assert_string_equal(str_of(&f->it, tn->name), "dataloader");
  assert_int_equal(marker_at(&f->it, 5)->id, s2->id);
  assert_true(s1->id & 1u); /* start/end ids never meet push/pop ones */
}

/* Many threads, each filling several blocks and exiting: every record is
 * read once, in each thread's order, and the blocks come back. */
#define NTHREADS 8
#define PER_THREAD 20000
static void *worker(void *arg) {
  (void)arg;
  tbe__nvtx_push_a_fn push = CALL(core, TBE__NVTX_CORE_RangePushA, tbe__nvtx_push_a_fn);
  tbe__nvtx_pop_fn pop = CALL(core, TBE__NVTX_CORE_RangePop, tbe__nvtx_pop_fn);
  char msg[96];
  for (int i = 0; i < PER_THREAD; i++) {
    snprintf(msg, sizeof msg, "aten::add_, seq = %d, op_id = %d, sizes = [[1024], []]", i, i);
    push(msg);
    pop();
  }
  return NULL;
}

static void test_threads_blocks(void **state) {
  fixture *f = *state;
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, NULL);
  /* drain while they run: blocks are read behind the writers */
  size_t begins = 0, ends = 0;
  int64_t last_seq[NTHREADS * 2];
  uint32_t tids[NTHREADS * 2];
  size_t ntid = 0;
  int joined = 0;
  for (int round = 0; round < 2000 && (begins < NTHREADS * PER_THREAD || ends < begins); round++) {
    tbe__buf_clear(&f->batch);
    tbe__nvtx_drain(&f->dc, 1);
    /* walk the batch without keeping it */
    size_t off = 0;
    while (off + 4 <= f->batch.len) {
      uint16_t type, len;
      memcpy(&type, f->batch.data + off, 2);
      memcpy(&len, f->batch.data + off + 2, 2);
      if (type == TBE__SP_OP) {
        tbe__sp_op o;
        memcpy(&o, f->batch.data + off + 4, sizeof o);
        if (o.flags == TBE__OPF_BEGIN) {
          begins++;
          size_t k = 0;
          while (k < ntid && tids[k] != o.tid) k++;
          if (k == ntid) tids[ntid] = o.tid, last_seq[ntid++] = -1;
          assert_int_equal(o.seq, last_seq[k] + 1); /* in order, none lost or repeated */
          last_seq[k] = o.seq;
        } else {
          ends++;
        }
      }
      off += 4 + (size_t)len;
    }
    if (round == 1000 && !joined) {
      for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
      joined = 1;
    }
  }
  if (!joined)
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  assert_int_equal(begins, NTHREADS * PER_THREAD);
  assert_int_equal(ends, NTHREADS * PER_THREAD);
  tbe__sp_nvtx_stats st;
  tbe__nvtx_stats(&st);
  assert_int_equal(st.dropped, 0);
  assert_false(tbe__nvtx_pressure());
}

/* Chaining: libcupti's handlers (installed by its own init just before)
 * are called after ours; NVTX's stubs are never taken for them. */
static int cupti_pushes, cupti_pops;
static int cupti_push(const char *m) {
  (void)m;
  return cupti_pushes++;
}
static int cupti_pop(void) { return --cupti_pops; }
static int cupti_init(tbe__nvtx_get_export_table get) {
  (void)get;
  core_slots[TBE__NVTX_CORE_RangePushA] = (tbe__nvtx_fn)(void (*)(void))cupti_push;
  core_slots[TBE__NVTX_CORE_RangePop] = (tbe__nvtx_fn)(void (*)(void))cupti_pop;
  return 1;
}

static void test_chain(void **state) {
  fixture *f = *state;
  fresh_copy();
  assert_int_equal(tbe__nvtx_attach(get_table, cupti_init), 1);
  tbe__nvtx_push_a_fn push = CALL(core, TBE__NVTX_CORE_RangePushA, tbe__nvtx_push_a_fn);
  tbe__nvtx_pop_fn pop = CALL(core, TBE__NVTX_CORE_RangePop, tbe__nvtx_pop_fn);
  assert_ptr_not_equal(push, cupti_push);
  push("capture");
  pop();
  assert_int_equal(cupti_pushes, 1);
  assert_int_equal(cupti_pops, -1);
  /* MarkA: libcupti did not install one, so the stub is not chained */
  CALL(core, TBE__NVTX_CORE_MarkA, tbe__nvtx_mark_a_fn)("m");
  drain(f);
  assert_int_equal(f->it.n, 3);
}

/* Stopped: nothing is recorded; the program's calls still return. */
static void test_stopped(void **state) {
  fixture *f = *state;
  tbe__nvtx_stop();
  tbe__nvtx_push_a_fn push = CALL(core, TBE__NVTX_CORE_RangePushA, tbe__nvtx_push_a_fn);
  tbe__nvtx_pop_fn pop = CALL(core, TBE__NVTX_CORE_RangePop, tbe__nvtx_pop_fn);
  push("x");
  pop();
  drain(f);
  assert_int_equal(f->it.n, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_real_messages),
      cmocka_unit_test(test_parse_rejects),
      cmocka_unit_test(test_shapes_canon),
      cmocka_unit_test_setup_teardown(test_attach_installs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ops_and_ranges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_domains, setup, teardown),
      cmocka_unit_test_setup_teardown(test_start_end_mark_name, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads_blocks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stopped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_chain, setup, teardown), /* last: chaining stays */
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
