# The fault loop: a server crashed (stop('immediate')) 30 times in a row,
# at random moments of its start (checkpoint load, WAL replay), of a
# checkpoint, of a restore and of writes.  After each crash it must come
# back with every acknowledged write of its logged states, and none twice:
#
# - "events" (rocksdb, logged list) and "levents" (lmdb, the backend of
#   another library, logged list) get unique numbers appended; after a
#   crash each holds every acknowledged number exactly once, and of the
#   numbers of statements that did not return, each at most once;
# - "emap" (rocksdb, logged map) gets each number as an entry of its own;
#   after a crash, a sample of the acknowledged numbers (the newest and
#   some at random) is read with map_get in a session that reads in its
#   own view from the first read (RocksDB's threads in the session) and
#   again from the shared entry cache that view filled: every one there;
# - "count" (heap, logged sum) counts the same appends: never less than
#   the acknowledged ones, never more than all that were tried;
# - in database "side", a restore of a logged state runs when the crash
#   comes: its value is the one before or the one restored, nothing else.
#
#   STATE_BACKEND_FAULT_ROUNDS   crashes (default 30)
#   STATE_BACKEND_FAULT_SEED     random seed (default fixed; printed)

use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $ROUNDS = $ENV{STATE_BACKEND_FAULT_ROUNDS} // 30;
my $SEED = $ENV{STATE_BACKEND_FAULT_SEED} // 20261202;
srand($SEED);
note "fault loop seed $SEED, $ROUNDS crashes (STATE_BACKEND_FAULT_SEED=$SEED reproduces the schedule)";

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'fault_loop',
	lmdb => 1,
	conf => "state_backend.checkpoint_dir = '$tmp/checkpoints'\nstate_backend.checkpoints_retained = 2\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('events', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.create_state('levents', 'list', 'int', 'int', backend => 'lmdb', logged => true);
SELECT state.create_state('emap', 'map', 'int', 'int', map_key_type => 'int', backend => 'rocksdb', logged => true);
SELECT state.create_state('count', 'reducing', 'int', 'bigint', reducer => 'sum', logged => true);
CREATE DATABASE side;
});
$node->safe_psql('side', q{
CREATE EXTENSION state_backend;
SELECT state.create_state('m', 'value', 'int', 'text', logged => true);
SELECT state.value_set('m', 1, 'restored');
});
$node->safe_psql('side', "SELECT state.wait_snapshot(state.snapshot('$tmp/side_snapshot'))");
$node->safe_psql('side', q{SELECT state.value_set('m', 1, 'before')});

my %acked;      # numbers of statements that returned
my %tried;      # numbers of every statement sent
my $acked_count = 0;
my $tried_count = 0;
my $next = 1;
my %failures;

# One statement: 50 unique numbers appended, and counted.  Returns whether
# it was acknowledged.
sub write_batch
{
	my @nums = ($next .. $next + 49);
	$next += 50;
	$tried{$_} = 1 for @nums;
	$tried_count += 50;
	my ($ret) = $node->psql('postgres', sprintf(q{
SELECT count(state.list_add('events', n %% 7, n)), count(state.list_add('levents', n %% 7, n)),
       count(state.reduce('count', 0, 1::bigint)), count(state.map_put('emap', n %% 7, n, n))
  FROM unnest('{%s}'::int[]) n}, join(',', @nums)), timeout => 30);
	return 0 if $ret != 0;
	$acked{$_} = 1 for @nums;
	$acked_count += 50;
	return 1;
}

# A writer in the background: batches of write_batch's kind, each echoing
# "acked N" once it returned, cut off by the crash.
sub start_writer
{
	my $w = { out => '', err => '', batches => [] };
	my $script = '';
	for my $b (1 .. 600)
	{
		my @nums = ($next .. $next + 49);
		$next += 50;
		$tried{$_} = 1 for @nums;
		$tried_count += 50;
		push @{ $w->{batches} }, \@nums;
		$script .= sprintf(q{SELECT count(state.list_add('events', n %% 7, n)), count(state.list_add('levents', n %% 7, n)), count(state.reduce('count', 0, 1::bigint)), count(state.map_put('emap', n %% 7, n, n)) FROM unnest('{%s}'::int[]) n;
\echo acked %d
}, join(',', @nums), $b);
	}
	# From a file: IPC::Run feeds a scalar to stdin only while it is pumped.
	my $file = "$tmp/writer.sql";
	open(my $fh, '>', $file) or die "open $file: $!";
	print $fh $script;
	close $fh;
	$w->{h} = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $file ],
		'>', \$w->{out}, '2>', \$w->{err});
	return $w;
}

sub finish_writer
{
	my ($w) = @_;
	eval { $w->{h}->finish; };
	note "writer: $w->{err}" if $ENV{STATE_BACKEND_FAULT_VERBOSE};
	for my $b ($w->{out} =~ /^acked (\d+)$/mg)
	{
		$acked{$_} = 1 for @{ $w->{batches}[ $b - 1 ] };
		$acked_count += 50;
	}
	return;
}

