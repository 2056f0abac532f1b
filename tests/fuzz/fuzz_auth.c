/* SPDX-License-Identifier: MIT */
/*
 * fuzz_auth — libFuzzer target for the access rules' pure functions (src/transport/auth.c): the Bearer
 * and cookie parsers, the Host check, the base path, the page's way back to the root, roles by token, and the
 * session a page's token is traded for (its secret path, Set-Cookie value and the 303's Location), and which of a
 * request's credentials counts (?token=, Bearer, then under the secret path only ?session= and the cookie). The input: a
 * byte of choices (the output buffers' size, the bind address, the allow-list), then lines: an Authorization
 * value, a Cookie header, a Host value, a path and a base path, then query arguments. Each output goes into a
 * buffer of exactly the size given, so ASan sees any write past it, and each result is checked against what auth.h
 * promises (a Bearer token has no blanks around it and re-parses to itself, a cookie value comes from the header, a
 * Host is accepted only for the names of its rule, a stripped path is a suffix of the path, the root prefix is "./"
 * or "../" repeated, only "/s/SECRET/…" matches the session, a Location is relative, keeps no token and carries no
 * byte that could end a header, a session's S opens only under the secret path and only as S, never as a token,
 * and a token never as S). `make fuzz`, `make test-fuzz`.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/auth.h"

#define REQUIRE(c)         \
    do {                   \
        if (!(c)) abort(); \
    } while (0)

#define I_TOKEN "interactive-token-0123456789"
#define V_TOKEN "view-only-token-0123456789ab"
#define COOKIE RC_SESSION_COOKIE
#define SECRET "0123456789abcdef0123456789abcdef" /* R of the session's path */
#define S_INTER "fedcba9876543210fedcba9876543210" /* S of the interactive role */
#define S_VIEW "00112233445566778899aabbccddeeff"  /* S of the view-only role */

static void check_bearer(const char *h, size_t cap) {
    char *out = malloc(cap);
    if (!out) return;
    if (rc_auth_bearer(h, out, cap)) {
        size_t n = strlen(out);
        REQUIRE(n > 0 && n < cap);
        REQUIRE(out[0] != ' ' && out[0] != '\t' && out[n - 1] != ' ' && out[n - 1] != '\t');
        REQUIRE(strstr(h, out) != NULL);
        const char *p = h + strspn(h, " \t");
        REQUIRE(!strncasecmp(p, "bearer", 6) && (p[6] == ' ' || p[6] == '\t'));
        char again[300], *o2 = malloc(cap);
        if (o2 && n < 280) { /* what it found, said again plainly, is found again */
            snprintf(again, sizeof again, "Bearer %s", out);
            REQUIRE(rc_auth_bearer(again, o2, cap) && !strcmp(o2, out));
        }
        free(o2);
        /* and the role of that token is the one of its plain comparison */
        rc_role r = rc_auth_role(out, I_TOKEN, V_TOKEN);
        REQUIRE(r == (!strcmp(out, I_TOKEN) ? RC_ROLE_INTERACTIVE : !strcmp(out, V_TOKEN) ? RC_ROLE_VIEW : RC_ROLE_WRONG));
    }
    free(out);
}

static void check_cookie(const char *h, size_t cap) {
    char *out = malloc(cap);
    if (!out) return;
    if (rc_auth_cookie(h, COOKIE, out, cap)) {
        size_t n = strlen(out);
        REQUIRE(n > 0 && n < cap);
        REQUIRE(!strchr(out, ';'));
        REQUIRE(strstr(h, out) != NULL);
        REQUIRE(strstr(h, COOKIE "=") != NULL);
    } else {
        /* absent name: never found */
        if (!strstr(h, COOKIE "=")) REQUIRE(1);
    }
    if (!strstr(h, COOKIE)) REQUIRE(!rc_auth_cookie(h, COOKIE, out, cap));
    free(out);
}

/* host (not NULL, not empty) starts with name, ignoring case, and then has nothing, "." (not after "]"), or
 * ":" and digits. */
static int host_is(const char *host, const char *name) {
    size_t n = strlen(name);
    if (strncasecmp(host, name, n)) return 0;
    const char *r = host + n;
    if (*r == '.' && name[0] != '[') r++;
    if (!*r) return 1;
    if (*r != ':') return 0;
    for (r++; *r; r++)
        if (!isdigit((unsigned char)*r)) return 0;
    return 1;
}

static void check_host(const char *host, unsigned choice) {
    static const char *const binds[] = {"127.0.0.1", "::1", "0.0.0.0", "192.0.2.7"};
    static const char *const allow[] = {"viz.example.org", "*"};
    const char *bind = binds[choice & 3];
    int nallow = (choice >> 2) & 1 ? ((choice >> 3) & 1 ? 2 : 1) : 0;
    int r = rc_auth_check_host(host, bind, allow, nallow);
    REQUIRE(r == 0 || r == 400 || r == 403);
    REQUIRE((r == 400) == (host[0] == '\0'));
    REQUIRE(rc_auth_check_host(NULL, bind, allow, nallow) == 400);
    if (r == 0 && nallow < 2) { /* without "*": only the names of the rule */
        int ok = nallow == 1 && host_is(host, "viz.example.org");
        if (rc_auth_loopback_bind(bind))
            ok = ok || host_is(host, "localhost") || host_is(host, "127.0.0.1") || host_is(host, "[::1]");
        else if (!strcmp(bind, "192.0.2.7"))
            ok = ok || host_is(host, "192.0.2.7");
        REQUIRE(ok);
    }
}

