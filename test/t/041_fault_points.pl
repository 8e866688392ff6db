# Every fault point of the source, walked under load.
#
# The points are found at run time: every FAULT_POINT("prefix.step") under
# src/ and contrib/ of the source tree this file belongs to, so a point
# added anywhere is walked without editing this file.  The first word of a
# point's name (listed in src/common/fault.h) chooses the load that reaches
# it; a prefix with no load here fails the test, naming the load to add.
#
# For each point and each action (error, exit, crash, each at the first
# arrival in a process; sleep, 10 ms at every arrival, 1 ms at a point
# passed at every WAL record, armed on every point of a prefix at once)
# the point is armed through an included
# configuration file and a reload (so running workers get it, and a
# start-up point armed with crash is disarmed by the next reload while the
# postmaster restarts the cluster), the prefix's load runs, step by step
# until the point's LOG line shows it was reached, the point is disarmed,
# the server is brought back if it died, and the invariants are checked:
#
# - the server answers and its state worker runs;
# - transactional logged states (reducing and map, on memory, rocksdb and
#   lmdb), each written with a mirror table in the same transaction, equal
#   their mirror tables: nothing committed lost, nothing applied twice, no
#   transaction half applied;
# - non-transactional logged lists (memory, rocksdb, lmdb) hold every
#   number whose statement was acknowledged exactly once, and no number
#   twice or never sent;
# - a transactional timers state fires every committed timer exactly once
#   (its handler inserts into a table), and a transactional window state
#   emits every window once, with the sum of what was committed into it;
# - a restore or rescale of another database's states leaves them as they
#   were before, as restored or as the part restored, never a mix, and an
#   acknowledged restore leaves them restored;
# - a state that alter_state changes is wholly as before or after the
#   change (entries, type, backend and version together), and after an
#   acknowledged change, after it;
# - every state is readable; for standby points, the standby's states
#   equal the primary's once it caught up.
#
# A point (and action) that its load never reaches fails the test.  At the
# end it prints how many points and actions it walked.
#
# Every point with every action takes about twelve minutes here, so by
# default each point is walked with sleep and with one of error, exit and
# crash, in turn by the point's place in the sorted list and a seed (the
# day, so that successive days walk every pair; printed at the start):
# about a third of that.
#
#   STATE_BACKEND_FAULT_WALK=1  walk every point with every action
#   STATE_BACKEND_FAULT_SEED    the seed of the default walk (rerun a day's walk)
#   STATE_BACKEND_FAULT_POINTS  a regular expression: walk only the points it
#                               matches, with every action
#   STATE_BACKEND_FAULT_ACTIONS actions to walk (default "error,exit,crash,sleep")

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Find;
use File::Path ();
use IPC::Run;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $started = time();
my $srcroot = abs_path("$FindBin::RealBin/../..");
my $only = $ENV{STATE_BACKEND_FAULT_POINTS};
my @ACTIONS = split /,/, ($ENV{STATE_BACKEND_FAULT_ACTIONS} // 'error,exit,crash,sleep');
my $full = $ENV{STATE_BACKEND_FAULT_WALK} || defined $only;
my $seed = $ENV{STATE_BACKEND_FAULT_SEED} // int(time() / 86400);
diag($full ? 'walking every point with every action'
	: "walking every point with sleep and one other action (STATE_BACKEND_FAULT_SEED=$seed; "
	  . 'STATE_BACKEND_FAULT_WALK=1 walks them all)');
# A sleep round's sleep at each arrival; 1 ms at the points a replay or a
# standby passes at every WAL record (hundreds of arrivals a step).
my $SLEEP_MS = 10;
my $SLEEP_MS_PER_RECORD = 1;
my $PER_RECORD = qr/\.(record_[a-z_]+|txn_commit_record)$/;
sub sleep_ms { $_[0] =~ $PER_RECORD ? $SLEEP_MS_PER_RECORD : $SLEEP_MS }

############################################################ the points

# Every FAULT_POINT("name") of src/ and contrib/ (and FAULT_POINT_HOST("name"),
# a provider's points in contrib/): name => [ "file:line", ... ].
sub discover_points
{
	my %points;
	my @dirs = grep { -d } map { "$srcroot/$_" } qw(src contrib);
	find(
		{
			no_chdir => 1,
			wanted => sub {
				return unless -f $_ && /\.(c|h|cc|cpp)$/;
				open(my $fh, '<', $_) or die "open $_: $!";
				my $rel = substr($_, length($srcroot) + 1);
				while (my $line = <$fh>)
				{
					while ($line =~ /\bFAULT_POINT(?:_HOST)?\s*\(\s*"([^"]*)"\s*\)/g)
					{
						my $name = $1;
						# The macro's own documentation says FAULT_POINT("...").
						next if $name !~ /[a-z]/;
						push @{ $points{$name} }, "$rel:$.";
					}
				}
				close $fh;
			}
		},
		@dirs);
	return \%points;
}

my $points = discover_points();
my @all_points = sort keys %$points;

# The actions a point is walked with: all of them, or (the default walk)
# sleep and the one of the others its place and the seed give.
my @STOPPING = grep { $_ ne 'sleep' } @ACTIONS;
my %actions_of;
for my $i (0 .. $#all_points)
{
	my $p = $all_points[$i];
	$actions_of{$p} = { map { $_ => 1 } ($full || !@STOPPING) ? @ACTIONS
		: ((grep { $_ eq 'sleep' } @ACTIONS), $STOPPING[ ($i + $seed) % @STOPPING ]) };
}
note(scalar(@all_points) . " fault points in $srcroot/{src,contrib}");
ok(scalar(@all_points) > 0, 'the source has fault points (FAULT_POINT("...") found by the scan)')
  or diag("no FAULT_POINT(\"prefix.step\") under $srcroot/src or $srcroot/contrib");

# The points' names as fault.c accepts them (a-z 0-9 _ ., under 64 bytes),
# and one name a point each: the LOG line names the point, not the place.
for my $p (@all_points)
{
	ok($p =~ /^[a-z0-9_]+\.[a-z0-9_.]+$/ && length($p) < 64,
		"fault point \"$p\" has a name fault.c accepts (prefix.step)")
	  or diag("at @{ $points->{$p} }");
}

############################################################ the server

my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'faults',
	lmdb => 1,
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints'\n"
	  . "state_backend.checkpoints_retained = 2\n"
	  . "state_backend.timer_retry_delay = '100ms'\n"
	  . "state_backend.timer_max_retries = 10\n"
	  . "state_backend.request_timeout = '20s'\n"
	  . "restart_after_crash = on\n"
	  . "include_if_exists = 'fault_points.conf'\n");
ok(defined wait_for_worker($node), 'state worker running');
my $standby;    # made for the standby.* points only

my @BACKENDS = qw(memory rocksdb lmdb);
my %B = (memory => 'm', rocksdb => 'r', lmdb => 'l');
my $T0 = '2026-01-01 00:00:00+00';

# The states of database "postgres" and their tables (made again by
# rebaseline after a round that broke them).  tx_s and txmap_s are rocksdb
# states that are not logged: their commits are staged in RocksDB.
sub states_sql
{
	return join('', map { my $b = $B{$_}; qq{
SELECT state.create_state('tx_$b', 'reducing', 'int', 'bigint', reducer => 'sum',
                          backend => '$_', logged => true, transactional => true);
SELECT state.create_state('txmap_$b', 'map', 'int', 'bigint', map_key_type => 'int',
                          backend => '$_', logged => true, transactional => true);
SELECT state.create_state('nt_$b', 'list', 'int', 'int', backend => '$_', logged => true);
SELECT state.create_state('misc_$b', 'map', 'int', 'text', map_key_type => 'int',
                          backend => '$_', logged => true);
} } @BACKENDS) . qq{
SELECT state.create_state('tx_s', 'reducing', 'int', 'bigint', reducer => 'sum',
                          backend => 'rocksdb', transactional => true);
SELECT state.create_state('fill_r', 'value', 'int', 'int', backend => 'rocksdb');
SELECT state.create_state('txmap_s', 'map', 'int', 'bigint', map_key_type => 'int',
                          backend => 'rocksdb', transactional => true);
CREATE TABLE mirror (id bigserial PRIMARY KEY, k int NOT NULL, a bigint NOT NULL);
CREATE TABLE mirror_map (id bigint PRIMARY KEY, k int NOT NULL, a bigint NOT NULL);
CREATE TABLE timer_reg (k int, at timestamptz, PRIMARY KEY (k, at));
CREATE TABLE fired (k int, at timestamptz);
CREATE OR REPLACE FUNCTION on_timer(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS \$\$ INSERT INTO fired VALUES (k, at) \$\$;
SELECT state.create_state('tm', 'timers', 'int', handler => 'on_timer(int,timestamptz)',
                          time_domain => 'event', logged => true, transactional => true);
CREATE TABLE win_in (k int, ws timestamptz, v bigint);
CREATE TABLE win_src (k int, t timestamptz, v bigint);
CREATE TABLE win_out (id bigserial, k int, ws timestamptz, we timestamptz, r bigint);
CREATE OR REPLACE FUNCTION on_window(k int, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS \$\$ INSERT INTO win_out (k, ws, we, r) VALUES (k, ws, we, r) \$\$;
SELECT state.create_state('win', 'window', 'int', 'bigint', assigner => 'tumbling',
                          size => '1 min', reducer => 'sum', time_domain => 'event',
                          emit => 'on_window(int,timestamptz,timestamptz,bigint)',
                          logged => true, transactional => true);
CREATE TRIGGER win_feed AFTER INSERT ON win_src REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('win', 'k', 't', 'v');
};
}
$node->safe_psql('postgres', states_sql() . "CREATE DATABASE side;\n");

# Database "side": a state on each backend, logged, keys 1..8, whose
# snapshot holds 'restored', and its parts 0 and 1 of 2; and an operator
# list, which a rescale splits into chunks.
my $side_states = join(', ', map { "'s_$B{$_}'" } @BACKENDS);
$node->safe_psql('side', 'CREATE EXTENSION state_backend;' . join('', map { qq{
SELECT state.create_state('s_$B{$_}', 'value', 'int', 'text', backend => '$_', logged => true);
} } @BACKENDS) . q{
SELECT state.create_state('ol', 'operator_list', value_type => 'int');
SELECT count(state.operator_add('ol', g)) FROM generate_series(1, 10) g;});

sub side_set
{
	my ($v) = @_;
	return qq{SELECT count(state.value_set(s, k, '$v')) FROM unnest(ARRAY[$side_states]) s, generate_series(1, 8) k};
}

sub side_fingerprint
{
	return $node->safe_psql('side', qq{
SELECT string_agg(s || ':' || k || '=' || v, ' ' ORDER BY s, k)
  FROM unnest(ARRAY[$side_states]) s, state.entries(s, NULL::int, NULL::text) e(k, v)});
}

$node->safe_psql('side', side_set('restored'));
$node->safe_psql('side', "SELECT state.wait_snapshot(state.snapshot('$dir/side_full'))");
my %side_ok = (restored => side_fingerprint());
for my $p (0, 1)
{
	$node->safe_psql('side', "SELECT state.restore('$dir/side_full', parallelism => 2, part => $p)");
	$side_ok{"part$p"} = side_fingerprint();
	$node->safe_psql('side', "SELECT state.wait_snapshot(state.snapshot('$dir/side_part$p'))");
}
$node->safe_psql('side', "SELECT state.restore('$dir/side_full')");
$node->safe_psql('side', side_set('before'));
$side_ok{before} = side_fingerprint();
$node->safe_psql('side', "SELECT state.wait_snapshot(state.snapshot('$dir/side_before'))");
isnt($side_ok{part0}, $side_ok{restored}, 'side: a part holds fewer keys than the whole');
# A checkpoint the start loads.
$node->safe_psql('postgres', 'SELECT state.wait_snapshot(state.snapshot())');

# Database "evo": a logged value state on each backend, keys 1..8 holding
# 'v' || key, which alter_state turns from text into varchar and back, each
# change on to the next backend: its version tells its type (odd: text) and
# its backend, and its entries never change.
$node->safe_psql('postgres', 'CREATE DATABASE evo');
$node->safe_psql('evo', 'CREATE EXTENSION state_backend;' . join('', map { qq{
SELECT state.create_state('e_$B{$_}', 'value', 'int', 'text', backend => '$_', logged => true);
SELECT count(state.value_set('e_$B{$_}', k, 'v' || k)) FROM generate_series(1, 8) k;} } @BACKENDS));
my %evo_version = map { ("e_$B{$_}" => 1) } @BACKENDS;    # the last acknowledged change's
my %evo_unsure;    # a change was not acknowledged: version or version + 1

# The backend a state of evo has at a version.
sub evo_backend
{
	my ($s, $version) = @_;
	my ($first) = grep { "e_$B{$BACKENDS[$_]}" eq $s } 0 .. $#BACKENDS;
	return $BACKENDS[ ($first + $version - 1) % @BACKENDS ];
}

############################################################ client bookkeeping

my (%acked, %tried);    # numbers appended to the nt_ lists
my $next_number = 1;
my $next_map_id = 1;
my $tick = 0;           # timers: the last instant registered, in seconds after $T0
my $window = 0;         # windows: the last minute fed, after $T0
my $failures = 0;

# psql with a bound, never dying; returns the exit code (-1 when cut off).
sub try_sql
{
	my ($n, $db, $sql, $t) = @_;
	my $timed_out;
	my ($ret) = psql_nodie($n, $db, $sql, timeout => $t // 30, timed_out => \$timed_out,
		on_error_stop => 1);
	return $timed_out ? -1 : $ret;
}

############################################################ the loads' steps

my $txn_seq = 0;

# One transaction of step_tx's kind (committed), with the session's own
# fault points: $faults.  Returns try_sql's result.
sub tx_with_faults
{
	my ($faults) = @_;
	$txn_seq++;
	my @rows = map { [ ($txn_seq * 3 + $_) % 7, $txn_seq * 10 + $_ ] } 1 .. 5;
	my $values = join(', ', map { "($_->[0], $_->[1])" } @rows);
	my @ids = ($next_map_id .. $next_map_id + 4);
	$next_map_id += 5;
	my $mvalues = join(', ', map { "($ids[$_], $rows[$_][0], $rows[$_][1])" } 0 .. 4);
	return try_sql($node, 'postgres', qq{
SET state_backend.fault_points = '$faults';
BEGIN;
SELECT count(state.reduce('tx_' || b, k, a::bigint))
  FROM (VALUES $values) v(k, a), unnest(ARRAY['m', 'r', 'l', 's']) b;
INSERT INTO mirror (k, a) VALUES $values;
SELECT count(state.map_put('txmap_' || b, k, id, a::bigint))
  FROM (VALUES $mvalues) v(id, k, a), unnest(ARRAY['m', 'r', 'l', 's']) b;
INSERT INTO mirror_map (id, k, a) VALUES $mvalues;
COMMIT;}, 20);
}

# A commit whose session dawdles while it sends its staged rocksdb writes
# and before its commit record, so that the state worker sees a stage
# being received and one prepared.
sub step_tx_slow
{
	tx_with_faults('commit.stage_key:sleep:40,commit.before_commit_record:sleep:1500');
}

# A session killed after its commit record, before it asks for its staged
# rocksdb writes: the start after the crash applies them from their intent.
sub step_tx_crash_after_commit
{
	tx_with_faults('apply.stage_before_ask:crash');
}

# Non-transactional appends of unique numbers to the three logged lists.
sub step_nt
{
	for (1 .. 2)
	{
		my @nums = ($next_number .. $next_number + 9);
		$next_number += 10;
		$tried{$_} = 1 for @nums;
		my $ret = try_sql($node, 'postgres', sprintf(q{
SELECT count(state.list_add('nt_m', n %% 5, n)), count(state.list_add('nt_r', n %% 5, n)),
       count(state.list_add('nt_l', n %% 5, n))
  FROM unnest('{%s}'::int[]) n}, join(',', @nums)));
		$acked{$_} = 1 for $ret == 0 ? @nums : ();
	}
}

# Transactions that fold into the transactional states and insert their
# mirror rows; one in three rolls back.
sub step_tx
{
	for (1 .. 3)
	{
		$txn_seq++;
		my @rows = map { [ ($txn_seq * 3 + $_) % 7, $txn_seq * 10 + $_ ] } 1 .. 5;
		my $values = join(', ', map { "($_->[0], $_->[1])" } @rows);
		my @ids = ($next_map_id .. $next_map_id + 4);
		$next_map_id += 5;
		my $mvalues = join(', ', map { "($ids[$_], $rows[$_][0], $rows[$_][1])" } 0 .. 4);
		my $end = $txn_seq % 3 == 0 ? 'ROLLBACK' : 'COMMIT';
		# A commit that waits for good: the round ends on it.
		return if try_sql($node, 'postgres', qq{
BEGIN;
SELECT count(state.reduce('tx_' || b, k, a::bigint))
  FROM (VALUES $values) v(k, a), unnest(ARRAY['m', 'r', 'l', 's']) b;
INSERT INTO mirror (k, a) VALUES $values;
SELECT count(state.map_put('txmap_' || b, k, id, a::bigint))
  FROM (VALUES $mvalues) v(id, k, a), unnest(ARRAY['m', 'r', 'l', 's']) b;
INSERT INTO mirror_map (id, k, a) VALUES $mvalues;
$end;}, 10) == -1;
	}
	# A transaction that removes map entries and their mirror rows.
	my $victim = $next_map_id - 7;
	try_sql($node, 'postgres', qq{
BEGIN;
SELECT state.map_remove('txmap_' || b, m.k, m.id::int) FROM mirror_map m, unnest(ARRAY['m', 'r', 'l', 's']) b WHERE m.id = $victim;
DELETE FROM mirror_map WHERE id = $victim;
COMMIT;}) if $victim > 0;
}

# Other writes of every backend (value, map, removal, clear, truncate),
# whose contents are not checked beyond being readable.
sub step_misc
{
	try_sql($node, 'postgres', q{
SELECT count(state.map_put('misc_' || b, k, i, repeat('x', i)))
  FROM unnest(ARRAY['m', 'r', 'l']) b, generate_series(0, 3) k, generate_series(1, 5) i;
SELECT count(state.map_remove('misc_' || b, 1, 2)) FROM unnest(ARRAY['m', 'r', 'l']) b;
SELECT count(state.clear('misc_' || b, 2)) FROM unnest(ARRAY['m', 'r', 'l']) b;
SELECT count(state.truncate('misc_' || b)) FROM unnest(ARRAY['m', 'r', 'l']) b;});
}

sub step_writes { step_tx(); step_nt(); }

# A session reads in its own view of the rocksdb instance keys that nobody
# wrote (new ones each time: none is in the shared entry cache yet), and
# stores in the cache that they have no state.  A checkpoint first flushes
# the memtables, so that the view may read every key.
my $fill_next = 1_000_000;
sub step_fill
{
	my $from = $fill_next;
	$fill_next += 100;
	try_sql($node, 'postgres', q{SELECT state.wait_snapshot(state.snapshot(), '5 s')});
	try_sql($node, 'postgres', qq{
SET state_backend.rocksdb_session_reads_after = 0;
SELECT count(state.value_get('fill_r', k, 0)) FROM generate_series($from, $from + 99) k;});
}

# A checkpoint; the directory left by one that never completed (an id
# below the newest) goes at its retention.
sub step_checkpoint
{
	mkdir "$dir/checkpoints/chk-1";
	try_sql($node, 'postgres', q{SELECT state.wait_snapshot(state.snapshot(), '5 s')});
}

sub step_canonical
{
	my $path = "$dir/canonical_" . int(time() * 1000);
	try_sql($node, 'postgres', qq{SELECT state.wait_snapshot(state.snapshot('$path', 'canonical'), '5 s')});
}

# The server stopped at once and started: its start loads the newest
# checkpoint and replays the logged states' WAL.
sub step_crash_start
{
	$node->stop('immediate', fail_ok => 1);
	$node->start(fail_ok => 1);
}

# More logged records than the start's replay applies between two
# flushes (REPLAY_FLUSH_EVERY, 10000), in one transaction.
sub step_bulk
{
	try_sql($node, 'postgres', q{
BEGIN;
SELECT count(state.map_put('misc_m', 5, i, 'b')) FROM generate_series(1, 24000) i;
COMMIT;
SELECT count(state.clear('misc_m', 5));});
}

sub step_writes_crash { step_writes(); step_crash_start(); }
sub step_bulk_crash { step_bulk(); step_crash_start(); }

sub step_clean_restart
{
	$node->stop('fast', fail_ok => 1);
	$node->stop('immediate', fail_ok => 1);
	$node->start(fail_ok => 1);
}

# What the side database holds as of the last acknowledged restore
# ('unknown' after one that was not acknowledged).
my $last_side = 'before';

sub side_restore
{
	my ($sql, $result) = @_;
	$last_side = try_sql($node, 'side', "SELECT state.restore($sql)") == 0 ? $result : 'unknown';
}

sub step_restore
{
	side_restore("'$dir/side_before'", 'before');
	side_restore("'$dir/side_full'", 'restored');
}

sub step_rescale
{
	side_restore("'$dir/side_full', parallelism => 2, part => 0", 'part0');
	side_restore("ARRAY['$dir/side_part0', '$dir/side_part1']", 'restored');
}

sub step_alter
{
	for my $s (sort keys %evo_version)
	{
		next if $evo_unsure{$s};
		my $v = $evo_version{$s};
		my $type = $v % 2 ? 'varchar' : 'text';
		my $backend = evo_backend($s, $v + 1);
		if (try_sql($node, 'evo', "SELECT state.alter_state('$s', value_type => '$type', backend => '$backend')") == 0)
		{
			$evo_version{$s} = $v + 1;
		}
		else
		{
			$evo_unsure{$s} = 1;
		}
	}
}

# A restore of logged states killed before it published them (once its
# WAL is on disk: another session's commit flushes it while the restore
# sleeps at the point): the start's replay drops the hidden states it made.
sub step_crash_in_restore
{
	# A checkpoint first: one that a start still has to take could cut
	# after the restore's records, and its start would not see them.
	step_checkpoint();
	my $offset = -s $node->logfile;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('side'), '-c',
		"SET state_backend.fault_points = 'restore.before_publish:sleep:5000'; SELECT state.restore('$dir/side_full')" ],
		'>', \$out, '2>', \$err);
	my $deadline = time() + 10;
	usleep(50_000) while time() < $deadline
	  && !reached($node, $offset, ['restore.before_publish'], 'sleep');
	# A commit that wrote WAL flushes what the restore logged, so that the
	# start replays it (one that only took an xid is not flushed at once).
	$node->safe_psql('postgres', q{SELECT pg_logical_emit_message(true, 'state_backend_test', '')});
	my $pid = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE query LIKE '%state.restore(%' AND pid <> pg_backend_pid()});
	kill 'KILL', $pid if $pid =~ /^\d+$/;
	$h->finish;
	$last_side = 'unknown';
	bring_back($node);
}

