/* nvtxhook.c: the collector's own NVTX handlers (nvtxhook.h).
 *
 * Blocks.  Records go into blocks of TBE__NVTX_BLOCK bytes, slots of one
 * anonymous mapping made at start (MAP_NORESERVE: pages become resident
 * where written), handed out from a free stack under a mutex.  A thread
 * that makes its first NVTX call claims a thread slot and a block; it
 * appends records to its block and publishes each by a release store of
 * the block's `committed` byte count; when a record does not fit, it takes
 * the next block, links it from the full one (`next`) and then marks the
 * full one sealed (release).  A thread that exits seals its block with no
 * next and marks its slot dead.  No lock, no allocation, no system call on
 * that path but the mutex once a block.
 *
 * The decoding thread (the collector's background thread) walks the
 * thread slots: for each it reads the records of its current block up to
 * `committed` (acquire), and when the block is sealed and read to its end
 * follows `next` and returns the block to the free stack; a dead thread's
 * slot is freed once its last block is read.  So each thread's records are
 * read in the order it wrote them, and the decoder keeps, per thread, the
 * stack of its open push/pop ranges (an NVTX pop names no range: the
 * decoder's stack says which one it ends, and whether it was an operator).
 *
 * A record: a 16-byte header (timestamp, type, flags, message length),
 * then, for calls with attributes, a range id or a domain, a 32-byte
 * attribute block, then the message's bytes (UTF-8; a wide message is
 * converted on the calling thread), padded to 8 bytes.  An operator's
 * message loses its input_op_ids list on the calling thread already (it is
 * long, and nothing reads it).
 *
 * Limits: TBE__NVTX_NBLK blocks; when none is free the call is dropped and
 * counted (the decoder is woken when half are in use), as are calls of a
 * thread beyond TBE__NVTX_NTHR live threads, and pushes deeper than
 * TBE__NVTX_DEPTH (their pops then end nothing).
 *
 * Invariants: a block is in exactly one place (the free stack, or the
 * chain of one thread slot, from the decoder's head to the writer's
 * current block); only the writing thread moves `committed`, `next` and
 * `sealed` of its current block, only the decoder reads behind them and
 * recycles; a slot is claimed only from FREE and freed only by the
 * decoder. */
#include "collect/nvtxhook.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/torchnvtx.h"
#include "tbexport/error.h"

#define TBE__NVTX_BLOCK (64u << 10)
#define TBE__NVTX_NBLK 512u  /* 32 MiB of address space */
#define TBE__NVTX_NTHR 4096u
#define TBE__NVTX_DEPTH 256u
#define TBE__NVTX_NDOM 4096u

/* ---- records ---- */

enum { R_PUSH = 1, R_POP = 2, R_START = 3, R_END = 4, R_MARK = 5, R_NAME = 6 };
#define F_ATTR 0x1u  /* an attribute block follows the header */
#define F_TRUNC 0x2u /* the message was cut */

typedef struct rec {
  uint64_t ts;
  uint16_t type;
  uint16_t flags;
  uint32_t len; /* message bytes */
} rec;

typedef struct rec_attr {
  uint64_t payload;  /* raw bits */
  uint64_t range_id; /* START, END */
  uint32_t domain;   /* our domain id, 0: the default domain; R_NAME: the OS thread id */
  uint32_t category;
  uint32_t color;    /* ARGB; 0 none */
  uint32_t ptype;    /* NVTX payload type; 0 none */
} rec_attr;

/* ---- state ---- */

typedef struct blk_hdr {
  _Atomic uint32_t committed;
  _Atomic uint32_t sealed;
  _Atomic int32_t next;
  uint32_t pad;
} blk_hdr;

enum { T_FREE = 0, T_CLAIMED = 1, T_LIVE = 2, T_DEAD = 3 };

typedef struct open_ent {
  uint64_t id;
  uint32_t domain;
  uint32_t op; /* 1: an operator (TBE__SP_OP), 0: a marker */
} open_ent;

typedef struct thr {
  _Atomic uint32_t state;
  uint32_t tid;
  /* the writing thread */
  int32_t cur;
  uint32_t used;
  /* the decoder */
  int32_t head;
  uint32_t consumed;
  uint32_t depth;
  uint32_t deep;   /* pushes beyond the stack, not yet popped */
  open_ent stack[TBE__NVTX_DEPTH];
} thr;

/* Domains and registered strings live as long as the process (a handle
 * may be used at any time; a domain's id names it in records not yet
 * read): each is kept on a list of what was handed out. */
typedef struct dom {
  uint32_t magic;
  uint32_t id;
  nvtxDomainHandle_t next; /* libcupti's handle of the same domain (chaining) */
  struct dom *kept;
} dom;

typedef struct reg {
  uint32_t magic;
  uint32_t len;
  tbe__nvtx_string_handle next;
  struct reg *kept;
  char text[];
} reg;

#define DOM_MAGIC 0x74626564u /* "tbed" */
#define REG_MAGIC 0x74626572u /* "tber" */

static struct {
  atomic_int on;
  atomic_uint gen;           /* bumped at each start and in a forked child */
  CUptiResult (*now)(uint64_t *ts);
  void (*wake)(void);
  uint8_t *blocks;
  blk_hdr hdr[TBE__NVTX_NBLK];
  thr *thr;
  atomic_uint nthr_hi;       /* slots ever claimed: the decoder walks [0, hi) */
  pthread_mutex_t mu;
  int32_t freel[TBE__NVTX_NBLK];
  atomic_uint nfree;         /* written under mu */
  atomic_ullong dropped, truncated;
  atomic_ullong next_range;  /* start/end range ids */
  uint64_t records, unclosed, next_push; /* the decoder's */
  pthread_key_t key;
  int key_ok;
  /* domains: names by id, published by a release store of ndom */
  char *dom_name[TBE__NVTX_NDOM];
  atomic_uint ndom;
  dom *doms;   /* every domain handed out (under mu) */
  reg *regs;   /* every registered string handed out (under mu) */
  /* chaining to libcupti's handlers */
  int chain;
  tbe__nvtx_fn next_core[TBE__NVTX_CORE_SIZE];
  tbe__nvtx_fn next_core2[TBE__NVTX_CORE2_SIZE];
} H = {.mu = PTHREAD_MUTEX_INITIALIZER};

