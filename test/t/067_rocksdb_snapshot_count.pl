# A native snapshot of a big rocksdb state counts its entries (for the
# MANIFEST and state.snapshot_states) from the snapshot's staging copy, and
# serves sessions as it counts: a write made meanwhile is acknowledged
# before the count is over, and is not in the snapshot.  A state whose
# files did not change since the last snapshot is not counted again.
#
# The count passes the fault point checkpoint.rocksdb_count before its
# first entry and after every 65536 (a state counted before, whose files did
# not change, passes it once); armed with sleep, each arrival lasts
# long enough that a write which had to wait for the whole count would
# return only after the last arrival.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('snapshot_count', conf => <<'EOF');
state_backend.backend = 'rocksdb'
state_backend.snapshot_cpu_percent = 100
EOF

my $keys = 300000;    # arrivals at 0, 65536, ... 262144: five
my $arrivals = 5;
$node->safe_psql('postgres', qq{
SELECT state.create_state('big', 'value', 'int', 'int');
SELECT count(state.value_set('big', i, i)) FROM generate_series(1, $keys) i;
SELECT state.create_state('w', 'value', 'int', 'int');
SELECT state.value_set('w', 1, 0);
});

$node->safe_psql('postgres', q{
ALTER SYSTEM SET state_backend.fault_points = 'checkpoint.rocksdb_count:sleep:1500';
SELECT pg_reload_conf();
});
# The worker has the setting once a session sees it reloaded (the worker
# reloads at its next wake-up, which this call gives it).
$node->safe_psql('postgres', "SELECT state.value_get('w', 1, 0)");

