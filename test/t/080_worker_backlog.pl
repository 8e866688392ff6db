# A session whose posted writes come faster than the state worker runs
# them does not make the worker hold them all: the worker takes from the
# session's ring only while what it holds unrun is under a ring's worth,
# and the session waits for room.  Before, the worker took the whole ring
# at every round and ran 64 requests of it, so a statement of millions of
# rocksdb writes had the worker hold tens of megabytes and move them at
# every round: the statement slowed to a crawl and ended with "state worker
# did not answer".  The worker's memory is read with
# pg_log_backend_memory_contexts while the statement runs.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = new_state_node('worker_backlog');
my $writes = 2_000_000;

$node->safe_psql('postgres', q{
SELECT state.create_state('backlog', 'value', 'bigint', 'bigint', backend => 'rocksdb');});

my $worker = worker_pid($node);
ok($worker, 'the state worker runs');

my $log_at = -s $node->logfile;
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(600));
$in .= "SELECT count(state.value_set('backlog', k, k * 2)) FROM generate_series(1::bigint, $writes) k;\n\\q\n";

# Ask for the worker's memory every quarter second while the statement runs.
my $asked = 0;
while ($h->pumpable)
{
	$h->pump_nb;
	$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($worker)");
	$asked++;
	usleep(250_000);
}
$h->finish;
chomp $out;
is($out, $writes, "a statement of $writes posted writes ends, every write counted");
is($err, '', 'without an error');
cmp_ok($asked, '>=', 2, 'the worker\'s memory was asked for while the statement ran');

# The worker's totals logged since the statement began, read once the
# worker had answered every request.
$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($worker)");
my $totals = [];
my $deadline = time() + 60;
while (1)
{
	my $log = slurp_file($node->logfile, $log_at);
	$totals = [ $log =~ /\[$worker\] LOG:  Grand total: (\d+) bytes/g ];
	last if @$totals >= $asked + 1 || time() > $deadline;
	usleep(100_000);
}
cmp_ok(scalar(@$totals), '>=', 2, 'the worker logged its memory');
my $most = 0;
$most = $_ > $most ? $_ : $most for @$totals;
note "the worker's memory, largest of " . scalar(@$totals) . " totals: $most bytes";
cmp_ok($most, '<', 16 * 1024 * 1024,
	'the worker held under 16 MB while the writes came faster than it ran them');

is( $node->safe_psql('postgres', q{
SELECT state.value_get('backlog', 1::bigint, 0::bigint), state.value_get('backlog', 2000000::bigint, 0::bigint),
       state.value_get('backlog', 1234567::bigint, 0::bigint)}),
	'2|4000000|2469134', 'the first, last and a middle write are in');

$node->stop;
done_testing();