static __thread thr *me;
static __thread unsigned me_gen;
static __thread int me_depth;
static __thread uint32_t me_retry; /* calls to skip before claiming again */

/* ---- blocks ---- */

static int32_t take_block(void) {
  int32_t b = -1;
  pthread_mutex_lock(&H.mu);
  unsigned n = atomic_load_explicit(&H.nfree, memory_order_relaxed);
  if (n > 0) {
    b = H.freel[n - 1];
    atomic_store_explicit(&H.nfree, n - 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&H.mu);
  return b;
}

static void give_block(int32_t b) {
  blk_hdr *h = &H.hdr[b];
  atomic_store_explicit(&h->committed, 0, memory_order_relaxed);
  atomic_store_explicit(&h->sealed, 0, memory_order_relaxed);
  atomic_store_explicit(&h->next, -1, memory_order_relaxed);
  pthread_mutex_lock(&H.mu);
  unsigned n = atomic_load_explicit(&H.nfree, memory_order_relaxed);
  H.freel[n] = b;
  atomic_store_explicit(&H.nfree, n + 1, memory_order_relaxed);
  pthread_mutex_unlock(&H.mu);
}

static uint8_t *block_at(int32_t b) { return H.blocks + (size_t)b * TBE__NVTX_BLOCK; }

static uint32_t os_tid(void) { return (uint32_t)syscall(SYS_gettid); }

/* Thread exit: the last block sealed, the slot left to the decoder. */
static void thread_gone(void *p) {
  thr *t = p;
  if (!t || me_gen != atomic_load(&H.gen)) return;
  if (t->cur >= 0) atomic_store_explicit(&H.hdr[t->cur].sealed, 1, memory_order_release);
  atomic_store_explicit(&t->state, T_DEAD, memory_order_release);
  me = NULL;
  me_retry = UINT32_MAX; /* destructors that run later record nothing */
}

/* The calling thread's slot, claimed on first use; NULL when none is free
 * (retried after a while). */
static thr *self(void) {
  unsigned gen = atomic_load_explicit(&H.gen, memory_order_relaxed);
  if (me && me_gen == gen) return me;
  if (me_retry) {
    if (me_retry == UINT32_MAX) return NULL; /* after its exit: not counted */
    me_retry--;
    atomic_fetch_add_explicit(&H.dropped, 1, memory_order_relaxed);
    return NULL;
  }
  me = NULL;
  int32_t b = take_block();
  if (b < 0) {
    me_retry = 1024;
    atomic_fetch_add_explicit(&H.dropped, 1, memory_order_relaxed);
    return NULL;
  }
  for (uint32_t i = 0; i < TBE__NVTX_NTHR; i++) {
    thr *t = &H.thr[i];
    uint32_t want = T_FREE;
    if (!atomic_compare_exchange_strong(&t->state, &want, T_CLAIMED)) continue;
    t->tid = os_tid();
    t->cur = t->head = b;
    t->used = t->consumed = 0;
    t->depth = t->deep = 0;
    unsigned hi = atomic_load(&H.nthr_hi);
    while (hi < i + 1 && !atomic_compare_exchange_weak(&H.nthr_hi, &hi, i + 1)) {
    }
    atomic_store_explicit(&t->state, T_LIVE, memory_order_release);
    me = t;
    me_gen = gen;
    if (H.key_ok) pthread_setspecific(H.key, t);
    return t;
  }
  give_block(b);
  me_retry = 1024;
  atomic_fetch_add_explicit(&H.dropped, 1, memory_order_relaxed);
  return NULL;
}

/* Room for n bytes in the thread's block (a new block when full); NULL
 * when there is none (the call is dropped). */
static uint8_t *reserve(thr *t, uint32_t n) {
  if (t->used + n > TBE__NVTX_BLOCK) {
    int32_t b = take_block();
    if (b < 0) {
      atomic_fetch_add_explicit(&H.dropped, 1, memory_order_relaxed);
      return NULL;
    }
    blk_hdr *h = &H.hdr[t->cur];
    atomic_store_explicit(&h->next, b, memory_order_relaxed);
    atomic_store_explicit(&h->sealed, 1, memory_order_release);
    t->cur = b;
    t->used = 0;
    if (H.wake && tbe__nvtx_pressure()) H.wake();
  }
  return block_at(t->cur) + t->used;
}

static void commit(thr *t, uint32_t n) {
  t->used += n;
  atomic_store_explicit(&H.hdr[t->cur].committed, t->used, memory_order_release);
}

/* ---- text ---- */

/* UTF-8 of a wide string into out (at most size bytes); its length. */
static size_t wide_utf8(const wchar_t *w, char *out, size_t size, int *cut) {
  size_t n = 0;
  for (; *w; w++) {
    uint32_t c = (uint32_t)*w;
    char b[4];
    size_t k;
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd;
    if (c < 0x80) b[0] = (char)c, k = 1;
    else if (c < 0x800) b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), k = 2;
    else if (c < 0x10000)
      b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3f)),
      b[2] = (char)(0x80 | (c & 0x3f)), k = 3;
    else
      b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3f)),
      b[2] = (char)(0x80 | ((c >> 6) & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f)), k = 4;
    if (n + k > size) {
      *cut = 1;
      break;
    }
    memcpy(out + n, b, k);
    n += k;
  }
  return n;
}

