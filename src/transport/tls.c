/* SPDX-License-Identifier: MIT */
/*
 * tls.c — certificates for the transport's TLS (tls.h). OpenSSL's libcrypto only: the TLS connections themselves
 * are libwebsockets' (built with OpenSSL on Debian: LWS_WITH_TLS, LWS_OPENSSL_SUPPORT).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "transport/tls.h"

/* A key file that turns out to be encrypted must not make OpenSSL prompt on the terminal: no password. */
static int no_password(char *buf, int size, int rwflag, void *u) {
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

/* OpenSSL's newest error as text, for the log ("" if none); clears the queue. */
static const char *ssl_reason(char *buf, size_t cap) {
    unsigned long e = ERR_peek_last_error();
    buf[0] = '\0';
    if (e) ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
    return buf;
}

static int fingerprint(X509 *x, char *fp, size_t fpcap) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!X509_digest(x, EVP_sha256(), md, &n) || n != 32 || fpcap < RC_TLS_FINGERPRINT_LEN + 1) return -1;
    for (unsigned i = 0; i < n; i++) snprintf(fp + 3 * i, 4, i + 1 < n ? "%02X:" : "%02X", md[i]);
    return 0;
}

int rc_tls_check(const char *cert, const char *key, const rc_logger *log, char *fp, size_t fpcap) {
    char eb[256];
    int r = RCANVAS_ETLS;
    X509 *x = NULL;
    EVP_PKEY *pk = NULL;
    FILE *f = fopen(cert, "re");
    if (!f) {
        rc_log(log, RCANVAS_LOG_ERROR, "tls_cert %s: cannot read it (%s)", cert, strerror_r(errno, eb, sizeof eb));
        return RCANVAS_ETLS;
    }
    x = PEM_read_X509(f, NULL, no_password, NULL);
    fclose(f);
    if (!x) {
        ssl_reason(eb, sizeof eb);
        rc_log(log, RCANVAS_LOG_ERROR, "tls_cert %s: not a PEM certificate (BEGIN CERTIFICATE)", cert);
        goto out;
    }
    if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
        rc_log(log, RCANVAS_LOG_ERROR, "tls_cert %s: the certificate has expired", cert);
        goto out;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
        rc_log(log, RCANVAS_LOG_ERROR, "tls_cert %s: the certificate is not valid yet", cert);
        goto out;
    }
    if (!(f = fopen(key, "re"))) {
        rc_log(log, RCANVAS_LOG_ERROR, "tls_key %s: cannot read it (%s)", key, strerror_r(errno, eb, sizeof eb));
        goto out;
    }
    pk = PEM_read_PrivateKey(f, NULL, no_password, NULL);
    fclose(f);
    if (!pk) {
        ssl_reason(eb, sizeof eb);
        rc_log(log, RCANVAS_LOG_ERROR, "tls_key %s: not a PEM private key, or an encrypted one (it must be "
               "unencrypted)", key);
        goto out;
    }
    if (X509_check_private_key(x, pk) != 1) {
        ssl_reason(eb, sizeof eb);
        rc_log(log, RCANVAS_LOG_ERROR, "tls_key %s: does not match the certificate %s", key, cert);
        goto out;
    }
    if (fingerprint(x, fp, fpcap)) {
        rc_log(log, RCANVAS_LOG_ERROR, "tls_cert %s: cannot compute its SHA-256 fingerprint", cert);
        goto out;
    }
    r = RCANVAS_OK;
out:
    EVP_PKEY_free(pk);
    X509_free(x);
    ERR_clear_error();
    return r;
}

/* ---- self-signed ---- */

/* mkdir -p with mode 0700 for the folders it creates. 0 or errno. */
static int mkdirs(const char *dir) {
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) return ENAMETOOLONG;
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0700) && errno != EEXIST) return errno;
        p[i] = c;
    }
    struct stat st;
    if (stat(dir, &st)) return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* The certificate folder is ours and private (an existing --tls-dir kept whatever mode it had, so a
 * 0755 one showed the key's name and let others list it): refused if another user owns it (they could swap
 * the key or the certificate), else tightened to 0700 with a warning; a key file readable by others is tightened
 * to 0600 the same way. RCANVAS_OK or RCANVAS_EIO. */
