/*
 * Which address a bootstrap listener binds (and advertises: they are the same).
 *
 *   DUET_BOOTSTRAP_IFADDR set     that address
 *   DUET_SOCKET_IFNAME set        the first up IPv4 interface it names
 *   one host (scope or launcher)  127.0.0.1: nothing off this host can connect
 *   otherwise                     the first up non-loopback IPv4 interface (not docker*, virbr*)
 *
 * Never INADDR_ANY: a listener on every interface lets every network the host is on knock.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "boot/duet_boot.h"

/* Does interface `name` match one entry of a NCCL_SOCKET_IFNAME-style list ("eth,ib" prefixes,
 * "=eth0" exact names, "^..." the complement)? */
static int name_matches(const char *spec, const char *name)
{
    int exclude = spec[0] == '^';
    if (exclude) spec++;
    int exact = spec[0] == '=';
    if (exact) spec++;
    int hit = 0;
    for (const char *p = spec; *p && !hit;) {
        size_t n = strcspn(p, ",");
        if (n > 0) hit = exact ? strlen(name) == n && strncmp(name, p, n) == 0 : strncmp(name, p, n) == 0;
        p += n + (p[n] == ',');
    }
    return exclude ? !hit : hit;
}

/* The first up IPv4 interface that `spec` names (NULL: the first non-loopback one that is not a
 * container or VM bridge). 0 if there is none. */
static int pick_iface(const char *spec, uint32_t *addr_be, char *name, size_t len)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) return 0;
    int found = 0;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
        if (spec ? !name_matches(spec, i->ifa_name)
                 : (i->ifa_flags & IFF_LOOPBACK) || name_matches("docker,virbr", i->ifa_name))
            continue;
        *addr_be = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        snprintf(name, len, "%s", i->ifa_name);
        found = 1;
    }
    freeifaddrs(ifs);
    return found;
}

duet_status_t duet_boot_bind_addr(duet_boot_scope_t scope, uint32_t *addr_be, char *why, size_t len)
{
    const duet_cfg_t *cfg = duet_cfg();
    struct in_addr ia;
    char ifname[IF_NAMESIZE + 1] = "";
    if (cfg->bootstrap_ifaddr[0]) {
        if (!inet_aton(cfg->bootstrap_ifaddr, &ia))
            return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "DUET_BOOTSTRAP_IFADDR=%s is not an IPv4 address",
                             cfg->bootstrap_ifaddr);
        *addr_be = ia.s_addr;
        snprintf(why, len, "%s (DUET_BOOTSTRAP_IFADDR)", cfg->bootstrap_ifaddr);
        return DUET_OK;
    }
    if (cfg->socket_ifname[0]) {
        if (!pick_iface(cfg->socket_ifname, addr_be, ifname, sizeof ifname))
            return DUET_FAIL(DUET_ERR_INVALID_ARG, BOOT, "DUET_SOCKET_IFNAME=%s names no interface that is up "
                             "with an IPv4 address", cfg->socket_ifname);
        ia.s_addr = *addr_be;
        snprintf(why, len, "%s on %s (DUET_SOCKET_IFNAME=%s)", inet_ntoa(ia), ifname, cfg->socket_ifname);
        return DUET_OK;
    }
    const char *because = scope == DUET_BOOT_ONE_HOST ? "the communicator's ranks share this host"
                                                      : "the communicator spans hosts";
    if (scope == DUET_BOOT_ASK_LAUNCHER) scope = duet_boot_env_one_host(&because) ? DUET_BOOT_ONE_HOST : DUET_BOOT_HOSTS;
    if (scope == DUET_BOOT_ONE_HOST) {
        *addr_be = htonl(INADDR_LOOPBACK);
        snprintf(why, len, "127.0.0.1 on loopback (%s)", because);
        return DUET_OK;
    }
    if (!pick_iface(NULL, addr_be, ifname, sizeof ifname)) {
        *addr_be = htonl(INADDR_LOOPBACK);
        snprintf(why, len, "127.0.0.1 on loopback (%s, and no other IPv4 interface is up)", because);
        return DUET_OK;
    }
    ia.s_addr = *addr_be;
    snprintf(why, len, "%s on %s (%s; the first up non-loopback IPv4 interface; DUET_SOCKET_IFNAME "
             "chooses another)", inet_ntoa(ia), ifname, because);
    return DUET_OK;
}
