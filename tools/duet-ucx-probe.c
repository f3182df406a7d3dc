/*
 * duet-ucx-probe: can UCX (UCP) run here, and what would it use? The first brick of the net
 * transport (docs/NETWORK.md), built only when CMake found UCX (DUET_HAVE_UCX).
 *
 *   duet-ucx-probe             context + worker with the features the net transport asks
 *                              for; prints the UCX version, the worker address length and the
 *                              transports UCX may use; tears down
 *   duet-ucx-probe --loopback  also two workers of this process as two "ranks": the second's
 *                              segment mapped and its rkey packed / unpacked as the heap will
 *                              do, then put, fetch-add and flush through an endpoint, checked
 *                              against the expected bytes; prints the endpoint's lanes
 *   duet-ucx-probe --verbose   also UCX's own reports (ucp_context_print_info, ...)
 *
 * UCX reads its own variables (UCX_TLS=tcp, UCX_NET_DEVICES=...), so the same probe answers
 * "what would a rank pick with these settings". Exit code 0: everything worked; 1: a UCX call
 * failed (said on stderr); 2: command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include "util/duet_util.h"

#define SEG_BYTES (1u << 20)
#define PUT_OFF   4096       /* where the put lands in the target's segment */
#define PUT_BYTES 65536
#define AMO_OFF   64         /* the 8-byte word the atomic adds to */

static int verbose;

static int fail(const char *what, ucs_status_t st)
{
    fprintf(stderr, "duet-ucx-probe: %s: %s\n", what, ucs_status_string(st));
    return 1;
}

/* The transports of UCX's resource report ("#   resource 3  :  md 1  dev 2  flags -- tcp/eth0"),
 * as "tcp/eth0 posix/memory ...". */
static void print_resources(ucp_context_h ctx)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return;
    ucp_context_print_info(ctx, f);
    fclose(f);
    printf("transports:      ");
    int any = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "resource") || !strstr(line, "flags")) continue;
        char *last = strrchr(line, ' ');
        if (last && last[1]) printf("%s%s", any++ ? " " : "", last + 1);
    }
    printf("%s\n", any ? "" : "(none listed)");
    if (verbose) printf("%s", text);
    free(text);
}

/* Waits for a request: progresses both workers (the target's progress matters where UCX
 * emulates RMA with active messages, e.g. over TCP). Bounded by the wait loop's deadline. */
static ucs_status_t wait_req(ucs_status_ptr_t req, ucp_worker_h a, ucp_worker_h b, const char *what)
{
    if (req == NULL) return UCS_OK;
    if (UCS_PTR_IS_ERR(req)) return UCS_PTR_STATUS(req);
    duet_wait_ctx_t ctx = {.timeout_s = 20, .spin_us = 50};
    duet_waiter_t w;
    duet_waiter_init(&w, &ctx, "%s", what, 0, 0, -1);
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(a);
        if (b) ucp_worker_progress(b);
        if (duet_waiter_turn(&w) != DUET_OK) {
            fprintf(stderr, "duet-ucx-probe: %s did not complete in %.0f s\n", what, ctx.timeout_s);
            ucp_request_cancel(a, req);
            while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(a);
            st = UCS_ERR_TIMED_OUT;
            break;
        }
    }
    ucp_request_free(req);
    return st;
}

static ucs_status_t make_worker(ucp_context_h ctx, ucp_worker_h *w, ucp_address_t **addr, size_t *len)
{
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucs_status_t st = ucp_worker_create(ctx, &wp, w);
    if (st == UCS_OK && (st = ucp_worker_get_address(*w, addr, len)) != UCS_OK) ucp_worker_destroy(*w);
    return st;
}

