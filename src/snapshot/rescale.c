/*
 * snapshot/rescale.c
 *		Restoring one part of a snapshot, and merging the snapshots of
 *		several parts, as Flink rescales a job from a savepoint.
 *
 * Keyed state is split by key group: of "parallelism" parts, part i holds
 * the key groups common/key_group.c gives it, and a restore of that part
 * keeps only those.  Operator state is not keyed: an operator_list is split
 * evenly, in order (part i gets the i-th of the contiguous chunks, the
 * first ones one element longer), union lists and broadcast state come
 * whole.  Merging snapshots of several parts takes each state's key groups
 * from the snapshot that holds them (no two may hold the same key group),
 * concatenates operator and union lists in the order the snapshots are
 * given, and takes broadcast state from the first.
 *
 * rescale_plan decides all of that from the descriptors, before anything is
 * loaded; restore.c then loads as the plan says.  Its steps have fault points
 * (rescale.plan_merged, rescale.plan_ranged, rescale.chunk_split), reached
 * before the restore has published anything.
 */
#include "postgres.h"

#include "common/fault.h"
#include "common/key_group.h"
#include "common/settings.h"
#include "format/records.h"
#include "snapshot/rescale.h"

/* The key groups a state of a snapshot holds. */
static void
held_range(const StateDesc *d, int *first, int *last)
{
	*first = d->range_parts > 0 ? d->range_first : 0;
	*last = d->range_parts > 0 ? d->range_last : state_backend_max_parallelism - 1;
}

/* The same state in two snapshots must be the same state. */
static void
check_same_state(const StateDesc *a, const char *asrc, const StateDesc *b, const char *bsrc)
{
	if (a->kind != b->kind || a->types[STATE_TYPE_KEY].oid != b->types[STATE_TYPE_KEY].oid || a->types[STATE_TYPE_VALUE].oid != b->types[STATE_TYPE_VALUE].oid ||
		a->types[STATE_TYPE_MAP_KEY].oid != b->types[STATE_TYPE_MAP_KEY].oid || a->reducer != b->reducer || a->ttl != b->ttl ||
		a->ttl_update != b->ttl_update || a->ttl_visibility != b->ttl_visibility ||
		a->logged != b->logged || a->transactional != b->transactional ||
		a->timer_event_time != b->timer_event_time ||
		strcmp(a->timer_signature, b->timer_signature) != 0 || a->backend != b->backend ||
		strcmp(a->agg_signature, b->agg_signature) != 0 || a->agg_type.oid != b->agg_type.oid ||
		a->window_assigner != b->window_assigner || a->window_contents != b->window_contents ||
		a->window_size != b->window_size || a->window_slide != b->window_slide ||
		a->window_gap != b->window_gap || a->window_lateness != b->window_lateness ||
		a->watermark_by_data != b->watermark_by_data || a->watermark_lag != b->watermark_lag ||
		a->idle_timeout != b->idle_timeout || strcmp(a->late_signature, b->late_signature) != 0 ||
		strcmp(a->emit_table_name, b->emit_table_name) != 0 || a->version != b->version)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("state \"%s\" differs between snapshots \"%s\" and \"%s\"",
						NameStr(a->name), asrc, bsrc),
				 errdetail("Snapshots merged must hold each state with the same kind, types, reducer or aggregate, TTL, logging, windows, watermarks, late function, backend and version (alter_state).")));
}

/* The key groups one snapshot's section holds: those of its keyed states. */
typedef struct SourceRange
{
	const char *source;
	int			first;
	int			last;
	int			parts;
} SourceRange;

/*
 * source_ranges finds, for each snapshot among the inputs, the key groups
 * its keyed states hold (a part restored from several holds one range for
 * all of them); a snapshot with no keyed state holds none.  Returns how many
 * snapshots hold some, in *out (palloc'd).  Two snapshots holding the same
 * key groups, or a gap between them, are refused.
 */
static int
source_ranges(const RescaleInput *in, int n, SourceRange **out)
{
	SourceRange *r = palloc(sizeof(SourceRange) * Max(n, 1));
	int			nr = 0;
	int			lo = state_backend_max_parallelism;
	int			hi = -1;
	int			covered = 0;

	for (int i = 0; i < n; i++)
	{
		int			f,
					l,
					k;

		if (state_kind_is_operator(in[i].desc->kind))
			continue;
		held_range(in[i].desc, &f, &l);
		/* The inputs of one snapshot share its name (the same pointer). */
		for (k = 0; k < nr && r[k].source != in[i].source; k++)
			;
		if (k == nr)
		{
			r[nr].source = in[i].source;
			r[nr].first = f;
			r[nr].last = l;
			r[nr].parts = in[i].desc->range_parts;
			nr++;
		}
		else
		{
			r[k].first = Min(r[k].first, f);
			r[k].last = Max(r[k].last, l);
		}
	}
	for (int i = 0; i < nr; i++)
	{
		for (int j = 0; j < i; j++)
			if (r[i].first <= r[j].last && r[j].first <= r[i].last)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("snapshots \"%s\" and \"%s\" both hold key groups %d to %d",
								r[j].source, r[i].source, Max(r[i].first, r[j].first),
								Min(r[i].last, r[j].last)),
						 errdetail("Snapshots merged must hold distinct key groups: one snapshot per part.")));
		lo = Min(lo, r[i].first);
		hi = Max(hi, r[i].last);
		covered += r[i].last - r[i].first + 1;
	}
	if (nr > 1 && covered != hi - lo + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the snapshots hold key groups %d to %d with a gap", lo, hi),
				 errdetail("Snapshots merged must hold contiguous key groups: consecutive parts.")));
	*out = r;
	return nr;
}

