/* MPI ranks across machines (docs/cycle-model.md, "Ranks"). Under `mpirun -np R` every rank
 * loads the same plan and inputs, so it holds the whole simulator; it steps one band of
 * sim_threads.c's split (the same band code, records and commit) and exchanges with the ranks
 * of the bands above and below what crosses its edges. Every result is byte-identical to one
 * process. Per cycle:
 *
 *  - After the PE phase: the events go to rank 0, which replays them in key order (the
 *    trace); the first run-time error in key order is agreed (rank 0 says it); every rank's
 *    record keys go to every rank. Keys only ever order things, so a record's new key is
 *    base + its place in the merged order of all ranks' records: each rank finds the same
 *    order as one thread's consecutive keys without asking the owner of a router whether the
 *    record made it join the list.
 *  - Before the router phase: for each buffer across an edge that is full, both ranks trade
 *    their router's key (the meeting points). When the producer comes later in key order
 *    than the consumer, the producer's rank waits, at the producer's place, for the
 *    consumer's rank to say (once past the consumer) whether it popped the buffer. The other
 *    way round nobody waits: the producer's rank keeps its own copy of the buffer's fill and
 *    learns of the pop at the commit, after its own step, as one thread would order them.
 *  - After the router phase: pushes into the neighbour's routers and pops of buffers the
 *    neighbour fills go to that neighbour; keys as above.
 *  - After the cycle: the sums the run loop decides on, in one reduction.
 *  - At the end: every rank's PEs, routers and statistics go to rank 0, which then holds the
 *    state one process would (reports, outputs, deadlock messages read it there). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sim_band.h"
#include "waferc/diag.h"

static int g_rank, g_size = 1, g_init;

int wf_sim_mpi_init(int *argc, char ***argv) {
  /* Only under a launcher: a plain run never pays for MPI_Init. */
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK")) return 0;
  /* A rank waiting for another yields its core (unless told otherwise): on a shared machine
   * the rank it waits for may need that core. */
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  MPI_Init(argc, argv);
  g_init = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  return g_rank;
}

int wf_sim_mpi_ranks(void) { return g_size; }
int wf_sim_mpi_rank(void) { return g_rank; }

void wf_sim_mpi_share(wf_tensor *t) {
  if (!g_init || g_size < 2 || !t) return;
  size_t n = wf_tensor_bytes(t), chunk = (size_t)1 << 30;
  for (size_t off = 0; off < n; off += chunk)
    MPI_Bcast((char *)t->data + off, (int)(n - off < chunk ? n - off : chunk), MPI_BYTE, 0, MPI_COMM_WORLD);
}

void wf_sim_mpi_finalize(void) {
  if (g_init) MPI_Finalize();
  g_init = 0;
}

enum { TAG_KEYS = 1, TAG_MEET, TAG_RECS, TAG_ERR, TAG_STATE };

/* A phase header's fields (headers()), per rank in mpi_run.hdr. */
enum { H_RECS, H_ERR, H_EVS, H_UP, H_DOWN, H_N };
#define HDR(M, r, f) ((M)->hdr[(size_t)(r) * H_N + (f)])

/* A record on the wire: the router by its cell index instead of a pointer. */
typedef struct wire_rec {
  int64_t key, nkey;
  wf_wv w;
  int32_t cell;
  uint8_t kind, lc, rx, pad_;
} wire_rec;

/* A buffer across an edge, in the order both ranks list them. */
typedef struct edge_fifo {
  wf_fifo *f;
  wf_router *prod, *cons;
} edge_fifo;

typedef struct edge {
  int rank;                        /* the neighbour's rank, -1 without one */
  edge_fifo *fifos;
  int n_fifos;
  int *full, n_full;               /* those full when the router phase starts */
  int64_t *kmine, *ktheirs;        /* per full buffer: the keys of the two routers (-1: none) */
  int8_t *got;                     /* WAIT: whether the consumer popped (-1: not said yet) */
  int32_t *note;                   /* NOTIFY: what was said, per full buffer */
  MPI_Request *req;
  int n_req;
  wire_rec *out, *in;
  int n_out, cap_out, cap_in;
  int64_t n_in;                    /* records in */
} edge;

typedef struct mpi_run {
  int me, R;                       /* this rank, and the ranks with a band */
  MPI_Comm comm;                   /* those ranks */
  edge e[2];                       /* the band above, the band below */
  int ev;                          /* events are recorded (rank 0 observes them) */
  int64_t *hdr;                    /* [R][H_N]: the phase headers */
  int64_t *gkeys;
  int cap_gkeys;
  int *counts, *displs;
  char *why;                       /* a deadlock, said once rank 0 holds the state */
  MPI_Op sums;
  /* WF_SIM_THREAD_STATS: host seconds stepping the band and exchanging, cycles run */
  double step, talk;
  int64_t cycles, recs;            /* recs: every rank's records, summed over the commits */
} mpi_run;

