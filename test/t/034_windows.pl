# Window states against plain SQL.  1,000,000 events (1,000 keys over two
# hours of event time, made by a hash of their number, in a table) go into
# a tumbling (1 min, reducer sum), a sliding (5 min every 1 min, aggregate
# avg(bigint)) and a session window state (gap 30 s, aggregate sum(bigint):
# sessions split, and, fed out of order, merge), in the order of their
# event time plus a jitter of up to 90 s, the watermark
# following at the latest event time fed minus 90 s (so no event is late).
# Past the end, every window has fired, and what the emit functions wrote
# equals the same windows computed by GROUP BY over the events table: the
# last row emitted for each window (emission is at least once) is the
# reference's, row for row.
#
# 1. The plain run, memory states, every event: nothing emitted twice.
# 2. rocksdb states through a snapshot and its restore: after half the
#    events a snapshot is taken (while windows fire); the next events are
#    fed with false values and the watermark follows them, so that windows
#    fire with those values; the snapshot is restored, which loses them;
#    feeding again from the snapshot's point on, the last row of every
#    window is right.
# 3. A rescale onto 2 servers: after half the events a snapshot, restored
#    as part 0 of 2 on this server and part 1 of 2 on a second one; each
#    gets the rest of the events of its own keys.
# Run 2 feeds the events of the keys below $RESTORE_KEYS only (200 keys:
# 200,000 events, of the same table and reference): rocksdb window states
# take the events about 30 times slower than memory ones, and all of them
# would make the file last minutes more on 2 cores.  Runs 1 and 3 feed all
# 1,000,000.  The whole file takes 1.5 to 2.5 minutes on 2 cores.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $EVENTS = 1_000_000;
my $KEYS = 1000;
my $RESTORE_KEYS = 200;     # run 2 (rocksdb) feeds the keys below this
my $RESCALE_KEYS = 1000;    # run 3 likewise
my $SPAN_US = 7_200_000_000;    # two hours of event time
my $DISORDER_US = 90_000_000;   # jitter of the feed order, < 90 s
my $DISORDER = '90 s';
my $CHUNK = 25_000;             # events (of all keys) per feed statement
my $CHUNKS = $EVENTS / $CHUNK;
my $MID = $CHUNKS / 2;          # the snapshot of runs 2 and 3 is taken after this chunk
my $LOST = 3;                   # chunks run 2 feeds wrongly, then loses by the restore
my $BASE = '2026-06-01 00:00:00+00';
my $EPOCH = '1970-01-01 00:00:00+00';
my $FAR = '2026-06-02 00:00:00+00';    # a watermark past every window

# The window states: name => [result type, create_state arguments].
my @KINDS = qw(tum sld ses);
my %KIND = (
	tum => [ 'bigint', q{assigner => 'tumbling', size => '1 min', reducer => 'sum'} ],
	sld => [ 'numeric',
		q{assigner => 'sliding', size => '5 min', slide => '1 min', aggregate => 'avg(bigint)'} ],
	ses => [ 'numeric', q{assigner => 'session', gap => '30 s', aggregate => 'sum(bigint)'} ],
);
my $names = "ARRAY['tum', 'sld', 'ses']";

my $dir = PostgreSQL::Test::Utils::tempdir();
# One deployment: the servers share the key they sign snapshots with.
my $key = "state_backend.signing_key_file = '$dir/deployment.key'\n";
my $node = new_state_node('windows',
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints'\n$key"
	  . "state_backend.memory_limit = '256MB'\n");
ok(defined wait_for_worker($node), 'state worker running');

# Result tables and emit functions (on every server).
my $setup = join('', map {
	my $type = $KIND{$_}[0];
	qq{
CREATE TABLE res_$_ (id bigserial PRIMARY KEY, k int, window_start timestamptz,
                     window_end timestamptz, result $type);
CREATE FUNCTION emit_$_(k int, ws timestamptz, we timestamptz, r $type) RETURNS void
    LANGUAGE sql AS \$\$ INSERT INTO res_$_ (k, window_start, window_end, result) VALUES (k, ws, we, r) \$\$;
}
} @KINDS);
$node->safe_psql('postgres', $setup);

