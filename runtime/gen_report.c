/* The report and summary of a generation run (gen_report.h). Like report.json, only
 * simulated quantities appear: two runs give byte-identical files. */
#include "runtime/gen_report.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "runtime/json_out.h"
#include "waferc/diag.h"

static cJSON *num(double v) { return cJSON_CreateNumber(v); }

static int64_t decode_cycles(const wf_gen_result *r) {
  int64_t t = 0;
  for (int i = 0; i < r->decode_steps; i++) t += r->step_cycles[i];
  return t;
}

/* Without a switch plan decode runs on the prefill's region with the same column split, so each
 * token's K/V stays on the PE that computed it; with one, the switch plan moved the caches onto
 * the decode region over the fabric (docs/generation.md, "The switch"). */
static const char *const switch_note_none =
    "decode runs on the prefill region with the same column split: every token's K/V stays on the PE that "
    "computed it, so the switch moves no data over the fabric (the host rearranges the cache's slots)";
static const char *const switch_note_plan =
    "the switch plan moved every KV cache from the prefill region onto the decode region's corner over the "
    "fabric; the weights of both phases stay resident, so none move";
static const char *const switch_note_weights =
    "the switch plan moved every KV cache, and the decode step's matrix weights (weights_moved), from the "
    "prefill region onto the decode region's corner over the fabric; the other weights of both phases stay "
    "resident";

int wf_gen_write_report(const wf_gen_result *r, const char *path) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddItemToObject(root, "format_version", num(1));
  cJSON_AddStringToObject(root, "plan", r->plan);
  cJSON_AddStringToObject(root, "decode_plan", r->decode_plan);
  cJSON_AddStringToObject(root, "target", r->target);
  cJSON_AddItemToObject(root, "clock_hz", num(r->prefill_clock_hz));
  cJSON_AddItemToObject(root, "prompt_length", num((double)r->prompt_length));
  cJSON *toks = cJSON_CreateArray();
  for (int i = 0; i < r->n_tokens; i++) cJSON_AddItemToArray(toks, num((double)r->tokens[i]));
  cJSON_AddItemToObject(root, "tokens", toks);

  double pre_s = (double)r->prefill_cycles / r->prefill_clock_hz;
  cJSON *pre = cJSON_CreateObject();
  cJSON_AddItemToObject(pre, "cycles", num((double)r->prefill_cycles));
  cJSON_AddItemToObject(pre, "seconds", num(pre_s));
  cJSON_AddItemToObject(pre, "time_to_first_token_s", num(pre_s)); /* + the switch's 0 */
  cJSON_AddItemToObject(pre, "tokens_per_s",
                        r->prefill_cycles > 0 ? num((double)r->prompt_length / pre_s) : cJSON_CreateNull());
  cJSON_AddItemToObject(root, "prefill", pre);

  cJSON *sw = cJSON_CreateObject();
  cJSON_AddItemToObject(sw, "cycles", num((double)r->switch_cycles));
  cJSON_AddItemToObject(sw, "seconds", num((double)r->switch_cycles / r->prefill_clock_hz));
  cJSON_AddItemToObject(sw, "fabric_words", num((double)r->switch_words));
  if (r->switch_plan) {
    cJSON_AddStringToObject(sw, "plan", r->switch_plan);
    cJSON_AddItemToObject(sw, "predicted_cycles", num((double)r->switch_predicted));
    cJSON_AddItemToObject(sw, "weights_moved", num(r->switch_weights));
    cJSON_AddItemToObject(sw, "weight_words", num((double)r->switch_weight_words));
  }
  cJSON *regions = cJSON_CreateObject();
  cJSON *a = cJSON_CreateArray(), *b = cJSON_CreateArray();
  cJSON_AddItemToArray(a, num(r->prefill_w));
  cJSON_AddItemToArray(a, num(r->prefill_h));
  cJSON_AddItemToArray(b, num(r->decode_w));
  cJSON_AddItemToArray(b, num(r->decode_h));
  cJSON_AddItemToObject(regions, "prefill", a);
  cJSON_AddItemToObject(regions, "decode", b);
  cJSON_AddItemToObject(sw, "regions", regions);
  cJSON_AddStringToObject(sw, "note", !r->switch_plan     ? switch_note_none
                                      : r->switch_weights ? switch_note_weights
                                                          : switch_note_plan);
  cJSON_AddItemToObject(root, "switch", sw);

  int64_t dc = decode_cycles(r);
  double dec_s = (double)dc / r->decode_clock_hz;
  cJSON *dec = cJSON_CreateObject();
  cJSON_AddItemToObject(dec, "steps", num(r->decode_steps));
  cJSON_AddItemToObject(dec, "cycles", num((double)dc));
  cJSON_AddItemToObject(dec, "cycles_per_step",
                        r->decode_steps ? num((double)dc / r->decode_steps) : cJSON_CreateNull());
  cJSON *per = cJSON_CreateArray();
  for (int i = 0; i < r->decode_steps; i++) cJSON_AddItemToArray(per, num((double)r->step_cycles[i]));
  cJSON_AddItemToObject(dec, "step_cycles", per);
  cJSON_AddItemToObject(dec, "seconds", num(dec_s));
  cJSON_AddItemToObject(dec, "tokens_per_s",
                        dc > 0 ? num((double)r->decode_steps / dec_s) : cJSON_CreateNull());
  cJSON_AddItemToObject(root, "decode", dec);

  cJSON *kv = cJSON_CreateObject();
  cJSON_AddStringToObject(kv, "policy", r->kv_cache);
  cJSON_AddItemToObject(kv, "rows", num(r->rows));
  cJSON_AddItemToObject(kv, "slots_per_row", num(r->slots_per_row));
  cJSON *occ = cJSON_CreateArray();
  for (int y = 0; y < r->rows; y++) cJSON_AddItemToArray(occ, num(r->occupancy[y]));
  cJSON_AddItemToObject(kv, "occupancy", occ);
  cJSON_AddItemToObject(root, "kv_cache", kv);

  return wf_json_write_report(root, path);
}

