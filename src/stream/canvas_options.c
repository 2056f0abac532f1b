/* SPDX-License-Identifier: MIT */
/*
 * canvas_options.c — the canvas's options after creation: rcanvas_canvas_set_codec and rcanvas_canvas_set_option /
 * get_option, validated and applied under the lock (a codec change goes through the codec preferences, canvas_tiers.c).
 */
#include "stream/canvas_internal.h"

#include <string.h>

int rcanvas_canvas_set_codec(rcanvas_canvas *c, rcanvas_codec codec, int quality, rcanvas_subsampling ss) {
    if (!c || rc_canvas_check_params(codec, quality, ss)) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    c->params.codec = codec;
    c->encoder = NULL; /* the codec's default encoder */
    c->params.quality = quality;
    c->params.subsampling = ss;
    rc_canvas_codec_changed_locked(c);
    rc_canvas_resize_again_locked(c); /* the new codec's size limits */
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

const char *rcanvas_encoder_name(int i) {
    const rc_codec_type *t = rc_codec_live(i);
    return t ? t->name : NULL;
}

int rcanvas_canvas_set_encoder(rcanvas_canvas *c, const char *name) {
    if (!c || !name) return RCANVAS_EINVAL;
    int codec = rcanvas_codec_from_name(name);
    if (codec >= 0) return rcanvas_canvas_set_option(c, RCANVAS_OPT_CODEC, codec);
    const rc_codec_type *t = NULL;
    for (int i = 0; !t && rc_codec_live(i); i++)
        if (!strcmp(rc_codec_live(i)->name, name)) t = rc_codec_live(i);
    if (!t) return RCANVAS_EINVAL;
    pthread_mutex_lock(&c->mu);
    c->params.codec = (rcanvas_codec)t->wire_id;
    c->encoder = t == rc_codec_for(c->params.codec) ? NULL : t;
    rc_canvas_codec_changed_locked(c);
    rc_canvas_resize_again_locked(c);
    pthread_cond_broadcast(&c->cv);
    rc_canvas_notify_locked(c);
    pthread_mutex_unlock(&c->mu);
    return RCANVAS_OK;
}

const char *rcanvas_canvas_encoder(rcanvas_canvas *c) {
    if (!c) return NULL;
    pthread_mutex_lock(&c->mu);
    const char *name = c->params.codec != RCANVAS_CODEC_AUTO && c->nprefs ? c->prefs[0]->name : NULL;
    pthread_mutex_unlock(&c->mu);
    return name;
}

int rcanvas_canvas_set_option(rcanvas_canvas *c, rcanvas_option opt, int value) {
    if (!c) return RCANVAS_EINVAL;
    int r = RCANVAS_OK;
    pthread_mutex_lock(&c->mu);
    switch (opt) {
    case RCANVAS_OPT_CODEC:
        if (rc_canvas_check_params((rcanvas_codec)value, c->params.quality, c->params.subsampling))
            r = RCANVAS_EINVAL;
        else {
            c->params.codec = (rcanvas_codec)value;
            c->encoder = NULL;
            rc_canvas_codec_changed_locked(c);
            rc_canvas_resize_again_locked(c);
        }
        break;
    case RCANVAS_OPT_BITRATE_KBPS:
        if (value < 100 || value > 200000) r = RCANVAS_EINVAL;
        else c->params.bitrate_kbps = value;
        break;
    case RCANVAS_OPT_KEYFRAME_INTERVAL:
        if (value < 0 || value > 100000) r = RCANVAS_EINVAL;
        else c->params.keyframe_interval = value;
        break;
    case RCANVAS_OPT_ENCODER_THREADS:
        if (value < 0 || value > 64) r = RCANVAS_EINVAL;
        else c->params.threads = value;
        break;
    case RCANVAS_OPT_REFINE_CODEC: {
        const rc_codec_type *rc = value == RCANVAS_CODEC_PNG    ? &rc_codec_png
                                  : value == RCANVAS_CODEC_WEBP ? rc_codec_by_name("webp-lossless")
                                                                : NULL;
        if (!rc) r = RCANVAS_EINVAL;
        else c->refine_codec = rc;
        break;
    }
    case RCANVAS_OPT_QUALITY:
        if (value < 1 || value > 100) r = RCANVAS_EINVAL;
        else c->params.quality = value;
        break;
    case RCANVAS_OPT_SUBSAMPLING:
        if (value != RCANVAS_SUBSAMP_420 && value != RCANVAS_SUBSAMP_444 && value != RCANVAS_SUBSAMP_AUTO)
            r = RCANVAS_EINVAL;
        else c->params.subsampling = (rcanvas_subsampling)value;
        break;
    case RCANVAS_OPT_REFINE_MS:
        if (value < 0) r = RCANVAS_EINVAL;
        else c->refine_ms = value;
        break;
    case RCANVAS_OPT_MAX_IN_FLIGHT:
        if (value < 1 || value > RC_MAX_INFLIGHT) r = RCANVAS_EINVAL;
        else {
            c->max_in_flight = value;
            for (rc_session *s = c->sessions; s; s = s->next)
                s->window = rc_link_window(&s->link, rc_canvas_fps_goal_locked(c), value, RC_MAX_INFLIGHT);
        }
        break;
    case RCANVAS_OPT_UPDATE_MODE:
        if (value < RCANVAS_UPDATE_MANUAL || value > RCANVAS_UPDATE_FASTEST) r = RCANVAS_EINVAL;
        else c->mode = (rcanvas_update_mode)value;
        break;
    case RCANVAS_OPT_MAX_FPS:
        if (value < 0 || value > 1000) r = RCANVAS_EINVAL;
        else c->max_fps = value;
        break;
    case RCANVAS_OPT_RATE_ADAPT:
        if (value != 0 && value != 1) r = RCANVAS_EINVAL;
        else c->rate_adapt = value;
        break;
    default: r = RCANVAS_EINVAL; break;
    }
    if (!r) {
        pthread_cond_broadcast(&c->cv); /* a mode or window change may make a draw due */
        rc_canvas_notify_locked(c);     /* a wider window may let sessions send */
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

int rcanvas_canvas_get_option(rcanvas_canvas *c, rcanvas_option opt, int *value) {
    if (!c || !value) return RCANVAS_EINVAL;
    int r = RCANVAS_OK;
    pthread_mutex_lock(&c->mu);
    switch (opt) {
    case RCANVAS_OPT_CODEC: *value = (int)c->params.codec; break;
    case RCANVAS_OPT_BITRATE_KBPS: *value = c->params.bitrate_kbps; break;
    case RCANVAS_OPT_KEYFRAME_INTERVAL: *value = c->params.keyframe_interval; break;
    case RCANVAS_OPT_ENCODER_THREADS: *value = c->params.threads; break;
    case RCANVAS_OPT_REFINE_CODEC: *value = c->refine_codec ? c->refine_codec->wire_id : RCANVAS_CODEC_PNG; break;
    case RCANVAS_OPT_QUALITY: *value = c->params.quality; break;
    case RCANVAS_OPT_SUBSAMPLING: *value = (int)c->params.subsampling; break;
    case RCANVAS_OPT_REFINE_MS: *value = c->refine_ms; break;
    case RCANVAS_OPT_MAX_IN_FLIGHT: *value = c->max_in_flight; break;
    case RCANVAS_OPT_UPDATE_MODE: *value = (int)c->mode; break;
    case RCANVAS_OPT_MAX_FPS: *value = (int)(c->max_fps + 0.5); break;
    case RCANVAS_OPT_RATE_ADAPT: *value = c->rate_adapt; break;
    case RCANVAS_OPT_LIVE_QUALITY: { /* what the first tier's steering asks of its next live frame */
        const rc_tier *t = &c->tiers[0];
        const rc_steer *st = &t->steer;
        int jpeg = t->codec ? t->codec->wire_id == RCANVAS_CODEC_JPEG : c->params.codec == RCANVAS_CODEC_JPEG;
        if (!jpeg) *value = 0;
        else if (!t->codec || !st->scale_div) *value = c->params.quality; /* not steered (yet) */
        else if (st->scale_div != 1 || st->fps_cap > 0) *value = 0;
        else *value = st->quality > 0 && st->quality < c->params.quality ? st->quality : c->params.quality;
        break;
    }
    default: r = RCANVAS_EINVAL; break;
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}
