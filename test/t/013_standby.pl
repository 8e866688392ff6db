# A streaming standby serves no unlogged state: its heap states would come
# from an old checkpoint and its rocksdb directory is the copy
# pg_basebackup took of a running primary.  Calls on the ones it knows of
# (from the checkpoint it loaded) fail with read_only_sql_transaction
# (25006); one created on the primary since is unknown there (42704, and
# the detail says why); state.states lists only the logged states the
# standby serves (none here).  At start the standby's
# state worker sets the copied rocksdb directory aside; once the standby is
# promoted, unlogged states come back from the newest checkpoint in the
# checkpoint directory both servers share.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $conf = "state_backend.checkpoint_dir = '$chkroot'\n";
my $primary = new_state_node('primary', conf => $conf,
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($primary), 'primary: state worker running');

$primary->safe_psql(
	'postgres', q{
SELECT state.create_state('h', 'value', 'int', 'text');
SELECT state.create_state('r', 'value', 'int', 'text', backend => 'rocksdb');
SELECT state.value_set('h', 1, 'h at backup'), state.value_set('r', 1, 'r at backup');
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

# The primary goes on, and checkpoints what it has.
$primary->safe_psql(
	'postgres', q{
SELECT state.value_set('h', 1, 'h loaded'), state.value_set('r', 1, 'r loaded');
});
is(checkpoint_now($primary), 'completed', 'the primary takes a checkpoint');
$primary->wait_for_catchup($standby);

# The standby serves once it has loaded a checkpoint taken since its base
# backup (the one above).
ok( $standby->poll_query_until('postgres',
		q{SELECT value IS NOT NULL FROM state.worker WHERE name = 'standby_applied_lsn'}),
	'standby: the worker applies WAL from the checkpoint');
for my $sql (
	q{SELECT state.value_get('h', 1, ''::text)},
	q{SELECT state.value_get('r', 1, ''::text)},
	q{SELECT state.create_state('x', 'value', 'int', 'int')},
	q{SELECT state.snapshot()})
{
	my $r = sql_error($standby, $sql);
	is($r->{sqlstate}, '25006', "standby: $sql fails with 25006")
	  or diag $r->{stderr};
}
like(sql_error($standby, q{SELECT state.value_get('r', 1, ''::text)})->{message},
	qr/is not logged/, 'the message says why');

# An unlogged state created since is unknown there; the detail says why.
$primary->safe_psql('postgres', q{SELECT state.create_state('later', 'value', 'int', 'int')});
$primary->wait_for_catchup($standby);
my $r = sql_error($standby, q{SELECT state.value_get('later', 1, 0)});
is($r->{sqlstate}, '42704', 'standby: a state created since, unlogged, does not exist there');
like($r->{stderr}, qr/an unlogged state created since is on the primary only/,
	'the detail says why');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM state.states}), '0',
	'standby: state.states lists no unlogged state');
like(slurp_file($standby->logfile), qr/set the rocksdb directory aside/,
	'the copied rocksdb directory was set aside');

# A newer checkpoint, which the standby does not load while it is one.
$primary->safe_psql(
	'postgres', q{
SELECT state.value_set('h', 1, 'h checkpointed'), state.value_set('r', 1, 'r checkpointed');
SELECT state.wait_snapshot(state.snapshot());
});
$primary->wait_for_catchup($standby);

# Failover: the primary dies, the standby is promoted.
$primary->stop('immediate');
my $log_offset = -s $standby->logfile;
$standby->promote;
ok(defined wait_for_worker($standby), 'promoted: state worker running');
is($standby->safe_psql('postgres', q{SELECT state.value_get('h', 1, ''::text)}),
	'h checkpointed', 'promoted: the heap state is the newest checkpoint\'s');
is($standby->safe_psql('postgres', q{SELECT state.value_get('r', 1, ''::text)}),
	'r checkpointed', 'promoted: the rocksdb state is the newest checkpoint\'s, not the copied directory\'s');
like(slurp_file($standby->logfile, $log_offset), qr/restored \d+ entries of unlogged states/,
	'promoted: unlogged states were restored from the newest checkpoint');
$standby->safe_psql('postgres', q{SELECT state.value_set('r', 2, 'written after promotion')});
$standby->restart;
ok(defined wait_for_worker($standby), 'restarted');
is($standby->safe_psql('postgres', q{SELECT state.value_get('r', 2, ''::text)}),
	'written after promotion', 'rocksdb states live on in the new primary\'s own instance');

is(join("\n", log_crashes($standby, 0)), '', 'no process crashed');
$standby->stop;
done_testing();