/* The length of an ASCII message without PyTorch's trailing
 * ", input_op_ids = [...]" (only its characters are scanned, from the end). */
static size_t without_input_ids(const char *m, size_t len) {
  static const char key[] = ", input_op_ids = [";
  const size_t kl = sizeof key - 1;
  if (len <= kl || m[len - 1] != ']') return len;
  for (size_t i = len - 1; i >= kl - 1; i--) {
    char c = m[i];
    if (c == '[' && i + 1 >= kl && memcmp(m + i + 1 - kl, key, kl) == 0) return i + 1 - kl;
    if (!((c >= '0' && c <= '9') || c == '(' || c == ')' || c == ',' || c == ' ' || c == '-' ||
          c == ']' || c == '['))
      return len;
    if (i == 0) break;
  }
  return len;
}

/* A message: the text of an attribute block, an ASCII string or a wide
 * one, converted where needed into `scratch`. */
typedef struct msg {
  const char *p;
  size_t len;
  int cut;
} msg;

static __thread char *scratch; /* wide messages only: made on first use */

static msg ascii(const char *s) {
  msg m = {s ? s : "", 0, 0};
  m.len = strlen(m.p);
  if (m.len > TBE__NVTX_MSG_MAX) m.len = TBE__NVTX_MSG_MAX, m.cut = 1;
  return m;
}

static msg wide(const wchar_t *w) {
  if (!scratch) scratch = malloc(TBE__NVTX_MSG_MAX);
  msg m = {scratch ? scratch : "", 0, 0};
  if (w && scratch) m.len = wide_utf8(w, scratch, TBE__NVTX_MSG_MAX, &m.cut);
  return m;
}

/* Whether the attributes can be read up to and including the message. */
static int attr_ok(const nvtxEventAttributes_v2 *a) {
  return a && a->size >= offsetof(nvtxEventAttributes_v2, message) + sizeof a->message;
}

static msg attr_msg(const nvtxEventAttributes_v2 *a) {
  if (!attr_ok(a)) return ascii(NULL);
  const void *p;
  memcpy(&p, &a->message, sizeof p);
  switch (a->messageType) {
    case TBE__NVTX_MSG_ASCII: return ascii(p);
    case TBE__NVTX_MSG_UNICODE: return wide(p);
    case TBE__NVTX_MSG_REGISTERED: {
      const reg *r = p;
      if (!r || r->magic != REG_MAGIC) return ascii(NULL);
      msg m = {r->text, r->len, 0};
      if (m.len > TBE__NVTX_MSG_MAX) m.len = TBE__NVTX_MSG_MAX, m.cut = 1;
      return m;
    }
    default: return ascii(NULL);
  }
}

/* ---- recording ---- */

static uint64_t now(void) {
  uint64_t ts = 0;
  if (H.now) H.now(&ts);
  return ts;
}

static uint32_t dom_id(nvtxDomainHandle_t d) {
  const dom *x = (const dom *)d;
  return x && x->magic == DOM_MAGIC ? x->id : 0;
}

/* Records one call: type, attributes (a may be NULL), message. */
static void record(unsigned type, const rec_attr *a, msg m) {
  thr *t = self();
  if (!t) return;
  if (type == R_PUSH) m.len = without_input_ids(m.p, m.len);
  uint32_t n = (uint32_t)(sizeof(rec) + (a ? sizeof *a : 0) + m.len);
  uint32_t padded = (n + 7u) & ~7u;
  uint8_t *p = reserve(t, padded);
  if (!p) return;
  rec r = {now(), (uint16_t)type, (uint16_t)((a ? F_ATTR : 0) | (m.cut ? F_TRUNC : 0)),
           (uint32_t)m.len};
  memcpy(p, &r, sizeof r);
  size_t off = sizeof r;
  if (a) memcpy(p + off, a, sizeof *a), off += sizeof *a;
  if (m.len) memcpy(p + off, m.p, m.len);
  if (m.cut) atomic_fetch_add_explicit(&H.truncated, 1, memory_order_relaxed);
  commit(t, padded);
}

static int on(void) { return atomic_load_explicit(&H.on, memory_order_relaxed); }

static void attrs_of(const nvtxEventAttributes_v2 *e, uint32_t domain, rec_attr *a) {
  memset(a, 0, sizeof *a);
  a->domain = domain;
  if (!attr_ok(e)) return;
  a->category = e->category;
  if (e->colorType == TBE__NVTX_COLOR_ARGB) a->color = e->color ? e->color : 0xff000000u;
  if (e->payloadType >= TBE__NVTX_PAYLOAD_U64 && e->payloadType <= TBE__NVTX_PAYLOAD_FLOAT) {
    a->ptype = (uint32_t)e->payloadType;
    memcpy(&a->payload, &e->payload, sizeof a->payload);
  }
}

/* The attributes as libcupti must see them: a registered message as its
 * text (libcupti's own handle is in the registration). */
static const nvtxEventAttributes_v2 *for_next(const nvtxEventAttributes_v2 *e,
                                              nvtxEventAttributes_v2 *copy) {
  if (!attr_ok(e) || e->messageType != TBE__NVTX_MSG_REGISTERED) return e;
  const reg *r;
  memcpy(&r, &e->message, sizeof r);
  memcpy(copy, e, sizeof *copy);
  if (r && r->magic == REG_MAGIC && r->next) {
    memcpy(&copy->message, &r->next, sizeof r->next);
  } else {
    const char *text = r && r->magic == REG_MAGIC ? r->text : "";
    copy->messageType = TBE__NVTX_MSG_ASCII;
    memcpy(&copy->message, &text, sizeof text);
  }
  return copy;
}

