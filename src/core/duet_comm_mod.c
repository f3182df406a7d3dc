/* Running the per-communicator modules (duet_comm_mod.h). */
#include "core/duet_comm_mod.h"

static int count(void)
{
    int n = 0;
    while (duet_comm_mods[n]) n++;
    return n;
}

duet_status_t duet_comm_mods_open(duet_comm_t c)
{
    int n = count();
    for (int i = 0; i < n; i++) {
        const duet_comm_mod_t *m = duet_comm_mods[i];
        duet_status_t st = m->size != sizeof *m
                               ? DUET_FAIL(DUET_ERR_INTERNAL, INIT, "module %s: its table has %zu bytes, not %zu",
                                           m->name, m->size, sizeof *m)
                               : m->open(c);
        if (st) {
            while (i-- > 0) duet_comm_mods[i]->close(c);
            return st;
        }
    }
    return DUET_OK;
}

void duet_comm_mods_started(duet_comm_t c)
{
    for (int i = 0; duet_comm_mods[i]; i++) duet_comm_mods[i]->started(c);
}

void duet_comm_mods_stopping(duet_comm_t c)
{
    for (int i = 0; duet_comm_mods[i]; i++) duet_comm_mods[i]->stopping(c);
}

void duet_comm_mods_close(duet_comm_t c)
{
    for (int i = count(); i-- > 0;) duet_comm_mods[i]->close(c);
}

void duet_comm_mods_abort(duet_comm_t c, duet_status_t status)
{
    for (int i = 0; duet_comm_mods[i]; i++) duet_comm_mods[i]->abort(c, status);
}

duet_status_t duet_comm_mods_quiet(duet_comm_t c)
{
    duet_status_t first = DUET_OK;
    for (int i = 0; duet_comm_mods[i]; i++) {
        duet_status_t st = duet_comm_mods[i]->quiet(c);
        if (st && !first) first = st;
    }
    return first;
}

void duet_comm_mod_nothing(duet_comm_t c) { (void)c; }

duet_status_t duet_comm_mod_no_quiet(duet_comm_t c)
{
    (void)c;
    return DUET_OK;
}

void duet_comm_mod_no_abort(duet_comm_t c, duet_status_t status)
{
    (void)c;
    (void)status;
}
