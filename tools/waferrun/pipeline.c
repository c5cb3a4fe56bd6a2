/* waferrun on a pipelined plan (pipeline.h). The host carries each value from a plan's output
 * to the next plan's input, block for block, as the PEs' SRAM would keep it between programs;
 * every move between bands is simulated by the transfer plan, which is where its cycles come
 * from.
 *
 * A transfer's input is the stage's result padded along its row-split dim d to 2P (the stage's
 * blocks are its first band's, the second band's zeros), its output the same shifted by P, so
 * the next stage's input is its output's indices [P, P + n) along d. */
#include "pipeline.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/jit.h"
#include "runtime/json_out.h"
#include "waferc/diag.h"
#include "waferc/tensor.h"

typedef struct run_plan {
  wf_plan *p;          /* NULL for stage 0 (the caller's) */
  const wf_plan *use;
  wf_jit *jit;
  char manifest[1400];
  int64_t cycles, words; /* the run's cycles and wavelet-hops */
} run_plan;

static int find(const wf_plan_tensor *ts, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(ts[i].name, name)) return i;
  return -1;
}

static int open_plan(const wf_plan *p0, const char *rel, const wf_pipe_opts *o, run_plan *r, const char *what) {
  char dir[1300];
  snprintf(dir, sizeof dir, "%s/%s", p0->dir, rel);
  snprintf(r->manifest, sizeof r->manifest, "%s/manifest.json", dir);
  struct stat st;
  if (stat(dir, &st) != 0 && errno == ENOENT) { /* a pipelined plan without one of its parts */
    wf_error_at(r->manifest, "pipeline: the %s plan '%s' is missing from %s", what, rel, p0->dir);
    return WF_EXIT_INPUT;
  }
  int rc = wf_run_check_plan_dir(dir);
  if (!rc && !(r->p = wf_plan_load_ex(dir, o->load_flags))) rc = WF_EXIT_INPUT;
  if (!rc && o->so.mode != WF_SIM_TIMING) rc = wf_run_check_memory(r->p, o->mem_limit_mb, dir);
  if (rc) wf_error_at(p0->dir, "pipeline: the %s plan '%s' cannot be opened or is not valid", what, rel);
  r->use = r->p;
  return rc;
}

/* The dim of t split over the rows, or -1. */
static int row_dim(const wf_plan_tensor *t) {
  for (int d = 0; d < t->rank; d++)
    if (t->split[d] == WF_AXIS_Y) return d;
  return -1;
}

/* Whether the transfer carries a, which every row of the band holds whole, as one copy per row
 * along its row-split dim (waferc's carry_dim): a dim of size 1 unsplit, grown to 2 rows. */
static int carried_copies(const wf_plan_tensor *a, const wf_plan_tensor *ti, int rows) {
  int d = row_dim(ti);
  return a->split[d] == WF_AXIS_NONE && a->dims[d] == 1 && ti->dims[d] == 2 * (int64_t)rows;
}

/* Carry c of stage k: the previous stage's output a, the transfer's input ti and output to,
 * the stage's input b must agree (pipeline.h). 0, or -1 after reporting. */
static int check_carry(const run_plan *prev, const run_plan *tr, const run_plan *st, const wf_plan_carry *c, int k) {
  const wf_plan *P = prev->use, *T = tr->use, *S = st->use;
  int ia = find(P->outputs, P->n_outputs, c->name), iti = find(T->inputs, T->n_inputs, c->name);
  int ito = find(T->outputs, T->n_outputs, c->moved), ib = find(S->inputs, S->n_inputs, c->name);
  const char *miss = ia < 0 ? "the previous stage has no output" : iti < 0 ? "the transfer has no input"
                     : ito < 0 ? "the transfer has no output" : ib < 0 ? "the stage has no input" : NULL;
  if (miss) {
    wf_error_at(tr->manifest, "pipeline stage %d carries '%s' (moved as '%s'): %s of that name", k, c->name, c->moved,
                miss);
    return -1;
  }
  const wf_plan_tensor *a = &P->outputs[ia], *ti = &T->inputs[iti], *to = &T->outputs[ito], *b = &S->inputs[ib];
  int d = row_dim(ti), ok = d >= 0 && a->dtype == ti->dtype && ti->dtype == to->dtype && b->dtype == a->dtype &&
                            a->rank == ti->rank && ti->rank == to->rank && b->rank == a->rank;
  int copies = ok && carried_copies(a, ti, P->mesh_h);
  for (int e = 0; ok && e < a->rank; e++)
    ok = a->dims[e] == b->dims[e] && ti->dims[e] == to->dims[e] &&
         (e == d ? copies || (a->split[e] == ti->split[e] && ti->dims[e] % 2 == 0 && ti->dims[e] / 2 >= a->dims[e])
                 : a->split[e] == ti->split[e] && ti->dims[e] == a->dims[e]);
  if (!ok)
    wf_error_at(tr->manifest, "pipeline stage %d: the transfer's '%s' (%s) does not carry the previous stage's "
                              "output (%s) onto the stage's input (%s) along a dim split over the rows",
                k, c->name, ti->layout, a->layout, b->layout);
  return ok ? 0 : -1;
}