static nvtxDomainHandle_t next_dom(nvtxDomainHandle_t d) {
  const dom *x = (const dom *)d;
  return x && x->magic == DOM_MAGIC ? x->next : d;
}

#define NEXT(tab, id, type) ((type)H.next_##tab[id])

/* ---- handlers: core ---- */

static int h_push_a(const char *s) {
  if (on()) record(R_PUSH, NULL, ascii(s));
  if (H.chain && H.next_core[TBE__NVTX_CORE_RangePushA])
    return NEXT(core, TBE__NVTX_CORE_RangePushA, tbe__nvtx_push_a_fn)(s);
  return me_depth++;
}

static int h_push_w(const wchar_t *s) {
  if (on()) record(R_PUSH, NULL, wide(s));
  if (H.chain && H.next_core[TBE__NVTX_CORE_RangePushW])
    return NEXT(core, TBE__NVTX_CORE_RangePushW, tbe__nvtx_push_w_fn)(s);
  return me_depth++;
}

static int h_push_ex(const nvtxEventAttributes_v2 *e) {
  if (on()) {
    rec_attr a;
    attrs_of(e, 0, &a);
    record(R_PUSH, &a, attr_msg(e));
  }
  if (H.chain && H.next_core[TBE__NVTX_CORE_RangePushEx]) {
    nvtxEventAttributes_v2 c;
    return NEXT(core, TBE__NVTX_CORE_RangePushEx, tbe__nvtx_push_ex_fn)(for_next(e, &c));
  }
  return me_depth++;
}

static int h_pop(void) {
  if (on()) record(R_POP, NULL, ascii(NULL));
  if (H.chain && H.next_core[TBE__NVTX_CORE_RangePop])
    return NEXT(core, TBE__NVTX_CORE_RangePop, tbe__nvtx_pop_fn)();
  return me_depth > 0 ? --me_depth : -1;
}

static nvtxRangeId_t start_id(void) {
  return atomic_fetch_add_explicit(&H.next_range, 1, memory_order_relaxed) + 1;
}

/* A range id: libcupti's when chained (so that its own end pairs with it:
 * the range profiler's capture reads start/end through its callbacks),
 * else ours. */
#define START_ID(id_, call_) \
  nvtxRangeId_t id_ = (call_);   \
  if (!id_) id_ = start_id()

static nvtxRangeId_t h_start_a(const char *s) {
  START_ID(id, H.chain && H.next_core[TBE__NVTX_CORE_RangeStartA]
                   ? NEXT(core, TBE__NVTX_CORE_RangeStartA, tbe__nvtx_start_a_fn)(s)
                   : 0);
  if (on()) {
    rec_attr a = {0, id, 0, 0, 0, 0};
    record(R_START, &a, ascii(s));
  }
  return id;
}

static nvtxRangeId_t h_start_w(const wchar_t *s) {
  START_ID(id, H.chain && H.next_core[TBE__NVTX_CORE_RangeStartW]
                   ? NEXT(core, TBE__NVTX_CORE_RangeStartW, tbe__nvtx_start_w_fn)(s)
                   : 0);
  if (on()) {
    rec_attr a = {0, id, 0, 0, 0, 0};
    record(R_START, &a, wide(s));
  }
  return id;
}

static nvtxRangeId_t h_start_ex(const nvtxEventAttributes_v2 *e) {
  nvtxEventAttributes_v2 c;
  START_ID(id, H.chain && H.next_core[TBE__NVTX_CORE_RangeStartEx]
                   ? NEXT(core, TBE__NVTX_CORE_RangeStartEx, tbe__nvtx_start_ex_fn)(for_next(e, &c))
                   : 0);
  if (on()) {
    rec_attr a;
    attrs_of(e, 0, &a);
    a.range_id = id;
    record(R_START, &a, attr_msg(e));
  }
  return id;
}

static void h_end(nvtxRangeId_t id) {
  if (on()) {
    rec_attr a = {0, id, 0, 0, 0, 0};
    record(R_END, &a, ascii(NULL));
  }
  if (H.chain && H.next_core[TBE__NVTX_CORE_RangeEnd])
    NEXT(core, TBE__NVTX_CORE_RangeEnd, tbe__nvtx_end_fn)(id);
}

static void h_mark_a(const char *s) {
  if (on()) record(R_MARK, NULL, ascii(s));
  if (H.chain && H.next_core[TBE__NVTX_CORE_MarkA])
    NEXT(core, TBE__NVTX_CORE_MarkA, tbe__nvtx_mark_a_fn)(s);
}

static void h_mark_w(const wchar_t *s) {
  if (on()) record(R_MARK, NULL, wide(s));
  if (H.chain && H.next_core[TBE__NVTX_CORE_MarkW])
    NEXT(core, TBE__NVTX_CORE_MarkW, tbe__nvtx_mark_w_fn)(s);
}

static void h_mark_ex(const nvtxEventAttributes_v2 *e) {
  if (on()) {
    rec_attr a;
    attrs_of(e, 0, &a);
    record(R_MARK, &a, attr_msg(e));
  }
  if (H.chain && H.next_core[TBE__NVTX_CORE_MarkEx]) {
    nvtxEventAttributes_v2 c;
    NEXT(core, TBE__NVTX_CORE_MarkEx, tbe__nvtx_mark_ex_fn)(for_next(e, &c));
  }
}

