# Snapshots are point-in-time cuts taken while sessions go on writing.
#
# One pgbench client writes, statement by statement, keys 1, 2, 3, ... of a
# value state (key i from a sequence, so the order is global), then appends
# i to a list, then bumps two counters, then overwrites a key of a state of
# 500 keys.  Meanwhile another session takes snapshots to fresh paths.  Each
# snapshot, restored into another database, must hold exactly the state
# after some statement of that sequence: keys 1..m with no hole, the list
# [1..L], the counters and the overwritten keys all agreeing with the same
# moment, and that moment must lie between what the snapshotting session saw
# just before state.snapshot() and just after it returned.
#
# The list l and the counter b are rocksdb states, the counter a an lmdb
# state (contrib/lmdb: sessions write it in place, under LMDB's own lock),
# the others heap states, so the invariants also check that one cut holds
# across the three backends.
#
# Then the cut of the state descriptors: states dropped, created, truncated
# and overwritten right after state.snapshot() returns (while the snapshot
# is still being written) are in the snapshot as they were at the cut.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use PostgreSQL::Test::RecursiveCopy;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $NSNAP = 20;       # snapshots taken while the writer runs
my $OKEYS = 500;      # keys of the overwritten state 'o'
my $TIMEOUT = $PostgreSQL::Test::Utils::timeout_default;

my $node = new_state_node('snapshot_consistency', lmdb => 1);
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;
my $snapdir = $node->basedir . '/snapshots';
mkdir $snapdir or die "mkdir $snapdir: $!";

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('s', 'value', 'bigint', 'bigint');
SELECT state.create_state('l', 'list', 'bigint', 'bigint', backend => 'rocksdb');
SELECT state.create_state('a', 'reducing', 'bigint', 'bigint', reducer => 'sum', backend => 'lmdb');
SELECT state.create_state('b', 'reducing', 'bigint', 'bigint', reducer => 'sum', backend => 'rocksdb');
SELECT state.create_state('o', 'value', 'bigint', 'bigint');
CREATE SEQUENCE seq;
});
$node->safe_psql('postgres', 'CREATE DATABASE chk');
$node->safe_psql('chk', 'CREATE EXTENSION state_backend');

# Iteration i of the writer, one statement (one transaction) each:
#   s[i] = i;  l[1] += [i];  a[1] += 1;  b[1] += 1;  o[i % 500] = i
# So at any instant, with m the last i set in s and n the last one set in o:
#   s = {k -> k : 1 <= k <= m},  l[1] = [1..L],  o's values are exactly
#   max(1, n-499) .. n, each at key value % 500,  and
#   m-1 <= n <= b <= a <= L <= m.
my $writer = start_pgbench(
	$node,
	"-n -c 1 -T $TIMEOUT",
	{
		'writer.sql' => qq{
SELECT state.value_set('s', nextval('seq'), currval('seq'));
SELECT state.list_add('l', 1::bigint, currval('seq'));
SELECT state.reduce('a', 1::bigint, 1::bigint);
SELECT state.reduce('b', 1::bigint, 1::bigint);
SELECT state.value_set('o', currval('seq') % $OKEYS, currval('seq'));
}
	},
	timeout => $TIMEOUT + 60);

ok( $node->poll_query_until(
		'postgres', q{SELECT state.value_get('b', 1::bigint, 0::bigint) > 200}),
	'the writer is running');

