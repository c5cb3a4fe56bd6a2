/* SHA-256 (FIPS 180-4), for the plan's file digests: waferc records one per file of a plan
 * and waferrun checks them, so a truncated copy or a hand-edited file is told apart from a
 * plan as written (docs/plan-format.md, "Digests"). Not a signature: anyone can recompute one. */
#ifndef WAFERC_SUPPORT_SHA256_H
#define WAFERC_SUPPORT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct wf_sha256 {
  uint32_t h[8];
  uint64_t len;     /* bytes hashed so far */
  uint8_t buf[64];
  size_t n;         /* bytes waiting in buf */
} wf_sha256;

void wf_sha256_init(wf_sha256 *s);
void wf_sha256_update(wf_sha256 *s, const void *data, size_t len);
/* Writes the digest as 64 lower-case hex digits and a NUL into hex[65]. */
void wf_sha256_hex(wf_sha256 *s, char hex[65]);
/* The digest of a whole file into hex[65]; 0, or -1 with errno set when it cannot be read. */
int wf_sha256_file(const char *path, char hex[65]);

#endif