static double host_seconds(void) { return MPI_Wtime(); }


static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  WF_ASSERT(p != NULL);
  return p;
}

/* ---- the buffers across an edge --------------------------------------------------------- */

static void edge_add(edge *e, wf_fifo *f, wf_router *prod, wf_router *cons) {
  e->fifos = xrealloc(e->fifos, (size_t)(e->n_fifos + 1) * sizeof *e->fifos);
  e->fifos[e->n_fifos++] = (edge_fifo){f, prod, cons};
}

/* Every buffer between rows ya and ya + 1 (the same list on both ranks). */
static void edge_setup(wf_sim *s, edge *e, int rank, int ya) {
  memset(e, 0, sizeof *e);
  e->rank = rank;
  if (rank < 0) return;
  for (int x = 0; x < s->w; x++) {
    wf_router *u = s->routers[(size_t)ya * s->w + x], *d = s->routers[(size_t)(ya + 1) * s->w + x];
    if (!u || !d) continue;
    for (int c = 0; c < u->nlc; c++)
      if (wf_router_out(u, c, WF_DIR_S)) edge_add(e, wf_router_out(u, c, WF_DIR_S), u, d);
    for (int c = 0; c < d->nlc; c++)
      if (wf_router_out(d, c, WF_DIR_N)) edge_add(e, wf_router_out(d, c, WF_DIR_N), d, u);
  }
  size_t n = (size_t)e->n_fifos + 1;
  e->full = calloc(n, sizeof *e->full);
  e->kmine = calloc(n, sizeof *e->kmine);
  e->ktheirs = calloc(n, sizeof *e->ktheirs);
  e->got = calloc(n, sizeof *e->got);
  e->note = calloc(2 * n, sizeof *e->note);
  e->req = calloc(n, sizeof *e->req);
  WF_ASSERT(e->full && e->kmine && e->ktheirs && e->got && e->note && e->req);
}

static void edge_free(edge *e) {
  free(e->fifos);
  free(e->full);
  free(e->kmine);
  free(e->ktheirs);
  free(e->got);
  free(e->note);
  free(e->req);
  free(e->out);
  free(e->in);
}

static int mine(const wf_threads *T, const wf_router *r) { return T->row_band[r->y] == T->me; }

static int by_at_kind(const void *a, const void *b) {
  const point *x = a, *y = b;
  if (x->at != y->at) return (x->at > y->at) - (x->at < y->at);
  return (x->kind == PT_WAIT) - (y->kind == PT_WAIT); /* say before waiting at one place */
}

/* The meeting points of this cycle's router phase (sim_band.h): both ranks list the full
 * buffers of their edge alike, trade their routers' keys, and keep those where the producer
 * comes later. */
static void find_points(wf_threads *T, mpi_run *M) {
  wf_band *b = T->b[M->me];
  wf_sim *s = T->s;
  b->n_pts = 0;
  for (int side = 0; side < 2; side++) {
    edge *e = &M->e[side];
    e->n_full = 0;
    e->n_req = 0;
    if (e->rank < 0) continue;
    for (int i = 0; i < e->n_fifos; i++)
      if (e->fifos[i].f->count >= s->depth) e->full[e->n_full++] = i;
    if (!e->n_full) continue;
    for (int k = 0; k < e->n_full; k++) {
      const edge_fifo *ef = &e->fifos[e->full[k]];
      const wf_router *r = mine(T, ef->prod) ? ef->prod : ef->cons;
      e->kmine[k] = r->active ? r->key : -1;
    }
    MPI_Sendrecv(e->kmine, e->n_full, MPI_INT64_T, e->rank, TAG_KEYS, e->ktheirs, e->n_full, MPI_INT64_T,
                 e->rank, TAG_KEYS, M->comm, MPI_STATUS_IGNORE);
    for (int k = 0; k < e->n_full; k++) {
      const edge_fifo *ef = &e->fifos[e->full[k]];
      int pm = mine(T, ef->prod);
      int64_t kp = pm ? e->kmine[k] : e->ktheirs[k], kc = pm ? e->ktheirs[k] : e->kmine[k];
      e->got[k] = -1;
      if (kp < 0 || kc < 0 || kp < kc) continue;
      if (b->n_pts == b->cap_pts) b->pts = wf_band_grow(b->pts, &b->cap_pts, sizeof *b->pts);
      point *pt = &b->pts[b->n_pts++];
      memset(pt, 0, sizeof *pt);
      pt->kind = pm ? PT_WAIT : PT_NOTIFY;
      pt->at = pm ? kp : kc + 1; /* NOTIFY: once every key up to the consumer's is stepped */
      pt->need = kc;
      pt->prod = ef->prod;
      pt->f = ef->f;
      pt->fs = ef->f->full_seen;
      pt->id = 2 * k + side;
    }
  }
  if (b->n_pts > 1) qsort(b->pts, (size_t)b->n_pts, sizeof *b->pts, by_at_kind);
}

