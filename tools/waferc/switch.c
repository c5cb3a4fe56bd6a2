/* waferc --generate --decode-mesh: the switch plan (switch.h; docs/generation.md, "The
 * switch"). Per KV cache one kv_switch; per decode weight it can build from the prefill's, an
 * unskew when the prefill holds it pre-skewed, a transpose when decode holds it in the other
 * axes, and a kv_switch. The plan is written as IR text, parsed and partitioned like any model. */
#include "switch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/support/fsutil.h"
#include "runtime/runtime.h"
#include "waferc/diag.h"
#include "waferc/pass.h"

/* The source slot of x's packing that decode slot h reads, or -1 (a phantom slot). A packing
 * holds one slot per query head (kvh 0: a kv head's k copied onto each of its query heads) or
 * one per kv head (kvh > 0). */
static int64_t switch_slot(const layer_pack *pre, const layer_pack *dec, int64_t h) {
  if (h >= (dec->kvh ? dec->kvh : dec->heads)) return -1;
  if (dec->kvh) return pre->kvh ? h : h * (dec->heads / dec->kvh); /* the kv head's first query head */
  return pre->kvh ? h / (pre->heads / pre->kvh) : h;
}

/* kv_switch's cols for a layer whose kv heads either plan cuts over columns (colocated with q
 * in decode, head-layout{gqa=colocate}, or gathered in the prefill): for each of the decode
 * packing's ncols columns, the prefill column it reads (-1: 0). Side 0 maps q's packing (q's
 * projection columns, W_o's rows), side 1 k's and v's: the decode step's slot owners (kv heads
 * cut or shared, query heads replicated) read their kv head's in-head columns e < min(dp)
 * wherever the prefill holds them. */
static int64_t kv_col(const layer_pack *lp, int64_t kv, int64_t e, int64_t group) {
  if (lp->kvgat) return wf_attn_gather_col(&lp->ga, lp->dp, kv * lp->ga.group, e);
  return (lp->kvh ? kv : kv * group) * lp->dp + e; /* shared: kv head slots; replicated: its first query head's */
}

static int64_t *switch_cols(const layer_pack *pre, const layer_pack *dec, int side, int64_t ncols) {
  int64_t group = dec->kvgat ? dec->ga.group : pre->ga.group, ne = pre->dp < dec->dp ? pre->dp : dec->dp;
  int64_t *map = malloc((size_t)ncols * sizeof *map);
  WF_ASSERT(map);
  for (int64_t j = 0; j < ncols; j++) map[j] = -1;
  int64_t units = side == 0 || !(dec->kvgat || dec->kvh) ? dec->heads : dec->heads / group;
  for (int64_t u = 0; u < units; u++)
    for (int64_t e = 0; e < ne; e++) {
      int64_t dst, src;
      if (side == 0) {
        dst = dec->coloc ? wf_attn_q_col(&dec->ga, dec->dp, u, e) : u * dec->dp + e;
        src = pre->coloc ? wf_attn_q_col(&pre->ga, pre->dp, u, e) : u * pre->dp + e;
      } else {
        int64_t kv = dec->kvgat || dec->kvh ? u : u / group; /* a replicated slot: its query head's kv head */
        dst = dec->kvgat ? kv_col(dec, kv, e, group) : u * dec->dp + e;
        src = kv_col(pre, kv, e, group);
      }
      if (dst < ncols) map[dst] = src;
    }
  return map;
}

/* The manifest of the plan in dir, parsed (NULL when unreadable). */
cJSON *wf_switch_read_manifest(const char *dir) {
  char *path = wf_path_join(dir, "manifest.json");
  size_t len = 0;
  char *text = wf_read_file(path, &len); /* NUL-terminated */
  free(path);
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  free(text);
  return j;
}


