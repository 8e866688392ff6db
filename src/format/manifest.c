/*
 * format/manifest.c
 *		The MANIFEST of a snapshot, written and read: text, one line per
 *		database, state and grant, ending with its CRC-32C.  It names every
 *		database and state (names live only here) with its types, backend,
 *		owner and grants, file, size and entry count, so a snapshot is
 *		self-describing and can be moved.  A directory without a MANIFEST
 *		is not a snapshot.
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/xlog.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "common/local_hash.h"
#include "format/format_internal.h"

/* Percent-encode a MANIFEST value: everything but [A-Za-z0-9_.-]. */
static void
append_encoded(StringInfo buf, const char *s)
{
	if (*s == '\0')
	{
		appendStringInfoChar(buf, '%');
		return;
	}
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
			appendStringInfoChar(buf, c);
		else
			appendStringInfo(buf, "%%%02X", c);
	}
}

static bool
decode_value(const char *in, char *out, Size outlen)
{
	Size		n = 0;

	if (strcmp(in, "%") == 0)
	{
		out[0] = '\0';
		return true;
	}
	while (*in)
	{
		char		c = *in++;

		if (c == '%')
		{
			unsigned int v;

			if (!isxdigit((unsigned char) in[0]) || !isxdigit((unsigned char) in[1]) ||
				sscanf(in, "%2x", &v) != 1)
				return false;
			c = (char) v;
			in += 2;
		}
		if (n + 1 >= outlen)
			return false;
		out[n++] = c;
	}
	out[n] = '\0';
	return true;
}

/* decode_name reads an encoded name into *name; false if it is not one. */
static bool
decode_name(const char *in, NameData *name)
{
	char		buf[NAMEDATALEN];

	if (!decode_value(in, buf, sizeof(buf)))
		return false;
	namestrcpy(name, buf);
	return true;
}

/*
 * decode_signature reads an encoded function signature (an aggregate's, a
 * timer handler's) into sig, of size bytes; false if it is not one or is
 * empty.
 */
static bool
decode_signature(const char *in, char *sig, Size size)
{
	return decode_value(in, sig, size) && sig[0] != '\0';
}

static void
append_type(StringInfo buf, const char *label, const StateType *t)
{
	appendStringInfo(buf, " %s=", label);
	if (!OidIsValid(t->oid))
	{
		appendStringInfoChar(buf, '-');
		return;
	}
	append_encoded(buf, NameStr(t->nspname));
	appendStringInfoChar(buf, '/');
	append_encoded(buf, NameStr(t->typname));
	appendStringInfo(buf, "/%u/%d/%d", t->oid, t->typlen, t->typbyval ? 1 : 0);
}

/* parse_int reads a non-negative int up to *end; false on anything else. */
static bool
parse_int(const char *v, char **end, int32 *out)
{
	long		n;

	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	n = strtol(v, end, 10);
	if (errno != 0 || n < 0 || n > PG_INT32_MAX)
		return false;
	*out = (int32) n;
	return true;
}

/* parse_range reads "first-last/parts" into a descriptor's range. */
static bool
parse_range(const char *v, StateDesc *d)
{
	char	   *end;

	return parse_int(v, &end, &d->range_first) && *end == '-' &&
		parse_int(end + 1, &end, &d->range_last) && *end == '/' &&
		parse_int(end + 1, &end, &d->range_parts) && *end == '\0' &&
		d->range_parts > 0;
}

