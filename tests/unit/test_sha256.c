/* SHA-256 against FIPS 180-4's examples (and the manifest's self-digest helpers). */
#include <string.h>

#include "ir/support/plan_digest.h"
#include "ir/support/sha256.h"
#include "wf_test.h"

static void hash_str(const char *s, size_t reps, char hex[65]) {
  wf_sha256 h;
  wf_sha256_init(&h);
  for (size_t i = 0; i < reps; i++) wf_sha256_update(&h, s, strlen(s));
  wf_sha256_hex(&h, hex);
}

int main(void) {
  char hex[65];
  hash_str("abc", 1, hex);
  CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc: %s", hex);
  hash_str("", 1, hex);
  CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty: %s", hex);
  hash_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1, hex); /* two blocks */
  CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "448 bits: %s", hex);
  hash_str("a", 1000000, hex); /* updates that straddle blocks */
  CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "a x 10^6: %s", hex);

  /* The self-digest: found after any blanks around the colon, the last one wins, and it
   * hashes the text with its own 64 digits read as zeros. */
  const char *z = "0000000000000000000000000000000000000000000000000000000000000000";
  char text[512];
  snprintf(text, sizeof text, "{\"digests\": {\"a\": \"x\",\n\t\"manifest.json\":\t\"%s\"}}\n", z);
  long at = wf_digest_self_find(text, strlen(text));
  CHECK(at > 0 && !strncmp(text + at, z, 64), "self digest not found (%ld)", at);
  char self[65], plain[65];
  wf_digest_self_hash(text, strlen(text), at, self);
  hash_str(text, 1, plain);
  CHECK(!strcmp(self, plain), "zeros hash as themselves");
  memcpy(text + at, self, 64);
  char again[65];
  wf_digest_self_hash(text, strlen(text), at, again);
  CHECK(!strcmp(again, self), "a sealed text hashes to its own digest");
  CHECK(wf_digest_self_find("{\"manifest.json\": \"abc\"}", 24) == -1, "a short digest is not one");
  return wf_test_result("test_sha256");
}