void wf_gen_print_summary(const wf_gen_result *r, FILE *out) {
  double pre_s = (double)r->prefill_cycles / r->prefill_clock_hz;
  int64_t dc = decode_cycles(r);
  double dec_s = (double)dc / r->decode_clock_hz;
  fprintf(out, "tokens (%d):", r->n_tokens);
  for (int i = 0; i < r->n_tokens; i++) fprintf(out, " %lld", (long long)r->tokens[i]);
  fprintf(out, "\n");
  fprintf(out, "prefill: %lld cycles for %lld prompt tokens, %.6g s at %.4g GHz (%.4g tokens/s)\n",
          (long long)r->prefill_cycles, (long long)r->prompt_length, pre_s, r->prefill_clock_hz / 1e9,
          r->prefill_cycles > 0 ? (double)r->prompt_length / pre_s : 0.0);
  if (r->switch_plan)
    fprintf(out, "switch:  %lld cycles (predicted %lld), %lld fabric words: the KV caches and %d weights (%lld "
                 "words) from %dx%d onto %dx%d\n",
            (long long)r->switch_cycles, (long long)r->switch_predicted, (long long)r->switch_words,
            r->switch_weights, (long long)r->switch_weight_words, r->prefill_w, r->prefill_h, r->decode_w,
            r->decode_h);
  else
    fprintf(out, "switch:  0 cycles, 0 fabric words (the cache stays on the PEs that computed it)\n");
  fprintf(out, "time to first token: %.6g s\n", pre_s);
  if (r->decode_steps)
    fprintf(out, "decode:  %d steps, %lld cycles, %.1f cycles/step, %.4g tokens/s at %.4g GHz\n", r->decode_steps,
            (long long)dc, (double)dc / r->decode_steps, dc > 0 ? (double)r->decode_steps / dec_s : 0.0,
            r->decode_clock_hz / 1e9);
  else
    fprintf(out, "decode:  no steps (--generate=1: the prefill gave the only token)\n");
  fprintf(out, "kv cache (%s, %d slots per row), tokens per row:", r->kv_cache, r->slots_per_row);
  for (int y = 0; y < r->rows; y++) fprintf(out, " %d", r->occupancy[y]);
  fprintf(out, "\n");
}
