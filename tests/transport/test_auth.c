/* SPDX-License-Identifier: MIT */
/*
 * test_auth — the access rules of src/transport/auth.c: roles by token, the Bearer and cookie parsers,
 * the session a page's token is traded for (its cookie, secret path and the 303's Location), which credential of a
 * request counts (?token=, Bearer, then only under the secret path ?session= and the cookie, both holding S),
 * the rate limit on wrong tokens (10 at once per /24 or /64, then one per second, in a fixed table; 20 at once
 * server-wide, then two per second), the Host check against DNS
 * rebinding, the base path and the page's relative way back to the root; and the server's token rule (22+
 * characters) through the public API.
 */
#include <string.h>

#include "rcanvas.h"
#include "test.h"
#include "transport/auth.h"

static void test_roles(void) {
    const char *I = "interactive-token-0123456789", *V = "view-only-token-0123456789ab";
    CHECK_EQ_INT(rc_auth_role(NULL, I, V), RC_ROLE_NONE);
    CHECK_EQ_INT(rc_auth_role(I, I, V), RC_ROLE_INTERACTIVE);
    CHECK_EQ_INT(rc_auth_role(V, I, V), RC_ROLE_VIEW);
    CHECK_EQ_INT(rc_auth_role("", I, V), RC_ROLE_WRONG);
    CHECK_EQ_INT(rc_auth_role("interactive-token-012345678", I, V), RC_ROLE_WRONG);   /* a prefix */
    CHECK_EQ_INT(rc_auth_role("interactive-token-0123456789x", I, V), RC_ROLE_WRONG); /* longer */
    CHECK_EQ_INT(rc_auth_role("", I, ""), RC_ROLE_WRONG); /* no view token: "" never matches it */
    CHECK(rc_auth_equal("abc", 3, "abc", 3));
    CHECK(!rc_auth_equal("abd", 3, "abc", 3));
    CHECK(!rc_auth_equal("ab", 2, "abc", 3));
    CHECK(!rc_auth_equal("abc\0", 4, "abc", 3));
}

static void test_bearer_cookie(void) {
    char out[64];
    CHECK(rc_auth_bearer("Bearer abc_DEF-1", out, sizeof out) && !strcmp(out, "abc_DEF-1"));
    CHECK(rc_auth_bearer("  bearer   tok  ", out, sizeof out) && !strcmp(out, "tok"));
    CHECK(!rc_auth_bearer("Basic dXNlcjpwYXNz", out, sizeof out));
    CHECK(!rc_auth_bearer("Bearer", out, sizeof out));
    CHECK(!rc_auth_bearer("Bearer ", out, sizeof out));
    char big[100];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char h[120];
    snprintf(h, sizeof h, "Bearer %s", big);
    CHECK(!rc_auth_bearer(h, out, sizeof out)); /* longer than out: refused, not cut */

    CHECK(rc_auth_cookie("a=1; rcanvas_s=secret; b=2", "rcanvas_s", out, sizeof out) && !strcmp(out, "secret"));
    CHECK(rc_auth_cookie("rcanvas_s=\"q\"", "rcanvas_s", out, sizeof out) && !strcmp(out, "q"));
    CHECK(!rc_auth_cookie("rcanvas_ss=x; xrcanvas_s=y", "rcanvas_s", out, sizeof out));
    CHECK(!rc_auth_cookie("rcanvas_s=", "rcanvas_s", out, sizeof out));
    CHECK(!rc_auth_cookie("", "rcanvas_s", out, sizeof out));
    CHECK(!rc_auth_cookie("rcanvas_token_8080=tok", "rcanvas_s", out, sizeof out)); /* the old cookie: not ours */
    CHECK(rc_auth_forwarded_https("https"));
    CHECK(rc_auth_forwarded_https("HTTPS"));
    CHECK(rc_auth_forwarded_https(" https , http")); /* a chain: the first proxy's, the one the browser reached */
    CHECK(!rc_auth_forwarded_https("http, https"));
    CHECK(!rc_auth_forwarded_https("http"));
    CHECK(!rc_auth_forwarded_https("httpsx"));
    CHECK(!rc_auth_forwarded_https(""));
    CHECK(!rc_auth_forwarded_https(NULL));
}

/* The session a page's ?token= is traded for: the secrets, the Set-Cookie value, the secret path and the 303's
 * Location. */
