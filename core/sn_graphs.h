/*
 * sn_graphs.h — the ranges of CUDA graphs libsn saw captured (sn_graphs.c),
 * so that a launch of one is described by what its nodes touch rather than
 * as a call that needs every allocation resident.
 */
#ifndef SN_GRAPHS_H
#define SN_GRAPHS_H

#include <stddef.h>

#include "common/sn_call.h"

/* A capture begins on stream: a new, empty record. */
void sn_graphs_capture_begun(void *stream);
/* The capture on stream adds to a graph with nodes libsn did not see. */
void sn_graphs_mark_incomplete(void *stream);
/* A node of some graph was changed in place. */
void sn_graphs_node_changed(void);
/* A call c was issued to a capturing stream (recorded, not run). */
void sn_graphs_captured(const sn_call *c);
/* The capture on stream ended: with graph (of nodes nodes) the record is
 * the graph's; with NULL (the capture failed) it is dropped. */
void sn_graphs_capture_ended(void *stream, void *graph, size_t nodes);
/* exec was instantiated from graph, which has nodes nodes now. */
void sn_graphs_instantiated(void *graph, void *exec, size_t nodes);
/* A graph or executable graph destroyed or changed in place: its record
 * is dropped (a changed one launches opaque from then on). */
void sn_graphs_forget(void *graph_or_exec);
/* Adds the ranges of exec's record to c; returns 0 when exec has none
 * (the caller makes the launch opaque). */
int sn_graphs_describe(sn_call *c, void *exec);

#endif
