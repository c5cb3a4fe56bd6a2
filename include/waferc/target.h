/* waferc — device targets (the PLMR model of WaferLLM §3.1), read from text presets.
 *
 * Presets live in targets/NAME.target as `key = value` lines ('#' starts a comment);
 * docs/targets.md lists every key. Nothing about the device is a constant in code.
 *
 *   wf_target t;
 *   if (wf_target_load("wse2", &t) != 0) return WF_EXIT_INPUT;   // error already reported
 *   if (wf_target_set_mesh(&t, "64x64") != 0) return WF_EXIT_USAGE;
 */
#ifndef WAFERC_TARGET_H
#define WAFERC_TARGET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WF_MAX_COLORS 32

typedef struct wf_target {
  char name[64];             /* preset name, e.g. "wse2" */
  char description[160];     /* one line for --help and reports */
  int fabric_w, fabric_h;    /* whole fabric in PEs */
  int program_w, program_h;  /* largest program rectangle */
  int mesh_w, mesh_h;        /* the mesh a compile/run uses (--mesh), <= program rectangle */
  int64_t sram_bytes;        /* SRAM per PE */
  int sram_banks;            /* banks per PE */
  double clock_hz;           /* for cycles -> seconds */
  int fmac_per_cycle;        /* fp32 multiply-accumulates per cycle per PE */
  int fp16_simd;             /* fp16 SIMD width */
  int wavelet_bits;          /* bits per wavelet */
  int hop_cycles;            /* cycles per link hop (alpha) */
  int ramp_cycles;           /* T_R: processor <-> router, each way */
  int colors;                /* routable colors */
  uint32_t reserved_colors;  /* bit i set = color i reserved (e.g. host I/O) */
  int switch_positions;      /* per color per router */
  int route_code_bits;       /* R = 2^bits routes a PE can tell apart */
  int queue_depth;           /* input queue depth per color, in wavelets */
  int exp_cycles;            /* cost of one exp/log/tanh/erf... element (multi-cycle ops) */
  int div_cycles;            /* cost of one divide / rsqrt / sqrt element */
  int bank_conflict_cycles;  /* extra cycles when two source reads hit one SRAM bank in a
                                cycle (0 = not modelled; optional key, default 0) */
} wf_target;

/* Loads a preset by name (searched in $WAFERC_TARGET_PATH, then the build's and the installed
 * targets/ directories) or by path (contains '/' or ends in .target). Reports errors itself.
 * The mesh defaults to the preset's `default_mesh`. Returns 0 on success. */
int wf_target_load(const char *name_or_path, wf_target *out);
/* Parses the text of a target file held in memory (len bytes, NULs included, as a file
 * holding them would be read), as wf_target_load does a file; name_for_errors stands for its
 * path in messages. Returns 0 on success. */
int wf_target_parse(const char *text, size_t len, const char *name_for_errors, wf_target *out);
/* Parses "WxH" and checks it fits the program rectangle. Returns 0 on success. */
int wf_target_set_mesh(wf_target *t, const char *mesh);
/* Writes the preset names found on the search path, one per line, to `out` (FILE *). */
void wf_target_list(void *out);
int wf_target_usable_colors(const wf_target *t); /* colors minus reserved */

#ifdef __cplusplus
}
#endif
#endif