static void test_session(void) {
    rc_auth_session a, b;
    CHECK(!rc_auth_session_new(&a) && !rc_auth_session_new(&b));
    const char *const secrets[] = {a.path, a.interactive, a.view};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT((int)strlen(secrets[i]), 32); /* 128 bits in hex: 22+ characters of [A-Za-z0-9_-] */
        CHECK(strspn(secrets[i], "0123456789abcdef") == 32);
    }
    CHECK(strcmp(a.path, a.interactive) && strcmp(a.interactive, a.view) && strcmp(a.path, a.view));
    CHECK(strcmp(a.path, b.path) && strcmp(a.interactive, b.interactive)); /* new each process */
    CHECK_EQ_INT(rc_auth_role(a.interactive, a.interactive, a.view), RC_ROLE_INTERACTIVE);
    CHECK_EQ_INT(rc_auth_role(a.view, a.interactive, a.view), RC_ROLE_VIEW);
    CHECK_EQ_INT(rc_auth_role(b.interactive, a.interactive, a.view), RC_ROLE_WRONG); /* another process's S */

    /* the Set-Cookie value: Path is the secret path under the base path; Secure with TLS or a TLS proxy */
    const char *R = "0123456789abcdef0123456789abcdef";
    char sc[512];
    rc_auth_session_cookie("S1", "", R, 0, sc, sizeof sc);
    CHECK_MSG(!strcmp(sc, "rcanvas_s=S1; Path=/s/0123456789abcdef0123456789abcdef/; HttpOnly; SameSite=Lax"), "%s",
              sc);
    rc_auth_session_cookie("S2", "/host-a", R, 1, sc, sizeof sc);
    CHECK_MSG(!strcmp(sc, "rcanvas_s=S2; Path=/host-a/s/0123456789abcdef0123456789abcdef/; HttpOnly; "
                          "SameSite=Lax; Secure"), "%s", sc);
    rc_auth_session_cookie("S3", "/viz/", R, 0, sc, sizeof sc);
    CHECK_MSG(strstr(sc, "; Path=/viz/s/0123456789abcdef0123456789abcdef/;") != NULL, "%s", sc);

    /* the secret path: the rest is routed as without it; only this process's R matches */
    int in, match;
    CHECK(!strcmp(rc_auth_session_strip("/s/0123456789abcdef0123456789abcdef/c/a", R, &in, &match), "/c/a"));
    CHECK(in && match);
    CHECK(!strcmp(rc_auth_session_strip("/s/0123456789abcdef0123456789abcdef/", R, &in, &match), "/") && in && match);
    CHECK(!strcmp(rc_auth_session_strip("/s/0123456789abcdef0123456789abcdef/ws", R, &in, &match), "/ws") && match);
    CHECK(!strcmp(rc_auth_session_strip("/s/0123456789abcdef0123456789abcdef", R, &in, &match), "") && in && match);
    /* a stale R (another process's), one cut short or longer: the path is under /s/ but no match */
    CHECK(!strcmp(rc_auth_session_strip("/s/fedcba9876543210fedcba9876543210/c/a", R, &in, &match), "/c/a"));
    CHECK(in && !match);
    CHECK(!strcmp(rc_auth_session_strip("/s/0123456789abcdef0123456789abcde/", R, &in, &match), "/") && in && !match);
    CHECK(!strcmp(rc_auth_session_strip("/s/0123456789abcdef0123456789abcdef0/", R, &in, &match), "/") && !match);
    CHECK(!strcmp(rc_auth_session_strip("/c/a", R, &in, &match), "/c/a") && !in && !match);
    CHECK(!strcmp(rc_auth_session_strip("/s//c/a", R, &in, &match), "/s//c/a") && !in && !match);
    CHECK(!strcmp(rc_auth_session_strip("/sx/0123456789abcdef0123456789abcdef/", R, &in, &match), "/sx/0123456789abcdef0123456789abcdef/") && !in);

    /* the 303's Location: relative, the token left out, other arguments kept (encoded again) */
    char loc[512];
    const char *none[] = {NULL};
    CHECK(!rc_auth_session_location("/", "/", R, none, 0, loc, sizeof loc));
    CHECK_MSG(!strcmp(loc, "s/0123456789abcdef0123456789abcdef/"), "%s", loc);
    const char *tok[] = {"token=abcdefghijklmnopqrstuv"};
    CHECK(!rc_auth_session_location("/", "/", R, tok, 1, loc, sizeof loc));
    CHECK_MSG(!strcmp(loc, "s/0123456789abcdef0123456789abcdef/"), "%s", loc);
    const char *args[] = {"token=abcdefghijklmnopqrstuv", "stats=1", "x=a b&c#\r\n"};
    CHECK(!rc_auth_session_location("/c/NAME", "/c/NAME", R, args, 3, loc, sizeof loc));
    CHECK_MSG(!strcmp(loc, "../s/0123456789abcdef0123456789abcdef/c/NAME?stats=1&x=a%20b%26c%23%0D%0A"), "%s", loc);
    CHECK(!rc_auth_session_location("/c/NAME/", "/c/NAME/", R, tok, 1, loc, sizeof loc));
    CHECK_MSG(!strcmp(loc, "../../s/0123456789abcdef0123456789abcdef/c/NAME/"), "%s", loc);
    CHECK(!rc_auth_session_location("/index.html", "/index.html", R, tok, 1, loc, sizeof loc));
    CHECK_MSG(!strcmp(loc, "s/0123456789abcdef0123456789abcdef/index.html"), "%s", loc);
    /* with a base path the server strips it first: the same Location, which the browser resolves under it
     * (https://example.org/viz/c/NAME → /viz/s/R/c/NAME), as it does behind a proxy that strips it */
    char tmp[8];
    const char *p = rc_auth_strip_base("/viz/c/NAME", "/viz", tmp, sizeof tmp);
    CHECK(!rc_auth_session_location(p, p, R, args + 1, 1, loc, sizeof loc));
    CHECK_MSG(!strcmp(loc, "../s/0123456789abcdef0123456789abcdef/c/NAME?stats=1"), "%s", loc);
    p = rc_auth_strip_base("/viz", "/viz", tmp, sizeof tmp);
    CHECK(!rc_auth_session_location(p, p, R, none, 0, loc, sizeof loc) &&
          !strcmp(loc, "s/0123456789abcdef0123456789abcdef/"));
    /* a page under a stale secret path with ?token=: moved to this process's, from where it is */
    const char *in_old = rc_auth_session_strip("/s/fedcba9876543210fedcba9876543210/c/NAME", R, &in, &match);
    CHECK(!rc_auth_session_location("/s/fedcba9876543210fedcba9876543210/c/NAME", in_old, R, tok, 1, loc, sizeof loc));
    CHECK_MSG(!strcmp(loc, "../../../s/0123456789abcdef0123456789abcdef/c/NAME"), "%s", loc);
    /* a path that could end the header or start a query: refused (the server never routes one to a page) */
    CHECK(rc_auth_session_location("/c/a", "/c/a\r\nX: y", R, none, 0, loc, sizeof loc) == -1);
    CHECK(rc_auth_session_location("/c/a", "/c/a?x", R, none, 0, loc, sizeof loc) == -1);
    /* too small a buffer: refused, never cut */
    CHECK(rc_auth_session_location("/c/NAME", "/c/NAME", R, args, 3, loc, 40));
    char q[9];
    CHECK(rc_auth_query(args + 1, 1, 0, q, 9) == 0 && !strcmp(q, "?stats=1"));
    CHECK(rc_auth_query(args + 1, 1, 0, q, 8) == -1); /* no room for its NUL */
    CHECK(rc_auth_query(args, 1, 1, q, 1) == 0 && !strcmp(q, ""));
    const char *bare[] = {"token", "tokenx=1"};
    CHECK(rc_auth_query(bare, 2, 1, loc, sizeof loc) == 0 && !strcmp(loc, "?tokenx=1"));
}