static void meet(wf_band *b, point *pt) {
  mpi_run *M = b->sim.thr->mpi;
  edge *e = &M->e[pt->id & 1];
  int k = pt->id >> 1;
  wf_sim *s = &b->sim;
  b->n_points++;
  if (pt->kind == PT_NOTIFY) { /* only the consumer pops it, at most once a cycle */
    pt->said = 1;
    e->note[2 * k] = k;
    e->note[2 * k + 1] = pt->f->count < s->depth;
    MPI_Isend(&e->note[2 * k], 2, MPI_INT32_T, e->rank, TAG_MEET, M->comm, &e->req[e->n_req++]);
    return;
  }
  if (e->got[k] < 0) {
    double t0 = host_seconds();
    b->n_waits++;
    while (e->got[k] < 0) {
      int32_t m[2];
      MPI_Recv(m, 2, MPI_INT32_T, e->rank, TAG_MEET, M->comm, MPI_STATUS_IGNORE);
      e->got[m[0]] = (int8_t)m[1];
    }
    b->wait += host_seconds() - t0;
  }
  if (e->got[k]) { /* the pop came first: the producer sees it, and wakes if it slept on it */
    pt->f->count--;
    wf_sim_drained(s, pt->f, pt->prod);
  }
}

/* ---- the commits ------------------------------------------------------------------------ */

/* Every rank's phase header to every rank: its records, its first error's key, its events,
 * and the records it sends to the rank above and below (so that nobody asks for sizes). */
static void headers(wf_threads *T, mpi_run *M) {
  wf_band *b = T->b[M->me];
  int64_t h[H_N] = {b->n_recs, b->err_msg ? b->err_key : INT64_MAX, M->ev ? b->n_evs : 0, M->e[0].n_out,
                    M->e[1].n_out};
  MPI_Allgather(h, H_N, MPI_INT64_T, M->hdr, H_N, MPI_INT64_T, M->comm);
}

static char *recv_string(const mpi_run *M, int from) {
  MPI_Status st;
  int n = 0;
  MPI_Probe(from, TAG_ERR, M->comm, &st);
  MPI_Get_count(&st, MPI_CHAR, &n);
  char *p = xrealloc(NULL, (size_t)n + 1);
  MPI_Recv(p, n, MPI_CHAR, from, TAG_ERR, M->comm, MPI_STATUS_IGNORE);
  p[n] = 0;
  return p;
}

/* The first run-time error of the phase in key order, over every rank: rank 0 says it (after
 * the events before it, when `replay`); -1 on every rank if there is one. */
static int agree_error(wf_threads *T, mpi_run *M, int replay) {
  int owner = -1;
  for (int r = 0; r < M->R; r++)
    if (HDR(M, r, H_ERR) != INT64_MAX && (owner < 0 || HDR(M, r, H_ERR) < HDR(M, owner, H_ERR))) owner = r;
  if (owner < 0) return 0;
  wf_band *b = T->b[owner];
  if (owner == M->me && M->me) {
    MPI_Send(b->err_where, (int)strlen(b->err_where), MPI_CHAR, 0, TAG_ERR, M->comm);
    MPI_Send(b->err_msg, (int)strlen(b->err_msg), MPI_CHAR, 0, TAG_ERR, M->comm);
  }
  if (M->me) {
    T->s->failed = 1;
    return -1;
  }
  if (owner) {
    b->err_where = recv_string(M, owner);
    b->err_msg = recv_string(M, owner);
    b->err_key = HDR(M, owner, H_ERR);
  }
  return wf_threads_failed(T, replay);
}

/* The PE phase's events of every rank to rank 0, into the bands they came from (the
 * pointers an event holds are rank 0's own again). */