# One logged list after a crash: every acknowledged number once, nothing invented.
sub check_list
{
	my ($round, $name) = @_;
	my $list = $node->safe_psql('postgres', qq{
SELECT string_agg(e::text, ',') FROM generate_series(0, 6) k, unnest(state.list_get('$name', k, '{}'::int[])) e});
	my %seen;
	my @dup;
	for my $n (split /,/, $list)
	{
		push @dup, $n if $seen{$n}++;
	}
	my @lost = grep { !$seen{$_} } sort { $a <=> $b } keys %acked;
	my @invented = grep { !$tried{$_} } keys %seen;
	push @{ $failures{lost} }, "round $round: $name: " . scalar(@lost) . " acknowledged numbers lost (first $lost[0])" if @lost;
	push @{ $failures{doubled} }, "round $round: $name: " . scalar(@dup) . " numbers twice (first $dup[0])" if @dup;
	push @{ $failures{invented} }, "round $round: $name: numbers never written" if @invented;
	return;
}

# The logged map after a crash: a sample of the acknowledged numbers, each
# read twice in one session (in its view, then in the shared cache).
sub check_map
{
	my ($round) = @_;
	my @acked = sort { $a <=> $b } keys %acked;
	my @sample = (@acked[ -(@acked < 100 ? scalar(@acked) : 100) .. -1 ],
		map { $acked[ int(rand(@acked)) ] } 1 .. 200);
	my $q = sprintf(q{SELECT count(*) FROM unnest('{%s}'::int[]) n
 WHERE state.map_get('emap', n %% 7, n, -1) IS DISTINCT FROM n;}, join(',', @sample));
	my $out = $node->safe_psql('postgres',
		"SET state_backend.rocksdb_session_reads_after = 0;\n$q\n$q");
	push @{ $failures{lost} }, "round $round: emap: entries missing or wrong (in the view, then the cache: "
	  . join(' and ', split /\n/, $out) . ')'
	  if $out ne "0\n0";
	return;
}

sub check_after_crash
{
	my ($round) = @_;
	check_list($round, $_) for qw(events levents);
	check_map($round);
	my $count = $node->safe_psql('postgres', q{SELECT state.value_get('count', 0, 0::bigint)});
	my $m = $node->safe_psql('side', q{SELECT state.value_get('m', 1, '')});
	push @{ $failures{count} }, "round $round: count $count outside [$acked_count, $tried_count]"
	  if $count < $acked_count || $count > $tried_count;
	push @{ $failures{side} }, "round $round: side value '$m'" if $m ne 'before' && $m ne 'restored';
	return;
}

my %moments;
write_batch() for 1 .. 4;
for my $round (1 .. $ROUNDS)
{
	my $moment = (qw(start start writes checkpoint checkpoint restore))[ int(rand(6)) ];
	$moments{$moment}++;
	note "round $round: $moment" if $ENV{STATE_BACKEND_FAULT_VERBOSE};
	my ($restore, $writer);
	if ($moment eq 'writes' || $moment eq 'checkpoint')
	{
		# Writes go on while the checkpoint runs, the last ones cut off.
		$writer = start_writer();
		usleep(int(rand(200_000)));
		$node->psql('postgres', 'SELECT state.snapshot()') if $moment eq 'checkpoint';
		usleep(int(rand(500_000)));
	}
	elsif ($moment eq 'restore')
	{
		my ($out, $err) = ('', '');
		$restore = IPC::Run::start(
			[ 'psql', '-X', '-d', $node->connstr('side'), '-c',
			  "SELECT state.restore('$tmp/side_snapshot')" ],
			'>', \$out, '2>', \$err);
		usleep(int(rand(200_000)));
	}
	$node->stop('immediate');
	eval { $restore->finish; } if $restore;
	finish_writer($writer) if $writer;
	$node->start;
	if ($moment eq 'start')
	{
		# Crashed again during the start: while it loads or replays.
		usleep(int(rand(800_000)));
		$node->stop('immediate');
		$node->start;
	}
	if (!defined wait_for_worker($node, timeout => 120))
	{
		push @{ $failures{start} }, "round $round: the state worker did not start";
		last;
	}
	check_after_crash($round);
	# The side state back to its value before, for the next restore.
	$node->safe_psql('side', q{SELECT state.value_set('m', 1, 'before')});
	write_batch();
}
note join(', ', map { "$_: $moments{$_}" } sort keys %moments);
note "acknowledged $acked_count of $tried_count appends";

for my $what (qw(start lost doubled invented count side))
{
	is(join("\n", @{ $failures{$what} // [] }), '', "$ROUNDS crashes: $what");
}
is(join("\n", log_crashes($node, 0)), '', 'no process crashed but by stop(immediate)');
$node->stop;
done_testing();