void wf_switch_free_moves(weight_move *mv, int n) {
  for (int i = 0; i < n; i++) {
    free(mv[i].name);
    free(mv[i].psym);
    free(mv[i].dsym);
    free(mv[i].slots);
    free(mv[i].cols);
  }
  free(mv);
}

/* The manifest j's weight `name`, or NULL. */
static const cJSON *weight_named(const cJSON *j, const char *name) {
  const cJSON *w;
  cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "weights"), "tensors")) {
    const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "name"));
    if (n && !strcmp(n, name)) return w;
  }
  return NULL;
}

/* A weight entry's rank-2 shape and padded shape (the default when absent) on a pw x ph region:
 * 0 when it is {K_y, N_x}, 1 when {K_x, N_y}, -1 when it is neither. A pre-skewed one (its
 * skew in *m, when m is given) must be {K_y, N_x} with K over the rows (a B operand). */
static int matrix_weight(const cJSON *w, int64_t *dims, int64_t *padded, int pw, int ph, weight_move *m) {
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(w, "shape"), *sp = cJSON_GetObjectItemCaseSensitive(w, "split");
  const cJSON *pd = cJSON_GetObjectItemCaseSensitive(w, "padded_shape");
  const cJSON *sk = cJSON_GetObjectItemCaseSensitive(w, "skew");
  if (cJSON_GetArraySize(sh) != 2 || cJSON_GetArraySize(sp) != 2 || (sk && !m)) return -1;
  if (sk) {
    const char *ring = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sk, "ring"));
    int64_t v[5];
    const char *keys[5] = {"tiles", "k_dim", "k_tile", "other_dim", "other_tile"};
    for (int i = 0; i < 5; i++) v[i] = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sk, keys[i]));
    if (!ring || v[1] != 0 || v[3] != 1 || v[0] < 1 || v[2] < 1 || v[4] < 1) return -1;
    m->skew = (wf_gemm_skew){!strcmp(ring, "plain")        ? WF_SKEW_PLAIN
                             : !strcmp(ring, "interleave") ? WF_SKEW_INTERLEAVE
                                                           : WF_SKEW_NONE,
                             0, 1, v[0], v[2], v[4]};
    if (m->skew.ring == WF_SKEW_NONE) return -1;
  }
  const char *s0 = cJSON_GetStringValue(cJSON_GetArrayItem(sp, 0)), *s1 = cJSON_GetStringValue(cJSON_GetArrayItem(sp, 1));
  int swap = s0 && s1 && !strcmp(s0, "x") && !strcmp(s1, "y");
  if ((swap && sk) || (!swap && (!s0 || !s1 || strcmp(s0, "y") || strcmp(s1, "x")))) return -1;
  int parts[2] = {swap ? pw : ph, swap ? ph : pw};
  for (int d = 0; d < 2; d++) {
    dims[d] = (int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(sh, d));
    padded[d] = pd ? (int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(pd, d))
                   : (dims[d] + parts[d] - 1) / parts[d] * parts[d];
    if (dims[d] < 1 || padded[d] % parts[d]) return -1;
  }
  return swap;
}

/* 1 when entries a and b of two manifests hold the same numbers the same way: the same dtype,
 * shape, padded shape, split, layout (but for the dims' names) and region, neither
 * pre-skewed, and the same bytes in their plans' weights files (wa, wb). */