static void h_name_thread_a(uint32_t tid, const char *s) {
  if (on()) {
    rec_attr a = {0, 0, tid, 0, 0, 0};
    record(R_NAME, &a, ascii(s));
  }
  if (H.chain && H.next_core[TBE__NVTX_CORE_NameOsThreadA])
    NEXT(core, TBE__NVTX_CORE_NameOsThreadA, tbe__nvtx_name_thread_a_fn)(tid, s);
}

static void h_name_thread_w(uint32_t tid, const wchar_t *s) {
  if (on()) {
    rec_attr a = {0, 0, tid, 0, 0, 0};
    record(R_NAME, &a, wide(s));
  }
  if (H.chain && H.next_core[TBE__NVTX_CORE_NameOsThreadW])
    NEXT(core, TBE__NVTX_CORE_NameOsThreadW, tbe__nvtx_name_thread_w_fn)(tid, s);
}

/* ---- handlers: domains ---- */

static nvtxDomainHandle_t make_domain(msg name, nvtxDomainHandle_t next) {
  dom *d = malloc(sizeof *d);
  if (!d) return next;
  d->magic = DOM_MAGIC;
  d->next = next;
  d->id = 0;
  char *copy = malloc(name.len + 1);
  if (copy) {
    memcpy(copy, name.p, name.len);
    copy[name.len] = '\0';
    pthread_mutex_lock(&H.mu);
    unsigned n = atomic_load(&H.ndom);
    if (n + 1 < TBE__NVTX_NDOM) {
      H.dom_name[n + 1] = copy;
      d->id = n + 1;
      atomic_store_explicit(&H.ndom, n + 1, memory_order_release);
      copy = NULL;
    }
    pthread_mutex_unlock(&H.mu);
    free(copy);
  }
  pthread_mutex_lock(&H.mu);
  d->kept = H.doms;
  H.doms = d;
  pthread_mutex_unlock(&H.mu);
  return (nvtxDomainHandle_t)d;
}

static nvtxDomainHandle_t h_dcreate_a(const char *s) {
  nvtxDomainHandle_t next = NULL;
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainCreateA])
    next = NEXT(core2, TBE__NVTX_CORE2_DomainCreateA, tbe__nvtx_dcreate_a_fn)(s);
  return make_domain(ascii(s), next);
}

static nvtxDomainHandle_t h_dcreate_w(const wchar_t *s) {
  nvtxDomainHandle_t next = NULL;
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainCreateW])
    next = NEXT(core2, TBE__NVTX_CORE2_DomainCreateW, tbe__nvtx_dcreate_w_fn)(s);
  return make_domain(wide(s), next);
}

/* A domain is never freed: its id names it in records not yet read. */
static void h_ddestroy(nvtxDomainHandle_t d) {
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainDestroy])
    NEXT(core2, TBE__NVTX_CORE2_DomainDestroy, tbe__nvtx_ddestroy_fn)(next_dom(d));
}

static tbe__nvtx_string_handle make_reg(msg m, tbe__nvtx_string_handle next) {
  reg *r = malloc(sizeof *r + m.len + 1);
  if (!r) return next;
  r->magic = REG_MAGIC;
  r->len = (uint32_t)m.len;
  r->next = next;
  memcpy(r->text, m.p, m.len);
  r->text[m.len] = '\0';
  pthread_mutex_lock(&H.mu);
  r->kept = H.regs;
  H.regs = r;
  pthread_mutex_unlock(&H.mu);
  return r;
}

static tbe__nvtx_string_handle h_dreg_a(nvtxDomainHandle_t d, const char *s) {
  tbe__nvtx_string_handle next = NULL;
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainRegisterStringA])
    next = NEXT(core2, TBE__NVTX_CORE2_DomainRegisterStringA, tbe__nvtx_dreg_a_fn)(next_dom(d), s);
  return make_reg(ascii(s), next);
}

static tbe__nvtx_string_handle h_dreg_w(nvtxDomainHandle_t d, const wchar_t *s) {
  tbe__nvtx_string_handle next = NULL;
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainRegisterStringW])
    next = NEXT(core2, TBE__NVTX_CORE2_DomainRegisterStringW, tbe__nvtx_dreg_w_fn)(next_dom(d), s);
  return make_reg(wide(s), next);
}

static void h_dmark(nvtxDomainHandle_t d, const nvtxEventAttributes_v2 *e) {
  if (on()) {
    rec_attr a;
    attrs_of(e, dom_id(d), &a);
    record(R_MARK, &a, attr_msg(e));
  }
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainMarkEx]) {
    nvtxEventAttributes_v2 c;
    NEXT(core2, TBE__NVTX_CORE2_DomainMarkEx, tbe__nvtx_dmark_fn)(next_dom(d), for_next(e, &c));
  }
}

static nvtxRangeId_t h_dstart(nvtxDomainHandle_t d, const nvtxEventAttributes_v2 *e) {
  nvtxEventAttributes_v2 c;
  START_ID(id, H.chain && H.next_core2[TBE__NVTX_CORE2_DomainRangeStartEx]
                   ? NEXT(core2, TBE__NVTX_CORE2_DomainRangeStartEx,
                          tbe__nvtx_dstart_fn)(next_dom(d), for_next(e, &c))
                   : 0);
  if (on()) {
    rec_attr a;
    attrs_of(e, dom_id(d), &a);
    a.range_id = id;
    record(R_START, &a, attr_msg(e));
  }
  return id;
}

static void h_dend(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  if (on()) {
    rec_attr a = {0, id, dom_id(d), 0, 0, 0};
    record(R_END, &a, ascii(NULL));
  }
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainRangeEnd])
    NEXT(core2, TBE__NVTX_CORE2_DomainRangeEnd, tbe__nvtx_dend_fn)(next_dom(d), id);
}

