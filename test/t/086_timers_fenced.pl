# Timers on a fenced server: while default_transaction_read_only is on (a
# failover tool's fence, while the server is not the only primary), the
# timer worker fires nothing; the timers due meanwhile fire once the fence
# is lifted, none counted as failed, and the worker never stops.
#
# Before, the worker fired them: each handler failed (its writes refused
# in the read-only transaction), and once a timer had had its tries, the
# record of its failure failed as well, which stopped the worker, over and
# over while the fence held; the timer was lost to state.timer_failures.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('timers_fenced',
	conf => "state_backend.timer_max_retries = 1\nstate_backend.timer_retry_delay = '10ms'\n");
$node->safe_psql('postgres', q{
CREATE TABLE fired (k int);
SELECT state.create_state('hits', 'reducing', 'int', 'bigint', reducer => 'sum');
CREATE FUNCTION on_timer(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM state.reduce('hits', k, 1::bigint);
    INSERT INTO fired VALUES (k);
END $$;
SELECT state.create_state('tm', 'timers', 'int', handler => 'on_timer(int,timestamptz)');
SELECT state.timer_register('tm', 1, clock_timestamp());
});
ok($node->poll_query_until('postgres', 'SELECT count(*) = 1 FROM fired'), 'a timer fires');

my $worker = q{SELECT pid FROM pg_stat_activity WHERE application_name = 'state_backend timers'};
my $pid = $node->safe_psql('postgres', $worker);
isnt($pid, '', 'the timer worker runs');

# The fence.  Timers due during it are registered in read-write transactions.
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER SYSTEM SET default_transaction_read_only = on');
$node->reload;
ok($node->poll_query_until('postgres', 'SHOW default_transaction_read_only', 'on'), 'fenced');
# The worker has seen the fence once it says so (a signal is not a reload
# done): only then are timers registered.
$node->wait_for_log(qr/fires no timer while default_transaction_read_only is on/, $offset);
$node->safe_psql('postgres', q{
BEGIN TRANSACTION READ WRITE;
SELECT state.timer_register('tm', k, clock_timestamp()) FROM generate_series(2, 4) k;
COMMIT;
});
sleep 2;
is($node->safe_psql('postgres',
		q{SELECT count(*) || '/' || (SELECT sum(state.value_get('hits', k, 0::bigint)) FROM generate_series(1, 4) k) FROM fired}),
	'1/1', 'fenced: nothing fires, and no handler wrote its state');
is($node->safe_psql('postgres', 'SELECT count(*) FROM state.timer_failures'), '0',
	'fenced: no timer failed');
is($node->safe_psql('postgres', $worker), $pid, 'fenced: the same timer worker runs');
like(slurp_file($node->logfile, $offset),
	qr/the timer worker of database \d+ fires no timer while default_transaction_read_only is on/,
	'fenced: the timer worker says why it holds its timers');

# The fence lifted: the timers due meanwhile fire, once.
$node->safe_psql('postgres',
	'SET default_transaction_read_only = off; ALTER SYSTEM RESET default_transaction_read_only');
$node->reload;
ok($node->poll_query_until('postgres', 'SELECT count(*) = 4 FROM fired'),
	'lifted: the timers due during the fence fired');
is($node->safe_psql('postgres',
		q{SELECT string_agg(state.value_get('hits', k, 0::bigint)::text, ',' ORDER BY k) FROM generate_series(1, 4) k}),
	'1,1,1,1', 'lifted: each handler wrote its state once');
is($node->safe_psql('postgres', 'SELECT count(*) FROM state.timer_failures'), '0',
	'lifted: no timer failed');
is($node->safe_psql('postgres', $worker), $pid, 'lifted: the same timer worker runs');
is(join("\n", log_crashes($node, 0)), '', 'no process crashed');
done_testing();