static int same_weight(const cJSON *a, const cJSON *b, FILE *wa, FILE *wb) {
  static const char *keys[] = {"dtype", "shape", "padded_shape", "split", "region"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, keys[i]), *y = cJSON_GetObjectItemCaseSensitive(b, keys[i]);
    if (!x != !y || (x && !cJSON_Compare(x, y, 1))) return 0;
  }
  if (cJSON_GetObjectItemCaseSensitive(a, "skew") || cJSON_GetObjectItemCaseSensitive(b, "skew")) return 0;
  const char *la = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "layout"));
  const char *lb = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "layout"));
  if (!la || !lb || !wf_plan_layouts_match(la, lb)) return 0;
  double oa = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(a, "offset"));
  double ob = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "offset"));
  double ba = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(a, "bytes"));
  double bb = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "bytes"));
  if (!(oa >= 0 && ob >= 0 && ba > 0 && ba == bb && oa + ba < 9e18 && ob + bb < 9e18)) return 0;
  if (fseeko(wa, (off_t)oa, SEEK_SET) || fseeko(wb, (off_t)ob, SEEK_SET)) return 0;
  char x[65536], y[65536];
  for (int64_t left = (int64_t)ba; left > 0;) { /* chunk by chunk: a model's weights may be large */
    size_t k = left < (int64_t)sizeof x ? (size_t)left : sizeof x;
    if (fread(x, 1, k, wa) != k || fread(y, 1, k, wb) != k || memcmp(x, y, k)) return 0;
    left -= (int64_t)k;
  }
  return 1;
}

/* The weights file of the plan in dir whose manifest is j, open for reading (NULL when none). */
static FILE *weights_file(const char *dir, const cJSON *j) {
  const char *file = cJSON_GetStringValue(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "weights"), "file"));
  if (!file || strchr(file, '/')) return NULL;
  char *path = wf_path_join(dir, file);
  FILE *f = fopen(path, "rb");
  free(path);
  return f;
}

weight_move *wf_switch_shared_weights(const char *pdir, const char *ddir, int *n_out) {
  cJSON *pj = wf_switch_read_manifest(pdir), *dj = wf_switch_read_manifest(ddir);
  FILE *pw = pj ? weights_file(pdir, pj) : NULL, *dw = dj ? weights_file(ddir, dj) : NULL;
  weight_move *mv = NULL;
  int n = 0, cap = 0;
  const cJSON *w;
  cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dj, "weights"), "tensors")) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "name"));
    const char *dsym = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "symbol"));
    const cJSON *p = name ? weight_named(pj, name) : NULL;
    const char *psym = p ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "symbol")) : NULL;
    if (!psym || !dsym || !pw || !dw || !same_weight(p, w, pw, dw)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      mv = realloc(mv, (size_t)cap * sizeof *mv);
      WF_ASSERT(mv);
    }
    mv[n++] = (weight_move){.name = strdup(name), .psym = strdup(psym), .dsym = strdup(dsym)};
    WF_ASSERT(mv[n - 1].name && mv[n - 1].psym && mv[n - 1].dsym);
  }
  if (pw) fclose(pw);
  if (dw) fclose(dw);
  cJSON_Delete(pj);
  cJSON_Delete(dj);
  *n_out = n;
  return mv;
}

/* The weight `name`'s role in the layers: 0..2 the q, k or v projection, 3 the output
 * projection (W_o), in both phases' IR; *li its layer. -1 when none. */
static int proj_role(const char *name, int layers, const layer_pack *pre, const layer_pack *dec, int *li) {
  for (int i = 0; i < layers; i++)
    for (int r = 0; r < 4; r++)
      if (!strcmp(dec[i].proj[r], name) && !strcmp(pre[i].proj[r], name)) {
        *li = i;
        return r;
      }
  return -1;
}

/* The decode weights the switch moves (--switch-weights=move): every matrix weight of the
 * decode plan (ddir), {K_y, N_x} or {K_x, N_y}, whose prefill namesake (pdir) is {K_y, N_x}
 * (pre-skewed or not) and not padded past the default, the dim re-cut over the rows the same in
 * both and cut into ceil(dim / rows) blocks on the decode region, and whose other dim maps: the
 * same size, or head slots of a projection whose packing both plans know. Everything else (the
 * norms' vectors, the position and token tables) stays resident. */