/* manifest_build writes the MANIFEST's text of a snapshot being finished. */
void
manifest_build(SnapshotWriter *w)
{
	StringInfo	m = &w->manifest;
	char		signature[SIGNING_HEX_LEN];

	appendStringInfoString(m, "state_backend snapshot\n");
	appendStringInfo(m, "format_version %d\n", SNAPSHOT_FORMAT_VERSION);
	appendStringInfo(m, "snapshot_id " INT64_FORMAT "\n", w->id);
	appendStringInfo(m, "format %s\n", w->format == SNAPSHOT_NATIVE ? "native" : "canonical");
	appendStringInfo(m, "server_version_num %d\n", PG_VERSION_NUM);
	appendStringInfo(m, "system_identifier " UINT64_FORMAT "\n", GetSystemIdentifier());
	appendStringInfo(m, "key_groups %d\n", w->key_groups);
	if (w->wal_position != InvalidXLogRecPtr)
		appendStringInfo(m, "wal_position %X/%X\n", LSN_FORMAT_ARGS(w->wal_position));
	appendStringInfo(m, "created %s\n", timestamptz_to_str(GetCurrentTimestamp()));
	for (int i = 0; i < w->ndbs; i++)
	{
		appendStringInfo(m, "database %u ", w->dboids[i]);
		append_encoded(m, w->dbnames[i]);
		appendStringInfoChar(m, '\n');
	}
	for (int i = 0; i < w->nstates; i++)
	{
		StateOut   *so = &w->states[i];
		const StateDesc *d = so->desc;

		appendStringInfo(m, "state db=%u id=%u name=", d->dbid, d->id);
		append_encoded(m, NameStr(d->name));
		appendStringInfo(m, " kind=%s backend=%s", state_kind_name(d->kind), so->backend);
		append_type(m, "key", &d->types[STATE_TYPE_KEY]);
		append_type(m, "value", &d->types[STATE_TYPE_VALUE]);
		append_type(m, "map_key", &d->types[STATE_TYPE_MAP_KEY]);
		appendStringInfo(m, " reducer=%s owner=",
						 d->reducer == STATE_REDUCER_NONE ? "-" : state_reducer_name(d->reducer));
		append_encoded(m, NameStr(d->owner_name));
		if (d->logged)
			appendStringInfoString(m, " logged=1");
		if (d->transactional)
			appendStringInfoString(m, " transactional=1");
		if (d->range_parts > 0)
			appendStringInfo(m, " key_group_range=%d-%d/%d",
							 d->range_first, d->range_last, d->range_parts);
		if (d->agg_signature[0] != '\0')
		{
			appendStringInfo(m, " aggregate_oid=%u aggregate=", d->aggregate);
			append_encoded(m, d->agg_signature);
			append_type(m, "agg_type", &d->agg_type);
		}
		if (d->timer_signature[0] != '\0')
		{
			appendStringInfo(m, " timer_handler_oid=%u timer_handler=", d->timer_handler);
			append_encoded(m, d->timer_signature);
		}
		if (d->emit_table_name[0] != '\0')
		{
			appendStringInfo(m, " emit_table_oid=%u emit_table=", d->emit_table);
			append_encoded(m, d->emit_table_name);
		}
		if (state_desc_fires(d) && d->timer_event_time)
			appendStringInfoString(m, " time_domain=event");
		if (d->kind == STATE_KIND_WINDOW)
			appendStringInfo(m, " window=%u/%u/" INT64_FORMAT "/" INT64_FORMAT "/" INT64_FORMAT "/" INT64_FORMAT,
							 d->window_assigner, d->window_contents, d->window_size,
							 d->window_slide, d->window_gap, d->window_lateness);
		if (d->watermark_by_data)
			appendStringInfo(m, " watermark_lag=" INT64_FORMAT, d->watermark_lag);
		if (d->idle_timeout > 0)
			appendStringInfo(m, " idle_timeout=" INT64_FORMAT, d->idle_timeout);
		if (d->version > 1)
			appendStringInfo(m, " version=%u", d->version);
		if (d->replaces != 0)
			appendStringInfo(m, " replaces=%u", d->replaces);
		if (d->late_signature[0] != '\0')
		{
			appendStringInfo(m, " late_oid=%u late=", d->late_fn);
			append_encoded(m, d->late_signature);
		}
		if (d->ttl > 0)
			appendStringInfo(m, " ttl=" INT64_FORMAT " ttl_update=%s ttl_visibility=%s",
							 d->ttl, state_ttl_update_name(d->ttl_update),
							 state_ttl_visibility_name(d->ttl_visibility));
		appendStringInfo(m, " owner_oid=%u file=%s size=" INT64_FORMAT " entries=" INT64_FORMAT,
						 d->owner, so->relpath, (int64) so->size, so->entries);
		if (so->sha256[0] != '\0')
			appendStringInfo(m, " sha256=%s", so->sha256);
		appendStringInfoChar(m, '\n');
		for (int g = 0; g < d->ngrants; g++)
			appendStringInfo(m, "grant state=%u role_oid=%u privs=%u\n",
							 d->id, d->grants[g].role, d->grants[g].privs);
	}
	/* Signed last, over every line before: see common/signing.c. */
	if (w->dir && signing_sign(m->data, m->len, signature))
		appendStringInfo(m, "%s%s\n", SIGNATURE_PREFIX, signature);
	appendStringInfo(m, "crc32c %08X\n", kg_crc(m->data, m->len));
}