static void check_paths(const char *path, const char *base, size_t cap) {
    int ok = rc_auth_base_path_ok(base);
    if (ok && base[0] && strcmp(base, "/")) {
        REQUIRE(base[0] == '/' && strlen(base) <= 200);
        REQUIRE(!strstr(base, "//") && !strstr(base, "/./") && !strstr(base, "/../"));
        size_t bl = strlen(base);
        REQUIRE(!(bl >= 2 && !strcmp(base + bl - 2, "/.")) && !(bl >= 3 && !strcmp(base + bl - 3, "/..")));
    }
    if (ok) {
        char tmp[4];
        const char *s = rc_auth_strip_base(path, base, tmp, sizeof tmp);
        if (s == tmp) {
            REQUIRE(!strcmp(tmp, "/"));
        } else {
            size_t pl = strlen(path), sl = strlen(s);
            REQUIRE(s >= path && s + sl == path + pl); /* a suffix of path */
            if (s != path) REQUIRE(s[0] == '/');
        }
    }
    char *out = malloc(cap);
    if (!out) return;
    rc_auth_root_prefix(path, out, cap);
    size_t n = strnlen(out, cap);
    REQUIRE(n < cap); /* terminated inside the buffer */
    if (strcmp(out, "./")) {
        REQUIRE(n % 3 == 0);
        for (size_t i = 0; i < n; i += 3) REQUIRE(!memcmp(out + i, "../", 3));
        int depth = 0;
        for (const char *c = path + (path[0] == '/'); *c; c++) depth += *c == '/';
        REQUIRE((int)(n / 3) <= depth);
        if (cap >= 3 * (size_t)depth + 1) REQUIRE((int)(n / 3) == depth);
    }
    free(out);
}

/* The session: the secret path split off, the Set-Cookie value and the 303's Location from a path, a base path
 * and query arguments (args: lines). */
static void check_session(const char *path, const char *base, char *const *args, int nargs, size_t cap) {
    int in, match;
    const char *inner = rc_auth_session_strip(path, SECRET, &in, &match);
    if (!in) {
        REQUIRE(inner == path && !match);
    } else {
        REQUIRE(!strncmp(path, "/s/", 3) && path[3] && path[3] != '/');
        REQUIRE(inner > path + 3 && inner + strlen(inner) == path + strlen(path)); /* a suffix, after "/s/X" */
        REQUIRE(inner[0] == '\0' || inner[0] == '/');
        size_t xl = (size_t)(inner - path - 3);
        REQUIRE(match == (xl == strlen(SECRET) && !memcmp(path + 3, SECRET, xl)));
    }
    char *out = malloc(cap);
    if (!out) return;
    if (rc_auth_base_path_ok(base)) {
        char sc[512];
        rc_auth_session_cookie("S", base, SECRET, (int)(cap & 1), sc, sizeof sc);
        REQUIRE(!strncmp(sc, "rcanvas_s=S; Path=", 18) && strstr(sc, "/s/" SECRET "/; HttpOnly; SameSite=Lax"));
        REQUIRE(!strchr(sc, '\r') && !strchr(sc, '\n'));
    }
    if (!rc_auth_session_location(path, inner, SECRET, (const char *const *)args, nargs, out, cap)) {
        size_t n = strlen(out);
        REQUIRE(n < cap && (!strncmp(out, "../", 3) || !strncmp(out, "s/", 2))); /* relative: no scheme, no "/…" */
        const char *s = strstr(out, "s/" SECRET "/");
        REQUIRE(s != NULL);
        for (const char *c = out; c < s; c += 3) REQUIRE(!strncmp(c, "../", 3)); /* "../" repeated, then s/R */
        for (const char *c = out; *c; c++) REQUIRE((unsigned char)*c > ' ' && *c != 0x7f); /* nothing ends the header */
        const char *q = strchr(out, '?');
        if (q) { /* every argument kept but the token, none named "token" */
            for (const char *a = q; a; a = strchr(a + 1, '&')) REQUIRE(strncmp(a + 1, "token=", 6) && strcmp(a + 1, "token"));
            REQUIRE(!strchr(q, '#'));
        }
    }
    free(out);
}

/* lws_get_urlarg_by_name's answer: what follows name in the first argument that starts with it, or NULL. */
static const char *arg_value(char *const *args, int nargs, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < nargs; i++)
        if (!strncmp(args[i], name, n)) return args[i] + n;
    return NULL;
}

/* The role of a request from its Authorization value, Cookie header and query arguments, under the secret path or
 * not (session): what rc_auth_request_role answers, against what each credential may open. */
