/*
 * sn_capture.h — the streams capturing into a CUDA graph now, as the
 * begin-capture wrappers saw them start and end.
 *
 * Work issued to a capturing stream is recorded, not run, and anything
 * libsn itself puts on such a stream becomes part of the program's graph
 * or invalidates the capture (an event recorded there is a node; a wait
 * on an event recorded outside the capture breaks CUDA's isolation rule).
 * So a call on a capturing stream is left to run as the program made it,
 * and a fence that must wait for the work queued on every stream waits,
 * for a capturing one, on the event libsn recorded there just before the
 * capture began: what ran on it before is all that can be in flight.
 * The table is small and fixed; a capture it cannot hold still counts as
 * active (sn_capture_active), so calls keep asking the runtime whether
 * their stream captures.
 */
#ifndef SN_CAPTURE_H
#define SN_CAPTURE_H

#define SN_CAPTURE_MAX 32

/* How many captures are under way (0: no call needs to ask). */
int sn_capture_active(void);
/* stream has begun capturing; event (libsn's, or NULL) was recorded on it
 * just before. */
void sn_capture_begun(void *stream, void *event);
/* stream's capture has ended (successfully or not); returns the event
 * given at its start, now the caller's to give back, or NULL. */
void *sn_capture_ended(void *stream);
/* Whether stream is capturing as far as the table knows; *event is its
 * start event (NULL when none was recorded). */
int sn_capture_event(void *stream, void **event);

#endif