/* Copies n slices of `inner` bytes along a dim of outer x {na | nb} from a at index oa to b
 * at index ob. */
static void copy_along(const wf_tensor *a, wf_tensor *b, int d, int64_t oa, int64_t ob, int64_t n) {
  int64_t outer = 1, inner = (int64_t)wf_dtype_size(a->dtype);
  for (int e = 0; e < d; e++) outer *= a->dims[e];
  for (int e = d + 1; e < a->rank; e++) inner *= a->dims[e];
  for (int64_t i = 0; i < outer; i++)
    memcpy((char *)b->data + ((i * b->dims[d] + ob) * inner), (const char *)a->data + ((i * a->dims[d] + oa) * inner),
           (size_t)(n * inner));
}

/* The output of stage r named `name` (checked to exist by check_carry). */
static const wf_plan_tensor *prev_output(const run_plan *r, const char *name) {
  return &r->use->outputs[find(r->use->outputs, r->use->n_outputs, name)];
}

/* Whether t's slices i and j along dim d are equal. */
static int same_along(const wf_tensor *t, int d, int64_t i, int64_t j) {
  int64_t outer = 1, inner = (int64_t)wf_dtype_size(t->dtype);
  for (int e = 0; e < d; e++) outer *= t->dims[e];
  for (int e = d + 1; e < t->rank; e++) inner *= t->dims[e];
  for (int64_t o = 0; o < outer; o++)
    if (memcmp((const char *)t->data + ((o * t->dims[d] + i) * inner), (const char *)t->data + ((o * t->dims[d] + j) * inner),
               (size_t)inner))
      return 0;
  return 1;
}

/* Runs plan r with inputs in[] (by the plan's input order; NULL: from --input), its outputs
 * into *out (the plan's order; the caller frees). */
static int run_one(run_plan *r, wf_tensor **in, const wf_pipe_opts *o, wf_tensor ***out, const char *what) {
  const wf_plan *p = r->use;
  wf_sim *s = wf_sim_new(p, &o->so);
  if (r->jit) wf_sim_set_compute_hook(s, wf_jit_compute, r->jit);
  int rc = 0;
  for (int i = 0; i < p->n_inputs && !rc; i++) {
    wf_tensor *t = in[i];
    int own = 0;
    if (!t) { /* a model input: the --input that names it (checked before) */
      for (int j = 0; j < o->n_in && !t; j++)
        if (!strcmp(o->in[j].name, p->inputs[i].name)) t = wf_run_make_input(&p->inputs[i], o->in[j].spec, &rc), own = 1;
    }
    if (t && wf_sim_set_input(s, p->inputs[i].name, t)) rc = WF_EXIT_INPUT;
    if (own) wf_tensor_free(t);
  }
  if (!rc && (rc = wf_sim_run(s))) wf_error_at(r->manifest, "pipeline: the %s failed (exit %d)", what, rc);
  if (!rc) {
    r->cycles = wf_sim_cycles(s);
    r->words = wf_run_link_words(s);
    *out = calloc((size_t)p->n_outputs + 1, sizeof **out);
    WF_ASSERT(*out);
    for (int i = 0; i < p->n_outputs; i++) { /* the next run's inputs: the same on every rank */
      (*out)[i] = o->so.mode == WF_SIM_TIMING ? NULL : wf_sim_output(s, i);
      wf_sim_mpi_share((*out)[i]);
    }
  }
  wf_sim_free(s);
  return rc;
}

static void free_all(wf_tensor **ts, int n) {
  for (int i = 0; ts && i < n; i++) wf_tensor_free(ts[i]);
  free(ts);
}

/* The --input names: each an input of some stage that no transfer feeds, and every such input
 * bound, all said at once. */