/*
 * plan_range sets the key groups merged keyed state m holds here, and which
 * of them each input of it keeps.  They are those of every snapshot merged,
 * whether it holds the state or not: a part without the state (Flink's
 * states registered where their keys were) had it empty there.  Returns
 * whether the snapshots hold every key group.
 */
static bool
plan_range(const SourceRange *r, int nr, const RescaleInput *in, int n,
		   const RestoreSplit *split, StateDesc *m, int mi, RescaleLoad *loads)
{
	int			max = state_backend_max_parallelism;
	int			lo = max;
	int			hi = -1;
	int			parts = 0;
	bool		whole;

	for (int i = 0; i < nr; i++)
	{
		lo = Min(lo, r[i].first);
		hi = Max(hi, r[i].last);
		if (parts == 0)
			parts = r[i].parts;
	}
	whole = lo == 0 && hi == max - 1;
	if (split->parallelism > 0)
	{
		int			want_lo;
		int			want_hi;

		key_group_range_of_part(max, split->parallelism, split->part, &want_lo, &want_hi);
		if (want_lo < lo || want_hi > hi)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("part %d of %d holds key groups %d to %d of state \"%s\", which the snapshots hold only from %d to %d",
							split->part, split->parallelism, want_lo, want_hi,
							NameStr(m->name), lo, hi)));
		lo = want_lo;
		hi = want_hi;
		parts = split->parallelism;
	}
	else if (whole)
		parts = 0;
	m->range_parts = parts;
	m->range_first = parts > 0 ? lo : 0;
	m->range_last = parts > 0 ? hi : 0;
	for (int i = 0; i < n; i++)
		if (loads[i].merged == mi && split->parallelism > 0)
		{
			loads[i].kg_first = lo;
			loads[i].kg_last = hi;
		}
	return whole;
}

/*
 * rescale_plan merges the states of the inputs (each state of each
 * snapshot restored, in the order the snapshots are given) by name into
 * *merged, and says in loads[i] what the restore does with input i.
 * Returns how many merged states there are; *whole says whether the inputs
 * hold every key group of every keyed state (the whole job: only then is an
 * operator list shared out).  Raises invalid_parameter_value when two
 * snapshots disagree on a state or hold the same key groups.
 */
int
rescale_plan(const RescaleInput *in, int n, const RestoreSplit *split,
			 StateDesc **merged, RescaleLoad *loads, bool *whole)
{
	StateDesc  *m = palloc(sizeof(StateDesc) * Max(n, 1));
	int		   *first = palloc(sizeof(int) * Max(n, 1));
	int			nm = 0;
	SourceRange *ranges;
	int			nr;

	for (int i = 0; i < n; i++)
	{
		int			j;

		for (j = 0; j < nm; j++)
			if (strcmp(NameStr(m[j].name), NameStr(in[i].desc->name)) == 0)
				break;
		memset(&loads[i], 0, sizeof(RescaleLoad));
		loads[i].merged = j;
		loads[i].kg_first = -1;
		loads[i].kg_last = -1;
		if (j == nm)
		{
			m[nm] = *in[i].desc;
			first[nm++] = i;
			continue;
		}
		check_same_state(&m[j], in[first[j]].source, in[i].desc, in[i].source);
		loads[i].append = m[j].kind == STATE_KIND_OPERATOR_LIST ||
			m[j].kind == STATE_KIND_UNION_LIST;
		loads[i].skip = m[j].kind == STATE_KIND_BROADCAST;
	}
	FAULT_POINT("rescale.plan_merged");
	nr = source_ranges(in, n, &ranges);
	*whole = true;
	for (int j = 0; j < nm; j++)
	{
		if (state_kind_is_operator(m[j].kind))
			m[j].range_parts = m[j].range_first = m[j].range_last = 0;
		else if (!plan_range(ranges, nr, in, n, split, &m[j], j, loads))
			*whole = false;
	}
	pfree(ranges);
	pfree(first);
	FAULT_POINT("rescale.plan_ranged");
	*merged = m;
	return nm;
}

/*
 * rescale_chunk appends to out the elements of part "part" of "parts" of a
 * list image: the i-th of the contiguous chunks, the first ones one element
 * longer.  Returns whether the chunk holds any element.
 */
bool
rescale_chunk(const char *list, uint32 len, int parts, int part, StringInfo out)
{
	int64		n = record_count_elems(list, len);
	int64		base = n / parts;
	int64		extra = n % parts;
	int64		from = part * base + Min(part, extra);
	int64		count = base + (part < extra ? 1 : 0);
	uint32		off = 0;
	const char *data;
	uint32		dlen;

	FAULT_POINT("rescale.chunk_split");
	for (int64 i = 0; i < from + count &&
		 record_next_elem(list, len, &off, &data, &dlen) == RECORD_OK; i++)
	{
		if (i >= from)
		{
			int			begin = record_elem_begin(out);

			appendBinaryStringInfo(out, data, dlen);
			record_elem_end(out, begin);
		}
	}
	return count > 0;
}
