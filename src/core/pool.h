/* SPDX-License-Identifier: MIT */
/*
 * pool.h — the encoder worker pool: N threads take jobs from one FIFO queue. Each worker has one slot of
 * worker-local state that the layer above fills on first use and the pool frees when it stops (the codec layer
 * keeps its per-worker encoder instances there, so jobs never allocate library handles).
 */
#ifndef RC_POOL_H
#define RC_POOL_H

#include <sched.h>

#include "rcanvas.h"

typedef struct rc_pool rc_pool;

/* Per-worker state handed to every job it runs. */
typedef struct rc_worker {
    int index;
    int pinned;                      /* running on its one core (the pool pins when workers ≤ cores) */
    cpu_set_t allowed, own;          /* the process's cores; the worker's one core */
    void *local;                     /* worker-local state of the layer above; NULL until it sets it */
    void (*local_free)(void *local); /* called on the worker's state when the pool stops (NULL = nothing) */
} rc_worker;

typedef struct rc_job rc_job;
struct rc_job {
    void (*run)(rc_job *job, rc_worker *w); /* runs on a worker thread */
    rc_job *next;                            /* queue link, owned by the pool while queued */
};

/* For a job that starts threads of its own (a video encoder's): while unpinned, the worker may run on every core
 * of the process, and threads it creates inherit that — created while pinned, they would all share its one core.
 * Worker thread only; no-ops when the pool does not pin. */
void rc_worker_unpin(rc_worker *w);
void rc_worker_repin(rc_worker *w);

/* Starts `threads` workers (≥ 1). RCANVAS_OK, RCANVAS_ENOMEM, RCANVAS_ETHREAD. */
int rc_pool_new(int threads, rc_pool **out);
/* Queues a job (FIFO); the job memory must stay valid until run() returns. Any thread. */
void rc_pool_submit(rc_pool *p, rc_job *job);
/* Queues several jobs at once (one lock, one broadcast). */
void rc_pool_submit_n(rc_pool *p, rc_job **jobs, int n);
int rc_pool_threads(const rc_pool *p);
/* Runs every queued job to completion, then stops and joins the workers. NULL ignored. */
void rc_pool_free(rc_pool *p);

#endif
