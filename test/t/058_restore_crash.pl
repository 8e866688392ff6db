# A restore is all or nothing after a crash at any step of its publication.
#
# Database "r" holds a value state on each backend (memory, rocksdb, lmdb),
# logged and unlogged.  A snapshot holds 'new' in each; then every state is
# set to 'old' and a checkpoint taken.  state.restore() of the snapshot is
# then killed (fault point, action crash: the cluster restarts) at each
# step around the instant the restore becomes durable:
#
#   restore.publish_logged   the restore's PUBLISH record is inserted, not
#                            yet flushed: the restore may go either way
#   restore.publish_durable  the record is flushed: the restore holds
#   restore.after_publish    everything done, before state.restore returns
#
# After the restart every state that survives a crash with its contents
# (the logged ones, and the unlogged rocksdb state, which RocksDB keeps)
# holds 'new' everywhere or 'old' everywhere, and 'new' once the record was
# flushed; the unlogged memory and lmdb states come back from the
# checkpoint ('old'), as documented.  (An unlogged rocksdb state killed
# between the flush and RocksDB's storing of the publication still comes
# back as before: reported as TODO.)  The WAL writer is slowed down so that
# it does not flush the restore's records by itself: before the restore was
# logged as one record, flushed before RocksDB stored the publication, a
# crash at restore.after_publish left the logged memory and lmdb states
# 'old' and the rocksdb states 'new'.  Last, a hot standby follows a
# restore of its primary: it applies the PUBLISH record whole.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'restore_crash',
	lmdb => 1,
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints'\n"
	  . "restart_after_crash = on\n"
	  . "wal_writer_delay = '10s'\n");
ok(defined wait_for_worker($node), 'state worker running');

my @BACKENDS = qw(memory rocksdb lmdb);
my @STATES;
$node->safe_psql('postgres', 'CREATE DATABASE r');
$node->safe_psql('r', 'CREATE EXTENSION state_backend');
for my $b (@BACKENDS)
{
	for my $logged ('true', 'false')
	{
		my $name = ($logged eq 'true' ? 'lg_' : 'ul_') . $b;
		push @STATES, $name;
		$node->safe_psql('r', qq{
SELECT state.create_state('$name', 'value', 'int', 'text', backend => '$b', logged => $logged)});
	}
}
my $states_array = 'ARRAY[' . join(', ', map { "'$_'" } @STATES) . ']';

sub set_all
{
	my ($v) = @_;
	$node->safe_psql('r', qq{
SELECT count(state.value_set(s, k, '$v' || k)) FROM unnest($states_array) s, generate_series(1, 8) k});
}

# Each state's contents as 'old', 'new' or what it holds.
sub contents
{
	my %out;
	for my $s (@STATES)
	{
		my $fp = $node->safe_psql('r', qq{
SELECT string_agg(k || '=' || v, ' ' ORDER BY k) FROM state.entries('$s', NULL::int, NULL::text) e(k, v)});
		my ($which) = grep {
			my $v = $_;
			$fp eq join(' ', map { "$_=$v$_" } 1 .. 8)
		} qw(old new);
		$out{$s} = $which // ($fp eq '' ? 'empty' : $fp);
	}
	return \%out;
}

set_all('new');
$node->safe_psql('r', "SELECT state.wait_snapshot(state.snapshot('$dir/new'))");

for my $point (qw(restore.publish_logged restore.publish_durable restore.after_publish))
{
	set_all('old');
	$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot(), '30 s')});
	is_deeply(contents(), { map { ($_ => 'old') } @STATES }, "$point: every state holds 'old' before");

	my $offset = -s $node->logfile;
	my ($ret, $out, $err) = $node->psql('r', qq{
SET state_backend.fault_points = '$point:crash';
SELECT state.restore('$dir/new')});
	isnt($ret, 0, "$point: the restore's session was killed");
	ok($node->log_contains(qr/fault point "\Q$point\E" reached: crash/, $offset),
		"$point: the fault point was reached");
	ok(defined wait_for_crash_restart($node, $offset), "$point: the server came back");

	my $got = contents();
	# What survives a crash with its contents: logged states, and rocksdb's.
	my @logged = grep { /^lg_/ } @STATES;
	my %sides = map { ($got->{$_} => 1) } @logged;
	is(scalar(keys %sides), 1, "$point: every logged state is on one side of the restore")
	  or diag(explain($got));
	my ($side) = keys %sides;
	{
		local $TODO = 'an unlogged rocksdb state is stored by RocksDB after the record is flushed, '
		  . 'and a crash in between brings it back as before'
		  if $point eq 'restore.publish_durable';
		is($got->{ul_rocksdb}, $side, "$point: the unlogged rocksdb state is on the same side");
	}
	ok($side eq 'old' || $side eq 'new', "$point: that side is before or after the restore, whole")
	  or diag(explain($got));
	is($side, 'new', "$point: the restore holds once its record is flushed")
	  or diag(explain($got))
	  if $point ne 'restore.publish_logged';
	# Unlogged memory and lmdb states come back from the last checkpoint.
	is($got->{$_}, 'old', "$point: $_ comes back from the checkpoint") for qw(ul_memory ul_lmdb);
	is($node->safe_psql('r', 'SELECT count(*) FROM state.states'), scalar(@STATES),
		"$point: every state is there once");
}

# A hot standby applies the PUBLISH record as its primary published: the
# logged states restored, and nothing else of the database.
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot(), '30 s')});
set_all('old');
$node->wait_for_catchup($standby);
ok( $standby->poll_query_until('r',
		q{SELECT count(*) = 8 FROM state.entries('lg_rocksdb', NULL::int, NULL::text) e(k, v) WHERE v LIKE 'old%'}),
	'standby: serves the logged states as they were');
$node->safe_psql('r', "SELECT state.restore('$dir/new')");
$node->wait_for_catchup($standby);
for my $s (grep { /^lg_/ } @STATES)
{
	ok( $standby->poll_query_until('r', qq{
SELECT string_agg(k || '=' || v, ' ' ORDER BY k) FROM state.entries('$s', NULL::int, NULL::text) e(k, v)},
			join(' ', map { "$_=new$_" } 1 .. 8)),
		"standby: $s restored");
}
is($standby->safe_psql('r', q{SELECT string_agg(name, ' ' ORDER BY name) FROM state.states}),
	'lg_lmdb lg_memory lg_rocksdb', 'standby: the logged states, each once');
$standby->stop;

done_testing();