# Take the snapshots.  Around each call, read a lower bound of the cut (b,
# which only grows, read before the call) and an upper bound (the
# sequence's last value, read after the call returned: no key beyond it
# had been written when the call returned).
my $snapper = $node->background_psql('postgres');
my @snaps;
for my $i (1 .. $NSNAP)
{
	my $path = "$snapdir/snap$i";
	my $before = $snapper->query_safe(q{SELECT state.value_get('b', 1::bigint, 0::bigint)});
	my $id = $snapper->query_safe(qq{SELECT state.snapshot('$path')});
	my $after = $snapper->query_safe(q{SELECT last_value FROM seq});
	my $status = $snapper->query_safe(
		qq{SELECT state.wait_snapshot($id, '$TIMEOUT s')});
	push @snaps,
	  { i => $i, id => $id, path => $path, before => $before, after => $after, status => $status };
	usleep(100_000);
}
# Stop the writer: terminate its backend (the only other client backend).
my $snapper_pid = $snapper->query_safe('SELECT pg_backend_pid()');
is( $node->safe_psql(
		'postgres', qq{
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE backend_type = 'client backend' AND pid NOT IN (pg_backend_pid(), $snapper_pid)}),
	'1', 'the writer is stopped');
my $wr = finish_pgbench($writer);
like($wr->{stderr}, qr/terminat/i, 'the writer ran until it was stopped')
  or diag "pgbench: ret $wr->{ret}\n$wr->{stdout}\n$wr->{stderr}";

is_deeply([ map { $_->{status} } @snaps ], [ map { 'completed' } @snaps ],
	"all $NSNAP snapshots completed");
my @ids = map { $_->{id} } @snaps;
is_deeply(\@ids, [ sort { $a <=> $b } @ids ], 'snapshot ids increase');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(status, ',' ORDER BY id) FROM state.snapshots}),
	join(',', map { 'completed' } @snaps),
	'state.snapshots lists them as completed');

# One line that describes a restored database (see the invariants above).
my $describe = qq{
WITH s AS (SELECT k, state.value_get('s', k, -1::bigint) AS v FROM state.keys('s', 0::bigint) k),
     o AS (SELECT k, state.value_get('o', k, -1::bigint) AS v FROM state.keys('o', 0::bigint) k),
     l AS (SELECT state.list_get('l', 1::bigint, '{}'::bigint[]) AS a)
SELECT concat_ws('|',
  (SELECT count(*) FROM s), (SELECT coalesce(min(k), 0) FROM s), (SELECT coalesce(max(k), 0) FROM s),
  (SELECT count(*) FROM s WHERE v <> k),
  (SELECT coalesce(cardinality(a), 0) FROM l),
  (SELECT a = ARRAY(SELECT generate_series(1, cardinality(a))::bigint) FROM l),
  state.value_get('a', 1::bigint, 0::bigint), state.value_get('b', 1::bigint, 0::bigint),
  (SELECT count(*) FROM o), (SELECT coalesce(min(v), 0) FROM o), (SELECT coalesce(max(v), 0) FROM o),
  (SELECT count(DISTINCT v) FROM o), (SELECT count(*) FROM o WHERE v % $OKEYS <> k))
};

# check_instant($db, $before, $after): checks that the states of database
# $db are those of one instant of the writer, after $before iterations had
# completed and before iteration $after + 1 began.  Returns (m, reasons it
# is not, the description row).
sub check_instant
{
	my ($db, $before, $after) = @_;
	my $d = $node->safe_psql($db, $describe);
	my ($n, $min, $max, $badv, $len, $list_ok, $ca, $cb, $on, $omin, $omax, $odist, $obad) =
	  split /\|/, $d;
	my @why;
	push @why, "s is not 1..m (count $n, min $min, max $max)"
	  unless $n == $max && ($n == 0 || $min == 1);
	push @why, "$badv keys of s listed by state.keys() do not read back as themselves" if $badv;
	push @why, "l is not [1..$len]" unless $len == 0 || $list_ok eq 't';
	push @why, "not m-1 <= b <= a <= L <= m (m $n, L $len, a $ca, b $cb)"
	  unless $n - 1 <= $cb && $cb <= $ca && $ca <= $len && $len <= $n;
	my $exp_on = $omax < $OKEYS ? $omax : $OKEYS;
	my $exp_omin = $omax > $OKEYS ? $omax - $OKEYS + 1 : ($omax ? 1 : 0);
	push @why, "o does not hold the newest $OKEYS writes up to $omax (count $on, min $omin, distinct $odist, misplaced $obad)"
	  unless $on == $exp_on && $omin == $exp_omin && $odist == $on && $obad == 0;
	push @why, "o's newest write $omax is not in m-1 <= o <= b (m $n, b $cb)"
	  unless $n - 1 <= $omax && $omax <= $cb;
	push @why, "cut $n before what was written before the call ($before)"
	  unless $cb >= $before;
	push @why, "cut $n beyond what was written when the call returned ($after)"
	  unless $n <= $after;
	if (@why)
	{
		push @why, "row: $d";
		push @why, $node->safe_psql(
			$db, qq{
SELECT 's (key=value_get): ' || string_agg(k || '=' || state.value_get('s', k, -1::bigint), ' ')
  FROM state.keys('s', 0::bigint) k WHERE state.value_get('s', k, -1::bigint) <> k;
SELECT 'o (key=value_get): ' || string_agg(k || '=' || state.value_get('o', k, -1::bigint), ' ')
  FROM state.keys('o', 0::bigint) k WHERE state.value_get('o', k, -1::bigint) % $OKEYS <> k;
SELECT 'states: ' || string_agg(name || ':' || entries, ' ') FROM state.states;
});
	}
	return ($n, @why);
}

