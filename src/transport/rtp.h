/* SPDX-License-Identifier: MIT */
/*
 * rtp.h — private: one RTP output of a canvas (rcanvas_canvas_add_rtp_output in rcanvas.h) as the runtime sees
 * it. A session of the canvas (stream/session.h, view-only, one codec, a fixed rate) on its own thread: packets
 * from the session go out as RTP (rtp_pack.h) to host:port, RTCP SR to host:port+1, feedback comes back on the same
 * socket. The stream reaches it only through rc_rtp_output_wake().
 */
#ifndef RC_RTP_H
#define RC_RTP_H

#include "core/util.h"
#include "rcanvas.h"

/* Validates cfg, resolves and binds, opens the session and starts the thread (rcanvas.h gives the errors). The
 * logger outlives the output. */
int rc_rtp_output_new(rcanvas_canvas *c, const rcanvas_rtp_config *cfg, const rc_logger *log,
                      rcanvas_rtp_output **out);
/* The canvas has something new (a packet, a closing): the thread asks its session. Any thread, any locks held
 * (an eventfd write). */
void rc_rtp_output_wake(rcanvas_rtp_output *o);
rcanvas_canvas *rc_rtp_output_canvas(const rcanvas_rtp_output *o);
/* Stops the thread, closes the session and the socket, frees. NULL ignored. */
void rc_rtp_output_free(rcanvas_rtp_output *o);
int rc_rtp_output_get_stats(rcanvas_rtp_output *o, rcanvas_rtp_stats *out);

#endif
