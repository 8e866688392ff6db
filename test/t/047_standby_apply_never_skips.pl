# A hot standby's worker that cannot apply a WAL record of logged states
# never skips it, and a promotion does not end before it is applied.
#
# A primary and a streaming hot standby share a checkpoint directory; a
# logged heap list and a logged rocksdb list get appends (applied twice,
# they would show).  On the standby a fault point makes applying a record
# fail, as a full file system or the memory limit does:
# - the standby applies nothing past it: reads show what was applied
#   before, state.worker shows apply_blocked_lsn, the log says why;
# - the primary dies and the standby is promoted while the record still
#   fails: the promotion waits, sessions get 57P03 that says why, and no
#   checkpoint is taken;
# - disarmed (a reload), the promotion ends with every acknowledged write,
#   once, and the new primary's states survive its own crash.
# Before the fix each record was skipped with a WARNING: the standby, and
# the primary it became, never had those writes.
#
# Last, a standby made from a base backup of the new primary, with no
# checkpoint taken since, asks that primary for one (a request in the
# checkpoint directory both share) and serves at once, instead of waiting
# until someone takes a snapshot.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $primary = new_state_node(
	'primary',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($primary), 'primary: state worker running');
$primary->safe_psql('postgres', q{
SELECT state.create_state('h', 'list', 'int', 'int', logged => true);
SELECT state.create_state('k', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
});
$primary->backup('b');
$primary->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

sub write_range
{
	my ($from, $to) = @_;
	$primary->safe_psql('postgres', qq{
SELECT count(state.list_add('h', i % 10, i)) FROM generate_series($from, $to) i;
SELECT count(state.list_add('k', i % 10, i)) FROM generate_series($from, $to) i;
});
	return;
}

my $read = q{SELECT
  (SELECT sum(state.list_length('h', k)) FROM generate_series(0, 9) k) || '|' ||
  (SELECT sum(e) FROM generate_series(0, 9) k, unnest(state.list_get('h', k, '{}'::int[])) e) || '|' ||
  (SELECT sum(state.list_length('k', k)) FROM generate_series(0, 9) k) || '|' ||
  (SELECT sum(e) FROM generate_series(0, 9) k, unnest(state.list_get('k', k, '{}'::int[])) e)};

sub expected
{
	my ($n) = @_;
	my $sum = $n * ($n + 1) / 2;
	return "$n|$sum|$n|$sum";
}

# Polls until the node serves the read and returns what it holds (undef
# on timeout); with $want, until it reads that.
sub read_node
{
	my ($node, $want) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $out;
	while (time() < $deadline)
	{
		my ($ret, $o) = $node->psql('postgres', $read);
		if ($ret == 0)
		{
			$out = $o;
			return $out if !defined $want || $out eq $want;
		}
		usleep(200_000);
	}
	return $out;
}

write_range(1, 200);
$primary->wait_for_catchup($standby, 'replay');
is(read_node($standby, expected(200)), expected(200), 'standby: the writes applied');

# Every record fails on the standby from now on.
$standby->append_conf('postgresql.conf',
	"state_backend.fault_points = 'standby.record_before_apply:error'\n");
$standby->reload;
my $offset = -s $standby->logfile;
write_range(201, 400);
$primary->wait_for_catchup($standby, 'replay');
$standby->wait_for_log(qr/fault point "standby.record_before_apply" reached/, $offset);
sleep(2);
is($standby->safe_psql('postgres', $read), expected(200),
	'standby: nothing past the record is applied');
is($standby->safe_psql('postgres',
		q{SELECT count(*) FROM state.worker WHERE name = 'apply_blocked_lsn' AND value > 0}),
	'1', 'standby: state.worker shows where the apply stopped');
ok(slurp_file($standby->logfile, $offset) =~
	qr/WARNING:  state_backend could not apply the WAL record of logged states at [0-9A-F]+\/[0-9A-F]+: fault point/,
	'standby: the log says why');
ok(slurp_file($standby->logfile, $offset) !~ qr/it is skipped/, 'standby: no record skipped');

# The primary dies; the standby is promoted while the record still fails.
$primary->stop('immediate');
my @before = complete_checkpoints($chkroot);
$standby->promote;
sleep(3);
my $err = sql_error($standby, $read);
is($err->{sqlstate}, '57P03', 'promoted: sessions get an error while the promotion waits');
like($err->{stderr}, qr/The WAL record of logged states at [0-9A-F]+\/[0-9A-F]+ could not be applied/,
	'promoted: the error says why');
is_deeply([ complete_checkpoints($chkroot) ], \@before,
	'promoted: no checkpoint is taken meanwhile');

# Disarmed: the promotion ends with every write.
$standby->append_conf('postgresql.conf', "state_backend.fault_points = ''\n");
$standby->reload;
is(read_node($standby, expected(400)), expected(400),
	'promoted: every acknowledged write, once');
is($standby->safe_psql('postgres',
		q{SELECT count(*) FROM state.worker WHERE name = 'apply_blocked_lsn'}),
	'0', 'promoted: state.worker no longer shows a stopped apply');

# The new primary's own crash.
$standby->safe_psql('postgres', q{
SELECT count(state.list_add('h', i % 10, i)) FROM generate_series(401, 500) i;
SELECT count(state.list_add('k', i % 10, i)) FROM generate_series(401, 500) i;
});
$offset = -s $standby->logfile;
$standby->stop('immediate');
$standby->start;
is(read_node($standby, expected(500)), expected(500), 'new primary: every write after its crash');
is(join("\n", log_crashes($standby, $offset)), '', 'new primary: no process crashed');

# A standby made from a base backup of it, with no checkpoint taken since:
# its WAL begins after the newest checkpoint's cut, so it asks the primary
# for one, and serves without anyone taking a snapshot.
$standby->backup('b2');
my $standby2 = PostgreSQL::Test::Cluster->new('standby2');
$standby2->init_from_backup($standby, 'b2', has_streaming => 1);
my $offset2 = 0;
$offset = -s $standby->logfile;
$standby2->start;
is(read_node($standby2, expected(500)), expected(500),
	'a standby made after the newest checkpoint serves without waiting for one');
ok(slurp_file($standby2->logfile, $offset2) =~ qr/waits for a checkpoint of the primary taken since this standby's base backup, and asks the primary for one/,
	'the standby said what it waited for');
ok(slurp_file($standby->logfile, $offset) =~ qr/takes a checkpoint a standby asked for/,
	'the primary took the checkpoint it asked for');
is($standby2->safe_psql('postgres',
		q{SELECT count(*) FROM state.worker WHERE name = 'standby_awaits_checkpoint'}),
	'0', 'state.worker: it waits for nothing any more');

$standby2->stop;
$standby->stop;
done_testing();