# Restore them newest first: each restore must replace the keys of the
# previous (larger) one, not add to them.
my %m_of;
for my $s (reverse @snaps)
{
	my ($ret, $out, $err) = $node->psql('chk',
		"SELECT state.restore('$s->{path}', from_database => 'postgres')");
	if ($ret != 0)
	{
		fail("snapshot $s->{i} restores");
		diag $err;
		next;
	}
	my ($n, @why) = check_instant('chk', $s->{before}, $s->{after});
	ok(!@why, "snapshot $s->{i} (id $s->{id}) is one instant: m = $n")
	  or diag join("\n", @why);
	$m_of{ $s->{i} } = $n;
}

my @ms = map { $m_of{$_} // -1 } 1 .. $NSNAP;
my @bad = grep { $ms[$_] < $ms[ $_ - 1 ] } 1 .. $#ms;
ok(!@bad, 'the cut never goes back from one snapshot to the next')
  or diag "m: @ms";
cmp_ok($ms[-1], '>', $ms[0], 'the writer made progress between the first and last snapshot')
  or diag "m: @ms";

# The writer's own database, left alone by the restores into 'chk' (which
# share the heap table with it), also reads as one instant (the last).
my $last_value = $node->safe_psql('postgres', 'SELECT last_value FROM seq');
my ($live_n, @live_why) = check_instant('postgres', $ms[-1], $last_value);
ok(!@live_why, "database postgres holds every write of the writer: m = $live_n")
  or diag join("\n", @live_why);

############################################################ descriptors at the cut

# A snapshot that takes a while to write (200k entries, 20 MB), and right after
# state.snapshot() returned (while it is being written, usually): truncate
# 'big', overwrite every key of 'upd', drop 'gone' and create a state of the
# same name with other types, create 'late'.  The snapshot must hold the
# states as they were at the cut.
$node->safe_psql(
	'postgres', q{
SELECT state.create_state('big', 'value', 'bigint', 'text');
SELECT count(state.value_set('big', i, lpad((i * 7)::text, 100, '*'))) FROM generate_series(1, 200000) i;
SELECT state.create_state('upd', 'value', 'integer', 'text');
SELECT count(state.value_set('upd', i, 'old' || i)) FROM generate_series(1, 1000) i;
SELECT state.create_state('gone', 'map', 'text', 'integer', map_key_type => 'integer');
SELECT count(state.map_put('gone', 'x', i, -i)) FROM generate_series(1, 100) i;
});

my $path = "$snapdir/cut";
my $out = $snapper->query_safe(
	qq{
SELECT state.snapshot('$path');
SELECT status FROM state.snapshots ORDER BY id DESC LIMIT 1;
SELECT state.truncate('big');
SELECT count(state.value_set('upd', i, 'new' || i)) FROM generate_series(1, 1000) i;
SELECT state.drop_state('gone');
SELECT state.create_state('gone', 'value', 'integer', 'integer');
SELECT state.value_set('gone', 1, 1);
SELECT state.create_state('late', 'value', 'integer', 'integer');
SELECT state.value_set('late', 1, 1);
});
my @lines = split /\n/, $out;
my $cut_id = $lines[0];
diag "the snapshot had already completed when 'big' was truncated: weaker test"
  if $lines[1] ne 'running';
is(wait_snapshot_status($node, $cut_id), 'completed', 'the snapshot completes');

is( $node->safe_psql('postgres',
		q{SELECT string_agg(name || ':' || kind || ':' || entries, ',' ORDER BY name) FROM state.states WHERE name IN ('big', 'gone', 'late', 'upd')}),
	'big:value:0,gone:value:1,late:value:1,upd:value:1000',
	'the changes after the cut are in effect in database postgres');

$node->safe_psql('chk', qq{SELECT state.restore('$path', from_database => 'postgres')});
is( $node->safe_psql('chk',
		q{SELECT string_agg(name || ':' || kind, ',' ORDER BY name) FROM state.states}),
	'a:reducing,b:reducing,big:value,gone:map,l:list,o:value,s:value,upd:value',
	'the snapshot has the states of the cut: dropped one as it was, created ones not');
is( $node->safe_psql('chk',
		q{SELECT count(*) || ',' || count(*) FILTER (WHERE state.value_get('big', k, ''::text) = lpad((k * 7)::text, 100, '*')) || ',' || min(k) || ',' || max(k) FROM state.keys('big', 0::bigint) k}),
	'200000,200000,1,200000',
	'the state truncated after the cut is whole in the snapshot');
is( $node->safe_psql('chk',
		q{SELECT count(*) FILTER (WHERE state.value_get('upd', i, ''::text) = 'old' || i) FROM generate_series(1, 1000) i}),
	'1000',
	'keys overwritten after the cut have their old values in the snapshot');
is( $node->safe_psql('chk',
		q{SELECT state.map_size('gone', 'x') || ',' || (SELECT sum(value) FROM state.map_entries('gone', 'x', 0, 0))}),
	'100,-5050',
	'the state dropped after the cut is in the snapshot with its entries');

$snapper->quit;

############################################################ all or nothing

# A copy of the snapshot with one byte of its largest data file flipped:
# restore refuses it (data_corrupted) and leaves the database as it was.
my $bad = "$snapdir/corrupt";
PostgreSQL::Test::RecursiveCopy::copypath($path, $bad);
my ($largest) = sort { -s $b <=> -s $a } glob("$bad/db-*/*");
my $size = -s $largest;
open(my $fh, '+<', $largest) or die "open $largest: $!";
binmode $fh;
seek($fh, int($size / 2), 0);
read($fh, my $byte, 1);
seek($fh, int($size / 2), 0);
print $fh chr(ord($byte) ^ 0x5a);
close $fh;

my $state_list = q{SELECT string_agg(name || ':' || entries, ',' ORDER BY name) FROM state.states};
my $chk_before = $node->safe_psql('chk', $state_list);
$node->safe_psql('chk', q{SELECT state.value_set('upd', 1, 'changed')});
my $err = sql_error($node, qq{SELECT state.restore('$bad', from_database => 'postgres')},
	dbname => 'chk');
is($err->{sqlstate}, 'XX001', 'restoring a corrupted snapshot fails with data_corrupted')
  or diag $err->{stderr};
like($err->{message}, qr/\Q$bad\E/, '... naming the corrupted file');
is($node->safe_psql('chk', $state_list), $chk_before, '... and changes no state');
is($node->safe_psql('chk', q{SELECT state.value_get('upd', 1, ''::text)}),
	'changed', '... not even the values');

is_deeply([ log_crashes($node, $log_offset) ], [], 'no process crashed');
$node->stop('fast');

done_testing();