static int check_inputs(const wf_plan_pipeline *P, run_plan *st, const wf_pipe_opts *o) {
  int bad = 0;
  for (int i = 0; i < o->n_in; i++) {
    int found = 0;
    for (int k = 0; k < P->n_stages && !found; k++) {
      const wf_plan *p = st[k].use;
      int j = find(p->inputs, p->n_inputs, o->in[i].name), carried = 0;
      for (int c = 0; k && j >= 0 && c < P->stages[k].n_carries; c++) carried |= !strcmp(P->stages[k].carries[c].name, o->in[i].name);
      if (j >= 0 && carried) {
        wf_error_at("waferrun", "--input %s: stage %d takes '%s' from stage %d over the fabric, not from the host",
                    o->in[i].name, k, o->in[i].name, k - 1);
        bad = 1;
      }
      if (j >= 0 && !carried) bad |= wf_run_check_input_spec(&p->inputs[j], o->in[i].spec) != 0;
      found = j >= 0;
    }
    if (!found) {
      wf_error_at("waferrun", "--input %s: no stage of the pipeline has an input '%s' (waferrun --describe lists "
                              "stage 0's)", o->in[i].name, o->in[i].name);
      bad = 1;
    }
  }
  for (int k = 0; k < P->n_stages; k++) {
    const wf_plan *p = st[k].use;
    for (int j = 0; j < p->n_inputs; j++) {
      int bound = 0;
      for (int c = 0; k && c < P->stages[k].n_carries; c++) bound |= !strcmp(P->stages[k].carries[c].name, p->inputs[j].name);
      for (int i = 0; i < o->n_in; i++) bound |= !strcmp(o->in[i].name, p->inputs[j].name);
      if (!bound && o->so.mode != WF_SIM_TIMING) {
        wf_error_at("waferrun", "stage %d's input '%s' is not bound (give --input %s=FILE.npy)", k, p->inputs[j].name,
                    p->inputs[j].name);
        bad = 1;
      }
    }
  }
  return bad ? WF_EXIT_USAGE : 0;
}

static int write_outputs(const wf_plan *last, wf_tensor **outs, const char *dir) {
  if (mkdir(dir, 0777) && errno != EEXIST) {
    wf_error_at(dir, "cannot create the output directory: %s", strerror(errno));
    return WF_EXIT_IO;
  }
  for (int i = 0; i < last->n_outputs; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, last->outputs[i].name);
    if (!outs[i] || wf_npy_write(path, outs[i])) return WF_EXIT_IO;
  }
  return 0;
}

static cJSON *plan_entry(const run_plan *r, const wf_plan_stage *S, int transfer) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "plan", r->use->dir);
  if (!transfer) {
    cJSON *rows = cJSON_AddArrayToObject(e, "rows");
    cJSON_AddItemToArray(rows, cJSON_CreateNumber(S->rows[0]));
    cJSON_AddItemToArray(rows, cJSON_CreateNumber(S->rows[1]));
  }
  cJSON_AddNumberToObject(e, "cycles", (double)r->cycles);
  cJSON_AddNumberToObject(e, "predicted_cycles", (double)r->use->predicted_total);
  cJSON_AddNumberToObject(e, "fabric_words", (double)r->words);
  return e;
}

