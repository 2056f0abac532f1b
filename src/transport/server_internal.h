/*
 * server_internal.h — private: what the stream layer (canvas.c) needs from the server: the encoder pool, the
 * logger, the limits, and the one cross-thread wake-up of the network thread (lws_cancel_service).
 */
#ifndef RC_SERVER_INTERNAL_H
#define RC_SERVER_INTERNAL_H

#include "core/pool.h"
#include "core/util.h"

rc_pool *rc_server_pool(rcanvas_server *s);
const rc_logger *rc_server_logger(rcanvas_server *s);
uint32_t rc_server_max_frame_dim(rcanvas_server *s);
/* Wakes the network thread: it then hands new packets to viewers, sends titles, re-arms refine timers.
 * Any thread; cheap (an eventfd write). */
void rc_server_wake(rcanvas_server *s);
/* Adds/removes a canvas to/from the server's list (under the server's lock). */
int rc_server_attach(rcanvas_server *s, rcanvas_canvas *c);
/* Detaches c, closes its viewers on the network thread and returns once none is left. */
void rc_server_detach(rcanvas_server *s, rcanvas_canvas *c);

#endif