static void gather_events(wf_threads *T, mpi_run *M) {
  int64_t others = 0;
  for (int r = 1; r < M->R; r++) others += HDR(M, r, H_EVS);
  if (!M->ev || !others) return;
  wf_band *b = T->b[M->me];
  if (M->me) {
    MPI_Gatherv(b->evs, (int)(b->n_evs * (int)sizeof *b->evs), MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, 0,
                M->comm);
    b->n_evs = 0;
    return;
  }
  int64_t at = 0;
  for (int r = 0; r < M->R; r++) {
    M->counts[r] = r ? (int)(HDR(M, r, H_EVS) * (int64_t)sizeof(evrec)) : 0;
    M->displs[r] = (int)at;
    at += M->counts[r];
  }
  evrec *all = xrealloc(NULL, (size_t)at);
  MPI_Gatherv(NULL, 0, MPI_BYTE, all, M->counts, M->displs, MPI_BYTE, 0, M->comm);
  const wf_plan *plan = T->s->plan;
  for (int r = 1, i = 0; r < M->R; r++) {
    wf_band *o = T->b[r];
    o->n_evs = 0;
    for (int64_t k = 0; k < HDR(M, r, H_EVS); k++, i++) {
      if (o->n_evs == o->cap_evs) o->evs = wf_band_grow(o->evs, &o->cap_evs, sizeof *o->evs);
      evrec *x = &o->evs[o->n_evs++];
      *x = all[i];
      const wf_pe_class *c = plan->classes[x->ev.cls];
      x->ev.task_name = x->ev.task >= 0 ? c->tasks[x->ev.task].name : "";
      x->ev.instr = x->ev.pc >= 0 ? &c->code[x->ev.pc] : NULL;
    }
  }
  free(all);
}

static int by_key(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Each record of this rank gets the key it would hand out: base + its place among every
 * rank's records in key order (keys of different ranks' steppers never tie). Returns the
 * base of the next commit. */
static int64_t stamp(wf_threads *T, mpi_run *M) {
  wf_sim *s = T->s;
  wf_band *b = T->b[M->me];
  int64_t base = s->next_key > s->next_rt_key ? s->next_key : s->next_rt_key, total = 0;
  int with = 0;
  for (int r = 0; r < M->R; r++) {
    M->counts[r] = (int)HDR(M, r, H_RECS);
    M->displs[r] = (int)total;
    total += HDR(M, r, H_RECS);
    with += HDR(M, r, H_RECS) > 0;
  }
  M->recs += total;
  if (with <= 1) { /* one rank's records alone: their places are theirs */
    for (int i = 0; i < b->n_recs; i++) b->nkey[i] = base + i;
    return base + total;
  }
  if (total > M->cap_gkeys) {
    M->cap_gkeys = (int)total;
    M->gkeys = xrealloc(M->gkeys, (size_t)total * sizeof *M->gkeys);
  }
  int64_t *own = xrealloc(NULL, (size_t)b->n_recs * sizeof *own);
  for (int i = 0; i < b->n_recs; i++) own[i] = b->recs[i].key;
  MPI_Allgatherv(own, b->n_recs, MPI_INT64_T, M->gkeys, M->counts, M->displs, MPI_INT64_T, M->comm);
  free(own);
  /* The other ranks' keys in one sorted list (this rank's are where its own go: cut out). */
  int64_t *g = M->gkeys, n_other = total - b->n_recs;
  memmove(g + M->displs[M->me], g + M->displs[M->me] + b->n_recs,
          (size_t)(total - M->displs[M->me] - b->n_recs) * sizeof *g);
  qsort(g, (size_t)n_other, sizeof *g, by_key);
  for (int i = 0; i < b->n_recs; i++) {
    int64_t k = b->recs[i].key, lo = 0, hi = n_other;
    while (lo < hi) { /* the other ranks' keys below k */
      int64_t mid = (lo + hi) / 2;
      if (g[mid] < k) lo = mid + 1;
      else hi = mid;
    }
    b->nkey[i] = base + i + lo;
  }
  return base + total;
}

static void rec_in(wf_band *o, const wire_rec *w, wf_sim *s) {
  if (o->n_recs == o->cap_recs) {
    int cap = o->cap_recs;
    o->recs = wf_band_grow(o->recs, &o->cap_recs, sizeof *o->recs);
    o->nkey = wf_band_grow(o->nkey, &cap, sizeof *o->nkey);
  }
  rec *x = &o->recs[o->n_recs];
  o->nkey[o->n_recs++] = w->nkey;
  x->key = w->key;
  x->obj = s->routers[w->cell];
  x->w = w->w;
  x->kind = w->kind;
  x->lc = w->lc;
  x->rx = w->rx;
}

