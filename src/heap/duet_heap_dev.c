/* The heap's side of its device part (duet_heap_dev.h): made, reset and freed through the
 * linked backend's table. */
#include <string.h>
#include "heap/duet_heap_dev.h"

duet_status_t duet_heap_dev_create(duet_heap_t *h, duet_boot_t *b, const char *tag, int device)
{
    h->dev = NULL;
    h->dev_eps = NULL;
    h->dev_ops = NULL;
    const duet_heap_dev_ops_t *ops = duet_heap_dev_builtin;
    if (!ops) return DUET_OK;
    if (ops->size != sizeof *ops)
        return DUET_FAIL(DUET_ERR_INTERNAL, INIT, "device heap backend %s: its table has %zu bytes, not %zu",
                         ops->name, ops->size, sizeof *ops);
    return ops->create(h, b, tag, device);
}

void duet_heap_dev_destroy(duet_heap_t *h)
{
    if (h && h->dev) h->dev_ops->destroy(h);
    if (h) h->dev = NULL;
}

duet_status_t duet_heap_slot_reset(duet_heap_t *h, int slot)
{
    memset(duet_heap_slot(h->local_base, slot), 0, sizeof(duet_team_slot_t));
    memset(duet_heap_ft(h->local_base, slot), 0, sizeof(duet_ft_area_t));
    return h->dev ? h->dev_ops->slot_reset(h, slot) : DUET_OK;
}
