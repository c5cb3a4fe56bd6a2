/* The hardware rule for routes (ir/pe/pe_routes.c), which waferc checks before it writes a plan
 * and waferrun when it loads one: per color and switch position, one rx set -> one tx set on
 * every PE of the region. Per-input rules that send two live rx ports to different tx sets are
 * refused, naming the PE; the same tx set for both, a port facing outside the region, a
 * rule that holds on no PE, or the rules on different positions or colors are held. The check
 * is per distinct column and row, so a region of 750 x 994 PEs answers at once. */
#include <stdio.h>
#include <string.h>

#include "ir/pe/pe_routes.h"
#include "waferc/diag.h"

#include "wf_test.h"

static char last[512];
static void sink(wf_severity sev, wf_loc loc, const char *msg, void *user) {
  (void)sev, (void)loc, (void)user;
  snprintf(last, sizeof last, "%s", msg);
}

/* 0 when the class with these route lines holds on a w x h region, else -1. */
static int holds(const char *routes, int w, int h) {
  char text[2048];
  snprintf(text, sizeof text, ".format 2\n.class main\n.sym %%a 0 16\n.color c0 test\n%s.code\nzero %%a 0\n",
           routes);
  wf_pe_class *c = wf_pe_class_parse_string(text, "t.wpe");
  CHECK(c != NULL, "the class does not parse:\n%s", text);
  if (!c) return -2;
  last[0] = 0;
  int rc = wf_pe_check_routes(c, 0, 0, w, h, 0, 0, w, h, "t.wpe");
  wf_pe_class_free(c);
  return rc;
}

int main(void) {
  wf_diag_set_sink(sink, NULL);
  /* a ramp that sends west while the east link delivers to the ramp: two tx sets */
  CHECK(holds(".route c0 RAMP -> W\n.route c0 E -> RAMP\n", 4, 4) == -1);
  CHECK(strstr(last, "color c0, switch position p0") && strstr(last, "PE (1,0)"), "message: %s", last);
  /* the same tx set for both rx ports: one rx set {RAMP, E} -> {W} */
  CHECK(holds(".route c0 RAMP -> W\n.route c0 E -> W\n", 4, 4) == 0);
  /* on a 1-wide region the east port faces outside: nothing arrives there */
  CHECK(holds(".route c0 RAMP -> W\n.route c0 E -> RAMP\n", 1, 4) == 0);
  /* the rules on different switch positions, or guarded apart: held */
  CHECK(holds(".route c0 RAMP -> W\n.route c0 p1 E -> RAMP\n", 4, 4) == 0);
  CHECK(holds("[x==0] .route c0 RAMP -> E\n[x>0] .route c0 W -> RAMP\n", 4, 4) == 0);
  /* guarded onto one column only: that column's PEs are named */
  CHECK(holds("[x==2] .route c0 RAMP -> S\n[x==2] .route c0 N -> RAMP\n", 4, 4) == -1);
  CHECK(strstr(last, "PE (2,1)") != NULL, "message: %s", last);
  /* a whole wafer's region: per distinct column and row, not per PE */
  CHECK(holds("[x>0] .route c0 RAMP -> W\n[x<749] .route c0 E -> W\n", 750, 994) == 0);
  CHECK(holds("[y==500] .route c0 RAMP -> N\n[y==500] .route c0 S -> RAMP\n", 750, 994) == -1);
  wf_diag_set_sink(NULL, NULL);
  return wf_test_result("test_pe_routes");
}
