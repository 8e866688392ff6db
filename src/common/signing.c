/*
 * common/signing.c
 *		The key a deployment signs its snapshots with, and SHA-256 digests.
 *
 * A snapshot's MANIFEST lists the SHA-256 digest of every file it names and
 * ends with an HMAC-SHA256 of its text under this key
 * (state_backend.signing_key_file).  A server trusts the images of a
 * snapshot signed with its key as it trusts its own; one signed otherwise,
 * or not at all, is checked image by image or refused (snapshot/restore.c).
 *
 * The key file holds at least 32 bytes (the state worker writes 64 random
 * hex digits when the file does not exist), and is read again whenever it
 * changes.  Servers that share it trust each other's snapshots; a standby
 * made with pg_basebackup has it already.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cryptohash.h"
#include "common/hmac.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/resowner.h"

#include "common/settings.h"
#include "common/signing.h"

#define KEY_MIN_LEN		32
#define KEY_MAX_LEN		1024
#define KEY_RANDOM_LEN	32
#define DIGEST_CHUNK	(1024 * 1024)

struct FileDigest
{
	pg_cryptohash_ctx *ctx;
};

/* The key as last read, and which file it came from. */
static char key_path[MAXPGPATH];
static struct stat key_stat;
static uint8 key_data[KEY_MAX_LEN];
static int	key_len = 0;

/*
 * PostgreSQL's digests remember their OpenSSL context in the current
 * resource owner; a process outside a transaction (the state worker between
 * its transactions) may have none, so one of ours serves.  A file's digest
 * (FileDigest) may outlive the transaction it began in (a snapshot's files
 * are digested as they are written, while the worker runs transactions of
 * its own): it always has ours, and whoever begins one ends or discards it.
 */
static ResourceOwner
digest_owner_push(bool always_ours)
{
	static ResourceOwner own = NULL;
	ResourceOwner saved = CurrentResourceOwner;

	if (saved == NULL || always_ours)
	{
		if (own == NULL)
			own = ResourceOwnerCreate(NULL, "state_backend digests");
		CurrentResourceOwner = own;
	}
	return saved;
}

/* bin in lower-case hex, NUL-terminated: PostgreSQL's hex_encode. */
static void
to_hex(const uint8 *bin, int len, char *hex)
{
	hex[hex_encode((const char *) bin, len, hex)] = '\0';
}

/*
 * create_key writes a new random key to path, through a temporary name and
 * a link, so that a key another process made meanwhile is never replaced.
 */
static void
create_key(const char *path)
{
	char		tmp[MAXPGPATH];
	uint8		random[KEY_RANDOM_LEN];
	char		text[2 * KEY_RANDOM_LEN + 2];
	int			fd;

	if (!pg_strong_random(random, sizeof(random)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random signing key")));
	to_hex(random, sizeof(random), text);
	strcat(text, "\n");
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, MyProcPid);
	(void) unlink(tmp);
	fd = OpenTransientFilePerm(tmp, O_CREAT | O_EXCL | O_WRONLY | PG_BINARY, S_IRUSR | S_IWUSR);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
	errno = 0;
	if (write(fd, text, strlen(text)) != (ssize_t) strlen(text) || pg_fsync(fd) != 0)
	{
		int			save = errno ? errno : ENOSPC;

		CloseTransientFile(fd);
		(void) unlink(tmp);
		errno = save;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	}
	CloseTransientFile(fd);
	if (link(tmp, path) != 0 && errno != EEXIST)
	{
		int			save = errno;

		(void) unlink(tmp);
		errno = save;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create signing key file \"%s\": %m", path)));
	}
	(void) unlink(tmp);
	strlcpy(tmp, path, sizeof(tmp));
	get_parent_directory(tmp);
	fsync_fname(tmp[0] ? tmp : ".", true);
	ereport(LOG,
			(errmsg("state_backend: created signing key file \"%s\"", path),
			 errdetail("Servers that share this file trust each other's snapshots.")));
}

/*
 * load_key reads the signing key if the file changed since it was last
 * read; with create, makes the file when it does not exist.  Returns false
 * when there is no key.
 */
