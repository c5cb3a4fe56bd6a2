/* The plan's digests (docs/plan-format.md, "Digests"): manifest.json's "digests" object maps
 * every file of the plan (programs, kernels, weights) to its SHA-256, and its own entry
 * "manifest.json" holds the SHA-256 of the manifest's text with that one value written as 64
 * zeros. waferc seals a plan with it last; waferrun checks it first. Shared by the backend
 * (writer) and the runtime (reader), which include nothing of each other. */
#ifndef WAFERC_SUPPORT_PLAN_DIGEST_H
#define WAFERC_SUPPORT_PLAN_DIGEST_H

#include <stddef.h>

/* Finds the manifest's own digest in text[0..len): the 64 hex digits of the last
 * `"manifest.json": "..."` member (any blanks around the colon). Returns their offset, or -1. */
long wf_digest_self_find(const char *text, size_t len);
/* The SHA-256 of text[0..len) with the 64 characters at `at` read as zeros, into hex[65]. */
void wf_digest_self_hash(const char *text, size_t len, long at, char hex[65]);

#endif