/* A window state's "window=" token: assigner/contents/size/slide/gap/lateness. */
static bool
parse_window(const char *v, StateDesc *d)
{
	unsigned int assigner;
	unsigned int contents;
	long long	t[4];
	char		end;

	if (sscanf(v, "%u/%u/%lld/%lld/%lld/%lld%c", &assigner, &contents,
			   &t[0], &t[1], &t[2], &t[3], &end) != 6 || assigner > 255 || contents > 255)
		return false;
	d->window_assigner = (uint8) assigner;
	d->window_contents = (uint8) contents;
	d->window_size = t[0];
	d->window_slide = t[1];
	d->window_gap = t[2];
	d->window_lateness = t[3];
	return true;
}

/* A time in microseconds, zero or more. */
static bool
parse_time(const char *v, int64 *t)
{
	char	   *end;

	errno = 0;
	*t = strtoll(v, &end, 10);
	return errno == 0 && end != v && *end == '\0' && *t >= 0;
}

static bool
parse_type(const char *v, StateType *t)
{
	char		nsp[3 * NAMEDATALEN];
	char		typ[3 * NAMEDATALEN];
	char		dnsp[NAMEDATALEN];
	char		dtyp[NAMEDATALEN];
	unsigned int oid;
	int			len;
	int			byval;

	memset(t, 0, sizeof(StateType));
	if (strcmp(v, "-") == 0)
		return true;
	if (sscanf(v, "%191[^/]/%191[^/]/%u/%d/%d", nsp, typ, &oid, &len, &byval) != 5)
		return false;
	if (!decode_value(nsp, dnsp, sizeof(dnsp)) || !decode_value(typ, dtyp, sizeof(dtyp)))
		return false;
	namestrcpy(&t->nspname, dnsp);
	namestrcpy(&t->typname, dtyp);
	t->oid = oid;
	t->typlen = (int16) len;
	t->typbyval = byval != 0;
	return true;
}

