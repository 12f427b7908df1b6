/*
 * sn_capture.c — the table of capturing streams (sn_capture.h). Captures
 * are rare and short-lived next to calls: one lock, a linear table, and
 * one atomic counter that calls read without it.
 */
#include "common/sn_capture.h"

#include <stddef.h>

#include "common/sn_lock.h"

static struct {
    void *stream;
    void *event;
} sn_captures[SN_CAPTURE_MAX];
static int sn_ncaptures;  /* table entries in use */
static int sn_nactive;    /* captures under way, table or not (atomic) */
static sn_lock sn_capture_lock = SN_LOCK_INITIALIZER(SN_RANK_CAPTURES);

int sn_capture_active(void)
{
    return __atomic_load_n(&sn_nactive, __ATOMIC_ACQUIRE);
}

void sn_capture_begun(void *stream, void *event)
{
    sn_lock_take(&sn_capture_lock);
    if (sn_ncaptures < SN_CAPTURE_MAX) {
        sn_captures[sn_ncaptures].stream = stream;
        sn_captures[sn_ncaptures].event = event;
        sn_ncaptures++;
    }
    __atomic_add_fetch(&sn_nactive, 1, __ATOMIC_RELEASE);
    sn_lock_give(&sn_capture_lock);
}

void *sn_capture_ended(void *stream)
{
    void *event = NULL;
    sn_lock_take(&sn_capture_lock);
    for (int i = 0; i < sn_ncaptures; i++) {
        if (sn_captures[i].stream != stream)
            continue;
        event = sn_captures[i].event;
        sn_captures[i] = sn_captures[--sn_ncaptures];
        break;
    }
    if (sn_nactive > 0)
        __atomic_sub_fetch(&sn_nactive, 1, __ATOMIC_RELEASE);
    sn_lock_give(&sn_capture_lock);
    return event;
}

int sn_capture_event(void *stream, void **event)
{
    int found = 0;
    *event = NULL;
    sn_lock_take(&sn_capture_lock);
    for (int i = 0; i < sn_ncaptures && !found; i++) {
        if (sn_captures[i].stream == stream) {
            *event = sn_captures[i].event;
            found = 1;
        }
    }
    sn_lock_give(&sn_capture_lock);
    return found;
}
