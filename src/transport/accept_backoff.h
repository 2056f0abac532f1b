/* SPDX-License-Identifier: MIT */
/*
 * accept_backoff.h — private: how the network thread (server.c) finds out that libwebsockets could not accept a
 * connection, and how long it then pauses accepting (docs/security.md, "Out of file descriptors"). A header of its
 * own so that the unit test (tests/transport/test_accept_backoff.c) reaches these functions of server.c.
 */
#ifndef RC_ACCEPT_BACKOFF_H
#define RC_ACCEPT_BACKOFF_H

#include <stdint.h>

#define RC_ACCEPT_PAUSE_MIN_US 50000
#define RC_ACCEPT_PAUSE_MAX_US 1000000

/* The errno of a failed accept() that a line of lws's log reports ("accept: errno 24"), 0 if it reports none. The
 * text is looked for anywhere in the line: lws 4.1 passes its text as it is, lws 4.3 puts a timestamp and the
 * level first ("[2026/12/06 04:00:00:0000] E: accept: errno 24"). */
int rc_lws_accept_errno(const char *line);

/* The errno of the last failed accept() that lws's log reported on this thread since the last call (the log
 * callback server.c installs: lws logs on the thread that failed), 0 if none; clears it. */
int rc_lws_take_accept_errno(void);

/* EMFILE or ENFILE when a connection waits on the listening socket listen_fd while this process can make no new
 * descriptor, so that lws's accept() of it fails, whatever lws logs about it; else 0. */
int rc_listener_starved(int listen_fd);

/* The length of the next pause, given the last one (0: none yet), when it ended, and now: doubled up to
 * RC_ACCEPT_PAUSE_MAX_US while failures keep coming soon after a pause, else RC_ACCEPT_PAUSE_MIN_US. */
int64_t rc_accept_pause_next(int64_t last_pause_us, int64_t last_end_us, int64_t now_us);

#endif