static bool
parse_state_line(char *line, SnapshotState *st)
{
	char	   *save = NULL;
	bool		ok = true;

	memset(st, 0, sizeof(SnapshotState));
	for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
	{
		char	   *eq = strchr(tok, '=');
		char	   *v;

		if (eq == NULL)
			return false;
		*eq = '\0';
		v = eq + 1;
		if (strcmp(tok, "db") == 0)
			st->desc.dbid = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "id") == 0)
			st->desc.id = (uint32) strtoul(v, NULL, 10);
		else if (strcmp(tok, "name") == 0)
		{
			if (!decode_name(v, &st->desc.name))
				return false;
		}
		else if (strcmp(tok, "kind") == 0)
			ok &= state_kind_parse(v, &st->desc.kind);
		else if (strcmp(tok, "backend") == 0)
			ok &= strlcpy(st->backend, v, sizeof(st->backend)) < sizeof(st->backend);
		else if (strcmp(tok, "key") == 0)
			ok &= parse_type(v, &st->desc.types[STATE_TYPE_KEY]);
		else if (strcmp(tok, "value") == 0)
			ok &= parse_type(v, &st->desc.types[STATE_TYPE_VALUE]);
		else if (strcmp(tok, "map_key") == 0)
			ok &= parse_type(v, &st->desc.types[STATE_TYPE_MAP_KEY]);
		else if (strcmp(tok, "reducer") == 0)
			st->desc.reducer = state_reducer_parse(v);
		else if (strcmp(tok, "aggregate") == 0)
			ok &= decode_signature(v, st->desc.agg_signature, sizeof(st->desc.agg_signature));
		else if (strcmp(tok, "aggregate_oid") == 0)
			st->desc.aggregate = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "agg_type") == 0)
			ok &= parse_type(v, &st->desc.agg_type);
		else if (strcmp(tok, "owner") == 0)
		{
			if (!decode_name(v, &st->desc.owner_name))
				return false;
		}
		else if (strcmp(tok, "logged") == 0)
			st->desc.logged = strcmp(v, "1") == 0;
		else if (strcmp(tok, "transactional") == 0)
			st->desc.transactional = strcmp(v, "1") == 0;
		else if (strcmp(tok, "timer_handler") == 0)
			ok &= decode_signature(v, st->desc.timer_signature, sizeof(st->desc.timer_signature));
		else if (strcmp(tok, "timer_handler_oid") == 0)
			st->desc.timer_handler = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "time_domain") == 0)
			st->desc.timer_event_time = strcmp(v, "event") == 0;
		else if (strcmp(tok, "window") == 0)
			ok &= parse_window(v, &st->desc);
		else if (strcmp(tok, "watermark_lag") == 0)
		{
			st->desc.watermark_by_data = true;
			ok &= parse_time(v, &st->desc.watermark_lag);
		}
		else if (strcmp(tok, "idle_timeout") == 0)
			ok &= parse_time(v, &st->desc.idle_timeout);
		else if (strcmp(tok, "version") == 0)
		{
			char	   *end;
			unsigned long n;

			errno = 0;
			n = strtoul(v, &end, 10);
			ok &= errno == 0 && *end == '\0' && n > 1 && n <= PG_UINT32_MAX;
			st->desc.version = (uint32) n;
		}
		else if (strcmp(tok, "replaces") == 0)
		{
			char	   *end;
			unsigned long n;

			errno = 0;
			n = strtoul(v, &end, 10);
			ok &= errno == 0 && *end == '\0' && n > 0 && n <= PG_UINT32_MAX;
			st->desc.replaces = (uint32) n;
		}
		else if (strcmp(tok, "late") == 0)
			ok &= decode_signature(v, st->desc.late_signature, sizeof(st->desc.late_signature));
		else if (strcmp(tok, "late_oid") == 0)
			st->desc.late_fn = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "emit_table") == 0)
			ok &= decode_signature(v, st->desc.emit_table_name, sizeof(st->desc.emit_table_name));
		else if (strcmp(tok, "emit_table_oid") == 0)
			st->desc.emit_table = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "ttl") == 0)
		{
			char	   *end;

			errno = 0;
			st->desc.ttl = strtoll(v, &end, 10);
			ok &= errno == 0 && *end == '\0' && st->desc.ttl > 0;
		}
		else if (strcmp(tok, "key_group_range") == 0)
			ok &= parse_range(v, &st->desc);
		else if (strcmp(tok, "ttl_update") == 0)
			ok &= state_ttl_update_parse(v, &st->desc.ttl_update);
		else if (strcmp(tok, "ttl_visibility") == 0)
			ok &= state_ttl_visibility_parse(v, &st->desc.ttl_visibility);
		else if (strcmp(tok, "owner_oid") == 0)
			st->desc.owner = (Oid) strtoul(v, NULL, 10);
		else if (strcmp(tok, "file") == 0)
			strlcpy(st->file, v, sizeof(st->file));
		else if (strcmp(tok, "size") == 0)
			st->size = strtoll(v, NULL, 10);
		else if (strcmp(tok, "entries") == 0)
			st->entries = strtoll(v, NULL, 10);
		else if (strcmp(tok, "sha256") == 0)
			ok &= strlen(v) == SIGNING_HEX_LEN - 1 &&
				strspn(v, "0123456789abcdef") == SIGNING_HEX_LEN - 1 &&
				strlcpy(st->sha256, v, sizeof(st->sha256)) < sizeof(st->sha256);
	}
	/* file names are ours: db-<oid>/<id>.kg or .sst.lst, nothing else */
	if (strstr(st->file, "..") != NULL || st->file[0] == '/' || st->file[0] == '\0')
		return false;
	st->native = strlen(st->file) > strlen(SNAPSHOT_NATIVE_LIST_SUFFIX) &&
		strcmp(st->file + strlen(st->file) - strlen(SNAPSHOT_NATIVE_LIST_SUFFIX),
			   SNAPSHOT_NATIVE_LIST_SUFFIX) == 0;
	return ok && st->desc.id != 0 && NameStr(st->desc.name)[0] != '\0';
}

