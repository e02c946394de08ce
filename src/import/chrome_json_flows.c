/* chrome_json_flows.c: the queues of flow ends waiting for their other end.
 *
 * The model side's bookkeeping for s/f flows (chrome_json_kineto.c pairs
 * them).  Flow ends wait in a queue per (id, cat) and side: an end meets the
 * oldest waiting end of the other side with the same id and cat (several
 * may wait: ids repeat in long traces).  Pairs get dense ids from the
 * interner (keyed hash: ids are the file's to choose); queue nodes live in
 * one vector and are reused through a free list, so memory follows the
 * ends waiting plus the distinct pairs.
 * Plain data structures: nothing here reads the input, interns text or
 * calls back into the mapping. */
#include "import/chrome_json_int.h"

static flow_end *flow_node(cj *c, uint32_t ref) {
  return &TBE__VEC_AT(&c->flow_nodes, flow_end, ref - 1);
}

/* The queue of (id, cat) on `side` (1: starts); NULL without memory. */
flow_queue *tbe__cj_flow_queue_of(cj *c, uint64_t id, tbe_str cat, int side) {
  uint8_t key[12];
  memcpy(key, &id, 8);
  memcpy(key + 8, &cat, 4);
  uint32_t pair;
  int added;
  if (tbe__intern_add(&c->flow_keys, key, sizeof key, &pair, &added)) return NULL;
  if (added && tbe__vec_resize(&c->flow_q, ((size_t)pair + 1) * 2)) return NULL;
  return &TBE__VEC_AT(&c->flow_q, flow_queue, (size_t)pair * 2 + (size_t)side);
}

/* Appends a copy of `f` to queue `q`.  0 or TBE_ENOMEM. */
int tbe__cj_flow_wait(cj *c, flow_queue *q, const flow_end *f) {
  uint32_t ref = c->flow_free;
  if (ref) {
    c->flow_free = flow_node(c, ref)->next;
  } else {
    if (c->flow_nodes.n >= UINT32_MAX - 1 || !TBE__VEC_PUSH(&c->flow_nodes, flow_end))
      return TBE_ENOMEM;
    ref = (uint32_t)c->flow_nodes.n;
  }
  flow_end *n = flow_node(c, ref);
  *n = *f;
  n->next = 0;
  if (q->tail) flow_node(c, q->tail)->next = ref;
  else q->head = ref;
  q->tail = ref;
  c->nflows_live++;
  return 0;
}

/* Takes the oldest end of queue `q` (not empty) into *f. */
void tbe__cj_flow_take(cj *c, flow_queue *q, flow_end *f) {
  uint32_t ref = q->head;
  flow_end *n = flow_node(c, ref);
  *f = *n;
  q->head = n->next;
  if (!q->head) q->tail = 0;
  n->next = c->flow_free;
  c->flow_free = ref;
  c->nflows_live--;
}