static int secure_dir(const char *dir, const char *key_path, const rc_logger *log) {
    char eb[256];
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* a link to a folder of ours is fine: the owner is the target's */
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        rc_log(log, RCANVAS_LOG_ERROR, "cannot open the certificate folder %s: %s", dir, strerror_r(errno, eb, sizeof eb));
        if (fd >= 0) close(fd);
        return RCANVAS_EIO;
    }
    if (st.st_uid != geteuid()) {
        rc_log(log, RCANVAS_LOG_ERROR, "the certificate folder %s belongs to uid %u, not to this user (uid %u): "
               "its owner could replace the key; choose a folder of your own", dir, (unsigned)st.st_uid,
               (unsigned)geteuid());
        close(fd);
        return RCANVAS_EIO;
    }
    if ((st.st_mode & 0777) != 0700) {
        if (fchmod(fd, 0700)) {
            rc_log(log, RCANVAS_LOG_ERROR, "cannot make the certificate folder %s private (chmod 700): %s", dir,
                   strerror_r(errno, eb, sizeof eb));
            close(fd);
            return RCANVAS_EIO;
        }
        rc_log(log, RCANVAS_LOG_WARN, "the certificate folder %s was mode %03o: made 0700", dir,
               (unsigned)(st.st_mode & 0777));
    }
    close(fd);
    struct stat ks;
    if (!lstat(key_path, &ks) && S_ISREG(ks.st_mode) && (ks.st_mode & 077)) {
        if (ks.st_uid != geteuid() || chmod(key_path, 0600)) {
            rc_log(log, RCANVAS_LOG_ERROR, "the key %s is readable by others (mode %03o) and cannot be made 0600",
                   key_path, (unsigned)(ks.st_mode & 0777));
            return RCANVAS_EIO;
        }
        rc_log(log, RCANVAS_LOG_WARN, "the key %s was mode %03o: made 0600", key_path, (unsigned)(ks.st_mode & 0777));
    }
    return RCANVAS_OK;
}

/* A name that may go into the subjectAltName list as DNS: letters, digits, '-' and '.', at most 253. */
static int dns_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 253) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

/* Appends ",DNS:name" or ",IP:addr" for name (skipping wildcard addresses and what cannot be named). */
static void san_add(char *san, size_t cap, const char *name) {
    if (!name || !*name) return;
    unsigned char a[16];
    size_t n = strlen(san);
    if (inet_pton(AF_INET, name, a) == 1) {
        if (strcmp(name, "0.0.0.0") && strcmp(name, "127.0.0.1")) snprintf(san + n, cap - n, ",IP:%s", name);
    } else if (inet_pton(AF_INET6, name, a) == 1) {
        if (strcmp(name, "::") && strcmp(name, "::1")) snprintf(san + n, cap - n, ",IP:%s", name);
    } else if (dns_name_ok(name) && strcasecmp(name, "localhost")) {
        snprintf(san + n, cap - n, ",DNS:%s", name);
    }
}

static int add_ext(X509 *x, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ex) return -1;
    int ok = X509_add_ext(x, ex, -1);
    X509_EXTENSION_free(ex);
    return ok ? 0 : -1;
}

/* A new self-signed certificate for pk. NULL on an OpenSSL failure. */
static X509 *make_cert(EVP_PKEY *pk, const char *san, const char *cn) {
    X509 *x = X509_new();
    BIGNUM *bn = BN_new();
    int ok = x && bn && X509_set_version(x, 2) && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
             BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
             X509_gmtime_adj(X509_getm_notBefore(x), -3600) && /* an hour back: clocks that differ a little */
             X509_time_adj_ex(X509_getm_notAfter(x), 3650, 0, NULL) && X509_set_pubkey(x, pk);
    if (ok) {
        X509_NAME *nm = X509_get_subject_name(x);
        ok = X509_NAME_add_entry_by_txt(nm, "O", MBSTRING_ASC, (const unsigned char *)"rcanvas self-signed", -1, -1,
                                        0) &&
             X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) &&
             X509_set_issuer_name(x, nm);
    }
    ok = ok && !add_ext(x, NID_basic_constraints, "critical,CA:FALSE") &&
         !add_ext(x, NID_key_usage, "critical,digitalSignature") &&
         !add_ext(x, NID_ext_key_usage, "serverAuth") && !add_ext(x, NID_subject_alt_name, san) &&
         !add_ext(x, NID_subject_key_identifier, "hash") && X509_sign(x, pk, EVP_sha256()) > 0;
    BN_free(bn);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* Writes path (mode) through a temporary file renamed over it, so that a reader never sees half a file. */