static int h_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_v2 *e) {
  if (on()) {
    rec_attr a;
    attrs_of(e, dom_id(d), &a);
    record(R_PUSH, &a, attr_msg(e));
  }
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainRangePushEx]) {
    nvtxEventAttributes_v2 c;
    return NEXT(core2, TBE__NVTX_CORE2_DomainRangePushEx, tbe__nvtx_dpush_fn)(next_dom(d),
                                                                               for_next(e, &c));
  }
  return me_depth++;
}

static int h_dpop(nvtxDomainHandle_t d) {
  if (on()) {
    rec_attr a = {0, 0, dom_id(d), 0, 0, 0};
    record(R_POP, &a, ascii(NULL));
  }
  if (H.chain && H.next_core2[TBE__NVTX_CORE2_DomainRangePop])
    return NEXT(core2, TBE__NVTX_CORE2_DomainRangePop, tbe__nvtx_dpop_fn)(next_dom(d));
  return me_depth > 0 ? --me_depth : -1;
}

/* ---- attaching ---- */

#define FN(f) ((tbe__nvtx_fn)(void (*)(void))(f))

/* The slots of one module: where they are and what they held before
 * libcupti was initialized on them (chaining tells its handlers from
 * NVTX's own initializing stubs, which must never be called back: they
 * would call our handler again). */
typedef struct module {
  tbe__nvtx_table t;
  unsigned n;
  tbe__nvtx_fn before[TBE__NVTX_CORE_SIZE > TBE__NVTX_CORE2_SIZE ? TBE__NVTX_CORE_SIZE
                                                                  : TBE__NVTX_CORE2_SIZE];
} module;

static int module_of(const tbe__nvtx_callbacks *cb, int which, module *m) {
  memset(m, 0, sizeof *m);
  if (!cb->get_module_table(which, &m->t, &m->n) || !m->t) return 0;
  unsigned lim = sizeof m->before / sizeof m->before[0];
  for (unsigned i = 0; i < m->n && i < lim; i++)
    if (m->t[i]) m->before[i] = *m->t[i];
  return 1;
}

/* Installs `fn` at slot `id` of m; with chaining, keeps in *next the
 * handler libcupti put there. */
static void install(const module *m, unsigned id, tbe__nvtx_fn fn, tbe__nvtx_fn *next) {
  if (id >= m->n || !m->t[id]) return;
  tbe__nvtx_fn cur = *m->t[id];
  if (H.chain && cur && cur != fn && cur != m->before[id] && !*next) *next = cur;
  *m->t[id] = fn;
}

int tbe__nvtx_attach(tbe__nvtx_get_export_table get, int (*first)(tbe__nvtx_get_export_table)) {
  if (!get) return 0;
  const tbe__nvtx_callbacks *cb = get(TBE__NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_table) return 0;
  module core, core2;
  if (!module_of(cb, TBE__NVTX_MODULE_CORE, &core)) return 0;
  int have2 = module_of(cb, TBE__NVTX_MODULE_CORE2, &core2);
  if (first && first(get)) H.chain = 1;
  const tbe__nvtx_version_info *vi = get(TBE__NVTX_ETID_VERSIONINFO);
  if (vi && vi->struct_size >= sizeof *vi && vi->set_injection_version) vi->set_injection_version(3);
#define CORE(id, f) install(&core, TBE__NVTX_CORE_##id, FN(f), &H.next_core[TBE__NVTX_CORE_##id])
  CORE(MarkEx, h_mark_ex);
  CORE(MarkA, h_mark_a);
  CORE(MarkW, h_mark_w);
  CORE(RangeStartEx, h_start_ex);
  CORE(RangeStartA, h_start_a);
  CORE(RangeStartW, h_start_w);
  CORE(RangeEnd, h_end);
  CORE(RangePushEx, h_push_ex);
  CORE(RangePushA, h_push_a);
  CORE(RangePushW, h_push_w);
  CORE(RangePop, h_pop);
  CORE(NameOsThreadA, h_name_thread_a);
  CORE(NameOsThreadW, h_name_thread_w);
#undef CORE
  if (have2) {
#define CORE2(id, f) install(&core2, TBE__NVTX_CORE2_##id, FN(f), &H.next_core2[TBE__NVTX_CORE2_##id])
    CORE2(DomainMarkEx, h_dmark);
    CORE2(DomainRangeStartEx, h_dstart);
    CORE2(DomainRangeEnd, h_dend);
    CORE2(DomainRangePushEx, h_dpush);
    CORE2(DomainRangePop, h_dpop);
    CORE2(DomainRegisterStringA, h_dreg_a);
    CORE2(DomainRegisterStringW, h_dreg_w);
    CORE2(DomainCreateA, h_dcreate_a);
    CORE2(DomainCreateW, h_dcreate_w);
    CORE2(DomainDestroy, h_ddestroy);
#undef CORE2
  }
  return 1;
}

/* ---- start, stop, fork ---- */

static void make_key(void) { H.key_ok = pthread_key_create(&H.key, thread_gone) == 0; }