sub wait_until
{
	my ($sql, $seconds, $n) = @_;
	my $deadline = time() + $seconds;
	while (time() < $deadline)
	{
		my ($ret, $out) = psql_nodie($n // $node, 'postgres', $sql, timeout => 10, timed_out => \my $to);
		return 1 if $ret == 0 && $out eq 't';
		usleep(100_000);
	}
	return 0;
}

sub step_timers
{
	my $from = $tick + 1;
	$tick += 5;
	try_sql($node, 'postgres', qq{
BEGIN;
SELECT count(state.timer_register('tm', k, at)) FROM (
  SELECT k, '$T0'::timestamptz + s * interval '1 s' AS at
    FROM generate_series(0, 2) k, generate_series($from, $tick) s) t;
INSERT INTO timer_reg SELECT k, '$T0'::timestamptz + s * interval '1 s'
  FROM generate_series(0, 2) k, generate_series($from, $tick) s;
COMMIT;
SELECT state.advance_watermark('tm', '$T0'::timestamptz + $tick * interval '1 s');});
	wait_until(q{SELECT NOT EXISTS (SELECT FROM timer_reg r WHERE NOT EXISTS
	               (SELECT FROM fired f WHERE f.k = r.k AND f.at = r.at))}, 5);
}

sub step_windows
{
	$window++;
	try_sql($node, 'postgres', qq{
BEGIN;
INSERT INTO win_src SELECT k, '$T0'::timestamptz + $window * interval '1 min' + s * interval '1 s', k + s
  FROM generate_series(0, 3) k, generate_series(1, 3) s;
INSERT INTO win_in SELECT k, '$T0'::timestamptz + $window * interval '1 min', k + s
  FROM generate_series(0, 3) k, generate_series(1, 3) s;
COMMIT;
SELECT state.advance_watermark('win', '$T0'::timestamptz + ($window + 1) * interval '1 min');});
	wait_until(q{SELECT NOT EXISTS (SELECT FROM win_in i WHERE NOT EXISTS
	               (SELECT FROM win_out o WHERE o.k = i.k AND o.ws = i.ws))}, 5);
}

sub step_standby
{
	step_writes();
	standby_caught_up(5);
}

# More logged records than the standby's worker applies between two
# flushes, replayed by the standby at once (its replay paused meanwhile).
sub step_standby_bulk
{
	try_sql($standby, 'postgres', 'SELECT pg_wal_replay_pause()');
	step_bulk();
	usleep(300_000);
	try_sql($standby, 'postgres', 'SELECT pg_wal_replay_resume()');
	standby_caught_up(10);
}

# The standby stopped at once and started: its worker opens the replay
# afresh from the newest checkpoint.
sub step_restart_standby
{
	$standby->stop('immediate', fail_ok => 1);
	$standby->start(fail_ok => 1);
	wait_until(q{SELECT count(*) > 0 FROM state.states}, 30, $standby);
	standby_caught_up(10);
}

############################################################ the proxy

# A proxy: database "px" of this server routes to two parts, the
# databases "postgres" of two small servers of their own.  (The parts
# cannot be databases of this server: a rescale restores each part's
# snapshot on the new parts with state.restore's from_database left NULL,
# that is from the database of the restoring part's name, and two parts of
# one server are two databases of different names.)  Its state "pv" holds
# keys 1..$PROXY_KEYS, and each rescale goes from two parts to one (part
# 0's server) or back.
my $PROXY_KEYS = 16;
my $with_proxy = -e '/usr/lib/postgresql/15/lib/plproxy.so';
my $proxy_parts = 2;
my @part_nodes;
my $proxy_ready = 0;

sub part_conn
{
	my ($n) = @_;
	return "'host=" . $n->host . ' port=' . $n->port . " dbname=postgres'";
}

sub setup_proxy
{
	$proxy_ready = 1;
	mkdir "$dir/proxy_snapshots";
	@part_nodes = map { new_state_node("proxy_part$_", conf => "shared_buffers = 1MB\nmax_connections = 20\n") } 0, 1;
	$part_nodes[0]->safe_psql('postgres', qq{SELECT state.create_state('pv', 'value', 'int', 'bigint');
SELECT state.wait_snapshot(state.snapshot('$dir/proxy_empty'));});
	$part_nodes[$_]->safe_psql('postgres', "SELECT state.restore('$dir/proxy_empty', parallelism => 2, part => $_)")
	  for 0, 1;
	$node->safe_psql('postgres', 'CREATE DATABASE px');
	$node->safe_psql('px', 'CREATE EXTENSION state_backend; CREATE EXTENSION plproxy; SELECT state.create_proxy(\'pc\', ARRAY['
		  . join(', ', map { part_conn($_) } @part_nodes) . '])');
	$node->safe_psql('px', "SELECT count(state_proxy.value_set('pv', k, k * 10::bigint)) FROM generate_series(1, $PROXY_KEYS) k");
}

# The proxy's fault points are reached in the rescaling session: they are
# armed there (SET), with those of the round.  part_put_back and
# journal_removed are reached only when a step after a restore fails:
# proxy_switched fails too then.
my $proxy_spec = '';

sub step_proxy
{
	my $parts = $proxy_parts == 2 ? [ $part_nodes[0] ] : \@part_nodes;
	my $spec = $proxy_spec;
	$spec .= ',rescale.proxy_switched:error'
	  if $spec =~ /proxy_(part_put_back|journal_removed)/ && $spec !~ /proxy_switched/;
	my $set = $spec ne '' ? "SET state_backend.fault_points = '$spec';" : '';
	my $ret = try_sql($node, 'px', "$set SELECT state.rescale_proxy('pc', ARRAY["
		  . join(', ', map { part_conn($_) } @$parts) . "], '$dir/proxy_snapshots')");
	$proxy_parts = scalar(@$parts) if $ret == 0;
}

# Through the proxy every key has its value, and the parts hold what
# state.proxies says.
sub check_proxy
{
	my ($ret, $out, $err) = psql_nodie($node, 'px', qq{
SELECT cardinality(parts) || '|' || (SELECT count(*) FROM generate_series(1, $PROXY_KEYS) k
                                      WHERE state_proxy.value_get('pv', k, 0::bigint) IS DISTINCT FROM k * 10)
  FROM state.proxies WHERE cluster = 'pc'}, timeout => 30, timed_out => \my $to);
	# A rescale whose session died, or that failed after its point of no
	# return, is put right by state.repair_proxy; until then the proxy's
	# calls refuse, saying so (never a wrong or missing key).
	if ($ret != 0 && $err =~ /a rescale of cluster "pc" was interrupted/)
	{
		my ($r, $o, $e) = psql_nodie($node, 'px', q{SELECT state.repair_proxy('pc')}, timeout => 60, timed_out => \my $t);
		return ("proxy: repair_proxy failed: $e") if $r != 0;
		($ret, $out, $err) = psql_nodie($node, 'px', qq{
SELECT cardinality(parts) || '|' || (SELECT count(*) FROM generate_series(1, $PROXY_KEYS) k
                                      WHERE state_proxy.value_get('pv', k, 0::bigint) IS DISTINCT FROM k * 10)
  FROM state.proxies WHERE cluster = 'pc'}, timeout => 30, timed_out => \my $to2);
	}
	return ("proxy: cannot be read: $err") if $ret != 0;
	my ($parts, $wrong) = split /\|/, $out;
	$proxy_parts = $parts;
	return ("proxy: $wrong of $PROXY_KEYS keys read through the proxy ($parts parts) are wrong or missing") if $wrong;
	# The parts hold each key once (a part that kept keys of another's
	# range fails every later rescale: its snapshots overlap).
	my $held = 0;
	for my $pn (@part_nodes[ 0 .. $parts - 1 ])
	{
		my ($r, $o) = psql_nodie($pn, 'postgres', q{SELECT count(*) FROM state.keys('pv', NULL::int)},
			timeout => 30, timed_out => \my $to);
		$held += $o if $r == 0 && $o =~ /^\d+$/;
	}
	return ("proxy: its $parts parts hold $held keys, not $PROXY_KEYS") if $held != $PROXY_KEYS;
	return ();
}

# After a round that broke it: both part servers hold their part of the
# keys again and the proxy routes to both.
sub reset_proxy
{
	$part_nodes[$_]->safe_psql('postgres', "SELECT state.restore('$dir/proxy_empty', parallelism => 2, part => $_)")
	  for 0, 1;
	$node->safe_psql('px', 'SELECT state.alter_proxy(\'pc\', ARRAY[' . join(', ', map { part_conn($_) } @part_nodes) . '])');
	$node->safe_psql('px', "SELECT count(state_proxy.value_set('pv', k, k * 10::bigint)) FROM generate_series(1, $PROXY_KEYS) k");
	$proxy_parts = 2;
}

############################################################ the lanes

# A lane: the points of one path of the code, the node they are reached
# on, and the steps that reach them, run in order until the point was
# reached.  A round walks one point of each lane, one after the other:
# the point is armed, its lane's steps run until it was reached, it is
# disarmed and the server brought back; the invariants are checked once,
# at the end of the round.  (Arming several at once does not work: a crash
# restarts the server, whose start passes through the restore, replay and
# write points.)  A point its lane did not reach in a shared round is
# walked again alone, and so is every point of a round with problems.
# The backends' writes; a session's store into the rocksdb cache needs
# only its reads (step_fill).
my @WRITE_STEPS = (\&step_nt, \&step_misc, \&step_tx);
my @LANES = (
	{ name => 'write', match => qr/^write\./, steps => [ @WRITE_STEPS, \&step_fill ],
	  steps_of => sub {
		  my ($p) = @_;
		  return $p eq 'write.rocksdb_cache_fill' ? [\&step_fill] : [@WRITE_STEPS];
	  } },
	{ name => 'txn', match => qr/^(commit|apply)\./,
	  steps => [ \&step_tx, \&step_tx_slow, \&step_timers, \&step_windows, \&step_tx_crash_after_commit ],
	  steps_of => sub {
		  my ($p) = @_;
		  return [\&step_tx_crash_after_commit] if $p eq 'apply.rocksdb_stage_recover';
		  return [ \&step_tx, \&step_tx_slow, \&step_timers, \&step_windows ];
	  } },
	{ name => 'checkpoint', match => qr/^checkpoint\./,
	  steps => [ \&step_checkpoint, \&step_canonical, \&step_clean_restart ] },
	{ name => 'timer', match => qr/^(timer|window)\./, steps => [ \&step_timers, \&step_windows ] },
	{ name => 'restore', match => qr/^(restore\.(?!at_start_database$)|rescale\.(?!proxy_))/,
	  steps => [ \&step_restore, \&step_rescale, sub { step_checkpoint(); step_crash_start(); } ] },
	{ name => 'alter', match => qr/^alter\./, steps => [ \&step_alter ] },
	{ name => 'proxy', match => qr/^rescale\.proxy_/, steps => [ \&step_proxy, \&step_proxy ], session => 1 },
	{ name => 'start', match => qr/^(replay\.|restore\.at_start_database$)/,
	  steps => [ \&step_writes_crash, \&step_bulk_crash, \&step_crash_in_restore ],
	  steps_of => sub {
		  my ($p) = @_;
		  return [\&step_bulk_crash] if $p eq 'replay.flush_batch';
		  return [\&step_crash_in_restore] if $p eq 'replay.discard_hidden';
		  return [\&step_writes_crash];
	  } },
	# Most standby points are reached by the standby applying logged WAL;
	# the replay's opening by a standby that starts; the promotion's by a
	# promotion only (it costs a new standby), the request for a checkpoint
	# by a new standby only.
	{ name => 'standby', match => qr/^standby\./, standby => 1,
	  steps => [ \&step_standby, \&step_standby_bulk, \&step_restart_standby, \&step_new_standby, \&step_promote ],
	  steps_of => sub {
		  my ($p) = @_;
		  return [\&step_promote] if $p =~ /^standby\.(promote_|close$)/;
		  return [\&step_new_standby] if $p eq 'standby.request_checkpoint';
		  return [\&step_restart_standby] if $p =~ /^standby\.(open|seek)$/;
		  return [\&step_standby_bulk] if $p eq 'standby.flush_batch';
		  return [\&step_standby];
	  } },
);

# The steps that reach any of @$names on $lane, in the lane's order.
sub lane_steps
{
	my ($lane, $names) = @_;
	return $lane->{steps} unless $lane->{steps_of};
	my %need = map { $_ => 1 } map { @{ $lane->{steps_of}->($_) } } @$names;
	return [ grep { $need{$_} } @{ $lane->{steps} } ];
}

# A point's lane: the one whose pattern matches (one only).
sub lane_of
{
	my ($p) = @_;
	my @l = grep { $p =~ $_->{match} } @LANES;
	die "point $p is in lanes " . join(', ', map { $_->{name} } @l) if @l > 1;
	return $l[0];
}

############################################################ arming

my %spec_of;    # node name => what its fault_points.conf arms

sub set_points
{
	my ($n, $spec) = @_;
	$spec_of{ $n->name } = $spec;
	my $file = $n->data_dir . '/fault_points.conf';
	open(my $fh, '>', $file) or die "open $file: $!";
	print $fh "state_backend.fault_points = '$spec'\n" if $spec ne '';
	close $fh;
	# A postmaster that is not running reads the file when it starts.
	return unless -f $n->data_dir . '/postmaster.pid';
	IPC::Run::run([ 'pg_ctl', '-D', $n->data_dir, 'reload' ], '>', \my $o, '2>', \my $e);
	# New sessions read it once the postmaster did; running processes a
	# moment later (their latch is set).
	my $deadline = time() + 5;
	while (time() < $deadline)
	{
		my ($ret, $out) = psql_nodie($n, 'postgres', 'SHOW state_backend.fault_points', timeout => 5, timed_out => \my $to);
		last if $ret != 0 || $out eq $spec;
		usleep(20_000);
	}
	usleep(50_000);
}

# A process that disarms the points on $n as soon as its log shows them
# all reached: a worker that exits at a point is started again and exits
# there again, and a session waiting on it waits, until it is disarmed.
sub start_disarmer
{
	my ($n, $offset, $names, $action) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	return $pid if $pid;
	my $deadline = time() + 600;
	while (time() < $deadline)
	{
		if (reached($n, $offset, $names, $action) == @$names)
		{
			set_points($n, '');
			last;
		}
		usleep(30_000);
	}
	POSIX::_exit(0);
}

# Names of the points (of @$names) whose LOG line for $action is in $n's
# log after $offset.
sub reached
{
	my ($n, $offset, $names, $action) = @_;
	my $log = slurp_file($n->logfile, $offset);
	return grep { index($log, qq{state_backend fault point "$_" reached: $action}) >= 0 } @$names;
}

# Back to serving: the server answers and its state worker has started
# (a state call succeeds; a start that waits answers 57P03).  A server that
# does not come back within a minute is stopped and started.
sub bring_back
{
	my ($n) = @_;
	my $sql = $n == ($standby // 0) ? 'SELECT count(*) FROM state.states' : 'SELECT count(*) FROM state.states';
	for my $attempt (1, 2)
	{
		my $deadline = time() + 60;
		while (time() < $deadline)
		{
			my ($ret) = psql_nodie($n, 'postgres', $sql, timeout => 10, timed_out => \my $to);
			return 1 if $ret == 0 && defined wait_for_worker($n, timeout => 10);
			usleep(50_000);
		}
		diag($n->name . ' did not come back: stopped and started');
		$n->stop('immediate', fail_ok => 1);
		$n->start(fail_ok => 1);
	}
	return 0;
}

############################################################ invariants

# A transaction that writes a transactional state commits (in a round
# with problems, the rest of the round is not walked: every later step
# would wait on the stuck commits).
sub commit_goes_through
{
	return try_sql($node, 'postgres', q{
BEGIN;
SELECT count(state.reduce('tx_' || b, 0, 0::bigint)) FROM unnest(ARRAY['m', 'r', 'l', 's']) b;
INSERT INTO mirror (k, a) VALUES (0, 0);
COMMIT;}, 10) != -1;
}

# Problems found, as a list of strings; a query that fails is one.
sub check_invariants
{
	my @bad;
	eval { check_all(\@bad); 1; } or do {
		my $e = $@;
		$e =~ s/\n.*//s;
		push @bad, "a check could not run: $e";
	};
	return @bad;
}

sub check_all
{
	my ($bad) = @_;
	my @bad;
	# The transactional states equal their mirror tables.
	for my $b (values(%B), 's')
	{
		my $r = $node->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT k, sum(a) AS s FROM mirror GROUP BY k) g
          FULL JOIN state.entries('tx_$b', NULL::int, NULL::bigint) e(k, v) ON e.k = g.k
         WHERE e.v IS DISTINCT FROM g.s)
    || ' ' ||
       (SELECT count(*) FROM mirror_map m
          FULL JOIN (SELECT g.k, e.map_key AS id, e.value
                       FROM generate_series(0, 6) g(k),
                            state.map_entries('txmap_$b', g.k, NULL::int, NULL::bigint) e) s
            ON s.id = m.id
         WHERE s.id IS NULL OR m.id IS NULL OR s.value <> m.a OR s.k <> m.k)});
		my ($sums, $maps) = split / /, $r;
		push @bad, "tx_$b: $sums keys differ from the mirror table's sums" if $sums;
		push @bad, "txmap_$b: $maps entries differ from the mirror table" if $maps;
	}
	# The non-transactional lists: every acknowledged number once.
	for my $bk (values %B)
	{
		my $list = $node->safe_psql('postgres', qq{
SELECT string_agg(e::text, ',') FROM generate_series(0, 4) k, unnest(state.list_get('nt_$bk', k, '{}'::int[])) e});
		my (%seen, @dup);
		for my $x (split /,/, $list)
		{
			push @dup, $x if $seen{$x}++;
		}
		my @lost = grep { !$seen{$_} } sort { $a <=> $b } keys %acked;
		my @invented = grep { !$tried{$_} } keys %seen;
		push @bad, "nt_$bk: " . scalar(@lost) . " acknowledged numbers lost (first $lost[0])" if @lost;
		push @bad, "nt_$bk: " . scalar(@dup) . " numbers twice (first $dup[0])" if @dup;
		push @bad, "nt_$bk: numbers never sent: @invented" if @invented;
	}
	# Timers: every committed timer due fires, once.
	$node->safe_psql('postgres', qq{SELECT state.advance_watermark('tm', '$T0'::timestamptz + $tick * interval '1 s')})
	  if $tick;
	wait_until(q{SELECT NOT EXISTS (SELECT FROM timer_reg r WHERE NOT EXISTS
	               (SELECT FROM fired f WHERE f.k = r.k AND f.at = r.at))}, 30);
	my ($unfired, $twice, $invented, $failed) = split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM timer_reg r WHERE NOT EXISTS (SELECT FROM fired f WHERE f.k = r.k AND f.at = r.at)),
       (SELECT count(*) FROM (SELECT FROM fired GROUP BY k, at HAVING count(*) > 1) d),
       (SELECT count(*) FROM fired f WHERE NOT EXISTS (SELECT FROM timer_reg r WHERE f.k = r.k AND f.at = r.at)),
       (SELECT count(*) FROM state.timer_failures)});
	push @bad, "timers: $unfired committed timers did not fire" if $unfired;
	push @bad, "timers: $twice timers fired more than once" if $twice;
	push @bad, "timers: $invented timers fired that were never committed" if $invented;
	push @bad, "timers: $failed in state.timer_failures" if $failed;
	# Windows: every committed window emitted once, with its sum.
	$node->safe_psql('postgres', qq{SELECT state.advance_watermark('win', '$T0'::timestamptz + ($window + 1) * interval '1 min')})
	  if $window;
	wait_until(q{SELECT NOT EXISTS (SELECT FROM win_in i WHERE NOT EXISTS
	               (SELECT FROM win_out o WHERE o.k = i.k AND o.ws = i.ws))}, 30);
	my ($wrong, $wtwice) = split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM (SELECT k, ws, sum(v) AS s FROM win_in GROUP BY k, ws) i
          FULL JOIN (SELECT DISTINCT ON (k, ws) k, ws, r FROM win_out ORDER BY k, ws, id DESC) o
            USING (k, ws)
         WHERE o.r IS DISTINCT FROM i.s),
       (SELECT count(*) FROM (SELECT FROM win_out GROUP BY k, ws HAVING count(*) > 1) d)});
	push @bad, "windows: $wrong windows not emitted with the committed sum" if $wrong;
	push @bad, "windows: $wtwice windows emitted more than once" if $wtwice;
	# The evo database: each state wholly as before or after a change.
	for my $s (sort keys %evo_version)
	{
		my ($version, $type, $backend, $entries) = split /\|/, $node->safe_psql('evo', qq{
SELECT s.version, s.value_type, s.backend,
       (SELECT string_agg(k || '=' || v, ' ' ORDER BY k) FROM state.entries('$s', NULL::int, NULL::text) e(k, v))
  FROM state.states s WHERE s.name = '$s'});
		if (!defined $version || $version eq '')
		{
			push @bad, "evo: state $s is gone";
			next;
		}
		my $want = join(' ', map { "$_=v$_" } 1 .. 8);
		push @bad, "evo: $s holds $entries, not $want" if ($entries // '') ne $want;
		push @bad, "evo: $s at version $version is $type"
		  if $type ne ($version % 2 ? 'text' : 'character varying');
		push @bad, "evo: $s at version $version is on $backend"
		  if $backend ne evo_backend($s, $version);
		my $ok = $evo_unsure{$s} ? ($version == $evo_version{$s} || $version == $evo_version{$s} + 1)
		  : $version == $evo_version{$s};
		push @bad, "evo: $s is at version $version; the last acknowledged change left $evo_version{$s}"
		  . ($evo_unsure{$s} ? ' (or one more)' : '') if !$ok;
		$evo_version{$s} = $version;
		$evo_unsure{$s} = 0;
	}
	# The side database: as before, restored or a part, never a mix.
	my $fp = side_fingerprint();
	my ($which) = grep { $side_ok{$_} eq $fp } sort keys %side_ok;
	push @bad, "side: its states are none of before, restored or a part: $fp" if !defined $which;
	push @bad, "side: it holds $which, not $last_side as the last acknowledged restore left it"
	  if defined $which && $last_side ne 'unknown' && $which ne $last_side;
	$last_side = $which // 'unknown';
	# A checkpoint completes (one still running, slowed by a sleep round's
	# points, first ends).
	my ($sret, $sout, $serr);
	for my $try (1 .. 15)
	{
		($sret, $sout, $serr) = psql_nodie($node, 'postgres',
			q{SELECT state.wait_snapshot(state.snapshot(), '10 s')}, timeout => 30, timed_out => \my $to);
		last unless $serr =~ /is still running/;
		sleep 2;
	}
	push @bad, "a checkpoint does not complete: $sout$serr" if $sret != 0 || $sout ne 'completed';
	# Every state readable.
	for my $db ('postgres', 'side')
	{
		my @states = split /\n/, $node->safe_psql($db,
			q{SELECT name || '|' || key_type FROM state.states WHERE kind NOT IN ('operator_list', 'union_list', 'broadcast') ORDER BY name});
		my $sql = 'SELECT 0' . join('', map {
			my ($name, $type) = split /\|/;
			" + (SELECT count(*) FROM state.keys('$name', NULL::$type))"
		} @states);
		my ($ret, $out, $err) = psql_nodie($node, $db, $sql, timeout => 30, timed_out => \my $to);
		push @bad, "$db: a state cannot be read: $err" if $ret != 0;
	}
	push @$bad, @bad;
	return;
}

