# A streaming standby serves no state: its heap states would come from an
# old checkpoint and its rocksdb directory is the copy pg_basebackup took of
# a running primary.  Calls fail with read_only_sql_transaction (25006)
# until the standby is promoted; then the state worker sets the copied
# rocksdb directory aside and loads every state from the newest checkpoint
# in the checkpoint directory both servers share.

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
SELECT state.value_set('h', 1, 'h checkpointed'), state.value_set('r', 1, 'r checkpointed');
SELECT state.wait_snapshot(state.snapshot());
});
$primary->wait_for_catchup($standby);

for my $sql (
	q{SELECT state.value_get('h', 1, ''::text)},
	q{SELECT state.value_get('r', 1, ''::text)},
	q{SELECT state.create_state('x', 'value', 'int', 'int')},
	q{SELECT count(*) FROM state.states},
	q{SELECT state.snapshot()})
{
	my $r = sql_error($standby, $sql);
	is($r->{sqlstate}, '25006', "standby: $sql fails with 25006")
	  or diag $r->{stderr};
}
like(sql_error($standby, q{SELECT state.value_get('r', 1, ''::text)})->{message},
	qr/not available during recovery/, 'the message says why');

# Failover: the primary dies, the standby is promoted.
$primary->stop('immediate');
my $log_offset = -s $standby->logfile;
$standby->promote;
ok(defined wait_for_worker($standby), 'promoted: state worker running');
is($standby->safe_psql('postgres', q{SELECT state.value_get('h', 1, ''::text)}),
	'h checkpointed', 'promoted: the heap state is the newest checkpoint\'s');
is($standby->safe_psql('postgres', q{SELECT state.value_get('r', 1, ''::text)}),
	'r checkpointed', 'promoted: the rocksdb state is the newest checkpoint\'s, not the copied directory\'s');
like(slurp_file($standby->logfile, $log_offset), qr/set the rocksdb directory aside/,
	'the copied rocksdb directory was set aside');
$standby->safe_psql('postgres', q{SELECT state.value_set('r', 2, 'written after promotion')});
$standby->restart;
ok(defined wait_for_worker($standby), 'restarted');
is($standby->safe_psql('postgres', q{SELECT state.value_get('r', 2, ''::text)}),
	'written after promotion', 'rocksdb states live on in the new primary\'s own instance');

is(join("\n", log_crashes($standby, 0)), '', 'no process crashed');
$standby->stop;
done_testing();
