#include "ir/support/plan_digest.h"

#include <string.h>

#include "ir/support/sha256.h"

static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

long wf_digest_self_find(const char *text, size_t len) {
  static const char key[] = "\"manifest.json\"";
  size_t k = sizeof key - 1;
  long found = -1;
  for (size_t i = 0; i + k <= len; i++) {
    if (memcmp(text + i, key, k)) continue;
    size_t h = i + k;
    while (h < len && (text[h] == ' ' || text[h] == '\t')) h++;
    if (h >= len || text[h++] != ':') continue;
    while (h < len && (text[h] == ' ' || text[h] == '\t')) h++;
    if (h >= len || text[h++] != '"') continue;
    size_t j = 0;
    while (j < 64 && h + j < len && is_hex(text[h + j])) j++;
    if (j == 64 && h + 64 < len && text[h + 64] == '"') found = (long)h;
  }
  return found;
}

void wf_digest_self_hash(const char *text, size_t len, long at, char hex[65]) {
  static const char zeros[64] = "0000000000000000000000000000000000000000000000000000000000000000";
  wf_sha256 s;
  wf_sha256_init(&s);
  wf_sha256_update(&s, text, (size_t)at);
  wf_sha256_update(&s, zeros, 64);
  wf_sha256_update(&s, text + at + 64, len - (size_t)at - 64);
  wf_sha256_hex(&s, hex);
}