static bool
load_key(bool create)
{
	const char *path = state_backend_signing_key_file;
	struct stat st;
	int			fd;
	int			n;
	uint8		buf[KEY_MAX_LEN + 1];

	if (path == NULL || path[0] == '\0')
		return false;
	if (stat(path, &st) != 0)
	{
		if (errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not stat signing key file \"%s\": %m", path)));
		if (!create)
		{
			key_len = 0;
			return false;
		}
		create_key(path);
		if (stat(path, &st) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not stat signing key file \"%s\": %m", path)));
	}
	if (key_len > 0 && strcmp(key_path, path) == 0 && st.st_ino == key_stat.st_ino &&
		st.st_dev == key_stat.st_dev && st.st_size == key_stat.st_size &&
		st.st_mtime == key_stat.st_mtime)
		return true;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open signing key file \"%s\": %m", path)));
	n = read(fd, buf, sizeof(buf));
	CloseTransientFile(fd);
	if (n < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read signing key file \"%s\": %m", path)));
	/* A trailing newline is not part of the key. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n < KEY_MIN_LEN || n > KEY_MAX_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("signing key file \"%s\" holds %d bytes", path, n),
				 errdetail("A signing key has %d to %d bytes.", KEY_MIN_LEN, KEY_MAX_LEN),
				 errhint("Remove the file and the state worker writes a new key.")));
	memcpy(key_data, buf, n);
	key_len = n;
	key_stat = st;
	strlcpy(key_path, path, sizeof(key_path));
	explicit_bzero(buf, sizeof(buf));
	return true;
}

/*
 * signing_key_ensure makes the key file if there is none (the state worker
 * at start, so that the file is there to be shared before any snapshot).
 */
void
signing_key_ensure(void)
{
	(void) load_key(true);
}

static void
hmac_hex(const char *data, size_t len, char hex[SIGNING_HEX_LEN])
{
	ResourceOwner saved = digest_owner_push(false);
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);
	uint8		mac[PG_SHA256_DIGEST_LENGTH];

	CurrentResourceOwner = saved;
	if (ctx == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	if (pg_hmac_init(ctx, key_data, key_len) < 0 ||
		pg_hmac_update(ctx, (const uint8 *) data, len) < 0 ||
		pg_hmac_final(ctx, mac, sizeof(mac)) < 0)
	{
		const char *why = pstrdup(pg_hmac_error(ctx));

		pg_hmac_free(ctx);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute a signature: %s", why)));
	}
	pg_hmac_free(ctx);
	to_hex(mac, sizeof(mac), hex);
}

/*
 * signing_sign puts in hex the signature of data under the key; returns
 * false when there is no key (the snapshot is then written unsigned).
 */
bool
signing_sign(const char *data, size_t len, char hex[SIGNING_HEX_LEN])
{
	if (!load_key(false))
		return false;
	hmac_hex(data, len, hex);
	return true;
}

/* signing_verify: whether hex is the signature of data under the key. */
bool
signing_verify(const char *data, size_t len, const char *hex)
{
	char		want[SIGNING_HEX_LEN];
	int			diff = 0;

	if (strlen(hex) != SIGNING_HEX_LEN - 1 || !load_key(false))
		return false;
	hmac_hex(data, len, want);
	for (int i = 0; i < SIGNING_HEX_LEN - 1; i++)
		diff |= want[i] ^ hex[i];
	return diff == 0;
}

/* A SHA-256 digest computed piece by piece; discard it on error. */
FileDigest *
file_digest_begin(void)
{
	FileDigest *d = palloc(sizeof(FileDigest));
	ResourceOwner saved = digest_owner_push(true);

	d->ctx = pg_cryptohash_create(PG_SHA256);
	CurrentResourceOwner = saved;
	if (d->ctx == NULL || pg_cryptohash_init(d->ctx) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not start a SHA-256 digest")));
	return d;
}

void
file_digest_add(FileDigest *d, const void *data, size_t len)
{
	if (pg_cryptohash_update(d->ctx, data, len) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute a SHA-256 digest: %s",
						pg_cryptohash_error(d->ctx))));
}

void
file_digest_end(FileDigest *d, char hex[SIGNING_HEX_LEN])
{
	uint8		sum[PG_SHA256_DIGEST_LENGTH];

	if (pg_cryptohash_final(d->ctx, sum, sizeof(sum)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute a SHA-256 digest: %s",
						pg_cryptohash_error(d->ctx))));
	to_hex(sum, sizeof(sum), hex);
	file_digest_discard(d);
}

/* Free a digest (never raises an error). */
void
file_digest_discard(FileDigest *d)
{
	if (d == NULL)
		return;
	if (d->ctx)
		pg_cryptohash_free(d->ctx);
	d->ctx = NULL;
	pfree(d);
}

/* file_digest_of puts in hex the SHA-256 digest of a file's bytes. */
void
file_digest_of(const char *path, char hex[SIGNING_HEX_LEN])
{
	char	   *buf = palloc(DIGEST_CHUNK);
	FileDigest *volatile d = NULL;
	volatile int fd = -1;

	PG_TRY();
	{
		int			n;

		fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
		if (fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open snapshot file \"%s\": %m", path)));
		d = file_digest_begin();
		while ((n = read(fd, buf, DIGEST_CHUNK)) > 0)
		{
			CHECK_FOR_INTERRUPTS();
			file_digest_add(d, buf, n);
		}
		if (n < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read snapshot file \"%s\": %m", path)));
		file_digest_end(d, hex);
		d = NULL;
	}
	PG_FINALLY();
	{
		file_digest_discard(d);
		if (fd >= 0)
			CloseTransientFile(fd);
	}
	PG_END_TRY();
	pfree(buf);
}
