# state_backend.spin_wait: a session spins for the state worker's reply,
# and the worker for the next request, only where a core is free for it.
# state.worker counts the spins (spins, spins_answered).
#
# - One client writing a rocksdb state statement after statement, on a
#   machine of two cores or more: the spins are counted, some answered.
# - With state_backend.spin_wait = 0 nobody spins, and each side wakes the
#   other from its sleep.
# - A server whose CPU affinity is one core (taskset), on a machine of
#   many: nobody spins.  Spinning there took the CPU the other side needed
#   (rocksdb writes at one client at 0.6x) while sysconf counted the
#   machine's cores.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;

my $own = `nproc 2>/dev/null` || 1;
chomp $own;
plan skip_all => "needs 2 cores to run on (has $own)" if $own < 2;

my $script = {
	'write' => q{\set k random(1, 10000)
SELECT state.value_set('spin', :k::bigint, :k::bigint);
} };

sub spins
{
	my ($node) = @_;
	return $node->safe_psql('postgres', q{
SELECT string_agg(value::text, ' ' ORDER BY name) FROM state.worker
 WHERE name IN ('spins', 'spins_answered')});
}

sub writes
{
	my ($node, $n) = @_;
	my $r = run_pgbench($node, "-n -M prepared -c 1 -t $n", $script);
	is($r->{processed}, $n, "$n writes, one client") or diag $r->{stderr};
}

my $node = new_state_node('spin_wait');
$node->safe_psql('postgres', q{
SELECT state.create_state('spin', 'value', 'bigint', 'bigint', backend => 'rocksdb');});
is($node->safe_psql('postgres', 'SHOW state_backend.spin_wait'), '100', 'spins up to 100 us by default');

my $served_q = q{
SELECT string_agg(value::text, ' ' ORDER BY name) FROM state.worker
 WHERE name IN ('passes', 'requests')};
my ($passes, $requests) = split / /, $node->safe_psql('postgres', $served_q);
writes($node, 3000);
my ($passes_after, $requests_after) = split / /, $node->safe_psql('postgres', $served_q);
# Each statement is a posted write and the wait for it at its end, and the
# worker serves them in one pass or two: the passes count what it took at
# each wake-up.
cmp_ok($requests_after - $requests, '>=', 6000, 'two requests a statement');
ok($passes_after - $passes >= 3000 / 2 && $passes_after - $passes <= $requests_after - $requests,
	'passes are counted, at most one a request (' . ($passes_after - $passes) . ')');
my ($spins, $answered) = split / /, spins($node);
cmp_ok($spins, '>', 0, "one client on $own cores: spins ($spins)");
SKIP:
{
	# Under Valgrind the other side takes longer than a spin to answer.
	skip 'answers take longer than a spin under Valgrind', 1 if $ENV{STATE_BACKEND_SANITIZE};
	# A spin is answered only while the other side runs on another core.
	# On a machine busy with other work (other tests beside this one) a
	# round can go by with none answered; more rounds, for up to two
	# minutes, give the spins a free core.  A spin that never sees its
	# answer stays at 0 however long this runs.
	my $rounds = 1;
	my $deadline = time() + 120;
	while ($answered == 0 && time() < $deadline)
	{
		run_pgbench($node, '-n -M prepared -c 1 -t 1000', $script);
		($spins, $answered) = split / /, spins($node);
		$rounds++;
	}
	cmp_ok($answered, '>', 0, "some of them answered ($answered of $spins, $rounds rounds)");
}

$node->append_conf('postgresql.conf', "state_backend.spin_wait = 0\n");
reload_worker($node) or die 'the worker did not apply spin_wait = 0';
my $before = spins($node);
my $started = time();
writes($node, 1000);
is(spins($node), $before, 'with spin_wait = 0 nobody spins');
# Each of them then wakes the sleeping worker, and the worker the sleeping
# session (a futex wake, common/latch_sleep.c): about 0.1 s in all here.  A
# side left asleep would see the other's answer only at the end of its sleep
# of up to a second, 1000 times; one that polled every 10 ms, after 10 s.
SKIP:
{
	skip 'Valgrind sets its own pace', 1 if $ENV{STATE_BACKEND_SANITIZE};
	cmp_ok(time() - $started, '<', 8, 'a sleeping side is woken at once, not at its next look');
}
$node->stop;

# The same under an affinity of one core: the postmaster, and so every
# process of the server, inherits this process's while it starts.
SKIP:
{
	skip 'taskset is not installed', 4 if system('taskset -p $$ >/dev/null 2>&1') != 0;
	my $all = `taskset -p -c $$`;
	$all =~ s/.*:\s*//s;
	chomp $all;
	my $one = new_state_node('spin_one_core', extension => 0);
	$one->stop;
	system("taskset -p -c 0 $$ >/dev/null") == 0 or die "taskset: $!";
	$one->start;
	system("taskset -p -c $all $$ >/dev/null") == 0 or die "taskset: $!";
	$one->safe_psql('postgres', q{
CREATE EXTENSION state_backend;
SELECT state.create_state('spin', 'value', 'bigint', 'bigint', backend => 'rocksdb');});
	my $worker = worker_pid($one);
	like(`taskset -p -c $worker`, qr/:\s*0\s*$/, 'its state worker runs on core 0 only');
	writes($one, 3000);
	is(spins($one), '0 0', 'a server whose affinity is one core does not spin');
	$one->stop;
}

done_testing();