weight_move *wf_switch_plan_moves(const wf_cli *c, int layers, const layer_pack *pre, const layer_pack *dec, int dw,
                               int dh, const char *pdir, const char *ddir, int *n_out) {
  cJSON *pj = wf_switch_read_manifest(pdir), *dj = wf_switch_read_manifest(ddir);
  int pw = c->target.mesh_w, ph = c->target.mesh_h, n = 0, cap = 0;
  weight_move *mv = NULL;
  const cJSON *w;
  cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dj, "weights"), "tensors")) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "name"));
    const cJSON *pwt = name ? weight_named(pj, name) : NULL;
    int64_t dd[2], dpad[2], pd[2], ppad[2];
    weight_move m = {0};
    int swap = pwt ? matrix_weight(w, dd, dpad, dw, dh, NULL) : -1;
    if (swap < 0 || matrix_weight(pwt, pd, ppad, pw, ph, &m) != 0) continue;
    int r = swap, k = 1 - swap; /* W's dim re-cut over the rows; the one mapped over the columns */
    int64_t cap_r = (dd[r] + dh - 1) / dh;
    if (dd[r] != pd[r] || dpad[r] != cap_r * dh || ppad[0] != (pd[0] + ph - 1) / ph * ph ||
        ppad[1] != (pd[1] + pw - 1) / pw * pw)
      continue;
    m.swap = swap, m.rows = pd[r], m.np = pd[k], m.cap = cap_r, m.cbd = dpad[k] / dw;
    int li = -1, role = proj_role(name, layers, pre, dec, &li);
    if (role >= 0 && (role == 3) == swap) { /* a projection's columns (W_o's rows) are head slots */
      const layer_pack *p = &pre[li], *d = &dec[li];
      if (p->dp < 1 || d->dp < 1) continue;
      if (p->kvgat || d->kvgat) { /* kv heads cut over columns: a column map (switch_cols) */
        m.n_cols = dpad[k];
        m.cols = switch_cols(p, d, role == 1 || role == 2, m.n_cols);
      } else {
        if (dd[k] % d->dp) continue;
        m.src_dp = p->dp, m.dst_dp = d->dp, m.d = p->dp < d->dp ? p->dp : d->dp;
        m.n_slots = (int)(dd[k] / d->dp);
        m.slots = malloc((size_t)m.n_slots * sizeof *m.slots);
        WF_ASSERT(m.slots);
        layer_pack q = *p, qd = *d; /* q and W_o hold one slot per query head */
        q.kvh = qd.kvh = 0;
        for (int h = 0; h < m.n_slots; h++)
          m.slots[h] = role == 1 || role == 2 ? switch_slot(p, d, h) : switch_slot(&q, &qd, h);
      }
    } else { /* the same indices */
      const char *dot = strrchr(name, '.');
      if (role >= 0 || (dot && !strcmp(dot, ".heads")) || dd[k] != pd[k]) continue; /* a packing not known here */
      m.src_dp = m.dst_dp = m.d = dd[k];
      m.n_slots = 1;
      m.slots = calloc(1, sizeof *m.slots);
      WF_ASSERT(m.slots);
    }
    m.name = strdup(name);
    m.psym = strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pwt, "symbol")));
    m.dsym = strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(w, "symbol")));
    WF_ASSERT(m.name && m.psym && m.dsym);
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      mv = realloc(mv, (size_t)cap * sizeof *mv);
      WF_ASSERT(mv);
    }
    mv[n++] = m;
  }
  cJSON_Delete(pj);
  cJSON_Delete(dj);
  *n_out = n;
  return mv;
}

/* The switch graph's text streams: arguments, ops, result types, the return's operands and
 * the module's constants (the unskew indices). */
typedef struct sw_text {
  FILE *args, *ops, *rets, *body, *globals;
  int n; /* results so far */
} sw_text;

/* unskew's indices for the prefill's pre-skewed weight of move m on the pw x ph region (ops.def,
 * backend/ops/lower_unskew.c): PE (x, y)'s n = bn v_k entries at [y][x n ..], entry j v_k + t the
 * chunk j L + a of its panel, a the ring position where column j's K tile v_k y + t sits. */