# The events, and the order they are fed in: seq.  wm is the watermark
# after the event: the latest event time fed so far minus the disorder.
# An event fed later has t + jitter >= t' + jitter' of any earlier one,
# so its t > t' - 90 s >= wm: never late.
$node->safe_psql(
	'postgres', qq{
CREATE FUNCTION h(i bigint, seed bigint, n bigint) RETURNS bigint IMMUTABLE LANGUAGE sql
    AS \$\$ SELECT ((hashint8extended(i, seed) % n) + n) % n \$\$;
CREATE TABLE events (seq int, k int, t timestamptz, v bigint, wm timestamptz);
INSERT INTO events
SELECT row_number() OVER w, k, t, v, max(t) OVER (w ROWS UNBOUNDED PRECEDING) - interval '$DISORDER'
  FROM (SELECT i, h(i, 1, $KEYS)::int AS k,
               '$BASE'::timestamptz + h(i, 2, $SPAN_US) * interval '1 microsecond' AS t,
               h(i, 3, 2001) - 1000 AS v,
               h(i, 4, $DISORDER_US) AS jitter_us
          FROM generate_series(1, ${EVENTS}::bigint) i) e
WINDOW w AS (ORDER BY t + jitter_us * interval '1 microsecond', i);
CREATE UNIQUE INDEX ON events (seq);
ANALYZE events;
});

# The reference windows, by plain SQL over the events.
$node->safe_psql(
	'postgres', qq{
CREATE TABLE ref_tum AS
SELECT k, date_bin('1 min', t, '$EPOCH') AS ws, date_bin('1 min', t, '$EPOCH') + interval '1 min' AS we,
       sum(v)::bigint AS r
  FROM events GROUP BY 1, 2, 3;
CREATE TABLE ref_sld AS
SELECT k, s AS ws, s + interval '5 min' AS we, avg(v) AS r
  FROM events,
       generate_series(date_bin('1 min', t, '$EPOCH') - interval '5 min' + interval '1 min',
                       date_bin('1 min', t, '$EPOCH'), interval '1 min') s
 WHERE s > t - interval '5 min'
 GROUP BY 1, 2, 3;
CREATE TABLE ref_ses AS
WITH f AS (
    SELECT k, t, v, seq,
           CASE WHEN t - lag(t) OVER w <= interval '30 s' THEN 0 ELSE 1 END AS first
      FROM events WINDOW w AS (PARTITION BY k ORDER BY t, seq)),
s AS (
    SELECT k, t, v, sum(first) OVER (PARTITION BY k ORDER BY t, seq ROWS UNBOUNDED PRECEDING) AS sid
      FROM f)
SELECT k, min(t) AS ws, max(t) + interval '30 s' AS we, sum(v) AS r
  FROM s GROUP BY k, sid;
ANALYZE ref_tum, ref_sld, ref_ses;
});

my ($nev, $ntum, $nsld, $nses, $multi) = split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM ref_tum),
       (SELECT count(*) FROM ref_sld), (SELECT count(*) FROM ref_ses),
       (SELECT count(*) FROM (SELECT k FROM ref_ses GROUP BY k HAVING count(*) > 1) x)});
note("reference: $nev events, $ntum tumbling, $nsld sliding, $nses session windows");
is($nev, $EVENTS, 'the events are there');
ok($nses > 2 * $KEYS && $nses < $EVENTS / 10,
	'sessions both split (several per key) and merge (many events each)');
