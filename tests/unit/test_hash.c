/*
 * test_hash.c — SHA-256 and HMAC-SHA-256 (src/util/duet_util_hash.c) against the published
 * test vectors (FIPS 180-2's examples, RFC 4231's cases 1, 2, 6 and 7), fed whole and in
 * pieces of every length 1..130 (the block-boundary paths of the update), plus the
 * constant-time comparison.
 */
#include "duet_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "boot/duet_boot.h"
#include "util/duet_util.h"

static void hex(const uint8_t *d, char out[2 * DUET_SHA256_BYTES + 1]) { duet_hex_encode(d, DUET_SHA256_BYTES, out); }

static void check_sha(const char *msg, size_t len, const char *want)
{
    uint8_t d[DUET_SHA256_BYTES];
    char got[2 * DUET_SHA256_BYTES + 1];
    duet_sha256_t s;
    duet_sha256_init(&s);
    duet_sha256_update(&s, msg, len);
    duet_sha256_final(&s, d);
    hex(d, got);
    CHECK(strcmp(got, want) == 0, "sha256 of %zu bytes: got %s, want %s", len, got, want);
    for (size_t piece = 1; piece <= 130 && piece < len + 2; piece++) {
        duet_sha256_init(&s);
        for (size_t off = 0; off < len; off += piece)
            duet_sha256_update(&s, msg + off, len - off < piece ? len - off : piece);
        duet_sha256_final(&s, d);
        hex(d, got);
        CHECK(strcmp(got, want) == 0, "sha256 of %zu bytes in pieces of %zu: got %s", len, piece, got);
    }
}

static void check_hmac(const uint8_t *key, size_t key_len, const char *msg, const char *want)
{
    uint8_t d[DUET_SHA256_BYTES];
    char got[2 * DUET_SHA256_BYTES + 1];
    duet_hash_part_t whole = {msg, strlen(msg)};
    duet_hmac_sha256(key, key_len, &whole, 1, d);
    hex(d, got);
    CHECK(strcmp(got, want) == 0, "hmac (key %zu bytes) of \"%.20s...\": got %s, want %s", key_len, msg, got, want);
    /* the same message in three parts */
    size_t n = strlen(msg), a = n / 3, b = n / 2;
    duet_hash_part_t parts[3] = {{msg, a}, {msg + a, b - a}, {msg + b, n - b}};
    duet_hmac_sha256(key, key_len, parts, 3, d);
    hex(d, got);
    CHECK(strcmp(got, want) == 0, "hmac in parts: got %s", got);
}

int main(void)
{
    check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *million = malloc(1000000);
    CHECK(million != NULL, "malloc");
    memset(million, 'a', 1000000);
    check_sha(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);

    uint8_t k1[20], k6[131];
    memset(k1, 0x0b, sizeof k1);
    memset(k6, 0xaa, sizeof k6);
    check_hmac(k1, sizeof k1, "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac((const uint8_t *)"Jefe", 4, "what do ya want for nothing?",
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    check_hmac(k6, sizeof k6, "Test Using Larger Than Block-Size Key - Hash Key First",
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    check_hmac(k6, sizeof k6,
               "This is a test using a larger than block-size key and a larger than block-size data. "
               "The key needs to be hashed before being used by the HMAC algorithm.",
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");

    uint8_t x[40], y[40];
    memset(x, 7, sizeof x);
    memcpy(y, x, sizeof y);
    CHECK(duet_bytes_equal_ct(x, y, sizeof x), "equal bytes compare unequal");
    for (size_t i = 0; i < sizeof x; i++) {
        y[i] ^= 0x80;
        CHECK(!duet_bytes_equal_ct(x, y, sizeof x), "a difference at byte %zu is missed", i);
        y[i] ^= 0x80;
    }
    printf("test_hash: %s\n", dt_failures() ? "FAILED" : "passed");
    return dt_finish();
}