# After a round that broke them, the states of "postgres" are made again
# and the client's bookkeeping starts over, so that the next rounds are
# judged on their own.  A server whose checkpoints no longer complete is
# stopped and started (fresh shared memory).
sub rebaseline
{
	my ($restart) = @_;
	if ($restart)
	{
		$node->stop('immediate', fail_ok => 1);
		$node->start(fail_ok => 1);
		bring_back($node);
	}
	$node->safe_psql('postgres', q{
SELECT count(state.drop_state(name)) FROM state.states;
DROP TABLE IF EXISTS mirror, mirror_map, timer_reg, fired, win_in, win_src, win_out;} . states_sql());
	%acked = ();
	%tried = ();
	($tick, $window) = (0, 0);
	side_restore("'$dir/side_before'", 'before');
	$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot(), '30 s')});
}

############################################################ the standby

# The standby caught up: a mark written now on the primary into a logged
# state of each backend reads back on the standby.  (Its applied position
# is no measure: it may stay short of pg_current_wal_lsn() when no logged
# record follows.)  WAL is applied in order, so what came before the mark
# is applied too.  A promoted standby goes on on its own: it is caught up.
my $mark = 0;

sub standby_caught_up
{
	my ($seconds) = @_;
	$mark++;
	return 0 if try_sql($node, 'postgres', qq{
SELECT count(state.map_put('misc_' || b, 9, 0, 'mark$mark')) FROM unnest(ARRAY['m', 'r', 'l']) b}) != 0;
	return wait_until(qq{SELECT NOT pg_is_in_recovery() OR
       (SELECT bool_and(state.map_get('misc_' || b, 9, 0, NULL::text) IS NOT DISTINCT FROM 'mark$mark')
          FROM unnest(ARRAY['m', 'r', 'l']) b)}, $seconds, $standby);
}

