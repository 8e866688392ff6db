/*
 * common/signing.h
 *		The deployment's signing key, and the digests snapshots are signed
 *		with (signing.c).
 */
#ifndef STATE_BACKEND_SIGNING_H
#define STATE_BACKEND_SIGNING_H

#include "common/sha2.h"

/* A digest in hex, NUL-terminated. */
#define SIGNING_HEX_LEN		PG_SHA256_DIGEST_STRING_LENGTH

typedef struct FileDigest FileDigest;

extern void signing_key_ensure(void);
extern bool signing_sign(const char *data, size_t len, char hex[SIGNING_HEX_LEN]);
extern bool signing_verify(const char *data, size_t len, const char *hex);

extern FileDigest *file_digest_begin(void);
extern void file_digest_add(FileDigest *d, const void *data, size_t len);
extern void file_digest_end(FileDigest *d, char hex[SIGNING_HEX_LEN]);
extern void file_digest_discard(FileDigest *d);
extern void file_digest_of(const char *path, char hex[SIGNING_HEX_LEN]);

#endif							/* STATE_BACKEND_SIGNING_H */