/* A state's name within its database, as a hash key. */
typedef struct StateNameKey
{
	Oid			dbid;
	NameData	name;
} StateNameKey;

/* A set of keys of one size (a hash table of keys only). */
static HTAB *
manifest_set(const char *what, Size keysize)
{
	return local_hash_create(what, 64, keysize, keysize, CurrentMemoryContext);
}

/* Add a key to a set; false if it was there already. */
static bool
manifest_note_unique(HTAB *set, const void *key)
{
	bool		found;

	(void) hash_search(set, key, HASH_ENTER, &found);
	return !found;
}

/*
 * check_manifest refuses a MANIFEST whose states contradict each other or
 * their kinds: a database listed twice, a state of no listed database, two
 * states of one name or id in a database, a state without the types its
 * kind needs.  It gives each state its database's name.
 */
static void
check_manifest(SrcFile *f, SnapshotManifest *m)
{
	HTAB	   *ids = manifest_set("MANIFEST state ids", sizeof(uint32));
	HTAB	   *names = manifest_set("MANIFEST state names", sizeof(StateNameKey));
	StateNameKey name;
	const char *why;

	for (int d = 0; d < m->ndbs; d++)
		for (int e = 0; e < d; e++)
			if (m->db_oids[e] == m->db_oids[d] || strcmp(m->db_names[e], m->db_names[d]) == 0)
				snapshot_file_corrupt(f, 0, "The MANIFEST lists a database twice.");
	for (int i = 0; i < m->nstates; i++)
	{
		SnapshotState *st = &m->states[i];
		bool		listed = false;

		for (int d = 0; d < m->ndbs; d++)
			if (m->db_oids[d] == st->desc.dbid)
			{
				strlcpy(st->dbname, m->db_names[d], sizeof(st->dbname));
				listed = true;
			}
		if (!listed)
			snapshot_file_corrupt(f, 0, "The MANIFEST has a state of a database it does not list.");
		if ((why = state_desc_problem(&st->desc, m->key_groups)) != NULL)
			snapshot_file_corrupt(f, 0, psprintf("The MANIFEST has a state with %s.", why));
		if (st->native && m->format != SNAPSHOT_NATIVE)
			snapshot_file_corrupt(f, 0, "The MANIFEST of a canonical snapshot lists a backend's native files.");
		if (!manifest_note_unique(ids, &st->desc.id))
			snapshot_file_corrupt(f, 0, "The MANIFEST has two states of one id.");
		memset(&name, 0, sizeof(name));
		name.dbid = st->desc.dbid;
		name.name = st->desc.name;
		if (!manifest_note_unique(names, &name))
			snapshot_file_corrupt(f, 0, "The MANIFEST has two states of one name in a database.");
	}
	hash_destroy(ids);
	hash_destroy(names);
}

/*
 * read_checked_text reads a snapshot's MANIFEST whole and checks its last
 * line, "crc32c XXXXXXXX", against everything before it; returns the text
 * without that line (palloc'd).
 */