int tbe__nvtx_start(CUptiResult (*now_fn)(uint64_t *ts), void (*wake)(void)) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, make_key);
  if (!H.blocks) {
    void *b = mmap(NULL, (size_t)TBE__NVTX_NBLK * TBE__NVTX_BLOCK, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *t = mmap(NULL, (size_t)TBE__NVTX_NTHR * sizeof(thr), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (b == MAP_FAILED || t == MAP_FAILED) {
      if (b != MAP_FAILED) munmap(b, (size_t)TBE__NVTX_NBLK * TBE__NVTX_BLOCK);
      if (t != MAP_FAILED) munmap(t, (size_t)TBE__NVTX_NTHR * sizeof(thr));
      return TBE_ENOMEM;
    }
    H.blocks = b;
    H.thr = t;
  }
  atomic_store(&H.on, 0);
  atomic_fetch_add(&H.gen, 1);
  for (uint32_t i = 0; i < atomic_load(&H.nthr_hi); i++) atomic_store(&H.thr[i].state, T_FREE);
  atomic_store(&H.nthr_hi, 0);
  pthread_mutex_lock(&H.mu);
  for (uint32_t i = 0; i < TBE__NVTX_NBLK; i++) {
    atomic_store(&H.hdr[i].committed, 0);
    atomic_store(&H.hdr[i].sealed, 0);
    atomic_store(&H.hdr[i].next, -1);
    H.freel[i] = (int32_t)(TBE__NVTX_NBLK - 1 - i);
  }
  atomic_store(&H.nfree, TBE__NVTX_NBLK);
  pthread_mutex_unlock(&H.mu);
  atomic_store(&H.dropped, 0);
  atomic_store(&H.truncated, 0);
  H.records = H.unclosed = H.next_push = 0;
  H.now = now_fn;
  H.wake = wake;
  atomic_store(&H.on, 1);
  return 0;
}

void tbe__nvtx_stop(void) { atomic_store(&H.on, 0); }

int tbe__nvtx_recording(void) { return on(); }

int tbe__nvtx_pressure(void) {
  return H.blocks && atomic_load_explicit(&H.nfree, memory_order_relaxed) < TBE__NVTX_NBLK / 2;
}

void tbe__nvtx_stats(tbe__sp_nvtx_stats *out) {
  out->records = H.records;
  out->dropped = atomic_load(&H.dropped);
  out->truncated = atomic_load(&H.truncated);
  out->unclosed = H.unclosed;
}

void tbe__nvtx_atfork_child(void) {
  atomic_store(&H.on, 0);
  atomic_fetch_add(&H.gen, 1);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  H.mu = fresh;
}

/* ---- the decoder ---- */

#define ITEM(dc, type, var) tbe__spool_item((dc)->batch, type, &(var), sizeof(var))

typedef struct dctx {
  tbe__decoder *dc;
  uint32_t pid;
} dctx;

static uint32_t dom_str(tbe__decoder *dc, uint32_t id) {
  if (!id || id >= TBE__NVTX_NDOM || id > atomic_load_explicit(&H.ndom, memory_order_acquire))
    return 0;
  return tbe__decoder_str(dc, H.dom_name[id]);
}

static void put_marker(dctx *x, const thr *t, uint64_t ts, uint32_t id, uint32_t flags,
                       uint32_t name, uint32_t domain) {
  tbe__sp_marker m;
  memset(&m, 0, sizeof m);
  m.ts = ts > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ts;
  m.id = id;
  m.flags = flags;
  m.obj_kind = TBE__OBJ_THREAD;
  m.obj[0] = x->pid;
  m.obj[1] = t->tid;
  m.name = name;
  m.domain = domain;
  ITEM(x->dc, TBE__SP_MARKER, m);
}

/* MARKER_DATA for attributes that carry anything. */
static void put_data(dctx *x, uint32_t id, const rec_attr *a) {
  if (!a || (!a->color && !a->category && !a->ptype)) return;
  tbe__sp_marker_data d;
  memset(&d, 0, sizeof d);
  d.id = id;
  d.color = a->color;
  d.flags = a->color ? TBE__MK_COLOR_ARGB : 0;
  d.category = a->category;
  d.domain_id = a->domain;
  /* CUPTI's value kinds: 0 double, 1 uint64, 4 int64 (spool.c reads them). */
  uint64_t raw = a->payload;
  switch (a->ptype) {
    case TBE__NVTX_PAYLOAD_U64: d.payload_kind = 1, d.payload = raw; break;
    case TBE__NVTX_PAYLOAD_I64: d.payload_kind = 4, d.payload = raw; break;
    case TBE__NVTX_PAYLOAD_DOUBLE: d.payload_kind = 0, d.payload = raw; break;
    case TBE__NVTX_PAYLOAD_U32: d.payload_kind = 1, d.payload = (uint32_t)raw; break;
    case TBE__NVTX_PAYLOAD_I32: {
      int64_t v = (int32_t)(uint32_t)raw;
      d.payload_kind = 4;
      memcpy(&d.payload, &v, 8);
      break;
    }
    case TBE__NVTX_PAYLOAD_FLOAT: {
      float f;
      uint32_t b = (uint32_t)raw;
      memcpy(&f, &b, 4);
      double v = f;
      d.payload_kind = 0;
      memcpy(&d.payload, &v, 8);
      break;
    }
    default: d.payload_kind = 2; break; /* none: spool.c keeps no payload */
  }
  ITEM(x->dc, TBE__SP_MARKER_DATA, d);
}

static void put_op(dctx *x, const thr *t, uint64_t ts, uint64_t id, uint32_t flags, uint32_t name,
                   uint32_t shapes, int64_t seq, uint32_t ninputs) {
  tbe__sp_op o;
  memset(&o, 0, sizeof o);
  o.ts = ts > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)ts;
  o.id = id;
  o.pid = x->pid;
  o.tid = t->tid;
  o.name = name;
  o.shapes = shapes;
  o.seq = seq;
  o.flags = flags;
  o.ninputs = ninputs;
  ITEM(x->dc, TBE__SP_OP, o);
}