ok($multi > $KEYS * 0.9, 'most keys have several sessions');
# Events fed after both their neighbours in time, which lie more than the
# gap apart: each joins two sessions already open into one.
ok($node->safe_psql('postgres', q{
WITH x AS (SELECT seq, lag(seq) OVER w AS ps, lead(seq) OVER w AS ns,
                  lead(t) OVER w - lag(t) OVER w AS d
             FROM events WINDOW w AS (PARTITION BY k ORDER BY t, seq))
SELECT count(*) FROM x WHERE ps < seq AND ns < seq AND d > interval '30 s'}) > 1000,
	'out of order, events merge sessions open before them');

################################################################ helpers

# poll_until($node, $sql, $timeout): true once $sql returns t.
sub poll_until
{
	my ($n, $sql, $timeout) = @_;
	$timeout //= 3 * $PostgreSQL::Test::Utils::timeout_default;
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		my ($ret, $out) = $n->psql('postgres', $sql);
		return 1 if $ret == 0 && $out eq 't';
		usleep(200_000);
	}
	return 0;
}

sub status_diag
{
	my ($n) = @_;
	my @q = (
		'timer_status' => 'SELECT * FROM state.timer_status ORDER BY name',
		'open windows (state, count, earliest end)' => join(' UNION ALL ', map {
			"SELECT '$_', count(*), min(window_end) FROM state.windows('$_', NULL::int)" } @KINDS),
		'emitted (table, rows, latest end)' => join(' UNION ALL ', map {
			"SELECT '$_', count(*), max(window_end) FROM res_$_" } @KINDS),
		'watermarks' => "SELECT s, state.watermark(s) FROM unnest($names) s",
		'failures' => 'SELECT * FROM state.timer_failures LIMIT 5');
	while (my ($what, $sql) = splice(@q, 0, 2))
	{
		my ($ret, $out, $err) = $n->psql('postgres', $sql);
		diag($n->name . " $what:\n$out$err");
	}
}

sub create_states
{
	my ($n, $backend) = @_;
	$n->safe_psql('postgres', join('', map {
		my ($type, $args) = @{ $KIND{$_} };
		"SELECT state.create_state('$_', 'window', 'int', 'bigint', $args,
		    emit => 'emit_$_(int,timestamptz,timestamptz,$type)', backend => '$backend');\n"
	} @KINDS));
}

sub reset_run
{
	my ($n) = @_;
	$n->safe_psql('postgres',
		join('', map { "SELECT state.drop_state('$_', if_exists => true);\n" } @KINDS)
		  . 'TRUNCATE ' . join(', ', map { "res_$_" } @KINDS));
}

# The watermark after chunk $c.
sub wm_at
{
	my ($c) = @_;
	return $node->safe_psql('postgres', "SELECT wm FROM events WHERE seq = " . ($c * $CHUNK));
}

# feed($n, $from, $to, keys => K, part => p, bogus => 1): chunks $from..$to
# (the events of keys < K, of part p of 2 when given, with false values when
# bogus), each followed by the watermark; returns the window_add calls made.
sub feed
{
	my ($n, $from, $to, %o) = @_;
	my $keys = $o{keys} // $KEYS;
	my $v = $o{bogus} ? 'v + 1000000' : 'v';
	my $adds = join(' + ', map {
		my $call = "state.window_add('$_', k, t, $v)";
		defined $o{part}
		  ? "count(CASE WHEN state.part_for('$_', k, 2) = $o{part} THEN $call END)"
		  : "count($call)"
	} @KINDS);
	my $calls = 0;
	for my $c ($from .. $to)
	{
		my ($lo, $hi) = (($c - 1) * $CHUNK + 1, $c * $CHUNK);
		my ($added) = split /\n/, $n->safe_psql('postgres', qq{
SELECT $adds FROM (SELECT k, t, v FROM events WHERE seq BETWEEN $lo AND $hi AND k < $keys ORDER BY seq) e;
SELECT count(state.advance_watermark(s, wm)) FROM events, unnest($names) s WHERE seq = $hi;});
		$calls += $added;
	}
	return $calls;
}

