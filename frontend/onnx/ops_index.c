/* Importers of Trilu, TopK, ScatterElements and GatherElements (IR ops trilu, topk,
 * scatter_elements, gather_elements). */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

int ox_imp_trilu(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t k = 0;
  if (n->n_in > 1 && n->in[1]) {
    int64_t *kv;
    int cnt;
    int rc = ox_in_ints(n, 1, "k", &kv, &cnt);
    if (rc) return rc;
    if (cnt != 1) {
      free(kv);
      ox_err(n, "input 1 (k) must hold one element");
      return WF_EXIT_INPUT;
    }
    k = kv[0];
    free(kv);
  }
  int upper = ox_attr_int(n, "upper", 1) != 0;
  if (n->failed) return WF_EXIT_INPUT;
  ox_attrv at[2] = {OX_A_BOOL("upper", upper), OX_A_INT("k", k)};
  ox_val *r = ox_emit1(n, WF_OP_TRILU, 1, &x, 2, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

int ox_imp_topk(ox_nctx *n) {
  ox_val *x = ox_in(n, 0);
  if (!x) return WF_EXIT_INPUT;
  int64_t k;
  if (n->opset < 10) {
    if (!ox_attr(n, "k")) {
      ox_err(n, "attribute 'k' is required");
      return WF_EXIT_INPUT;
    }
    k = ox_attr_int(n, "k", 0);
  } else {
    int64_t *kv;
    int cnt;
    int rc = ox_in_ints(n, 1, "K", &kv, &cnt);
    if (rc) return rc;
    if (cnt != 1) {
      free(kv);
      ox_err(n, "input 1 (K) must hold one element");
      return WF_EXIT_INPUT;
    }
    k = kv[0];
    free(kv);
  }
  ox_attrv at[4] = {OX_A_INT("k", k), OX_A_INT("axis", ox_attr_int(n, "axis", -1)),
                    OX_A_BOOL("largest", ox_attr_int(n, "largest", 1)), OX_A_BOOL("sorted", ox_attr_int(n, "sorted", 1))};
  if (n->failed) return WF_EXIT_INPUT;
  ox_val *outs[2];
  int rc = ox_emit(n, WF_OP_TOPK, 1, &x, 4, at, 2, NULL, outs);
  if (rc) return rc;
  ox_set_out(n, 0, outs[0]);
  return ox_set_out(n, 1, outs[1]);
}

int ox_imp_scatter(ox_nctx *n) {
  ox_val *ins[3] = {ox_in(n, 0), ox_in(n, 1), ox_in(n, 2)};
  if (!ins[0] || !ins[1] || !ins[2]) return WF_EXIT_INPUT;
  const char *red = ox_attr_str(n, "reduction", "none");
  if (n->failed) return WF_EXIT_INPUT;
  int ok = !strcmp(red, "none") || (n->opset >= 16 && (!strcmp(red, "add") || !strcmp(red, "mul"))) ||
           (n->opset >= 18 && (!strcmp(red, "max") || !strcmp(red, "min")));
  if (!ok) {
    ox_err(n, "reduction '%s' is not defined at this opset", red);
    return WF_EXIT_INPUT;
  }
  char redbuf[16];
  snprintf(redbuf, sizeof redbuf, "%s", red);
  ox_attrv at[2] = {OX_A_INT("axis", ox_attr_int(n, "axis", 0)), OX_A_IDENT("reduction", redbuf)};
  if (n->failed) return WF_EXIT_INPUT;
  ox_val *r = ox_emit1(n, WF_OP_SCATTER_ELEMENTS, 3, ins, 2, at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}

int ox_imp_gather_elements(ox_nctx *n) {
  ox_val *ins[2] = {ox_in(n, 0), ox_in(n, 1)};
  if (!ins[0] || !ins[1]) return WF_EXIT_INPUT;
  ox_attrv at = OX_A_INT("axis", ox_attr_int(n, "axis", 0));
  if (n->failed) return WF_EXIT_INPUT;
  ox_val *r = ox_emit1(n, WF_OP_GATHER_ELEMENTS, 2, ins, 1, &at, NULL);
  return r ? ox_set_out(n, 0, r) : WF_EXIT_INPUT;
}