static int has_slot(const rc_auth_limiter *l, const char *net) {
    for (int i = 0; i < RC_AUTH_SLOTS; i++)
        if (!strcmp(l->slot[i].addr, net)) return 1;
    return 0;
}

/* Which credential of a request counts, and against what: ?token= and Bearer against the tokens anywhere; ?session=
 * (a page framed by another site, which has no cookie) and the cookie against this process's S, under its secret
 * path only; a wrong S is a wrong token (charged by http.c), S anywhere else nothing (401, uncharged). */
static void test_request_role(void) {
    const char *I = "interactive-token-0123456789", *V = "view-only-token-0123456789ab";
    rc_auth_session s;
    CHECK(!rc_auth_session_new(&s));
    rc_token_source src;
    char cookie[128], bearer[128], wrong[RC_SESSION_CHARS + 1];
    snprintf(cookie, sizeof cookie, "a=1; " RC_SESSION_COOKIE "=%s", s.view);
    snprintf(bearer, sizeof bearer, "Bearer %s", I);
    snprintf(wrong, sizeof wrong, "%s", s.interactive);
    wrong[RC_SESSION_CHARS - 1] = wrong[RC_SESSION_CHARS - 1] == '0' ? '1' : '0'; /* its last digit changed */

    rc_auth_request none = {0};
    CHECK_EQ_INT(rc_auth_request_role(&none, I, V, &s, &src), RC_ROLE_NONE);
    CHECK_EQ_INT(src, RC_TOKEN_NONE);
    none.session = 1;
    CHECK_EQ_INT(rc_auth_request_role(&none, I, V, &s, &src), RC_ROLE_NONE);

    /* ?session=S under the secret path: S's role; its source tells http.c the page goes by it */
    rc_auth_request q = {.query_session = s.interactive, .session = 1};
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_INTERACTIVE);
    CHECK_EQ_INT(src, RC_TOKEN_SESSION_ARG);
    q.query_session = s.view;
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_VIEW);
    /* a wrong S, an empty one, the token itself, or a path of S: wrong (a wrong token, charged) */
    q.query_session = wrong;
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_WRONG);
    CHECK_EQ_INT(src, RC_TOKEN_SESSION_ARG);
    q.query_session = "";
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_WRONG);
    q.query_session = I;
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_WRONG);
    q.query_session = s.path;
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_WRONG);
    /* outside this process's secret path (none, or another process's): not looked at, no guess */
    q.query_session = s.interactive;
    q.session = 0;
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_NONE);
    CHECK_EQ_INT(src, RC_TOKEN_NONE);
    q.query_session = wrong;
    CHECK_EQ_INT(rc_auth_request_role(&q, I, V, &s, &src), RC_ROLE_NONE);

    /* S is no token: ?token=S and Bearer S are wrong tokens, under the secret path too */
    rc_auth_request t = {.query_token = s.interactive, .session = 1};
    CHECK_EQ_INT(rc_auth_request_role(&t, I, V, &s, &src), RC_ROLE_WRONG);
    CHECK_EQ_INT(src, RC_TOKEN_QUERY);
    char bs[128];
    snprintf(bs, sizeof bs, "Bearer %s", s.interactive);
    rc_auth_request b = {.authorization = bs, .session = 1};
    CHECK_EQ_INT(rc_auth_request_role(&b, I, V, &s, &src), RC_ROLE_WRONG);
    CHECK_EQ_INT(src, RC_TOKEN_BEARER);

    /* the order: ?token=, Bearer, ?session=, cookie; the first found decides, right or wrong */
    rc_auth_request all = {.query_token = V, .authorization = bearer, .query_session = s.interactive,
                           .cookie = cookie, .session = 1};
    CHECK_EQ_INT(rc_auth_request_role(&all, I, V, &s, &src), RC_ROLE_VIEW);
    CHECK_EQ_INT(src, RC_TOKEN_QUERY);
    all.query_token = NULL;
    CHECK_EQ_INT(rc_auth_request_role(&all, I, V, &s, &src), RC_ROLE_INTERACTIVE);
    CHECK_EQ_INT(src, RC_TOKEN_BEARER);
    all.authorization = "Basic dXNlcjpwYXNz"; /* another scheme: as if absent */
    all.query_session = wrong;
    CHECK_EQ_INT(rc_auth_request_role(&all, I, V, &s, &src), RC_ROLE_WRONG); /* not the cookie's right S after it */
    CHECK_EQ_INT(src, RC_TOKEN_SESSION_ARG);
    all.query_session = NULL;
    CHECK_EQ_INT(rc_auth_request_role(&all, I, V, &s, &src), RC_ROLE_VIEW);
    CHECK_EQ_INT(src, RC_TOKEN_SESSION);
    all.session = 0; /* the cookie, too, only under the secret path */
    CHECK_EQ_INT(rc_auth_request_role(&all, I, V, &s, &src), RC_ROLE_NONE);
    all.cookie = "rcanvas_s=" "0123456789abcdef0123456789abcdef";
    all.session = 1;
    CHECK_EQ_INT(rc_auth_request_role(&all, I, V, &s, &src), RC_ROLE_WRONG);
    /* a Bearer value too long to hold is absent, not cut to a prefix */
    char big[RC_AUTH_VALUE_MAX + 20];
    memset(big, 'a', sizeof big - 1);
    memcpy(big, "Bearer ", 7);
    big[sizeof big - 1] = '\0';
    rc_auth_request lb = {.authorization = big};
    CHECK_EQ_INT(rc_auth_request_role(&lb, I, V, &s, &src), RC_ROLE_NONE);
}