sub advance_all
{
	my ($n, $to) = @_;
	$n->safe_psql('postgres', "SELECT count(state.advance_watermark(s, '$to')) FROM unnest($names) s");
}

# wait_emitted($n, $w, $keys, $what): every reference window of keys < $keys
# ending by $w has been emitted, and no window ending by $w is left open.
sub wait_emitted
{
	my ($n, $w, $keys, $what) = @_;
	my $cond = join("\n AND ", map {
		"(SELECT count(DISTINCT (k, window_start, window_end)) FROM res_$_ WHERE window_end <= '$w' AND k < $keys)"
		  . " >= (SELECT count(*) FROM ref_$_ WHERE we <= '$w' AND k < $keys)"
		  . " AND NOT EXISTS (SELECT 1 FROM state.windows('$_', NULL::int) WHERE window_end <= '$w')"
	} @KINDS);
	ok(poll_until($n, "SELECT $cond"), "$what: every window ending by $w fired")
	  or status_diag($n);
}

# wait_all_fired($n, $what): no window open, no timer pending or retrying.
sub wait_all_fired
{
	my ($n, $what) = @_;
	my $cond = join("\n AND ", map { "NOT EXISTS (SELECT 1 FROM state.windows('$_', NULL::int))" } @KINDS)
	  . "\n AND (SELECT count(*) = 3 AND sum(pending + retrying) = 0 FROM state.timer_status WHERE name = ANY ($names))";
	ok(poll_until($n, "SELECT $cond"), "$what: every window fired and left its state")
	  or status_diag($n);
}

# compare($what, $keys): the last emitted row of each window of keys < $keys
# equals the reference, for each kind.
sub compare
{
	my ($what, $keys) = @_;
	for my $kind (@KINDS)
	{
		my $with = qq{
WITH ref AS (SELECT k, ws, we, r FROM ref_$kind WHERE k < $keys),
got AS (SELECT DISTINCT ON (k, window_start, window_end) k, window_start, window_end, result
          FROM res_$kind ORDER BY k, window_start, window_end, id DESC)};
		my ($nref, $ngot, $missing, $extra) = split /\|/, $node->safe_psql('postgres', qq{$with
SELECT (SELECT count(*) FROM ref), (SELECT count(*) FROM got),
       (SELECT count(*) FROM (TABLE ref EXCEPT TABLE got) x),
       (SELECT count(*) FROM (TABLE got EXCEPT TABLE ref) x)});
		my $ok = is($ngot, $nref, "$what, $kind: as many windows as the reference ($nref)");
		$ok &= is($missing, 0, "$what, $kind: no reference row missing");
		$ok &= is($extra, 0, "$what, $kind: no row the reference does not have");
		next if $ok;
		diag("$what, $kind: first differing windows (k | start | end | expected | emitted):\n"
			  . $node->safe_psql('postgres', qq{$with
SELECT coalesce(ref.k, got.k), coalesce(ref.ws, got.window_start), coalesce(ref.we, got.window_end),
       ref.r, got.result
  FROM ref FULL JOIN got ON (ref.k, ref.ws, ref.we) = (got.k, got.window_start, got.window_end)
 WHERE ref.r IS DISTINCT FROM got.result
 ORDER BY 1, 2, 3 LIMIT 10}));
	}
}

sub late_and_failures
{
	my ($n, $what) = @_;
	is($n->safe_psql('postgres',
			"SELECT coalesce(sum(late), 0) FROM state.stats WHERE name = ANY ($names)"),
		'0', "$what: no event was late");
	is($n->safe_psql('postgres', 'SELECT count(*) FROM state.timer_failures'), '0',
		"$what: no emit failed");
}

