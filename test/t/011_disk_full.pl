# Snapshots onto a full disk: each fails with disk_full (53100), leaves
# nothing behind on the filesystem and no file open in the state worker, and
# the states serve on.  Once there is room, a snapshot completes and
# restores.
#
# Needs a small filesystem: STATE_BACKEND_SMALL_FS names a directory on one
# (scripts/test.sh mounts a 1 MB tmpfs when it runs as root).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $fs = $ENV{STATE_BACKEND_SMALL_FS};
plan skip_all => 'no small filesystem: STATE_BACKEND_SMALL_FS is not set (scripts/test.sh sets it when run as root)'
  unless defined $fs && -d $fs && -w $fs;

my $node = new_state_node('disk_full');
my $worker = wait_for_worker($node);
ok(defined $worker, 'state worker running');
my $log_offset = -s $node->logfile;

# About 600 kB of state, heap and rocksdb: it fits in the filesystem only
# when the filesystem is empty.
$node->safe_psql(
	'postgres', q{
SELECT state.create_state('h', 'value', 'int', 'text');
SELECT state.create_state('l', 'list', 'int', 'text');
SELECT state.create_state('r', 'value', 'int', 'text', backend => 'rocksdb');
SELECT count(state.value_set('h', i, repeat(md5(i::text), 4))) FROM generate_series(1, 1500) i;
SELECT count(state.list_add('l', i % 50, md5(i::text))) FROM generate_series(1, 4000) i;
SELECT count(state.value_set('r', i, repeat(md5((-i)::text), 4))) FROM generate_series(1, 1500) i;
});
my $read_all = q{SELECT state.value_get('h', 7, '') || state.list_length('l', 7) ||
  state.value_get('r', 7, '')};
my $expected = $node->safe_psql('postgres', $read_all);

# What of the filesystem is not the filler, and what the worker has open on it.
sub leftovers
{
	opendir(my $d, $fs) or die "opendir $fs: $!";
	my @left = grep { $_ ne '.' && $_ ne '..' && $_ ne 'filler' } readdir $d;
	closedir $d;
	return @left;
}

sub open_in_worker
{
	my @open;
	opendir(my $d, "/proc/$worker/fd") or return ('(cannot read /proc)');
	for my $fd (grep { /^\d+$/ } readdir $d)
	{
		my $target = readlink("/proc/$worker/fd/$fd") // '';
		push @open, $target if index($target, $fs) == 0;
	}
	closedir $d;
	return @open;
}

# Fill the filesystem but for $free kB.
sub fill_but
{
	my ($free) = @_;
	unlink "$fs/filler";
	open(my $fh, '>:raw', "$fs/filler") or die "filler: $!";
	my $chunk = "\0" x 1024;
	while (print $fh $chunk) { }
	close $fh;
	truncate("$fs/filler", (-s "$fs/filler") - $free * 1024) or die "truncate: $!";
	return;
}

my $n = 0;
for my $free (0, 1, 4, 16, 64, 256)
{
	for my $format ('native', 'canonical')
	{
		fill_but($free);
		my $path = "$fs/snap" . ++$n;
		my $r = sql_error($node,
			"SELECT state.wait_snapshot(state.snapshot('$path', '$format'))",
			timeout => 120);
		is($r->{sqlstate}, '53100', "$format, $free kB free: disk_full")
		  or diag $r->{stderr};
		is(join(' ', leftovers()), '', "$format, $free kB free: nothing left behind");
		is(join(' ', open_in_worker()), '', "$format, $free kB free: no file left open");
	}
}
is($node->safe_psql('postgres', $read_all), $expected, 'the states serve on');
is(worker_pid($node), $worker, 'the same worker');

unlink "$fs/filler";
my $path = "$fs/fits";
is($node->safe_psql('postgres',
		"SELECT state.wait_snapshot(state.snapshot('$path', 'canonical'))"),
	'completed', 'with room, a snapshot completes');
$node->safe_psql('postgres', "SELECT state.restore('$path')");
is($node->safe_psql('postgres', $read_all), $expected, 'and restores');
system('rm', '-rf', $path);

is(join("\n", log_crashes($node, $log_offset)), '', 'no process crashed');
$node->stop;
done_testing();