/* nkey holds the record's index in this band's list until stamp() has run. */
static void edge_out(edge *e, const rec *x, int i, const wf_router *r, int w) {
  if (e->n_out == e->cap_out) {
    e->cap_out = e->cap_out ? 2 * e->cap_out : 64;
    e->out = xrealloc(e->out, (size_t)e->cap_out * sizeof *e->out);
  }
  e->out[e->n_out++] = (wire_rec){x->key, i, x->w, (int32_t)((int64_t)r->y * w + r->x), x->kind, x->lc, x->rx, 0};
}

/* The router phase's records that cross an edge, for the neighbour: pushes into its
 * routers, and pops of buffers it fills (before the header, which says how many). */
static void pack_out(wf_threads *T, mpi_run *M) {
  wf_band *b = T->b[M->me];
  M->e[0].n_out = M->e[1].n_out = 0;
  for (int i = 0; i < b->n_recs; i++) {
    const rec *x = &b->recs[i];
    const wf_router *r = x->obj, *other = NULL;
    if (x->kind == REC_PUSH && !mine(T, r)) other = r;
    else if (x->kind == REC_POP) other = r->nb[x->rx];
    if (other) edge_out(&M->e[other->y < b->sim.y0 ? 0 : 1], x, i, r, T->s->w);
  }
}

/* The records of pack_out go to the neighbours with their keys; received ones join the
 * neighbour's band here, so that the commit merges them with this band's by key. */
static void exchange(wf_threads *T, mpi_run *M) {
  wf_band *b = T->b[M->me];
  wf_sim *s = T->s;
  MPI_Request req[4];
  int nr = 0;
  for (int side = 0; side < 2; side++) {
    edge *e = &M->e[side];
    if (e->rank < 0) continue;
    for (int k = 0; k < e->n_out; k++) e->out[k].nkey = b->nkey[e->out[k].nkey];
    e->n_in = HDR(M, e->rank, side ? H_UP : H_DOWN); /* what the neighbour sends this way */
    if (e->n_in > e->cap_in) {
      e->cap_in = (int)e->n_in;
      e->in = xrealloc(e->in, (size_t)e->cap_in * sizeof *e->in);
    }
    if (e->n_in)
      MPI_Irecv(e->in, (int)(e->n_in * (int64_t)sizeof *e->in), MPI_BYTE, e->rank, TAG_RECS, M->comm,
                &req[nr++]);
    if (e->n_out)
      MPI_Isend(e->out, (int)(e->n_out * (int64_t)sizeof *e->out), MPI_BYTE, e->rank, TAG_RECS, M->comm,
                &req[nr++]);
  }
  MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
  for (int side = 0; side < 2; side++) {
    edge *e = &M->e[side];
    if (e->rank < 0) continue;
    wf_band *o = T->b[e->rank];
    o->n_recs = 0;
    for (int64_t k = 0; k < e->n_in; k++) rec_in(o, &e->in[k], s);
  }
}

static void commit(wf_threads *T, mpi_run *M, int cross) {
  int64_t next = stamp(T, M);
  if (cross) exchange(T, M);
  wf_threads_commit(T);
  T->s->next_key = T->s->next_rt_key = next;
}

static int after_pe(wf_threads *T, mpi_run *M) {
  M->e[0].n_out = M->e[1].n_out = 0; /* a PE touches only its own router */
  headers(T, M);
  gather_events(T, M);
  if (agree_error(T, M, 1)) return -1;
  if (M->ev && !M->me) wf_threads_replay_events(T, INT64_MAX);
  T->b[M->me]->n_evs = 0;
  commit(T, M, 0); /* a PE touches only its own router: nothing crosses an edge */
  return 0;
}

static int after_rt(wf_threads *T, mpi_run *M) {
  for (int k = 0; k < T->nb; k++) T->b[k]->sim.rt_cur_key = INT64_MAX;
  pack_out(T, M);
  headers(T, M);
  if (agree_error(T, M, 0)) return -1;
  commit(T, M, 1);
  return 0;
}

/* ---- the band ops (sim_band.h) ---------------------------------------------------------- */

/* One cycle of this rank's band; the time between its steps is the exchange's (a wait at a
 * meeting point counts as stepping: b->wait has it). */