static int write_pem(const char *path, mode_t mode, X509 *x, EVP_PKEY *pk, const rc_logger *log) {
    char tmp[4200], eb[128];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    FILE *f = fd >= 0 && !fchmod(fd, mode) ? fdopen(fd, "w") : NULL;
    if (!f) {
        rc_log(log, RCANVAS_LOG_ERROR, "cannot write %s: %s", tmp, strerror_r(errno, eb, sizeof eb));
        if (fd >= 0) close(fd);
        return RCANVAS_EIO;
    }
    int ok = x ? PEM_write_X509(f, x) : PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL);
    ok = fflush(f) == 0 && ok;
    if (fclose(f)) ok = 0;
    if (!ok || rename(tmp, path)) {
        rc_log(log, RCANVAS_LOG_ERROR, "cannot write %s: %s", path, strerror_r(errno, eb, sizeof eb));
        unlink(tmp);
        return RCANVAS_EIO;
    }
    return RCANVAS_OK;
}

/* 1 if path holds a PEM certificate that has not expired. */
static int cert_usable(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    X509 *x = PEM_read_X509(f, NULL, no_password, NULL);
    fclose(f);
    int ok = x && X509_cmp_current_time(X509_get0_notAfter(x)) > 0;
    X509_free(x);
    ERR_clear_error();
    return ok;
}

int rc_tls_self_signed(const char *dir, const char *extra_name, const rc_logger *log, char *cert_path,
                       char *key_path, size_t cap, int *created) {
    char eb[256];
    *created = 0;
    if (!dir || !*dir || strlen(dir) > 4000) return RCANVAS_EINVAL;
    if ((size_t)snprintf(cert_path, cap, "%s/cert.pem", dir) >= cap ||
        (size_t)snprintf(key_path, cap, "%s/key.pem", dir) >= cap)
        return RCANVAS_EINVAL;
    int e = mkdirs(dir);
    if (e) {
        rc_log(log, RCANVAS_LOG_ERROR, "cannot create the certificate folder %s: %s", dir,
               strerror_r(e, eb, sizeof eb));
        return RCANVAS_EIO;
    }
    if ((e = secure_dir(dir, key_path, log))) return e;
    if (!access(key_path, R_OK) && cert_usable(cert_path)) return RCANVAS_OK; /* kept from an earlier start */
    char host[256] = "", san[1024] = "DNS:localhost,IP:127.0.0.1,IP:::1";
    if (gethostname(host, sizeof host - 1) == 0) san_add(san, sizeof san, host);
    if (extra_name && strcmp(extra_name, host)) san_add(san, sizeof san, extra_name);
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = pk ? make_cert(pk, san, dns_name_ok(host) ? host : "localhost") : NULL;
    int r = RCANVAS_ETLS;
    if (!x) {
        rc_log(log, RCANVAS_LOG_ERROR, "cannot make a self-signed certificate: %s", ssl_reason(eb, sizeof eb));
    } else if (!(r = write_pem(key_path, 0600, NULL, pk, log)) && !(r = write_pem(cert_path, 0644, x, NULL, log))) {
        *created = 1;
        rc_log(log, RCANVAS_LOG_INFO, "made a self-signed certificate %s (subjectAltName %s)", cert_path, san);
    }
    X509_free(x);
    EVP_PKEY_free(pk);
    ERR_clear_error();
    return r;
}