int wf_run_pipeline(const wf_plan *p, const wf_pipe_opts *o) {
  const wf_plan_pipeline *P = &p->pipe;
  int N = P->n_stages, rc = 0;
  run_plan *st = calloc((size_t)N, sizeof *st), *tr = calloc((size_t)N, sizeof *tr);
  WF_ASSERT(st && tr);
  st[0].use = p;
  snprintf(st[0].manifest, sizeof st[0].manifest, "%s/manifest.json", p->dir);
  for (int k = 1; k < N && !rc; k++) {
    const wf_plan_stage *S = &P->stages[k];
    if ((rc = open_plan(p, S->plan, o, &st[k], "stage")) || (rc = open_plan(p, S->transfer, o, &tr[k], "transfer")))
      break;
    if (st[k].use->mesh_w != P->mesh_w || st[k].use->mesh_h != P->rows_per_stage ||
        tr[k].use->mesh_w != P->mesh_w || tr[k].use->mesh_h != 2 * P->rows_per_stage) {
      wf_error_at(st[k].manifest, "pipeline stage %d: its plan is %dx%d and its transfer %dx%d; the pipeline's bands "
                                  "are %dx%d", k, st[k].use->mesh_w, st[k].use->mesh_h, tr[k].use->mesh_w,
                  tr[k].use->mesh_h, P->mesh_w, P->rows_per_stage);
      rc = WF_EXIT_INPUT;
    }
    for (int c = 0; c < S->n_carries && !rc; c++)
      if (check_carry(&st[k - 1], &tr[k], &st[k], &S->carries[c], k)) rc = WF_EXIT_INPUT;
  }
  if (!rc) rc = check_inputs(P, st, o);
  if (!rc) rc = wf_run_check_outputs(o->out_dir, o->report, NULL, NULL);
  int rejected = 0;
  for (int k = 0; k < N && !rc; k++) {
    int no_jit = o->no_jit || o->so.mode == WF_SIM_TIMING; /* timing mode computes nothing */
    st[k].jit = wf_run_load_jit(st[k].use, no_jit, &rejected);
    if (tr[k].use) tr[k].jit = wf_run_load_jit(tr[k].use, no_jit, &rejected);
  }
  if (!rc && rejected) rc = WF_EXIT_INPUT;
  wf_tensor **outs = NULL;
  for (int k = 0; k < N && !rc; k++) {
    const wf_plan *sp = st[k].use;
    wf_tensor **in = calloc((size_t)sp->n_inputs + 1, sizeof *in);
    WF_ASSERT(in);
    if (k) { /* the transfer: stage k-1's results onto band k */
      const wf_plan_stage *S = &P->stages[k];
      const wf_plan *T = tr[k].use;
      wf_tensor **tin = calloc((size_t)T->n_inputs + 1, sizeof *tin), **tout = NULL;
      WF_ASSERT(tin);
      for (int c = 0; c < S->n_carries && o->so.mode != WF_SIM_TIMING; c++) {
        const wf_plan_tensor *ti = &T->inputs[find(T->inputs, T->n_inputs, S->carries[c].name)];
        const wf_tensor *a = outs[find(st[k - 1].use->outputs, st[k - 1].use->n_outputs, S->carries[c].name)];
        int d = row_dim(ti), i = find(T->inputs, T->n_inputs, S->carries[c].name);
        tin[i] = wf_tensor_new(ti->dtype, ti->rank, ti->dims);
        WF_ASSERT(tin[i]);
        if (carried_copies(prev_output(&st[k - 1], S->carries[c].name), ti, P->rows_per_stage))
          for (int64_t r = 0; r < ti->dims[d] / 2; r++) copy_along(a, tin[i], d, 0, r, 1); /* a copy per row */
        else
          copy_along(a, tin[i], d, 0, 0, a->dims[d]);
      }
      if (!o->quiet) wf_progress("transfer %d of %d", k, N - 1);
      rc = run_one(&tr[k], tin, o, &tout, "transfer");
      wf_progress_done();
      for (int c = 0; !rc && c < S->n_carries && o->so.mode != WF_SIM_TIMING; c++) {
        const wf_plan_tensor *ti = &T->inputs[find(T->inputs, T->n_inputs, S->carries[c].name)];
        const wf_plan_tensor *b = &sp->inputs[find(sp->inputs, sp->n_inputs, S->carries[c].name)];
        const wf_tensor *moved = tout[find(T->outputs, T->n_outputs, S->carries[c].moved)];
        int d = row_dim(ti), i = find(sp->inputs, sp->n_inputs, S->carries[c].name);
        in[i] = wf_tensor_new(b->dtype, b->rank, b->dims);
        WF_ASSERT(in[i]);
        copy_along(moved, in[i], d, ti->dims[d] / 2, 0, b->dims[d]);
        /* a value every row holds: each row of the band must have received the same copy */
        int copies = carried_copies(prev_output(&st[k - 1], S->carries[c].name), ti, P->rows_per_stage);
        for (int64_t r = ti->dims[d] / 2 + 1; copies && r < ti->dims[d] && !rc; r++)
          if (!same_along(moved, d, ti->dims[d] / 2, r)) {
            wf_error_at(tr[k].manifest, "pipeline stage %d: the transfer's copies of '%s' differ between the band's "
                                        "rows %lld and %lld", k, S->carries[c].name,
                        (long long)(ti->dims[d] / 2), (long long)r);
            rc = WF_EXIT_RUNTIME;
          }
      }
      free_all(tin, T->n_inputs);
      free_all(tout, T->n_outputs);
    }
    free_all(outs, k ? st[k - 1].use->n_outputs : 0);
    outs = NULL;
    if (!rc) {
      if (!o->quiet) wf_progress("stage %d of %d", k + 1, N);
      rc = run_one(&st[k], in, o, &outs, "stage");
      wf_progress_done();
    }
    free_all(in, sp->n_inputs);
  }
  const wf_plan *last = st[N - 1].use;
  int writer = wf_sim_mpi_rank() == 0; /* under mpirun, rank 0 writes and reports */
  if (!rc && writer && o->out_dir && o->so.mode != WF_SIM_TIMING) rc = write_outputs(last, outs, o->out_dir);
  int64_t latency = 0, period = 0;
  for (int k = 0; k < N; k++) { /* band k is busy with its stage and the transfers in and out of it */
    int64_t busy = st[k].cycles + tr[k].cycles + (k + 1 < N ? tr[k + 1].cycles : 0);
    latency += st[k].cycles + tr[k].cycles;
    if (busy > period) period = busy;
  }
  double hz = p->target.clock_hz, tok = (double)p->tokens_per_run;
  if (!rc && writer && o->report) {
    cJSON *root = cJSON_CreateObject(), *stages = cJSON_CreateArray(), *transfers = cJSON_CreateArray();
    cJSON_AddNumberToObject(root, "format_version", 1);
    cJSON_AddStringToObject(root, "plan", p->dir);
    cJSON_AddStringToObject(root, "target", p->target.name);
    cJSON_AddNumberToObject(root, "clock_hz", hz);
    cJSON *mesh = cJSON_AddArrayToObject(root, "mesh");
    cJSON_AddItemToArray(mesh, cJSON_CreateNumber(P->mesh_w));
    cJSON_AddItemToArray(mesh, cJSON_CreateNumber(P->mesh_h));
    for (int k = 0; k < N; k++) {
      cJSON_AddItemToArray(stages, plan_entry(&st[k], &P->stages[k], 0));
      if (k) cJSON_AddItemToArray(transfers, plan_entry(&tr[k], &P->stages[k], 1));
    }
    cJSON_AddItemToObject(root, "stages", stages);
    cJSON_AddItemToObject(root, "transfers", transfers);
    cJSON_AddNumberToObject(root, "latency_cycles", (double)latency);
    cJSON_AddNumberToObject(root, "period_cycles", (double)period);
    cJSON_AddNumberToObject(root, "tokens_per_run", tok);
    cJSON_AddNumberToObject(root, "latency_seconds", (double)latency / hz);
    cJSON_AddNumberToObject(root, "tokens_per_second", tok * hz / (double)period);
    rc = wf_json_write_report(root, o->report);
  }
  if (!rc && !o->quiet) {
    printf("pipeline: %d stages on %dx%d bands of the %dx%d mesh (%s)\n", N, P->mesh_w, P->rows_per_stage, P->mesh_w,
           P->mesh_h, p->target.name);
    for (int k = 0; k < N; k++) {
      if (k)
        printf("  transfer %d: %10lld cycles (predicted %lld), %lld wavelet-hops\n", k, (long long)tr[k].cycles,
               (long long)tr[k].use->predicted_total, (long long)tr[k].words);
      printf("  stage %d:    %10lld cycles (predicted %lld), rows %d..%d\n", k, (long long)st[k].cycles,
             (long long)st[k].use->predicted_total, P->stages[k].rows[0], P->stages[k].rows[1] - 1);
    }
    printf("latency:  %lld cycles (%.3f ms at %.3g GHz)\n", (long long)latency, 1e3 * (double)latency / hz, hz / 1e9);
    printf("period:   %lld cycles, the busiest band's stage and transfers: %.4g tokens/s with the pipeline full "
           "(%.4g for one run alone)\n", (long long)period, tok * hz / (double)period, tok * hz / (double)latency);
    for (int i = 0; i < last->n_outputs; i++)
      printf("output %s: %s%s%s\n", last->outputs[i].name, last->outputs[i].layout, o->out_dir ? " -> " : "",
             o->out_dir ? o->out_dir : "");
  }
  free_all(outs, last->n_outputs);
  for (int k = 0; k < N; k++) {
    wf_jit_free(st[k].jit);
    wf_jit_free(tr[k].jit);
    wf_plan_free(st[k].p);
    wf_plan_free(tr[k].p);
  }
  free(st);
  free(tr);
  return rc;
}