static int cycle(wf_threads *T) {
  mpi_run *M = T->mpi;
  wf_band *b = T->b[M->me];
  double t0 = host_seconds();
  wf_band_pe_phase(b);
  double t1 = host_seconds();
  int rc = after_pe(T, M);
  double t2 = host_seconds();
  M->cycles++;
  M->step += t1 - t0;
  M->talk += t2 - t1;
  if (rc) return -1;
  find_points(T, M);
  double t3 = host_seconds();
  wf_band_rt_phase(b);
  for (int i = 0; i < b->n_pts; i++) /* a run-time error stopped the phase: nobody waits */
    if (b->pts[i].kind == PT_NOTIFY && !b->pts[i].said) meet(b, &b->pts[i]);
  double t4 = host_seconds();
  for (int side = 0; side < 2; side++) MPI_Waitall(M->e[side].n_req, M->e[side].req, MPI_STATUSES_IGNORE);
  rc = after_rt(T, M);
  double t5 = host_seconds();
  if (!rc) wf_sim_compact(&b->sim, &b->j, b->n, b->n_slept, b->n_emptied);
  M->step += t4 - t3 + host_seconds() - t5;
  M->talk += t3 - t2 + t5 - t4;
  return rc;
}

enum { S_PE, S_RT, S_TIMERS, S_SLEEP, S_SOFT, S_PROGRESS, S_EXPIRED, S_ALLCOMP, S_NEXT, S_N };

/* The reduction of the sums: counts add, flags take the maximum, the jump the minimum. */
static void sums_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  const int64_t *a = in;
  int64_t *b = inout;
  for (int i = 0; i + S_N <= *len; i += S_N, a += S_N, b += S_N) {
    for (int k = S_PE; k <= S_SOFT; k++) b[k] += a[k];
    for (int k = S_PROGRESS; k <= S_EXPIRED; k++) b[k] = a[k] > b[k] ? a[k] : b[k];
    for (int k = S_ALLCOMP; k <= S_NEXT; k++) b[k] = a[k] < b[k] ? a[k] : b[k];
  }
}

static void totals(wf_threads *T, wf_totals *t, int expired) {
  mpi_run *M = T->mpi;
  double t0 = host_seconds();
  wf_band *b = T->b[M->me];
  wf_sim *bs = &b->sim;
  int64_t v[S_N] = {bs->n_act_pe, bs->n_act_rt, bs->n_timers, bs->n_rt_sleep, bs->n_soft, bs->progress, expired,
                    b->j.all_compute, b->j.next_busy};
  int64_t r[S_N];
  MPI_Allreduce(v, r, S_N, MPI_INT64_T, M->sums, M->comm);
  *t = (wf_totals){r[S_PE], r[S_RT], r[S_TIMERS], r[S_SLEEP], r[S_SOFT], (int)r[S_PROGRESS], (int)r[S_EXPIRED],
                   {(int)r[S_ALLCOMP], r[S_NEXT]}};
  M->talk += host_seconds() - t0;
}

static void deadlock(wf_threads *T, const char *why) {
  mpi_run *M = T->mpi;
  free(M->why);
  M->why = strdup(why);
  WF_ASSERT(M->why != NULL);
}

static const wf_band_ops mpi_ops = {totals, cycle, deadlock, meet};

/* ---- the end: every rank's state to rank 0 ---------------------------------------------- */

typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *x, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = xrealloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, x, n);
  b->n += n;
}

static void get(const char **at, void *x, size_t n) {
  memcpy(x, *at, n);
  *at += n;
}

static int32_t pc_of(const wf_pe *p, const wf_stream *st) { return st->in ? (int32_t)(st->in - p->cls->code) : -1; }

/* A PE: the struct (its pointers are made rank 0's again), its streams' instructions by
 * index, its queues' fill, and its memory. */
static void put_pe(buf *b, const wf_sim *s, const wf_pe *p) {
  put(b, p, sizeof *p);
  int32_t pc[1 + WF_SIM_ASYNC] = {pc_of(p, &p->cur)};
  for (int k = 0; k < WF_SIM_ASYNC; k++) pc[1 + k] = pc_of(p, &p->as[k]);
  put(b, pc, sizeof pc);
  put(b, p->q, (size_t)s->ci[p->cls_i].nlc * sizeof *p->q);
  uint8_t has = p->mem != NULL;
  put(b, &has, 1);
  if (has) put(b, p->mem, ((size_t)((p->cls->mem_bytes + 3) / 4) + 1) * sizeof(float));
}

