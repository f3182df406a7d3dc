/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the bootstrap's proof of the job
 * secret and for the names derived from it (duet_name_job_part, duet_name_comm_part;
 * docs/SECURITY.md). Small and slow on purpose: it
 * hashes a few hundred bytes per rank at start-up, never anything on a data path.
 *
 * A message is padded to a multiple of 64 bytes (a 1 bit, zeros, its length in bits as a
 * big-endian 64-bit number) and folded block by block into eight 32-bit words:
 *
 *   block (16 words) -> schedule w[0..64) -> 64 rounds over a..h -> added into the state
 */
#include <string.h>
#include "util/duet_util.h"

static const uint32_t round_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void fold_block(uint32_t state[8], const uint8_t block[64])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
               (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + round_k[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
}

void duet_sha256_init(duet_sha256_t *s)
{
    static const uint32_t start[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->state, start, sizeof start);
    s->bytes = 0;
    s->held = 0;
}

void duet_sha256_update(duet_sha256_t *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->bytes += len;
    while (len > 0) {
        size_t take = 64 - s->held < len ? 64 - s->held : len;
        memcpy(s->block + s->held, p, take);
        s->held += take;
        p += take;
        len -= take;
        if (s->held == 64) {
            fold_block(s->state, s->block);
            s->held = 0;
        }
    }
}

void duet_sha256_final(duet_sha256_t *s, uint8_t out[DUET_SHA256_BYTES])
{
    uint64_t bits = s->bytes * 8;
    uint8_t pad = 0x80, zero = 0, len_be[8];
    duet_sha256_update(s, &pad, 1);
    while (s->held != 56) duet_sha256_update(s, &zero, 1);
    for (int i = 0; i < 8; i++) len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
    duet_sha256_update(s, len_be, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->state[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->state[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->state[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->state[i];
    }
    memset(s, 0, sizeof *s); /* no trace of keyed input left on the stack */
}

/* HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)), K' the key padded (or hashed) to 64 bytes. */
void duet_hmac_sha256(const void *key, size_t key_len, const duet_hash_part_t *parts, int nparts,
                      uint8_t out[DUET_SHA256_BYTES])
{
    uint8_t k[64] = {0}, pad[64], inner[DUET_SHA256_BYTES];
    duet_sha256_t s;
    if (key_len > sizeof k) {
        duet_sha256_init(&s);
        duet_sha256_update(&s, key, key_len);
        duet_sha256_final(&s, k);
    } else if (key_len) {
        memcpy(k, key, key_len);
    }
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    duet_sha256_init(&s);
    duet_sha256_update(&s, pad, sizeof pad);
    for (int i = 0; i < nparts; i++) duet_sha256_update(&s, parts[i].data, parts[i].len);
    duet_sha256_final(&s, inner);
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    duet_sha256_init(&s);
    duet_sha256_update(&s, pad, sizeof pad);
    duet_sha256_update(&s, inner, sizeof inner);
    duet_sha256_final(&s, out);
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
    memset(inner, 0, sizeof inner);
}

int duet_bytes_equal_ct(const void *a, const void *b, size_t len)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t diff = 0;
    for (size_t i = 0; i < len; i++) diff |= (uint8_t)(x[i] ^ y[i]);
    return diff == 0;
}

/* Lower-case hex of the first `digits` / 2 bytes of HMAC(secret, label). */
static void name_part(const uint8_t *secret, size_t len, const char *label, char *out, int digits)
{
    static const char hexd[] = "0123456789abcdef";
    uint8_t mac[DUET_SHA256_BYTES];
    duet_hash_part_t part = {label, strlen(label)};
    duet_hmac_sha256(secret, len, &part, 1, mac);
    for (int i = 0; i < digits; i++) out[i] = hexd[(mac[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    out[digits] = '\0';
    memset(mac, 0, sizeof mac);
}

void duet_name_job_part(const uint8_t *secret, size_t len, char out[DUET_NAME_JOB_HEX + 1])
{
    name_part(secret, len, "duet names: job", out, DUET_NAME_JOB_HEX);
}

void duet_name_comm_part(const uint8_t *secret, size_t len, char out[DUET_NAME_COMM_HEX + 1])
{
    name_part(secret, len, "duet names: communicator", out, DUET_NAME_COMM_HEX);
}