static void do_push(dctx *x, thr *t, const rec *r, const rec_attr *a, const char *text) {
  uint32_t domain = a ? a->domain : 0;
  if (t->depth >= TBE__NVTX_DEPTH) {
    t->deep++;
    return;
  }
  uint64_t id = ++H.next_push;
  tbe__torch_op_text op;
  int is_op = !domain && tbe__torch_nvtx_parse(text, r->len, &op);
  t->stack[t->depth++] = (open_ent){id, domain, (uint32_t)is_op};
  if (is_op) {
    uint32_t name = tbe__decoder_str_n(x->dc, text, op.name_len);
    uint32_t shapes = op.sizes ? tbe__decoder_str_n(x->dc, op.sizes, op.sizes_len) : 0;
    put_op(x, t, r->ts, id, TBE__OPF_BEGIN, name, shapes, op.seq, op.ninputs);
  } else {
    uint32_t mid = (uint32_t)(id << 1);
    put_marker(x, t, r->ts, mid, TBE__MK_START, tbe__decoder_str_n(x->dc, text, r->len),
               dom_str(x->dc, domain));
    put_data(x, mid, a);
  }
}

static void do_pop(dctx *x, thr *t, const rec *r, const rec_attr *a) {
  uint32_t domain = a ? a->domain : 0;
  if (t->deep && (!t->depth || t->stack[t->depth - 1].domain == domain)) {
    t->deep--; /* ends a push the stack had no room for */
    return;
  }
  uint32_t i = t->depth;
  while (i > 0 && t->stack[i - 1].domain != domain) i--;
  if (i == 0) {
    H.unclosed++;
    return;
  }
  open_ent e = t->stack[i - 1];
  memmove(&t->stack[i - 1], &t->stack[i], (t->depth - i) * sizeof *t->stack);
  t->depth--;
  if (e.op)
    put_op(x, t, r->ts, e.id, TBE__OPF_END, 0, 0, -1, 0);
  else
    put_marker(x, t, r->ts, (uint32_t)(e.id << 1), TBE__MK_END, 0, 0);
}

/* Range ids of start/end: odd marker ids, push/pop's even. */
static uint32_t range_mid(uint64_t id) { return (uint32_t)((id << 1) | 1u); }

static void decode_rec(dctx *x, thr *t, const rec *r, const rec_attr *a, const char *text) {
  H.records++;
  switch (r->type) {
    case R_PUSH: do_push(x, t, r, a, text); break;
    case R_POP: do_pop(x, t, r, a); break;
    case R_START:
      if (!a) break;
      put_marker(x, t, r->ts, range_mid(a->range_id), TBE__MK_START,
                 tbe__decoder_str_n(x->dc, text, r->len), dom_str(x->dc, a->domain));
      put_data(x, range_mid(a->range_id), a);
      break;
    case R_END:
      if (a) put_marker(x, t, r->ts, range_mid(a->range_id), TBE__MK_END, 0, 0);
      break;
    case R_MARK: {
      uint32_t mid = (uint32_t)(++H.next_push << 1);
      put_marker(x, t, r->ts, mid, TBE__MK_INSTANT, tbe__decoder_str_n(x->dc, text, r->len),
                 dom_str(x->dc, a ? a->domain : 0));
      put_data(x, mid, a);
      break;
    }
    case R_NAME:
      if (a) {
        tbe__sp_thread_name n = {x->pid, a->domain, tbe__decoder_str_n(x->dc, text, r->len)};
        ITEM(x->dc, TBE__SP_THREAD_NAME, n);
      }
      break;
    default: break;
  }
}

/* Reads [from, to) of block b of thread t; returns the records read. */
static size_t read_span(dctx *x, thr *t, int32_t b, uint32_t from, uint32_t to) {
  const uint8_t *base = block_at(b);
  size_t n = 0;
  while (from + sizeof(rec) <= to) {
    rec r;
    memcpy(&r, base + from, sizeof r);
    uint32_t size = (uint32_t)sizeof r + ((r.flags & F_ATTR) ? (uint32_t)sizeof(rec_attr) : 0);
    if (r.len > TBE__NVTX_MSG_MAX || from + size + r.len > to) break; /* cannot happen */
    rec_attr a;
    if (r.flags & F_ATTR) memcpy(&a, base + from + sizeof r, sizeof a);
    decode_rec(x, t, &r, (r.flags & F_ATTR) ? &a : NULL, (const char *)base + from + size);
    from += (size + r.len + 7u) & ~7u;
    n++;
  }
  return n;
}

size_t tbe__nvtx_drain(tbe__decoder *dc, uint32_t pid) {
  if (!H.blocks) return 0;
  dctx x = {dc, pid};
  size_t n = 0;
  unsigned hi = atomic_load_explicit(&H.nthr_hi, memory_order_acquire);
  for (unsigned i = 0; i < hi; i++) {
    thr *t = &H.thr[i];
    uint32_t st = atomic_load_explicit(&t->state, memory_order_acquire);
    if (st != T_LIVE && st != T_DEAD) continue;
    for (;;) {
      blk_hdr *h = &H.hdr[t->head];
      uint32_t sealed = atomic_load_explicit(&h->sealed, memory_order_acquire);
      uint32_t c = atomic_load_explicit(&h->committed, memory_order_acquire);
      if (c > t->consumed) n += read_span(&x, t, t->head, t->consumed, c);
      t->consumed = c;
      if (!sealed) break;
      int32_t next = atomic_load_explicit(&h->next, memory_order_relaxed);
      if (next < 0 && st != T_DEAD) break; /* sealed by its exit, not yet marked dead */
      int32_t done = t->head;
      if (next < 0) {
        give_block(done);
        atomic_store_explicit(&t->state, T_FREE, memory_order_release);
        break;
      }
      t->head = next;
      t->consumed = 0;
      give_block(done);
    }
  }
  return n;
}