# The writing session is connected before the snapshot starts, so that
# its write waits for nothing but the worker.
my ($win, $wout, $werr) = ("SELECT 'connected';\n", '', '');
my $writer = IPC::Run::start([ 'psql', '-XAtq', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'<', \$win, '>', \$wout, '2>', \$werr, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
$writer->pump until $wout =~ /connected/;

my $path = $node->basedir . '/snap';
my $offset = -s $node->logfile;
my ($in, $out, $err) = ("SELECT state.wait_snapshot(state.snapshot('$path'));\n\\q\n", '', '');
my $snap = IPC::Run::start([ 'psql', '-XAtq', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));

my $point = qr/fault point "checkpoint\.rocksdb_count" reached: sleep/;
sub reached
{
	my $log = slurp_file($node->logfile, $offset);
	my @n = $log =~ /$point/g;
	return scalar(@n);
}
foreach my $try (1 .. 600)
{
	$snap->pump_nb;
	last if reached() >= 1;
	usleep(100_000);
}
cmp_ok(reached(), '>=', 1, 'the snapshot began counting');

$win .= "SELECT 'written', state.value_set('w', 1, 1);\n";
$writer->pump until $wout =~ /written/;
my $after_write = reached();
$win .= "\\q\n";
$writer->finish;
cmp_ok($after_write, '<', $arrivals + 1,
	"the write was acknowledged while the count went on ($after_write of "
	  . ($arrivals + 1) . ' arrivals, the last one for the second state)');
is($node->safe_psql('postgres', "SELECT state.value_get('w', 1, 0)"), '1',
	'the write is in the live state');

$snap->finish;
is($out, "completed\n", 'the snapshot completed');
is(reached(), $arrivals + 1, 'the count passed the point before its first entry and every 65536');

is($node->safe_psql('postgres', qq{
SELECT string_agg(name || '=' || entries, ' ' ORDER BY name) FROM state.snapshot_states('$path')}),
	"big=$keys w=1", 'the snapshot counted every entry');
is($node->safe_psql('postgres', qq{
SELECT value FROM state.snapshot_entries('$path', 'w', 0, 0)}),
	'0', 'the write made during the count is not in the snapshot');

# A state whose files did not change since the last snapshot is not
# counted again; one that changed is.
sub snapshot_arrivals
{
	my ($name, $want) = @_;
	$offset = -s $node->logfile;
	$node->safe_psql('postgres',
		"SELECT state.wait_snapshot(state.snapshot('" . $node->basedir . "/$name'))");
	my $n = reached();
	is($node->safe_psql('postgres', qq{
SELECT string_agg(name || '=' || entries, ' ' ORDER BY name)
FROM state.snapshot_states('} . $node->basedir . "/$name')"), $want,
		"$name: the entries of every state");
	return $n;
}
is(snapshot_arrivals('again', "big=$keys w=1"), 2,
	'a snapshot after a write to w counts w only (big passes the point once, counted before)');
$node->safe_psql('postgres', "SELECT state.value_set('big', $keys + 1, 0)");
is(snapshot_arrivals('changed', 'big=' . ($keys + 1) . ' w=1'), $arrivals + 1,
	'a write to big has it counted again (w passes the point once, counted before)');
$node->safe_psql('postgres', "SELECT state.clear('big', 1)");
$node->safe_psql('postgres', "SELECT state.clear('w', 1)");
is(snapshot_arrivals('cleared', "big=$keys w=0"), $arrivals,
	'deleted keys are counted out');

# The count runs on threads of the worker's own: a cancel in the middle
# of it, or an error there, stops them and waits for them; the worker goes
# on serving, and the next snapshot counts every entry.
$node->safe_psql('postgres', "SELECT state.value_set('big', $keys + 2, 0)");
$offset = -s $node->logfile;
my $id = $node->safe_psql('postgres', "SELECT state.snapshot('" . $node->basedir . "/cancelled')");
foreach my $try (1 .. 600)
{
	last if reached() >= 1;
	usleep(100_000);
}
cmp_ok(reached(), '>=', 1, 'cancel: the count began');
$node->safe_psql('postgres', "SELECT state.cancel_snapshot($id)");
like(wait_snapshot_status($node, $id), qr/cancel/, 'cancel: the snapshot was cancelled during its count');
$node->safe_psql('postgres', "SELECT state.value_set('w', 2, 2)");
is($node->safe_psql('postgres', "SELECT state.value_get('w', 2, 0)"), '2',
	'cancel: the worker serves after it');

$node->safe_psql('postgres', q{
ALTER SYSTEM SET state_backend.fault_points = 'checkpoint.rocksdb_count:error';
SELECT pg_reload_conf();
});
$node->safe_psql('postgres', "SELECT state.value_get('w', 1, 0)");
$node->safe_psql('postgres', "SELECT state.value_set('big', $keys + 3, 0)");
my ($ret, $sout, $serr) = $node->psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('" . $node->basedir . "/failed'))");
like("$sout$serr", qr/fault point "checkpoint.rocksdb_count" reached/, 'error: the snapshot failed during its count');

# The worker exits (FATAL) during the count: it waits for its threads
# before RocksDB closes, so it exits as a worker does, not by a signal.
$node->safe_psql('postgres', q{
ALTER SYSTEM SET state_backend.fault_points = 'checkpoint.rocksdb_count:exit';
SELECT pg_reload_conf();
});
$node->safe_psql('postgres', "SELECT state.value_get('w', 1, 0)");
$node->safe_psql('postgres', "SELECT state.value_set('big', $keys + 4, 0)");
$offset = -s $node->logfile;
($ret, $sout, $serr) = $node->psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('" . $node->basedir . "/exited'))");
isnt($ret, 0, 'exit: the snapshot ended with its worker');
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET state_backend.fault_points;
SELECT pg_reload_conf();
});
ok(defined wait_for_worker($node, timeout => $PostgreSQL::Test::Utils::timeout_default),
	'exit: a worker runs again');
my $log = slurp_file($node->logfile, $offset);
like($log, qr/fault point "checkpoint.rocksdb_count" reached: exit/, 'exit: the worker exited during the count');
unlike($log, qr/terminated by signal|Assertion|server process .* was terminated/, 'exit: not by a signal');
$node->safe_psql('postgres', "SELECT state.value_set('big', $keys + 4, 0)");

$node->safe_psql('postgres', q{
ALTER SYSTEM RESET state_backend.fault_points;
SELECT pg_reload_conf();
});
$node->safe_psql('postgres', "SELECT state.value_get('w', 1, 0)");
is(snapshot_arrivals('after', 'big=' . ($keys + 3) . ' w=1'), 0,
	'after a cancel and an error, a snapshot counts every entry');

$node->stop;
done_testing();