my $standbys = 0;

# A new standby from a base backup of the primary, armed as the standby
# lane is; the old one, if any, goes.
sub start_standby
{
	my $spec = $standby ? $spec_of{ $standby->name } // '' : '';
	$standby->stop('immediate', fail_ok => 1) if $standby;
	$standbys++;
	$node->backup("fault_backup$standbys");
	$standby = PostgreSQL::Test::Cluster->new("fault_standby$standbys");
	$standby->init_from_backup($node, "fault_backup$standbys", has_streaming => 1);
	set_points($standby, $spec);
	$standby->start;
	# The standby serves from a checkpoint taken since its base backup (it
	# asks the primary for one, but the walk takes one itself rather than
	# wait for it) once its WAL holds a record after the checkpoint's cut
	# (the write after it: an idle primary writes none for seconds); then a
	# write gives it logged WAL to apply.
	for (1 .. 20)
	{
		step_checkpoint();
		step_nt();
		last if wait_until(q{SELECT count(*) > 0 FROM state.states}, 3, $standby);
	}
	step_nt();
	return standby_caught_up(60);
}

sub step_new_standby
{
	start_standby();
}

# The standby promoted: it goes on as a primary from what it applied.
# It is compared with the primary, then replaced by a new standby at the
# end of the round.  Two primaries never share a checkpoint directory: just
# before the promotion the standby is given a copy of the shared one, as
# it is then, to go on with.
my $promoted = 0;