/* Two workers of one context as origin and target: the heap's path in miniature. */
static int loopback(ucp_context_h ctx, ucp_worker_h origin)
{
    ucp_worker_h target = NULL;
    ucp_address_t *taddr = NULL;
    size_t taddr_len = 0, rkey_len = 0;
    ucp_mem_h memh = NULL;
    void *rkey_buf = NULL;
    ucp_ep_h ep = NULL;
    ucp_rkey_h rkey = NULL;
    int rc = 1;
    ucs_status_t st;
    char *seg = aligned_alloc(4096, SEG_BYTES), *src = malloc(PUT_BYTES);
    if (!seg || !src) {
        fprintf(stderr, "duet-ucx-probe: out of memory\n");
        goto out;
    }
    memset(seg, 0, SEG_BYTES);
    for (size_t i = 0; i < PUT_BYTES; i++) src[i] = (char)(i * 7 + 1);
    if ((st = make_worker(ctx, &target, &taddr, &taddr_len)) != UCS_OK) {
        rc = fail("target worker", st);
        goto out;
    }
    /* the target registers its segment (the heap: once, at creation) and packs its rkey */
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = seg, .length = SEG_BYTES};
    if ((st = ucp_mem_map(ctx, &mp, &memh)) != UCS_OK) {
        rc = fail("ucp_mem_map", st);
        goto out;
    }
    if ((st = ucp_rkey_pack(ctx, memh, &rkey_buf, &rkey_len)) != UCS_OK) {
        rc = fail("ucp_rkey_pack", st);
        goto out;
    }
    /* the origin connects to the target's address (the bootstrap's allgather, at init) */
    ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
                                 .address = taddr, .err_mode = UCP_ERR_HANDLING_MODE_PEER};
    if ((st = ucp_ep_create(origin, &ep_params, &ep)) != UCS_OK) {
        rc = fail("ucp_ep_create", st);
        goto out;
    }
    if ((st = ucp_ep_rkey_unpack(ep, rkey_buf, &rkey)) != UCS_OK) {
        rc = fail("ucp_ep_rkey_unpack", st);
        goto out;
    }
    uint64_t base = (uint64_t)(uintptr_t)seg;
    /* put, then fetch-add ordered after it, then flush: remote completion of both */
    ucp_request_param_t none = {.op_attr_mask = 0};
    if ((st = wait_req(ucp_put_nbx(ep, src, PUT_BYTES, base + PUT_OFF, rkey, &none), origin, target, "put")) != UCS_OK) {
        rc = fail("ucp_put_nbx", st);
        goto out;
    }
    if ((st = ucp_worker_fence(origin)) != UCS_OK) {
        rc = fail("ucp_worker_fence", st);
        goto out;
    }
    uint64_t operand = 5, fetched = 99;
    ucp_request_param_t amo = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER,
                               .datatype = ucp_dt_make_contig(8), .reply_buffer = &fetched};
    ucs_status_ptr_t req = ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &operand, 1, base + AMO_OFF, rkey, &amo);
    if ((st = wait_req(req, origin, target, "fetch-add")) != UCS_OK) {
        rc = fail("ucp_atomic_op_nbx", st);
        goto out;
    }
    if ((st = wait_req(ucp_worker_flush_nbx(origin, &none), origin, target, "flush")) != UCS_OK) {
        rc = fail("ucp_worker_flush_nbx", st);
        goto out;
    }
    uint64_t word;
    memcpy(&word, seg + AMO_OFF, sizeof word);
    if (memcmp(seg + PUT_OFF, src, PUT_BYTES) != 0 || word != 5 || fetched != 0) {
        fprintf(stderr, "duet-ucx-probe: loopback: wrong result (put %s, word %llu, fetched %llu; expected 5, 0)\n",
                memcmp(seg + PUT_OFF, src, PUT_BYTES) ? "differs" : "ok", (unsigned long long)word,
                (unsigned long long)fetched);
        goto out;
    }
    printf("rkey:            %zu bytes packed\n", rkey_len);
    printf("loopback:        put %d B + fetch-add + flush between two workers: ok\n", PUT_BYTES);
    if (verbose) ucp_ep_print_info(ep, stdout);
    rc = 0;
out:
    if (rkey) ucp_rkey_destroy(rkey);
    if (ep) {
        ucp_request_param_t close = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
        ucs_status_t cst = wait_req(ucp_ep_close_nbx(ep, &close), origin, target, "endpoint close");
        if (cst != UCS_OK && cst != UCS_ERR_CANCELED && cst != UCS_ERR_ENDPOINT_TIMEOUT)
            rc = fail("ucp_ep_close_nbx", cst);
    }
    if (rkey_buf) ucp_rkey_buffer_release(rkey_buf);
    if (memh) ucp_mem_unmap(ctx, memh);
    if (taddr) ucp_worker_release_address(target, taddr);
    if (target) ucp_worker_destroy(target);
    free(seg);
    free(src);
    return rc;
}

int main(int argc, char **argv)
{
    int do_loopback = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--loopback")) do_loopback = 1;
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else {
            fprintf(stderr, "usage: duet-ucx-probe [--loopback] [--verbose]\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    printf("UCX:             %u.%u.%u (built against %d.%d)\n", major, minor, release, UCP_API_MAJOR,
           UCP_API_MINOR);
    const char *tls = getenv("UCX_TLS"); /* a tool: UCX's own variable, only echoed */
    printf("UCX_TLS:         %s\n", tls && *tls ? tls : "(unset: UCX picks)");

    ucp_config_t *config = NULL;
    ucp_context_h ctx = NULL;
    ucp_worker_h worker = NULL;
    ucp_address_t *addr = NULL;
    size_t addr_len = 0;
    int rc = 1;
    ucs_status_t st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) return fail("ucp_config_read", st);
    /* what the net transport asks for: RMA + 32/64-bit atomics (one-sided calls), AM
     * (signals that wake a sleeper, control messages), TAG (collective channels) */
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                           .features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 |
                                       UCP_FEATURE_AM | UCP_FEATURE_TAG,
                           .mt_workers_shared = 0};
    st = ucp_init(&params, config, &ctx);
    ucp_config_release(config);
    if (st != UCS_OK) return fail("ucp_init", st);
    if ((st = make_worker(ctx, &worker, &addr, &addr_len)) != UCS_OK) {
        rc = fail("ucp_worker_create", st);
        goto out;
    }
    printf("features:        rma amo32 amo64 am tag\n");
    printf("worker address:  %zu bytes\n", addr_len);
    print_resources(ctx);
    if (verbose) ucp_worker_print_info(worker, stdout);
    rc = do_loopback ? loopback(ctx, worker) : 0;
    ucp_worker_release_address(worker, addr);
    ucp_worker_destroy(worker);
out:
    ucp_cleanup(ctx);
    printf("result:          %s\n", rc ? "FAILED" : "ok");
    return rc;
}