static void unskew_indices(const weight_move *m, int pw, int ph, float *ix) {
  int64_t L = m->skew.tiles, vk = L / ph, vo = L / pw, bn = ((m->swap ? m->rows : m->np) + pw - 1) / pw, n = bn * vk;
  int64_t *at = malloc((size_t)(L * L) * sizeof *at); /* at[b L + s]: the position of tile s seen from b */
  WF_ASSERT(at);
  for (int64_t b = 0; b < L; b++)
    for (int64_t a = 0; a < L; a++) at[b * L + wf_skew_source(m->skew.ring, a, b, L)] = a;
  for (int y = 0; y < ph; y++)
    for (int x = 0; x < pw; x++)
      for (int64_t j = 0; j < bn; j++)
        for (int64_t t = 0; t < vk; t++) {
          int64_t b = vo * x + j / m->skew.other_tile;
          ix[(int64_t)y * pw * n + x * n + j * vk + t] = (float)(j * L + at[b * L + vk * y + t]);
        }
  free(at);
}

/* One kv_switch of the switch graph: %<res> from argument %<arg> f32[<batch>K, Np] ("1, " for a
 * cache, "" for a weight), a result of ph*cap rows and pw*cbd columns. */
static void print_switch(sw_text *t, const char *arg, const char *res, const char *batch, int64_t k, int64_t np,
                         int swap, int unskewed, int pw, int ph, int dw, int dh, int64_t cap, int64_t cbd,
                         const int64_t *heads, const int64_t *slots, int n_slots, const int64_t *colmap,
                         int64_t n_colmap) {
  const char *sep = t->n ? ", " : "", *in = unskewed ? "_u" : "";
  long long rows = (long long)ph * cap, cols = (long long)pw * cbd;
  if (swap) { /* the argument is the prefill's W [np, k]; the kv_switch reads Wᵀ */
    if (!unskewed) fprintf(t->args, "%s%%%s: f32[%lld, %lld]", sep, arg, (long long)np, (long long)k);
    fprintf(t->ops, "    %%%s_t = transpose(%%%s%s) {perm = [1, 0]} : f32[%lld, %lld]\n", arg, arg, in, (long long)k,
            (long long)np);
    in = "_t";
  } else if (!unskewed) {
    fprintf(t->args, "%s%%%s: f32[%s%lld, %lld]", sep, arg, batch, (long long)k, (long long)np);
  }
  fprintf(t->ops, "    %%%s = kv_switch(%%%s%s) {out = [%lld, %lld], region = [%d, %d], block = [%lld, %lld], ", res, arg,
          in, rows, cols, dw, dh, (long long)cap, (long long)cbd);
  if (colmap) { /* one source column per result column */
    fprintf(t->ops, "cols = [");
    for (int64_t j = 0; j < cols; j++) fprintf(t->ops, "%s%lld", j ? ", " : "", (long long)(j < n_colmap ? colmap[j] : -1));
  } else {
    fprintf(t->ops, "heads = [%lld, %lld, %lld], slots = [", (long long)heads[0], (long long)heads[1], (long long)heads[2]);
    for (int h = 0; h < n_slots; h++) fprintf(t->ops, "%s%lld", h ? ", " : "", (long long)slots[h]);
  }
  if (swap) { /* the result transposed back: {K_x, N_y}, each PE's block the decode weight's */
    long long tmp = rows;
    rows = cols, cols = tmp;
  }
  fprintf(t->ops, "]%s} : f32[%s%lld, %lld]\n", swap ? ", swap = 1" : "", batch, rows, cols);
  fprintf(t->rets, "%sf32[%s%lld, %lld]", sep, batch, rows, cols);
  fprintf(t->body, "%s%%%s", sep, res);
  t->n++;
}

/* The switch manifest's "switch_weights" (docs/plan-format.md): which input takes which prefill
 * weight and which output holds which decode weight. */
