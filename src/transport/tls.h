/* SPDX-License-Identifier: MIT */
/*
 * tls.h — private: the certificate side of TLS. libwebsockets does the TLS itself (OpenSSL); this
 * checks the PEM files before lws sees them, so that a bad file is named with its reason rather than as lws's
 * "problem getting cert", computes the certificate's SHA-256 fingerprint, and makes a self-signed certificate
 * (OpenSSL's API: an EC P-256 key, X509 v3 with subjectAltName) when the app asks for one.
 */
#ifndef RC_TLS_H
#define RC_TLS_H

#include <stddef.h>

#include "core/util.h"

#define RC_TLS_FINGERPRINT_LEN 95 /* "AB:CD:…": 32 bytes as hex pairs separated by colons */

/* Loads cert (PEM, the server's certificate first, then any chain) and key (PEM, unencrypted) and checks that
 * they belong together and that the certificate has not expired. RCANVAS_OK and fp (at least
 * RC_TLS_FINGERPRINT_LEN + 1 bytes: the SHA-256 of the certificate's DER, uppercase hex pairs with colons, as
 * `openssl x509 -fingerprint -sha256` prints it), or RCANVAS_ETLS after logging which file and why. */
int rc_tls_check(const char *cert, const char *key, const rc_logger *log, char *fp, size_t fpcap);

/* Makes DIR/cert.pem and DIR/key.pem (0600) if either is missing or the certificate has expired: a new EC P-256
 * key and a self-signed certificate valid 10 years, subjectAltName localhost, 127.0.0.1, ::1, this machine's
 * host name and extra_name (an address or DNS name, e.g. the bound host; NULL or a wildcard address: none).
 * DIR is created (0700) with its parents. *created = 1 when new files were written. The paths (cap bytes each)
 * come back in cert_path and key_path. RCANVAS_OK, RCANVAS_EINVAL (path too long), RCANVAS_EIO (cannot create or
 * write; logged with the path), RCANVAS_ETLS (OpenSSL failed; logged). */
int rc_tls_self_signed(const char *dir, const char *extra_name, const rc_logger *log, char *cert_path,
                       char *key_path, size_t cap, int *created);

#endif