static void test_rate_limit(void) {
    char net[48];
    rc_auth_prefix("192.0.2.7", net, sizeof net);
    CHECK_MSG(!strcmp(net, "192.0.2.0/24"), "%s", net);
    rc_auth_prefix("::ffff:127.0.0.9", net, sizeof net);
    CHECK_MSG(!strcmp(net, "127.0.0.0/24"), "%s", net);
    rc_auth_prefix("2001:db8:1:2:3:4:5:6", net, sizeof net);
    CHECK_MSG(!strcmp(net, "2001:db8:1:2::/64"), "%s", net);
    rc_auth_prefix("unix-socket", net, sizeof net);
    CHECK(!strcmp(net, "unix-socket"));

    static rc_auth_limiter l; /* 18 KiB: static, zeroed */
    int64_t t = 1000000000;
    const char *a = "192.0.2.7", *a2 = "192.0.2.200", *b = "198.51.100.8";
    for (int i = 0; i < RC_AUTH_BURST; i++) {
        CHECK_MSG(!rc_auth_limited(&l, i % 2 ? a : a2, t), "guess %d limited", i + 1);
        int last = rc_auth_failed(&l, i % 2 ? a : a2, t);
        CHECK_EQ_INT(last, i == RC_AUTH_BURST - 1);
    }
    CHECK(rc_auth_limited(&l, a, t));                    /* the 11th of the /24 at once: 429 */
    CHECK(rc_auth_limited(&l, "192.0.2.99", t));         /* every address of the /24 */
    CHECK(rc_auth_limited(&l, a, t + 500000));           /* half a second later: still none */
    CHECK(!rc_auth_limited(&l, b, t));                   /* another network is not affected */
    CHECK(!rc_auth_limited(&l, a, t + RC_AUTH_REFILL_US)); /* one second: one more guess */
    rc_auth_failed(&l, a, t + RC_AUTH_REFILL_US);
    CHECK(rc_auth_limited(&l, a, t + RC_AUTH_REFILL_US + 1000));
    CHECK_EQ_INT(l.limited, 4);
    CHECK(!rc_auth_limited(&l, a, t + 100 * (int64_t)RC_AUTH_REFILL_US)); /* refilled, capped at the burst */
    for (int i = 0; i < RC_AUTH_BURST; i++) rc_auth_failed(&l, a, t + 100 * (int64_t)RC_AUTH_REFILL_US);
    CHECK(rc_auth_limited(&l, a, t + 100 * (int64_t)RC_AUTH_REFILL_US));

    /* the server-wide bucket: one wrong token from each of many networks (127/8 is 65536 of them) empties it
     * after RC_AUTH_GLOBAL_BURST, and then every network is limited, even one never seen */
    static rc_auth_limiter g;
    int compared = 0;
    char addr[48];
    for (int i = 0; i < 300; i++) {
        snprintf(addr, sizeof addr, "127.%d.%d.1", i / 256, i % 256);
        if (rc_auth_limited(&g, addr, t)) continue;
        compared++;
        rc_auth_failed(&g, addr, t);
    }
    CHECK_EQ_INT(compared, RC_AUTH_GLOBAL_BURST);
    CHECK(rc_auth_limited(&g, "203.0.113.1", t));
    CHECK(!rc_auth_limited(&g, "203.0.113.1", t + RC_AUTH_GLOBAL_REFILL_US)); /* refills: 2 a second */

    /* a fixed table: 1000 networks fit in RC_AUTH_SLOTS; the least recently refused ones are forgotten, the
     * newest kept */
    static rc_auth_limiter m;
    for (int i = 0; i < 1000; i++) {
        snprintf(addr, sizeof addr, "10.%d.%d.1", i / 256, i % 256);
        for (int k = 0; k < RC_AUTH_BURST; k++) rc_auth_failed(&m, addr, t + i);
    }
    int used = 0;
    for (int i = 0; i < RC_AUTH_SLOTS; i++) used += m.slot[i].addr[0] != 0;
    CHECK_EQ_INT(used, RC_AUTH_SLOTS);
    CHECK(has_slot(&m, "10.3.231.0/24")); /* the last one (i = 999) is remembered */
    CHECK(!has_slot(&m, "10.0.0.0/24"));  /* the first was forgotten */
}