static void check_request(const char *authorization, const char *cookie, char *const *args, int nargs, int session) {
    static const rc_auth_session sess = {SECRET, S_INTER, S_VIEW};
    rc_auth_request rq = {
        .query_token = arg_value(args, nargs, "token="),
        .authorization = authorization[0] ? authorization : NULL,
        .query_session = arg_value(args, nargs, RC_SESSION_ARG "="),
        .cookie = cookie[0] ? cookie : NULL,
        .session = session,
    };
    rc_token_source src = (rc_token_source)99;
    rc_role r = rc_auth_request_role(&rq, I_TOKEN, V_TOKEN, &sess, &src);
    REQUIRE(r == RC_ROLE_NONE || r == RC_ROLE_WRONG || r == RC_ROLE_VIEW || r == RC_ROLE_INTERACTIVE);
    REQUIRE((src == RC_TOKEN_NONE) == (r == RC_ROLE_NONE)); /* something found is right or wrong, never nothing */
    char v[RC_AUTH_VALUE_MAX];
    switch (src) {
    case RC_TOKEN_NONE:
        REQUIRE(!rq.query_token && !(rq.authorization && rc_auth_bearer(rq.authorization, v, sizeof v)));
        if (session) REQUIRE(!rq.query_session && !(rq.cookie && rc_auth_cookie(rq.cookie, COOKIE, v, sizeof v)));
        break;
    case RC_TOKEN_QUERY: /* the tokens, never S */
        REQUIRE(rq.query_token);
        REQUIRE(r == (!strcmp(rq.query_token, I_TOKEN) ? RC_ROLE_INTERACTIVE
                      : !strcmp(rq.query_token, V_TOKEN) ? RC_ROLE_VIEW : RC_ROLE_WRONG));
        break;
    case RC_TOKEN_BEARER:
        REQUIRE(!rq.query_token && rc_auth_bearer(rq.authorization, v, sizeof v));
        REQUIRE(r == (!strcmp(v, I_TOKEN) ? RC_ROLE_INTERACTIVE : !strcmp(v, V_TOKEN) ? RC_ROLE_VIEW : RC_ROLE_WRONG));
        break;
    case RC_TOKEN_SESSION_ARG: /* S, under the secret path only, never a token */
        REQUIRE(session && rq.query_session && !rq.query_token);
        REQUIRE(r == (!strcmp(rq.query_session, S_INTER) ? RC_ROLE_INTERACTIVE
                      : !strcmp(rq.query_session, S_VIEW) ? RC_ROLE_VIEW : RC_ROLE_WRONG));
        break;
    case RC_TOKEN_SESSION:
        REQUIRE(session && !rq.query_session && !rq.query_token && rc_auth_cookie(rq.cookie, COOKIE, v, sizeof v));
        REQUIRE(r == (!strcmp(v, S_INTER) ? RC_ROLE_INTERACTIVE : !strcmp(v, S_VIEW) ? RC_ROLE_VIEW : RC_ROLE_WRONG));
        break;
    default: REQUIRE(0);
    }
    /* away from the secret path the session counts for nothing: the same request there finds no S */
    if (session) {
        rc_auth_request out = rq;
        out.session = 0;
        rc_token_source o;
        rc_role ro = rc_auth_request_role(&out, I_TOKEN, V_TOKEN, &sess, &o);
        REQUIRE(o != RC_TOKEN_SESSION && o != RC_TOKEN_SESSION_ARG);
        if (src == RC_TOKEN_QUERY || src == RC_TOKEN_BEARER) REQUIRE(ro == r && o == src);
        else REQUIRE(ro == RC_ROLE_NONE);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    unsigned choice = data[0];
    size_t cap = 1 + (choice >> 4) * 5; /* 1 … 76 bytes */
    char *buf = malloc(size);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *field[5] = {buf, "", "", "", ""};
    char *p = buf, *args[8];
    int nargs = 0;
    for (int i = 1; i < 5; i++) {
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        field[i] = p = nl + 1;
    }
    if (field[4][0]) /* after the base path's line: query arguments, one a line */
        for (char *nl = strchr(field[4], '\n'); nl && nargs < 8; nl = strchr(nl + 1, '\n')) {
            *nl = '\0';
            args[nargs++] = nl + 1;
        }
    check_bearer(field[0], cap);
    check_cookie(field[1], cap);
    check_host(field[2], choice);
    check_paths(field[3], field[4], cap);
    check_session(field[3], field[4], args, nargs, cap);
    {
        int in, match;
        rc_auth_session_strip(field[3], SECRET, &in, &match);
        check_request(field[0], field[1], args, nargs, match);
        check_request(field[0], field[1], args, nargs, !match); /* and the other way, whatever the path */
    }
    REQUIRE(rc_auth_role(NULL, I_TOKEN, V_TOKEN) == RC_ROLE_NONE);
    REQUIRE(rc_auth_role(field[0], I_TOKEN, "") != RC_ROLE_VIEW);
    free(buf);
    return 0;
}
