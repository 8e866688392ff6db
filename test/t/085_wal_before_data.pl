# WAL before data: nothing of a logged state outlives a crash that its WAL
# records did not.  With synchronous_commit off a crash may lose the end of
# WAL, as PostgreSQL allows; every logged state must then lose the same
# changes, and acknowledged ones none.
#
# 1. A rocksdb instance keeps its writes through a crash of the server's
#    processes (RocksDB's own log).  A statement appends to a logged memory
#    list and a logged rocksdb list, then a backend is killed before WAL is
#    flushed.  Before the fix the rocksdb list came back with the appends
#    and the memory list without them: the instance was ahead of WAL (and
#    so of every standby).
# 2. A checkpoint is cut at WAL's insert position, and is complete only
#    once WAL is flushed to its cut.  Appends, a checkpoint, and a crash;
#    the next start cannot take a checkpoint of its own (a fault point),
#    acknowledged appends follow (synchronous_commit on), and the server
#    crashes again.  The start after it replays from the first
#    checkpoint's cut: had that cut been past the end of WAL, the
#    acknowledged appends' records, which WAL wrote after the first crash,
#    would lie below it, and the memory list would lose them.
# 3. A logged state is created, and dropped, in the rocksdb instance after
#    its record is flushed: two states made (and dropped) by one statement
#    both come back after a crash, or neither does.
# 4. A transactional rocksdb state's commit is applied to the instance once
#    its commit record is flushed: after a crash, a table written in the
#    same transaction and the state both have it, or neither.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
# The WAL writer writes full pages only, every 10 s: a commit's records
# stay in WAL buffers, which a crash loses.
my $node = new_state_node(
	'wal_before_data',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.checkpoint_interval = 0\n"
	  . "synchronous_commit = off\n"
	  . "wal_writer_delay = '10s'\n"
	  . "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres', q{
SELECT state.create_state('km', 'list', 'int', 'int', logged => true);
SELECT state.create_state('kr', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT count(state.list_add(s, 1, i)) FROM generate_series(1, 10) i, unnest(ARRAY['km', 'kr']) s;
});
checkpoint_now($node);
$node->safe_psql('postgres', 'CHECKPOINT');

my $lengths = q{SELECT string_agg(s || '=' || cardinality(state.list_get(s, 1, '{}'::int[])), ' ' ORDER BY s)
  FROM unnest(ARRAY['km', 'kr']) s};
is($node->safe_psql('postgres', $lengths), 'km=10 kr=10', 'ten appends to each list');

# Kills a backend of a session of its own: the postmaster restarts every
# process, and what WAL buffers held is gone.
sub crash
{
	my ($label) = @_;
	my $bg = $node->background_psql('postgres');
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	ok(defined wait_for_crash_restart($node, $offset), "$label: the server came back");
	eval { $bg->quit };
}

# ---- 1. the rocksdb instance is never ahead of WAL
$node->safe_psql('postgres', q{
SELECT count(state.list_add(s, 1, i)) FROM generate_series(11, 20) i, unnest(ARRAY['km', 'kr']) s});
crash('crash 1');
my ($km, $kr) = $node->safe_psql('postgres', $lengths) =~ /km=(\d+) kr=(\d+)/;
is($kr, $km, "crash 1: the rocksdb list lost what the memory list lost (km $km, kr $kr)");
ok($km >= 10, 'crash 1: nothing from before the checkpoint is lost');

# ---- 2. a checkpoint is never cut past the end of WAL
# Appends to the memory list only (a rocksdb write would flush WAL itself).
my ($km_before, $kr_before) = ($km, $kr);
$node->safe_psql('postgres', q{
SELECT count(state.list_add('km', 1, i)) FROM generate_series(21, 40) i});
checkpoint_now($node);
# The next start's checkpoints fail, so that the one above stays newest.
$node->safe_psql('postgres',
	q{ALTER SYSTEM SET state_backend.fault_points = 'checkpoint.before_manifest:error'});