static char *
read_checked_text(const SnapshotSource *src, SrcFile *f)
{
	char	   *text;
	char	   *crcline;
	unsigned int crc;

	snapshot_file_open(src, MANIFEST_NAME, f);
	if (f->size > 64 * 1024 * 1024)
		snapshot_file_corrupt(f, 0, "The MANIFEST is too large.");
	text = palloc(f->size + 1);
	snapshot_file_read(f, text, f->size, 0);
	text[f->size] = '\0';
	snapshot_file_close(f);

	if (strlen(text) != (size_t) f->size)
		snapshot_file_corrupt(f, strlen(text), "The MANIFEST holds a NUL byte.");
	crcline = f->size > 0 ? text + f->size - 1 : text;
	if (f->size < 2 || *crcline != '\n')
		snapshot_file_corrupt(f, f->size, "The MANIFEST does not end with its checksum.");
	*crcline = '\0';
	crcline = strrchr(text, '\n');
	if (crcline == NULL || sscanf(crcline + 1, "crc32c %8X", &crc) != 1 ||
		strcmp(crcline + 1, psprintf("crc32c %08X", crc)) != 0)
		snapshot_file_corrupt(f, crcline ? crcline - text + 1 : 0, "The MANIFEST does not end with its checksum.");
	if (kg_crc(text, crcline + 1 - text) != (pg_crc32c) crc)
		snapshot_file_corrupt(f, crcline - text + 1, "The MANIFEST checksum does not match its contents.");
	*crcline = '\0';
	return text;
}

/* A "database <oid> <name>" line: one more database of the snapshot. */
static void
manifest_add_database(SnapshotManifest *m, SrcFile *f, const char *rest, off_t lineoff)
{
	unsigned int oid;
	char		enc[4 * NAMEDATALEN];
	char		name[NAMEDATALEN];

	if (sscanf(rest, "%u %255s", &oid, enc) != 2 || !decode_value(enc, name, sizeof(name)))
		snapshot_file_corrupt(f, lineoff, "A database line of the MANIFEST is malformed.");
	if (m->ndbs % 16 == 0 && m->ndbs > 0)
	{
		m->db_oids = repalloc(m->db_oids, sizeof(Oid) * (m->ndbs + 16));
		m->db_names = repalloc(m->db_names, sizeof(char *) * (m->ndbs + 16));
	}
	m->db_oids[m->ndbs] = oid;
	m->db_names[m->ndbs] = pstrdup(name);
	m->ndbs++;
}

/* A "state ..." line: one more state, its descriptor and files. */
static void
manifest_add_state(SnapshotManifest *m, SrcFile *f, char *rest, off_t lineoff)
{
	if (m->nstates % 16 == 0 && m->nstates > 0)
		m->states = repalloc(m->states, sizeof(SnapshotState) * (m->nstates + 16));
	if (!parse_state_line(rest, &m->states[m->nstates]))
		snapshot_file_corrupt(f, lineoff, "A state line of the MANIFEST is malformed.");
	m->nstates++;
}

/* A "grant ..." line: a privilege on a state listed before it. */
static void
manifest_add_grant(SnapshotManifest *m, SrcFile *f, const char *rest, off_t lineoff)
{
	unsigned int id;
	unsigned int role;
	unsigned int privs;

	if (sscanf(rest, "state=%u role_oid=%u privs=%u", &id, &role, &privs) != 3)
		snapshot_file_corrupt(f, lineoff, "A grant line of the MANIFEST is malformed.");
	for (int i = 0; i < m->nstates; i++)
	{
		StateDesc  *d = &m->states[i].desc;

		if (d->id == id && d->ngrants < STATE_MAX_GRANTS)
		{
			d->grants[d->ngrants].role = role;
			d->grants[d->ngrants].privs = (uint8) privs;
			d->ngrants++;
		}
	}
}

/*
 * manifest_parse_line reads one line after the first, "word rest", into m.
 * Unknown words are ignored: later minor versions may add lines.
 */