static void test_host(void) {
    const char *none[1] = {NULL};
    /* loopback bind: only the loopback names, any port */
    CHECK_EQ_INT(rc_auth_check_host("localhost", "127.0.0.1", none, 0), 0);
    CHECK_EQ_INT(rc_auth_check_host("localhost:8080", "127.0.0.1", none, 0), 0);
    CHECK_EQ_INT(rc_auth_check_host("LocalHost:1", "127.0.0.1", none, 0), 0);
    CHECK_EQ_INT(rc_auth_check_host("127.0.0.1:8080", "127.0.0.1", none, 0), 0);
    CHECK_EQ_INT(rc_auth_check_host("[::1]:8080", "::1", none, 0), 0);
    CHECK_EQ_INT(rc_auth_check_host("[::1]", "127.0.0.1", none, 0), 0);
    CHECK_EQ_INT(rc_auth_check_host("evil.example", "127.0.0.1", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host("evil.example:8080", "127.0.0.1", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host("localhost.evil.example", "127.0.0.1", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host("127.0.0.1.evil.example", "127.0.0.1", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host("[localhost]:80", "127.0.0.1", none, 0), 403);   /* brackets: IPv6 only (fuzz_auth) */
    CHECK_EQ_INT(rc_auth_check_host("[127.0.0.1]", "127.0.0.1", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host("127.0.0.2", "127.0.0.1", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host("localhost:80x", "127.0.0.1", none, 0), 403); /* malformed port */
    CHECK_EQ_INT(rc_auth_check_host("[::1", "127.0.0.1", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host(NULL, "127.0.0.1", none, 0), 400);
    CHECK_EQ_INT(rc_auth_check_host("", "127.0.0.1", none, 0), 400);
    /* other binds: the allow-list, the bind's own address */
    const char *allow[] = {"viz.example.org", "::2"};
    CHECK_EQ_INT(rc_auth_check_host("viz.example.org:443", "0.0.0.0", allow, 2), 0);
    CHECK_EQ_INT(rc_auth_check_host("VIZ.example.org", "0.0.0.0", allow, 2), 0);
    CHECK_EQ_INT(rc_auth_check_host("[::2]:80", "::", allow, 2), 0);
    CHECK_EQ_INT(rc_auth_check_host("evil.example", "0.0.0.0", allow, 2), 403);
    CHECK_EQ_INT(rc_auth_check_host("localhost", "0.0.0.0", none, 0), 403); /* listed names only */
    CHECK_EQ_INT(rc_auth_check_host("0.0.0.0", "0.0.0.0", none, 0), 403);
    CHECK_EQ_INT(rc_auth_check_host("192.0.2.5:8080", "192.0.2.5", none, 0), 0);
    CHECK_EQ_INT(rc_auth_check_host("192.0.2.6:8080", "192.0.2.5", none, 0), 403);
    const char *any[] = {"*"};
    CHECK_EQ_INT(rc_auth_check_host("anything.example", "0.0.0.0", any, 1), 0);
    CHECK_EQ_INT(rc_auth_check_host(NULL, "0.0.0.0", any, 1), 400);
    CHECK(rc_auth_loopback_bind("127.0.0.1") && rc_auth_loopback_bind("::1") && rc_auth_loopback_bind("localhost"));
    CHECK(!rc_auth_loopback_bind("0.0.0.0") && !rc_auth_loopback_bind("192.0.2.5"));
}

static void test_base_path(void) {
    CHECK(rc_auth_base_path_ok("") && rc_auth_base_path_ok("/") && rc_auth_base_path_ok("/viz") &&
          rc_auth_base_path_ok("/a/b-c.d_e~") && rc_auth_base_path_ok("/viz/"));
    CHECK(!rc_auth_base_path_ok("viz") && !rc_auth_base_path_ok("/a//b") && !rc_auth_base_path_ok("/../x") &&
          !rc_auth_base_path_ok("/a/.") && !rc_auth_base_path_ok("/a b") && !rc_auth_base_path_ok("/a?b"));
    char tmp[64];
    CHECK(!strcmp(rc_auth_strip_base("/viz/ws", "/viz", tmp, sizeof tmp), "/ws"));
    CHECK(!strcmp(rc_auth_strip_base("/viz/c/a/ws", "/viz/", tmp, sizeof tmp), "/c/a/ws"));
    CHECK(!strcmp(rc_auth_strip_base("/viz", "/viz", tmp, sizeof tmp), "/"));
    CHECK(!strcmp(rc_auth_strip_base("/vizz/ws", "/viz", tmp, sizeof tmp), "/vizz/ws")); /* not the prefix */
    CHECK(!strcmp(rc_auth_strip_base("/ws", "/viz", tmp, sizeof tmp), "/ws"));           /* a stripping proxy */
    CHECK(!strcmp(rc_auth_strip_base("/ws", "", tmp, sizeof tmp), "/ws"));
    rc_auth_root_prefix("/", tmp, sizeof tmp);
    CHECK(!strcmp(tmp, "./"));
    rc_auth_root_prefix("/index.html", tmp, sizeof tmp);
    CHECK(!strcmp(tmp, "./"));
    rc_auth_root_prefix("/c/left", tmp, sizeof tmp);
    CHECK(!strcmp(tmp, "../"));
    rc_auth_root_prefix("/c/left/", tmp, sizeof tmp);
    CHECK(!strcmp(tmp, "../../"));
}

static int new_server(const char *token, const char *view_token, const char *base) {
    rcanvas_server_config c;
    rcanvas_server_config_init(&c);
    c.port = 0;
    c.encode_threads = 1;
    c.token = token;
    c.view_token = view_token;
    c.base_path = base;
    rcanvas_server *s = NULL;
    int r = rcanvas_server_new(&c, &s);
    if (!r) {
        char url[300];
        CHECK(rcanvas_server_url(s, "x", url, sizeof url) > 0);
        if (base && token) {
            char want[300];
            snprintf(want, sizeof want, ":%d%s/c/x?token=%s", rcanvas_server_port(s), base, token);
            CHECK_MSG(strstr(url, want) != NULL, "%s has no %s", url, want);
        }
        CHECK(strlen(rcanvas_server_token(s)) >= 22 && strlen(rcanvas_server_view_token(s)) >= 22);
        CHECK(strcmp(rcanvas_server_token(s), rcanvas_server_view_token(s)));
        CHECK(rcanvas_server_view_url(s, NULL, url, sizeof url) > 0 && strstr(url, rcanvas_server_view_token(s)));
        rcanvas_server_free(s);
    }
    return r;
}

static void test_token_rule(void) {
    CHECK_EQ_INT(new_server(NULL, NULL, NULL), RCANVAS_OK); /* random: 32 hex characters each */
    CHECK_EQ_INT(new_server("abcdefghijklmnopqrstu", NULL, NULL), RCANVAS_EINVAL);      /* 21: below 128 bits */
    CHECK_EQ_INT(new_server("abcdefghijklmnopqrstuv", NULL, "/viz"), RCANVAS_OK);       /* 22 */
    CHECK_EQ_INT(new_server(NULL, "short-view-token", NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(new_server("same-token-for-both-roles", "same-token-for-both-roles", NULL), RCANVAS_EINVAL);
    CHECK_EQ_INT(new_server("abcdefghijklmnopqrstuv+", NULL, NULL), RCANVAS_EINVAL);    /* not base64url */
    CHECK_EQ_INT(new_server(NULL, NULL, "viz"), RCANVAS_EINVAL);
    CHECK_EQ_INT(new_server(NULL, NULL, "/a/../b"), RCANVAS_EINVAL);
}

int main(void) {
    test_roles();
    test_bearer_cookie();
    test_session();
    test_request_role();
    test_rate_limit();
    test_host();
    test_base_path();
    test_token_rule();
    TEST_MAIN_END();
}