$node->reload;
crash('crash 2');
my $after_crash = $node->safe_psql('postgres', $lengths);
($km, $kr) = $after_crash =~ /km=(\d+) kr=(\d+)/;
is($km, $km_before + 20, "crash 2: the appends a completed checkpoint holds are there ($after_crash)");
is($kr, $kr_before, 'crash 2: the rocksdb list is as it was');

# Five acknowledged appends to each, their WAL flushed at commit.
for my $i (41 .. 45)
{
	$node->safe_psql('postgres', qq{
SET synchronous_commit = on;
SELECT count(state.list_add(s, 1, $i)) FROM unnest(ARRAY['km', 'kr']) s});
}
crash('crash 3');
is($node->safe_psql('postgres', $lengths),
	'km=' . ($km + 5) . ' kr=' . ($kr + 5),
	'crash 3: every acknowledged append is there, in both lists');

$node->safe_psql('postgres', 'ALTER SYSTEM RESET state_backend.fault_points');
$node->reload;

# ---- 3. a rocksdb state is created and dropped in RocksDB after WAL says so
# Two logged states, memory then rocksdb, created in one statement: a crash
# brings back both or neither (before, the rocksdb instance kept the one it
# had stored while WAL lost both records).
$node->safe_psql('postgres', q{
SELECT state.create_state('cm', 'value', 'int', 'int', logged => true),
       state.create_state('cr', 'value', 'int', 'int', backend => 'rocksdb', logged => true);
});
sleep 1;
crash('crash 4');
my $exist = q{SELECT string_agg(name, ',' ORDER BY name) FROM state.states WHERE name IN ('cm', 'cr', 'dm', 'dr')};
my $created = $node->safe_psql('postgres', $exist);
ok($created eq '' || $created eq 'cm,cr', "crash 4: both created states came back, or neither ($created)");

# Dropped in one statement, after a checkpoint that holds them.
$node->safe_psql('postgres', q{
SELECT state.drop_state('cm', true), state.drop_state('cr', true);
SELECT state.create_state('dm', 'value', 'int', 'int', logged => true),
       state.create_state('dr', 'value', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT count(state.value_set(s, i, i)) FROM generate_series(1, 10) i, unnest(ARRAY['dm', 'dr']) s;
});
checkpoint_now($node);
$node->safe_psql('postgres', q{SELECT state.drop_state('dm'), state.drop_state('dr')});
sleep 1;
crash('crash 5');
my $left = $node->safe_psql('postgres', $exist);
ok($left eq '' || $left eq 'dm,dr', "crash 5: both dropped states are gone, or both back ($left)");
if ($left eq 'dm,dr')
{
	is($node->safe_psql('postgres',
			q{SELECT sum(state.value_get(s, i, 0)) FROM generate_series(1, 10) i, unnest(ARRAY['dm', 'dr']) s}),
		'110', 'crash 5: the states that came back hold their entries');
}

# ---- 4. a transactional rocksdb state's commit is applied once it is durable
# An unlogged transactional state and a table, written in one transaction
# committed asynchronously: after a crash both have it or neither (before,
# the state worker applied the commit as soon as the commit log said so, and
# a crash that lost the commit record left the instance with the writes of
# a transaction that PostgreSQL had aborted).
$node->safe_psql('postgres', q{
SELECT state.create_state('tt', 'reducing', 'int', 'bigint', reducer => 'sum', backend => 'rocksdb',
                          transactional => true);
CREATE TABLE tt_rows (k int);
SET synchronous_commit = on;
SELECT state.reduce('tt', 1, 0::bigint);
});
checkpoint_now($node);
$node->safe_psql('postgres', 'CHECKPOINT');
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO tt_rows VALUES (1);
SELECT state.reduce('tt', 1, 7::bigint);
COMMIT;
});
# Applied by the worker: a read in a new session sees it.
ok($node->poll_query_until('postgres', q{SELECT state.value_get('tt', 1, 0::bigint) = 7}),
	'the commit is applied to the transactional state');
crash('crash 6');
is($node->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM tt_rows) || '/' || state.value_get('tt', 1, 0::bigint)}) =~ m{^(0/0|1/7)$} ? 'alike' : 'differ',
	'alike', 'crash 6: the table and the transactional state both have the commit, or neither');
done_testing();