sub step_promote
{
	step_writes();
	standby_caught_up(10);
	my $own = "$dir/promoted$standbys";
	system('cp', '-a', "$dir/checkpoints", $own) == 0 or die "cp: $?";
	$standby->append_conf('postgresql.conf', "state_backend.checkpoint_dir = '$own'\n");
	$standby->reload;
	wait_until(qq{SELECT current_setting('state_backend.checkpoint_dir') = '$own'}, 5, $standby);
	$standby->promote;
	$promoted = 1;
}

# After a promotion: the promoted standby holds the primary's logged
# states; then it goes, and a new standby is made.
sub end_promotion
{
	$promoted = 0;
	my @bad = check_standby();
	$standby->stop('immediate', fail_ok => 1);
	File::Path::rmtree("$dir/promoted$standbys");
	push @bad, 'standby: a new one did not catch up' unless start_standby();
	return @bad;
}

# The standby's logged states, once it caught up, equal the primary's.
sub check_standby
{
	unless (standby_caught_up(60))
	{
		# What the standby said last of its apply, for the report.
		my @said = grep { /ERROR|FATAL|PANIC|WARNING/ } split /\n/,
		  slurp_file($standby->logfile);
		return ('standby: did not catch up; its log ends: ' . join(' | ', @said[ -(@said < 3 ? @said : 3) .. -1 ]));
	}
	my $sql = 'SELECT ' . join(" || ' ' || ", map { my $b = $B{$_}; qq{
(SELECT coalesce(sum(v), 0) FROM state.entries('tx_$b', NULL::int, NULL::bigint) e(k, v))
  || '/' || (SELECT count(*) FROM generate_series(0, 4) k, unnest(state.list_get('nt_$b', k, '{}'::int[])) e)} } @BACKENDS);
	my $p = $node->safe_psql('postgres', $sql);
	my ($ret, $s, $err) = psql_nodie($standby, 'postgres', $sql, timeout => 30, timed_out => \my $to);
	return ("standby: its states differ from the primary's: $s$err against $p") if $ret != 0 || $s ne $p;
	return ();
}