static char *moves_json(const weight_move *mv, int n) {
  cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "switch_weights");
  WF_ASSERT(o && a);
  for (int i = 0; i < n; i++) {
    char in[32], out[32];
    snprintf(in, sizeof in, "w_%d", i);
    snprintf(out, sizeof out, "w_switch_%d", i);
    cJSON *e = cJSON_CreateObject();
    WF_ASSERT(e && cJSON_AddStringToObject(e, "prefill", mv[i].name) && cJSON_AddStringToObject(e, "input", in) &&
              cJSON_AddStringToObject(e, "output", out) && cJSON_AddStringToObject(e, "decode", mv[i].name));
    cJSON_AddItemToArray(a, e);
  }
  char *s = cJSON_PrintUnformatted(o);
  WF_ASSERT(s);
  cJSON_Delete(o);
  return s;
}

/* dir/: the switch plan for the prefill's mesh (the target's): per cache, kv_switch from the
 * prefill's packing [1, L, Np] to the decode region's dw x dh blocks of cap slots
 * (docs/generation.md, "The switch"), and per weight move one over the weight. Its inputs
 * are the prefill's k_cache_<i> / v_cache_<i> and weights w_<j>, its outputs k_switch_<i> /
 * v_switch_<i> and w_switch_<j>. */
