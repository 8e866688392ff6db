# WAL resource manager id 128 (RM_EXPERIMENTAL_ID) is for any extension in
# development; this one logs under 213 since 1.7 and leaves 128 to others
# unless state_backend.wal_rmgr_128 is on.  Records another extension writes
# under 128 are not this one's: the state worker's replay of logged states
# must not take them for its own.
#
# test/modules/test_rmgr128 (built here and preloaded by absolute path)
# registers 128 and writes, after logged writes to a heap and a rocksdb
# state, records under it whose bytes read as this extension's TRUNCATE of
# the states of ids 1 to 64.  After a crash and the start's replay, every
# logged write is still there and nothing is reported as unappliable; with
# the setting on, the other extension cannot be loaded at all.

use strict;
use warnings;

use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

# Build the other extension in a directory of this test's.
my $build = build_test_module('test_rmgr128');
ok(-f "$build/test_rmgr128.so", 'the extension that takes id 128 builds');

my $chk = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node(
	'foreign128',
	conf => "state_backend.checkpoint_dir = '$chk'\n"
	  . "shared_preload_libraries = 'state_backend,$build/test_rmgr128.so'\n"
	  . "restart_after_crash = on\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'the server starts with another extension on id 128');

$node->safe_psql('postgres', qq{
CREATE FUNCTION test_rmgr128_emit(int, bytea) RETURNS pg_lsn
  AS '$build/test_rmgr128.so', 'test_rmgr128_emit' LANGUAGE C STRICT;
SELECT state.create_state('lh', 'value', 'int', 'int', logged => true);
SELECT state.create_state('lr', 'value', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.value_set(s, k, k * 10) FROM generate_series(1, 10) k, unnest(ARRAY['lh', 'lr']) s;
});

my $read = q{SELECT string_agg(s || ' ' || (SELECT sum(state.value_get(s, k, 0))
  FROM generate_series(1, 10) k), ', ' ORDER BY s) FROM unnest(ARRAY['lh', 'lr']) s};
is($node->safe_psql('postgres', $read), 'lh 550, lr 550', 'the logged writes are in');

# The other extension's records: info 0x70, data the id (little-endian
# uint32) and a key length of 0, as this extension's TRUNCATE of that id.
$node->safe_psql('postgres', q{
SELECT count(test_rmgr128_emit(112, decode(lpad(to_hex(id), 2, '0') || '00000000000000', 'hex')))
  FROM generate_series(1, 64) id});

my $offset = -s $node->logfile;
my $pid = wait_for_worker($node);
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node, not => $pid), 'the state worker is back after the crash');
is($node->safe_psql('postgres', $read), 'lh 550, lr 550',
	'the other extension\'s records under id 128 changed no state');
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/could not apply the WAL record of logged states/,
	'nothing is reported as a record of logged states that cannot be applied');

# With the old id registered by this extension, the other cannot load.
$node->append_conf('postgresql.conf', "state_backend.wal_rmgr_128 = on\n");
$node->stop;
$offset = -s $node->logfile;
ok(!$node->start(fail_ok => 1), 'with state_backend.wal_rmgr_128 on, the server does not start');
like(slurp_file($node->logfile, $offset), qr/failed to register custom resource manager/,
	'the log says which resource manager is taken twice');

$node->adjust_conf('postgresql.conf', 'state_backend.wal_rmgr_128', 'off');
$node->start;
ok(defined wait_for_worker($node), 'without it the server starts again');
is($node->safe_psql('postgres', $read), 'lh 550, lr 550', 'every write is still there');

$node->stop;
done_testing();