############################################################ the walk

# Known failures: "point action" => the bug.  Each still runs and prints
# as a TODO test.
my %KNOWN = (
);

my %walked;     # point => { action => 1 if reached }
my %problems;   # "point action" => [ problems ]
my %per_action; # action => rounds
my $rounds = 0;
my %unknown;

# A round: $action on one point of each of several lanes (lane => point),
# or, for sleep, on any number of points of each lane.  Returns the
# (point, action) pairs reached and the problems found.
sub round
{
	my ($action, $items) = @_;    # [ [ lane, [ points ] ], ... ] in lane order
	$rounds++;
	$per_action{$action}++;
	my $t0 = time();
	my $item = sub { my ($p) = @_; $action eq 'sleep' ? "$p:sleep:" . sleep_ms($p) : "$p:$action:1" };
	my (@got, @bad);
	for my $it (@$items)
	{
		my ($lane, $names) = @$it;
		my $n = $lane->{standby} ? $standby : $node;
		my $spec = join(',', map { $item->($_) } @$names);
		$proxy_spec = $lane->{session} ? $spec : '';
		my %off = ($n->name => -s $n->logfile);
		set_points($n, $spec) unless $lane->{session};
		my @reached;
		my $disarmer = $action ne 'sleep' && !$lane->{session}
		  ? start_disarmer($n, -s $n->logfile, $names, $action) : undef;
		for my $step (@{ lane_steps($lane, $names) })
		{
			$step->();
			$n = $standby if $lane->{standby};
			# A point reached as soon as it was armed counts too; a new
			# standby's log counts from its beginning.
			my $offset = $off{ $n->name } //= 0;
			# A worker may reach the point a moment after the step returned.
			my $deadline = time() + 1.5;
			my %r = map { $_ => 1 } @reached;
			while (1)
			{
				$r{$_} = 1 for reached($n, $offset, $names, $action);
				last if keys %r == @$names || time() > $deadline;
				usleep(50_000);
			}
			@reached = keys %r;
			last if @reached == @$names;
		}
		$proxy_spec = '';
		if ($disarmer)
		{
			kill 'KILL', $disarmer;
			waitpid($disarmer, 0);
		}
		push @got, @reached;
		set_points($n, '') unless $lane->{session};
		push @bad, 'the server did not come back' unless bring_back($node);
		push @bad, 'a transactional commit does not complete within 10 s' unless @bad || commit_goes_through();
		push @bad, 'the standby did not come back' if $lane->{standby} && !bring_back($standby);
		push @bad, end_promotion() if $promoted;
		last if @bad;
	}
	set_points($node, '');
	set_points($standby, '') if $standby;
	push @bad, check_invariants() unless @bad;
	push @bad, check_proxy() if $proxy_ready && !@bad;
	push @bad, check_standby() if $standby && grep({ $_->[0]{standby} } @$items) && !@bad;
	note(sprintf('round %d, %s: %s; reached %d/%d in %.1f s%s', $rounds, $action,
		join(' ', map { @{ $_->[1] } } @$items), scalar(@got), scalar(map { @{ $_->[1] } } @$items),
		time() - $t0, @bad ? ': ' . join('; ', @bad) : ''));
	rebaseline(scalar(grep { /checkpoint does not complete|did not come back|cannot be read|commit does not complete/ } @bad)) if @bad;
	reset_proxy() if grep { /^proxy:/ } @bad;
	return (\@got, \@bad);
}