static void get_pe(const char **at, const wf_sim *s, wf_pe *p) {
  wf_pe keep = *p;
  get(at, p, sizeof *p);
  p->rt = keep.rt;
  p->cls = keep.cls;
  p->q = keep.q;
  p->rrc = keep.rrc;
  p->mem = keep.mem;
  p->skip = keep.skip;
  p->env.sets = keep.env.sets;
  int32_t pc[1 + WF_SIM_ASYNC];
  get(at, pc, sizeof pc);
  p->cur.in = pc[0] >= 0 ? &p->cls->code[pc[0]] : NULL;
  for (int k = 0; k < WF_SIM_ASYNC; k++) p->as[k].in = pc[1 + k] >= 0 ? &p->cls->code[pc[1 + k]] : NULL;
  for (int c = 0; c < s->ci[p->cls_i].nlc; c++) {
    wf_fifo q;
    get(at, &q, sizeof q);
    p->q[c].head = q.head;
    p->q[c].count = q.count;
    p->q[c].full_seen = q.full_seen;
  }
  uint8_t has;
  get(at, &has, 1);
  if (!has) return;
  size_t words = (size_t)((p->cls->mem_bytes + 3) / 4) + 1;
  if (!p->mem) p->mem = calloc(words, sizeof(float)); /* counted by the rank that stepped it */
  WF_ASSERT(p->mem != NULL);
  get(at, p->mem, words * sizeof(float));
}

/* A router: the struct and, per color, its switch position and its buffers' fill. */
static void put_router(buf *b, const wf_router *r) {
  put(b, r, sizeof *r);
  for (int c = 0; c < r->nlc; c++) {
    put(b, &r->rc[c].pos, 1);
    put(b, r->rc[c].in, sizeof r->rc[c].in);
  }
}

static void get_router(const char **at, wf_router *r) {
  wf_router keep = *r;
  get(at, r, sizeof *r);
  r->rc = keep.rc;
  r->pe = keep.pe;
  memcpy(r->nb, keep.nb, sizeof r->nb);
  for (int c = 0; c < r->nlc; c++) {
    wf_fifo in[WF_DIR_COUNT];
    get(at, &r->rc[c].pos, 1);
    get(at, in, sizeof in);
    for (int d = 0; d < WF_DIR_COUNT; d++) {
      r->rc[c].in[d].head = in[d].head;
      r->rc[c].in[d].count = in[d].count;
      r->rc[c].in[d].full_seen = in[d].full_seen;
    }
  }
}

static void put_band(buf *b, const wf_sim *s, const wf_sim *bs) {
  put(b, &bs->mem_bytes, sizeof bs->mem_bytes);
  put(b, &bs->rt_skipped, sizeof bs->rt_skipped);
  put(b, bs->ops, (size_t)(s->plan->n_ops + 1) * sizeof *bs->ops);
  put(b, bs->colls, (size_t)s->plan->n_colls * sizeof *bs->colls);
  for (size_t i = (size_t)bs->y0 * s->w; i < (size_t)bs->y1 * s->w; i++) {
    if (s->pes[i]) put_pe(b, s, s->pes[i]);
    if (s->routers[i]) put_router(b, s->routers[i]);
  }
}

static void get_band(const char *at, wf_sim *s, wf_sim *bs) {
  get(&at, &bs->mem_bytes, sizeof bs->mem_bytes);
  get(&at, &bs->rt_skipped, sizeof bs->rt_skipped);
  get(&at, bs->ops, (size_t)(s->plan->n_ops + 1) * sizeof *bs->ops);
  get(&at, bs->colls, (size_t)s->plan->n_colls * sizeof *bs->colls);
  for (size_t i = (size_t)bs->y0 * s->w; i < (size_t)bs->y1 * s->w; i++) {
    if (s->pes[i]) get_pe(&at, s, s->pes[i]);
    if (s->routers[i]) get_router(&at, s->routers[i]);
  }
}