# window_add calls for the events of keys < $keys (three states each).
sub calls_for
{
	my ($keys, $from, $to) = @_;
	return $node->safe_psql('postgres',
		"SELECT 3 * count(*) FROM events WHERE k < $keys AND seq BETWEEN "
		  . (($from - 1) * $CHUNK + 1) . ' AND ' . ($to * $CHUNK));
}

################################################################ 1. plain run

my $t0 = time();
create_states($node, 'memory');
is(feed($node, 1, $CHUNKS), 3 * $EVENTS, 'plain: every event went into the three states');
note('plain: fed in ' . (time() - $t0) . ' s');
advance_all($node, $FAR);
wait_emitted($node, $FAR, $KEYS, 'plain');
wait_all_fired($node, 'plain');
note('plain: fired in ' . (time() - $t0) . ' s');
compare('plain', $KEYS);
for my $kind (@KINDS)
{
	is($node->safe_psql('postgres',
			"SELECT count(*) - count(DISTINCT (k, window_start, window_end)) FROM res_$kind"),
		'0', "plain, $kind: no window emitted twice");
}
late_and_failures($node, 'plain');

################################################################ 2. snapshot and restore

$t0 = time();
reset_run($node);
create_states($node, 'rocksdb');
my $calls = feed($node, 1, $MID, keys => $RESTORE_KEYS);
note('restore: first half fed in ' . (time() - $t0) . ' s');
my $w_snap = wm_at($MID);
# Taken while the windows the watermark passed may still be firing.
my $snap = "$dir/restore_snap";
my $sid = $node->safe_psql('postgres', "SELECT state.snapshot('$snap')");
is(wait_snapshot_status($node, $sid), 'completed', 'restore: snapshot after half the events');
note('restore: snapshot taken at ' . (time() - $t0) . ' s');

# Events that the restore loses, with false values; windows fire with them.
feed($node, $MID + 1, $MID + $LOST, keys => $RESTORE_KEYS, bogus => 1);
my $w_lost = wm_at($MID + $LOST);
wait_emitted($node, $w_lost, $RESTORE_KEYS, 'restore: before the restore');
ok($node->safe_psql('postgres', qq{
SELECT count(*) FROM res_tum r JOIN ref_tum f ON (r.k, r.window_start, r.window_end) = (f.k, f.ws, f.we)
 WHERE r.result <> f.r}) > 0, 'restore: windows fired with the values that will be lost');

my $restored = $node->safe_psql('postgres', "SELECT state.restore('$snap')");
note("restore: $restored entries restored");
my $wm_after = $node->safe_psql('postgres', "SELECT state.watermark('tum')");
note("restore: the watermark after the restore: '$wm_after' (snapshot at '$w_snap', before the restore '$w_lost')");
is($node->safe_psql('postgres', qq{
SELECT bool_and(state.watermark(s) IS NULL OR state.watermark(s) <= '$w_snap') FROM unnest($names) s}),
	't', 'restore: the watermark is not ahead of the restored windows');
is($node->safe_psql('postgres',
		"SELECT string_agg(name || ':' || kind || ':' || backend, ',' ORDER BY name) FROM state.states"),
	'ses:window:rocksdb,sld:window:rocksdb,tum:window:rocksdb', 'restore: the window states are back');
ok($node->safe_psql('postgres', "SELECT count(*) FROM state.windows('tum', NULL::int)") > 0,
	'restore: open windows are back');

# Feed on from the snapshot's point; the watermark follows again.
$calls += feed($node, $MID + 1, $CHUNKS, keys => $RESTORE_KEYS);
is($calls, calls_for($RESTORE_KEYS, 1, $CHUNKS), 'restore: every event was fed once after the restore');
advance_all($node, $FAR);
wait_emitted($node, $FAR, $RESTORE_KEYS, 'restore');
wait_all_fired($node, 'restore');
note('restore: run in ' . (time() - $t0) . ' s; windows emitted again: '
	  . $node->safe_psql('postgres', 'SELECT ' . join(' + ', map {
		"(SELECT count(*) - count(DISTINCT (k, window_start, window_end)) FROM res_$_)" } @KINDS)));
