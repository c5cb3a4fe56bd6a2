/* Deadlock reports: which PEs wait (class, task, program line, instruction, color, and the
 * directions their router currently accepts that color from) and which router buffers hold
 * wavelets that cannot advance, with the reason (switch position, full destination). */
#include <stdio.h>
#include <string.h>

#include "runtime/sim_sched.h"
#include "waferc/diag.h"

#define SHOW 12

static void dirs_text(unsigned set, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int d = 0; d < WF_DIR_COUNT; d++)
    if (set >> d & 1) n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", wf_dir_names[d]);
  if (!n) snprintf(buf, cap, "none");
}

/* Directions from which the router of p currently accepts color lc. */
static unsigned accepting(const wf_sim *s, const wf_pe *p, int lc) {
  const wf_router *r = s->routers[(size_t)p->y * s->w + p->x];
  const wf_rcolor *rc = &r->rc[lc];
  unsigned set = 0;
  for (int d = 0; d < WF_DIR_COUNT; d++)
    if (rc->tx[rc->pos][d] != WF_RX_NONE && (rc->tx[rc->pos][d] >> WF_DIR_RAMP & 1)) set |= 1u << d;
  return set;
}

static void describe_stream(const wf_sim *s, const wf_pe *p, const wf_stream *st, const char *what) {
  const wf_pe_instr *in = st->in;
  int lc = st->ci >= 0 ? st->ci : st->co;
  int col = s->ci[p->cls_i].lcol[lc];
  const wf_router *r = s->routers[(size_t)p->y * s->w + p->x];
  char acc[64];
  dirs_text(accepting(s, p, lc), acc, sizeof acc);
  const char *task = p->task >= 0 ? p->cls->tasks[p->task].name : "-";
  if (st->ci >= 0)
    wf_note(WF_LOC_NONE,
            "PE (%d,%d) class '%s' task '%s' line %d: %s%s on color c%d stalled after %lld of %lld "
            "wavelets, waiting for wavelets from %s (switch position %d)",
            p->x, p->y, p->cls->name, task, in->line, what, wf_peops[in->op].name, col,
            (long long)st->prog, (long long)st->need, acc, r->rc[lc].pos);
  else
    wf_note(WF_LOC_NONE,
            "PE (%d,%d) class '%s' task '%s' line %d: %s%s on color c%d stalled after %lld of %lld "
            "wavelets: the ramp into the router is full (position %d does not take RAMP or its "
            "tx side is blocked)",
            p->x, p->y, p->cls->name, task, in->line, what, wf_peops[in->op].name, col,
            (long long)st->prog, (long long)st->need, r->rc[lc].pos);
}

void wf_sim_report_deadlock(wf_sim *s, const char *why) {
  wf_error_at("waferrun", "deadlock at cycle %lld: %s", (long long)s->now, why);
  int shown = 0, stalled = 0;
  size_t cells = (size_t)s->w * (size_t)s->h;
  for (size_t i = 0; i < cells; i++) {
    wf_pe *p = s->pes[i];
    if (!p || wf_pe_quiescent(p)) continue;
    stalled++;
    if (shown >= SHOW) continue;
    shown++;
    if (p->state == WF_PE_FABRIC) describe_stream(s, p, &p->cur, "");
    for (int k = 0; k < WF_SIM_ASYNC; k++)
      if (p->as[k].in) describe_stream(s, p, &p->as[k], "async ");
    if (p->state != WF_PE_FABRIC && !p->n_async)
      wf_note(WF_LOC_NONE, "PE (%d,%d) class '%s': stalled at instruction %d (line %d)", p->x,
              p->y, p->cls->name, p->pc, p->pc < p->cls->n_code ? p->cls->code[p->pc].line : 0);
  }
  if (stalled > shown) wf_note(WF_LOC_NONE, "... and %d more stalled PEs", stalled - shown);
  shown = 0;
  for (size_t i = 0; i < cells && shown < SHOW; i++) {
    wf_router *r = s->routers[i];
    if (!r || !r->buffered) continue;
    for (int c = 0; c < r->nlc && shown < SHOW; c++)
      for (int d = 0; d < WF_DIR_COUNT && shown < SHOW; d++) {
        const wf_rcolor *rc = &r->rc[c];
        if (!rc->in[d].count) continue;
        shown++;
        uint8_t tx = rc->tx[rc->pos][d];
        char to[64];
        if (tx == WF_RX_NONE) {
          wf_note(WF_LOC_NONE,
                  "router (%d,%d): %d wavelet(s) on color c%d from %s wait: switch position %d "
                  "does not accept %s",
                  r->x, r->y, rc->in[d].count, wf_router_color(s, r, c), wf_dir_names[d], rc->pos,
                  wf_dir_names[d]);
        } else {
          dirs_text(tx, to, sizeof to);
          wf_note(WF_LOC_NONE,
                  "router (%d,%d): %d wavelet(s) on color c%d from %s cannot advance to %s "
                  "(destination full)",
                  r->x, r->y, rc->in[d].count, wf_router_color(s, r, c), wf_dir_names[d], to);
        }
      }
  }
}