# Walks $action on the points: shared rounds (one point of each lane),
# then alone the points not reached in them; a shared round with problems
# is walked again point by point, to tell which point they belong to.
sub walk_action
{
	my ($action, $by_lane) = @_;
	my @lanes = grep { @{ $by_lane->{ $_->{name} } // [] } } @LANES;
	my %left = map { $_->{name} => [ @{ $by_lane->{ $_->{name} } } ] } @lanes;
	my (@again, @shared_bad);
	while (grep { @{ $left{ $_->{name} } } } @lanes)
	{
		my @items = map { [ $_, [ shift @{ $left{ $_->{name} } } ] ] } grep { @{ $left{ $_->{name} } } } @lanes;
		my ($got, $bad) = round($action, \@items);
		my %g = map { $_ => 1 } @$got;
		$walked{$_}{$action} = 1 for @$got;
		for my $it (@items)
		{
			my $p = $it->[1][0];
			push @again, $it if !$g{$p} || (@$bad && @items > 1);
		}
		push @shared_bad, [ [ map { $_->[1][0] } @items ], $bad ] if @$bad && @items > 1;
		$problems{"$items[0][1][0] $action"} = $bad if @$bad && @items == 1;
	}
	for my $it (@again)
	{
		my ($got, $bad) = round($action, [$it]);
		$walked{$_}{$action} = 1 for @$got;
		$problems{"$it->[1][0] $action"} = $bad if @$bad;
	}
	# Problems of a shared round that none of its points shows alone: the
	# points together.
	for my $sb (@shared_bad)
	{
		my ($names, $bad) = @$sb;
		next if grep { $problems{"$_ $action"} } @$names;
		$problems{"@$names $action (together)"} = $bad;
	}
}

my %by_lane;
for my $p (@all_points)
{
	next if defined $only && $p !~ /$only/;
	my $lane = lane_of($p);
	if (!$lane)
	{
		$unknown{$p} = 1;
		next;
	}
	push @{ $by_lane{ $lane->{name} } }, $p;
}

for my $p (sort keys %unknown)
{
	fail("fault point \"$p\" belongs to no lane of this test")
	  or diag("add a lane (a load that reaches it) to \@LANES in test/t/041_fault_points.pl, "
		  . "and its prefix to the list in src/common/fault.h (point at @{ $points->{$p} })");
}
if (!$with_proxy && $by_lane{proxy})
{
	fail('PL/Proxy (postgresql-15-plproxy) is not installed: the rescale.proxy_* points cannot be walked');
	delete $by_lane{proxy};
}

setup_proxy() if $by_lane{proxy};
ok(start_standby(), 'standby: applies the primary\'s logged states') if $by_lane{standby};

for my $action (@ACTIONS)
{
	if ($action eq 'sleep')
	{
		# Sleeping stops nothing: every point at once, as many a round as
		# the setting holds (32 a node).
		my %left = map { $_ => [ @{ $by_lane{$_} } ] } keys %by_lane;
		while (grep { @$_ } values %left)
		{
			my ($room_p, $room_s) = (32, 32);
			my @items;
			for my $l (@LANES)
			{
				my $names = $left{ $l->{name} } or next;
				my $room = $l->{standby} ? \$room_s : \$room_p;
				# The proxy's are armed in its session, all at once.
				my @take = splice(@$names, 0, $l->{session} ? scalar(@$names) : $$room);
				$$room -= @take unless $l->{session};
				# part_put_back and journal_removed are reached only when
				# proxy_switched fails;
				# a flush_batch by more than 10000 records, each of which
				# would sleep at the record points.
				for my $alone (grep { /proxy_(part_put_back|journal_removed)|flush_batch$/ } @take)
				{
					push @items, [ $l, [$alone] ];
				}
				@take = grep { !/proxy_(part_put_back|journal_removed)|flush_batch$/ } @take;
				# A standby's points passed at every WAL record, in an item
				# of their own: its load writes a few hundred records,
				# where the other steps make new standbys replay the walk's
				# whole WAL, tens of thousands of arrivals.
				my @per_record = $l->{standby} ? grep { $_ =~ $PER_RECORD } @take : ();
				@take = grep { !($l->{standby} && $_ =~ $PER_RECORD) } @take;
				push @items, [ $l, \@per_record ] if @per_record;
				push @items, [ $l, \@take ] if @take;
			}
			my ($got, $bad) = round('sleep', \@items);
			$walked{$_}{sleep} = 1 for @$got;
			$problems{'sleep round ' . $per_action{sleep}} = $bad if @$bad;
		}
	}
	else
	{
		my %these = map { my $l = $_; ($l => [ grep { $actions_of{$_}{$action} } @{ $by_lane{$l} } ]) }
		  keys %by_lane;
		walk_action($action, \%these);
	}
}

for my $p (grep { !exists $unknown{$_} } @all_points)
{
	next if defined $only && $p !~ /$only/;
	my @missed = grep { !$walked{$p}{$_} } sort keys %{ $actions_of{$p} };
	ok(!@missed, "fault point \"$p\" was reached by its load with "
		  . ($full ? 'every action' : join(' and ', sort keys %{ $actions_of{$p} })))
	  or diag("\"$p\" (at @{ $points->{$p} }) not reached with: @missed; "
		  . 'make its lane in test/t/041_fault_points.pl reach it');
}
# Problems of a shared round seen in none of its points alone: known when
# one of its points (with that action) is a known bug.
sub known
{
	my ($what) = @_;
	return $KNOWN{$what} if $KNOWN{$what};
	my ($names, $action) = $what =~ /^(.*) (\w+) \(together\)$/ or return undef;
	my ($k) = grep { $KNOWN{$_} } map { "$_ $action" } split / /, $names;
	return $k ? "$k: $KNOWN{$k}" : undef;
}

for my $what (sort keys %problems)
{
	local $TODO = known($what) ? 'known bug: ' . known($what) : undef;
	fail("invariants after $what") or diag(join("\n", @{ $problems{$what} }));
}
ok(!grep({ !known($_) } keys %problems), 'every invariant held after every round (but known bugs)');

my $npoints = scalar(keys %walked);
my $nactions = 0;
$nactions += scalar(keys %{ $walked{$_} }) for keys %walked;
diag(sprintf('walked %d fault points (%d in the source), %d point-actions reached, in %d rounds (%s), %.0f s; '
	  . '%d acknowledged appends, %d transactions, %d timers, %d windows, %d standbys',
	$npoints, scalar(@all_points), $nactions, $rounds,
	join(', ', map { "$_ $per_action{$_}" } grep { $per_action{$_} } @ACTIONS),
	time() - $started, scalar(keys %acked), $txn_seq, $tick * 3, $window * 4, $standbys));

$standby->stop('immediate') if $standby;
$_->stop('immediate') for @part_nodes;
$node->stop;
done_testing();