static void
manifest_parse_line(SnapshotManifest *m, SrcFile *f, const char *word, char *rest,
					off_t lineoff)
{
	if (strcmp(word, "format_version") == 0)
	{
		if (atoi(rest) != SNAPSHOT_FORMAT_VERSION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("snapshot format version %d is not supported", atoi(rest)),
					 errdetail("This release reads version %d.", SNAPSHOT_FORMAT_VERSION)));
	}
	else if (strcmp(word, "snapshot_id") == 0)
		m->id = strtoll(rest, NULL, 10);
	else if (strcmp(word, "format") == 0)
		m->format = strcmp(rest, "canonical") == 0 ? SNAPSHOT_CANONICAL : SNAPSHOT_NATIVE;
	else if (strcmp(word, "server_version_num") == 0)
		m->server_version_num = atoi(rest);
	else if (strcmp(word, "system_identifier") == 0)
		m->system_identifier = strtou64(rest, NULL, 10);
	else if (strcmp(word, "key_groups") == 0)
		m->key_groups = atoi(rest);
	else if (strcmp(word, "wal_position") == 0)
	{
		unsigned int hi;
		unsigned int lo;

		if (sscanf(rest, "%X/%X", &hi, &lo) != 2)
			snapshot_file_corrupt(f, lineoff, "The MANIFEST's wal_position is malformed.");
		m->wal_position = ((uint64) hi << 32) | lo;
	}
	else if (strcmp(word, "database") == 0)
		manifest_add_database(m, f, rest, lineoff);
	else if (strcmp(word, "state") == 0)
		manifest_add_state(m, f, rest, lineoff);
	else if (strcmp(word, "grant") == 0)
		manifest_add_grant(m, f, rest, lineoff);
}

/*
 * signature_ok: whether the MANIFEST's text (without its checksum line)
 * ends with a signature line that this server's key made of every line
 * before it.
 */
static bool
signature_ok(const char *text)
{
	const char *line = strrchr(text, '\n');

	line = line ? line + 1 : text;
	if (strncmp(line, SIGNATURE_PREFIX, strlen(SIGNATURE_PREFIX)) != 0)
		return false;
	return signing_verify(text, line - text, line + strlen(SIGNATURE_PREFIX));
}

/*
 * snapshot_read_manifest reads and checks a snapshot's MANIFEST.  A missing
 * MANIFEST means "not a snapshot"; a damaged one is data_corrupted.
 */
SnapshotManifest *
snapshot_read_manifest(const SnapshotSource *src)
{
	SnapshotManifest *m = palloc0(sizeof(SnapshotManifest));
	SrcFile		f;
	char	   *text;
	char	   *save = NULL;
	int			lineno = 0;

	if (src->dir)
	{
		char		path[MAXPGPATH];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", src->dir, MANIFEST_NAME);
		if (stat(path, &st) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FILE),
					 errmsg("\"%s\" is not a snapshot", src->dir),
					 errdetail("It has no MANIFEST: a snapshot that did not complete, or another directory.")));
	}
	text = read_checked_text(src, &f);
	m->signed_by_key = signature_ok(text);
	m->states = palloc0(sizeof(SnapshotState) * 16);
	m->db_oids = palloc0(sizeof(Oid) * 16);
	m->db_names = palloc0(sizeof(char *) * 16);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
	{
		char		word[64];
		char	   *rest;
		off_t		lineoff = line - text;

		if (++lineno == 1)
		{
			if (strcmp(line, "state_backend snapshot") != 0)
				snapshot_file_corrupt(&f, lineoff, "The MANIFEST does not start with \"state_backend snapshot\".");
			continue;
		}
		if (sscanf(line, "%63s", word) != 1)
			snapshot_file_corrupt(&f, lineoff, "The MANIFEST has an empty line.");
		rest = line + strlen(word);
		while (*rest == ' ')
			rest++;
		manifest_parse_line(m, &f, word, rest, lineoff);
	}
	if (m->key_groups <= 0)
		snapshot_file_corrupt(&f, 0, "The MANIFEST has no key_groups line.");
	check_manifest(&f, m);
	return m;
}