compare('restore', $RESTORE_KEYS);
late_and_failures($node, 'restore');

################################################################ 3. rescale onto 2 servers

$t0 = time();
my $other = new_state_node('windows_part1',
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints_1'\n$key"
	  . "state_backend.memory_limit = '256MB'\n");
ok(defined wait_for_worker($other), 'part 1: state worker running');
$other->safe_psql('postgres', $setup);
$node->safe_psql('postgres', "COPY events TO '$dir/events.copy' (FORMAT binary)");
$other->safe_psql('postgres', qq{
CREATE TABLE events (seq int, k int, t timestamptz, v bigint, wm timestamptz);
COPY events FROM '$dir/events.copy' (FORMAT binary);
CREATE UNIQUE INDEX ON events (seq);
ANALYZE events;});

reset_run($node);
create_states($node, 'memory');
$calls = feed($node, 1, $MID, keys => $RESCALE_KEYS);
$w_snap = wm_at($MID);
wait_emitted($node, $w_snap, $RESCALE_KEYS, 'rescale: before the snapshot');
my $open = $node->safe_psql('postgres', 'SELECT ' . join(' + ', map {
	"(SELECT count(*) FROM state.windows('$_', NULL::int))" } @KINDS));
$snap = "$dir/rescale_snap";
$sid = $node->safe_psql('postgres', "SELECT state.snapshot('$snap')");
is(wait_snapshot_status($node, $sid), 'completed', 'rescale: snapshot after half the events');

my @servers = ($node, $other);
my $held = 0;
for my $p (0, 1)
{
	my $n = $servers[$p];
	$n->safe_psql('postgres', "SELECT state.restore('$snap', parallelism => 2, part => $p)");
	my ($mine, $misplaced) = split /\|/, $n->safe_psql('postgres', 'SELECT '
		  . join(' + ', map { "(SELECT count(*) FROM state.windows('$_', NULL::int))" } @KINDS) . ', '
		  . join(' + ', map {
			"(SELECT count(*) FROM state.windows('$_', NULL::int) w WHERE state.part_for('$_', w.key, 2) <> $p)"
		  } @KINDS));
	ok($mine > 0, "rescale: part $p holds open windows");
	is($misplaced, '0', "rescale: part $p holds only the windows of its keys");
	$held += $mine;
	note("rescale: part $p, watermark after the restore: '"
		  . $n->safe_psql('postgres', "SELECT state.watermark('tum')") . "'");
}
is($held, $open, 'rescale: the two parts hold every open window once');

for my $p (0, 1)
{
	$calls += feed($servers[$p], $MID + 1, $CHUNKS, keys => $RESCALE_KEYS, part => $p);
}
is($calls, calls_for($RESCALE_KEYS, 1, $CHUNKS), 'rescale: every event was fed once');
for my $p (0, 1)
{
	advance_all($servers[$p], $FAR);
}
wait_all_fired($servers[$_], "rescale: part $_") for 0, 1;

# What part 1 emitted joins what this server emitted (after it, by id).
for my $kind (@KINDS)
{
	$other->safe_psql('postgres',
		"COPY (SELECT k, window_start, window_end, result FROM res_$kind ORDER BY id) TO '$dir/part1_$kind.copy'");
	$node->safe_psql('postgres',
		"COPY res_$kind (k, window_start, window_end, result) FROM '$dir/part1_$kind.copy'");
}
note('rescale: run in ' . (time() - $t0) . ' s');
compare('rescale', $RESCALE_KEYS);
late_and_failures($_, 'rescale: ' . $_->name) for @servers;

for my $n (@servers)
{
	my @crashes = log_crashes($n);
	is(scalar(@crashes), 0, $n->name . ': no process died') or diag(join("\n", @crashes));
}
$_->stop for @servers;
done_testing();