/* Rank 0 ends holding every band's PEs, routers and statistics. */
static void gather_state(wf_threads *T, mpi_run *M) {
  wf_sim *s = T->s;
  if (M->me) {
    buf b = {0};
    put_band(&b, s, &T->b[M->me]->sim);
    WF_ASSERT(b.n < (size_t)INT32_MAX);
    MPI_Send(b.p, (int)b.n, MPI_BYTE, 0, TAG_STATE, M->comm);
    free(b.p);
    return;
  }
  for (int r = 1; r < M->R; r++) {
    MPI_Status st;
    int n = 0;
    MPI_Probe(r, TAG_STATE, M->comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    char *p = xrealloc(NULL, (size_t)n);
    MPI_Recv(p, n, MPI_BYTE, r, TAG_STATE, M->comm, MPI_STATUS_IGNORE);
    get_band(p, s, &T->b[r]->sim);
    free(p);
  }
  wf_threads_gather(T);
}

/* WF_SIM_THREAD_STATS=1: where each rank's host time went (for BENCHMARKS.md, never in a
 * result), said by rank 0. */
static void print_stats(wf_threads *T, mpi_run *M, double wall) {
  wf_band *b = T->b[M->me];
  double v[6] = {wall, M->step, M->talk, b->wait, (double)b->n_waits, (double)b->n_points};
  double *all = M->me ? NULL : calloc((size_t)M->R * 6, sizeof *all);
  MPI_Gather(v, 6, MPI_DOUBLE, all, 6, MPI_DOUBLE, 0, M->comm);
  if (M->me) return;
  fprintf(stderr, "ranks: %d bands, %lld cycles, %.1f records a cycle\n", M->R, (long long)M->cycles,
          M->cycles ? (double)M->recs / (double)M->cycles : 0.0);
  for (int r = 0; r < M->R; r++) {
    const double *x = all + 6 * r;
    fprintf(stderr,
            "  rank %d rows %d..%d: %.3f s in the run loop, %.3f s stepping (%.3f s at %.0f of %.0f meeting "
            "points), %.3f s exchanging: %.2f us a cycle\n",
            r, T->b[r]->sim.y0, T->b[r]->sim.y1 - 1, x[0], x[1], x[3], x[4], x[5], x[2],
            M->cycles ? 1e6 * x[2] / (double)M->cycles : 0.0);
  }
  free(all);
}

/* ---- the run ---------------------------------------------------------------------------- */

static mpi_run *mpi_setup(wf_threads *T, MPI_Comm comm) {
  wf_sim *s = T->s;
  mpi_run *M = calloc(1, sizeof *M);
  WF_ASSERT(M != NULL);
  M->comm = comm;
  M->me = g_rank;
  M->R = T->nb;
  M->hdr = calloc((size_t)M->R * H_N, sizeof *M->hdr);
  M->counts = calloc((size_t)M->R, sizeof *M->counts);
  M->displs = calloc((size_t)M->R, sizeof *M->displs);
  WF_ASSERT(M->hdr && M->counts && M->displs);
  wf_sim *bs = &T->b[M->me]->sim;
  edge_setup(s, &M->e[0], M->me ? M->me - 1 : -1, bs->y0 - 1);
  edge_setup(s, &M->e[1], M->me + 1 < M->R ? M->me + 1 : -1, bs->y1 - 1);
  /* Events are recorded where rank 0 observes them (a trace, a progress line). */
  M->ev = s->ev_fn != NULL;
  MPI_Bcast(&M->ev, 1, MPI_INT, 0, M->comm);
  for (int k = 0; k < T->nb; k++) T->b[k]->sim.ev_fn = k == M->me && M->ev ? wf_band_event : NULL;
  MPI_Op_create(sums_op, 1, &M->sums);
  T->mpi = M;
  T->me = M->me;
  T->ops = &mpi_ops;
  return M;
}

static void mpi_free(mpi_run *M) {
  edge_free(&M->e[0]);
  edge_free(&M->e[1]);
  MPI_Op_free(&M->sums);
  free(M->hdr);
  free(M->gkeys);
  free(M->counts);
  free(M->displs);
  free(M->why);
  free(M);
}

/* One band per rank, at most one per row: the ranks beyond wait for rank 0's exit code. With
 * one band, rank 0 runs the plan as one process would. */
int wf_sim_run_mpi(wf_sim *s) {
  WF_ASSERT(!s->ran);
  int nb = g_size < s->h ? g_size : s->h, rc = 0;
  if (nb == 1) {
    if (!g_rank) rc = wf_sim_run_local(s);
    s->ran = 1;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
  }
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank < nb ? 0 : MPI_UNDEFINED, g_rank, &comm);
  s->ran = 1;
  if (g_rank >= nb) {
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
  }
  wf_threads *T = wf_threads_setup(s, nb);
  mpi_run *M = mpi_setup(T, comm);
  double t0 = host_seconds();
  rc = wf_threads_loop(s, T);
  double wall = host_seconds() - t0;
  const char *st = getenv("WF_SIM_THREAD_STATS");
  if (st && *st && strcmp(st, "0")) print_stats(T, M, wall);
  gather_state(T, M);
  if (!M->me) {
    if (M->why) wf_sim_report_deadlock(s, M->why);
    else if (rc < 0) rc = wf_sim_finish(s); /* everything sleeps, nothing is in flight */
  }
  mpi_free(M);
  T->mpi = NULL;
  MPI_Comm_free(&comm);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}
