/* The names of the collective algorithms (waferc/collectives.h): the vocabulary of the
 * dist ops' `algo` attribute, which the IR's rules check and the backend's collectives
 * library, the tools and the manifest print. */
#include <strings.h>

#include "waferc/collectives.h"

static const char *const algo_names[WF_COLL_N_ALGOS] = {
    "star", "chain", "tree", "two_phase", "autogen", "ring", "snake", "flood"};

const char *wf_coll_algo_name(wf_coll_algo a) {
  return (unsigned)a < WF_COLL_N_ALGOS ? algo_names[a] : "?";
}

int wf_coll_algo_parse(const char *name) {
  for (int a = 0; a < WF_COLL_N_ALGOS; a++)
    if (!strcasecmp(name, algo_names[a])) return a;
  if (!strcasecmp(name, "two-phase") || !strcasecmp(name, "twophase")) return WF_COLL_TWO_PHASE;
  if (!strcasecmp(name, "auto-gen") || !strcasecmp(name, "auto_gen")) return WF_COLL_AUTOGEN;
  if (!strcasecmp(name, "bcast") || !strcasecmp(name, "broadcast")) return WF_COLL_FLOOD;
  return -1;
}
