# A transactional commit of rocksdb states with a TTL stays whole when its
# session is killed after its commit record, before the writes are applied.
#
# Unlogged rocksdb states with a TTL, a value, a list and a map, get 300
# keys in one transaction with a table row; the session kills itself
# (kill -9, fault point apply.begin) right after its commit record.  After
# the crash restart the row is there, and so is every key, with its TTL
# (an hour: nothing expired).  Before, such states were applied key by key
# after the commit record, not staged as rocksdb states without a TTL are:
# none of the keys came back.  The same states then take a second commit
# that writes over the first (a crash after the commit record again), and
# the staged writes still carry their deadlines: a key written with a TTL
# of a second, made by moving the TTL clock, reads as expired.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('rocks_ttl_commit', conf => "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres', q{
CREATE TABLE rows (id int);
SELECT state.create_state('tv', 'value', 'int', 'text', backend => 'rocksdb', transactional => true,
                          ttl => '1 hour');
SELECT state.create_state('tl', 'list', 'int', 'int', backend => 'rocksdb', transactional => true,
                          ttl => '1 hour');
SELECT state.create_state('tm', 'map', 'int', 'int', map_key_type => 'int', backend => 'rocksdb',
                          transactional => true, ttl => '1 hour');
});

my $read = q{SELECT
  (SELECT count(*) FROM state.entries('tv', NULL::int, NULL::text)) || ' ' ||
  (SELECT coalesce(sum(e), 0) FROM generate_series(1, 300) k, unnest(state.list_get('tl', k, '{}'::int[])) e) || ' ' ||
  (SELECT coalesce(sum(state.map_get('tm', k, 1, 0)), 0) FROM generate_series(1, 300) k)};

# Commits $sql with a table row $id, the session killed after the commit
# record; returns once the server and its state worker are back.
sub commit_killed
{
	my ($id, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', qq{
SET state_backend.fault_points = 'apply.begin:crash';
BEGIN;
$sql
INSERT INTO rows VALUES ($id);
COMMIT;});
	like($err, qr/server closed the connection|terminated/, "commit $id: its session is killed after its commit record");
	$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM state.states')
	  or die 'the server did not come back';
	ok(defined wait_for_worker($node), "commit $id: the state worker is back");
	is($node->safe_psql('postgres', "SELECT count(*) FROM rows WHERE id = $id"), '1',
		"commit $id: its row is there");
	return;
}

commit_killed(1, q{
SELECT count(state.value_set('tv', k, 'v' || k)), count(state.list_add('tl', k, k)),
       count(state.map_put('tm', k, 1, k))
  FROM generate_series(1, 300) k;});
is($node->safe_psql('postgres', $read), '300 45150 45150', 'commit 1: every key of the three states is there');
is($node->safe_psql('postgres', q{SELECT state.value_get('tv', 7, ''::text)}), 'v7', 'with its value');

commit_killed(2, q{
SELECT count(state.value_set('tv', k, 'w' || k)), count(state.list_add('tl', k, k)),
       count(state.map_put('tm', k, 1, 2 * k))
  FROM generate_series(1, 300) k;});
is($node->safe_psql('postgres', $read), '300 90300 90300', 'commit 2: written over the first, whole');
is($node->safe_psql('postgres', q{SELECT state.value_get('tv', 7, ''::text)}), 'w7', 'with its value');

# The staged images carry their deadlines: an hour and a second later,
# every entry has expired.
$node->safe_psql('postgres', q{SELECT state._advance_ttl_clock('3601 seconds')});
is($node->safe_psql('postgres', $read), '0 0 0', 'their deadlines came with them: all expired an hour later');

is_deeply([ grep { !/terminated by signal 9|terminating any other active server processes/ } log_crashes($node) ],
	[], 'no process crashed but the killed sessions');
$node->stop;
done_testing();