int wf_switch_compile(wf_cli *c, const wf_gen_compile *g, int layers, const layer_pack *pre,
                          const layer_pack *dec, int64_t cap, int dw, int dh, const weight_move *mv, int n_mv,
                          const char *dir) {
  char *text = NULL, *args = NULL, *body = NULL, *rets = NULL;
  size_t tn = 0, an = 0, bn = 0, rn = 0;
  char *consts = NULL;
  size_t cn = 0;
  sw_text t = {open_memstream(&args, &an), open_memstream(&text, &tn), open_memstream(&rets, &rn),
               open_memstream(&body, &bn), open_memstream(&consts, &cn), 0};
  WF_ASSERT(t.args && t.ops && t.rets && t.body && t.globals);
  int pw = c->target.mesh_w, ph = c->target.mesh_h, rc = 0;
  for (int i = 0; i < layers && !rc; i++) {
    const layer_pack *p = &pre[i], *d = &dec[i];
    if (d->dims[2] % dw || p->dims[0] != 1) {
      wf_error(WF_LOC_NONE, "layer %d: the decode cache's %lld columns do not cut over %d columns", i,
               (long long)d->dims[2], dw);
      rc = WF_EXIT_UNSUPPORTED;
      break;
    }
    int coloc = p->kvgat || d->kvgat, nslots = coloc ? 0 : (int)(d->dims[2] / d->dp);
    int64_t heads[3] = {p->dp, d->dp, p->dp < d->dp ? p->dp : d->dp}, *slots = calloc((size_t)nslots + 1, sizeof *slots);
    WF_ASSERT(slots);
    for (int h = 0; h < nslots; h++) slots[h] = switch_slot(p, d, h);
    int64_t *cmap = coloc ? switch_cols(p, d, 1, d->dims[2]) : NULL;
    for (int kv = 0; kv < 2; kv++) {
      char arg[32], res[32];
      snprintf(arg, sizeof arg, "%s_cache_%d", kv ? "v" : "k", i);
      snprintf(res, sizeof res, "%s_switch_%d", kv ? "v" : "k", i);
      print_switch(&t, arg, res, "1, ", p->dims[1], p->dims[2], 0, 0, pw, ph, dw, dh, cap, d->dims[2] / dw, heads,
                   slots, nslots, cmap, d->dims[2]);
    }
    free(slots);
    free(cmap);
  }
  for (int j = 0; j < n_mv && !rc; j++) {
    char arg[32], res[32];
    snprintf(arg, sizeof arg, "w_%d", j);
    snprintf(res, sizeof res, "w_switch_%d", j);
    int64_t heads[3] = {mv[j].src_dp, mv[j].dst_dp, mv[j].d};
    if (mv[j].skew.ring) { /* the prefill's pre-skewed blocks put back in order first */
      int64_t k = mv[j].swap ? mv[j].np : mv[j].rows, n = mv[j].swap ? mv[j].rows : mv[j].np; /* W [k, n] */
      int64_t bn = (n + pw - 1) / pw, vk = mv[j].skew.tiles / ph;
      fprintf(t.globals, "  const @%s_ix : f32[%d, %lld] = dense<0.0>\n", arg, ph, (long long)(pw * bn * vk));
      fprintf(t.args, "%s%%%s: f32[%lld, %lld]", t.n ? ", " : "", arg, (long long)k, (long long)n);
      fprintf(t.ops, "    %%%s_u = unskew(%%%s, @%s_ix) {ring = %s, tiles = %lld, k_tile = %lld, other_tile = %lld} : "
                     "f32[%lld, %lld]\n", arg, arg, arg, mv[j].skew.ring == WF_SKEW_PLAIN ? "plain" : "interleave",
              (long long)mv[j].skew.tiles, (long long)mv[j].skew.k_tile, (long long)mv[j].skew.other_tile, (long long)k,
              (long long)n);
    }
    print_switch(&t, arg, res, "", mv[j].rows, mv[j].np, mv[j].swap, mv[j].skew.ring != WF_SKEW_NONE, pw, ph, dw, dh,
                 mv[j].cap, mv[j].cbd, heads, mv[j].slots, mv[j].n_slots, mv[j].cols, mv[j].n_cols);
  }
  FILE *fa = t.args, *fb = t.body, *ft = t.ops, *fr = t.rets;
  fclose(fa);
  fclose(fb);
  fclose(ft);
  fclose(fr);
  fclose(t.globals);
  wf_module *m = NULL;
  if (!rc) {
    char *mod = NULL;
    size_t mn = 0;
    FILE *fm = open_memstream(&mod, &mn);
    WF_ASSERT(fm);
    fprintf(fm, "module @switch {\n%s  func @main(%s) -> (%s) {\n%s    return %s\n  }\n}\n", consts, args, rets, text,
            body);
    fclose(fm);
    m = wf_parse_string(mod, "the switch");
    free(mod);
    if (!m) rc = WF_EXIT_UNSUPPORTED;
  }
  for (int j = 0; j < n_mv && !rc; j++) { /* the unskew indices' data */
    char name[40];
    snprintf(name, sizeof name, "w_%d_ix", j);
    int gi = mv[j].skew.ring ? wf_module_find_global(m, name) : -1;
    if (gi < 0) continue;
    wf_global *gl = &m->globals[gi];
    gl->kind = WF_DATA_INLINE;
    gl->data = wf_arena_alloc(m->arena, wf_type_bytes(&gl->type));
    unskew_indices(&mv[j], pw, ph, gl->data);
  }
  free(consts);
  free(text);
  free(rets);
  free(args);
  free(body);
  wf_pipeline *pl = rc ? NULL : wf_cli_parse_pipeline(c, "partition");
  if (!rc && !pl) rc = WF_EXIT_UNSUPPORTED;
  if (!rc) rc = wf_verify_module(m) ? WF_EXIT_UNSUPPORTED : wf_pipeline_run(pl, m, &c->pm);
  if (!rc && wf_mkdir_p(dir)) rc = WF_EXIT_IO;
  wf_plan_opts po = g->po;
  char *extra = n_mv ? moves_json(mv, n_mv) : NULL;
  po.manifest_extra = extra;
  if (!rc) rc = wf_backend_emit_plan(m, &c->target, dir, &po);
  free(extra);
  if (m) wf_module_free(m);
  wf_pipeline_free(pl);
  return rc;
}

