# rocksdb_dir on a full disk.  RocksDB aborts the process at the write
# after one that failed for want of space, and a new worker aborted again
# opening the full instance: a crash-restart loop that nobody could
# connect through.  Now writes stop, with disk_full (53100), while the file
# system still has the room RocksDB needs for a flush (twice
# rocksdb_write_buffer_size and 8 MB), so that RocksDB never sees a failed
# write; reads go on, the server stays up, and freeing space brings writes
# back.  A server started on the full disk does not crash either, and
# serves rocksdb states once there is room.
#
# Needs a small filesystem: STATE_BACKEND_ROCKSDB_FS names a directory on
# one of about 24 MB (scripts/test.sh mounts a tmpfs when it runs as root).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $fs = $ENV{STATE_BACKEND_ROCKSDB_FS};
plan skip_all => 'no small filesystem: STATE_BACKEND_ROCKSDB_FS is not set (scripts/test.sh sets it when run as root)'
  unless defined $fs && -d $fs && -w $fs;

my $dir = "$fs/rocksdb_" . $$;
my $ballast = "$fs/ballast_" . $$;
my $node = new_state_node('rocksdb_disk_full',
	conf => "state_backend.rocksdb_dir = '$dir'\nstate_backend.rocksdb_write_buffer_size = 1MB\n");
my $worker = wait_for_worker($node);
ok(defined $worker, 'state worker running');

sub free_kb
{
	my $out = `df -Pk '$fs'`;
	my @f = split /\s+/, (split /\n/, $out)[1];
	return $f[3];
}

# Most of the file system taken by something else.
sub fill
{
	my ($keep_kb) = @_;
	my $kb = free_kb() - $keep_kb;
	open(my $fh, '>>', $ballast) or die "open $ballast: $!";
	print $fh "\0" x 1024 for 1 .. $kb;
	close $fh;
	return;
}

$node->safe_psql('postgres', q{
SELECT state.create_state('r', 'value', 'int', 'text', backend => 'rocksdb');
SELECT count(state.value_set('r', i, 'first ' || i)) FROM generate_series(1, 100) i;
});

# Leave about 14 MB: 10 MB must stay free, so a few MB of writes go in.
fill(14 * 1024);
my ($err, $batches) = (undef, 0);
for my $batch (1 .. 200)
{
	my $r = sql_error($node, qq{
SELECT count(state.value_set('r', i, repeat(md5(i::text), 64))) FROM generate_series($batch * 1000, $batch * 1000 + 999) i;
SELECT 'no error';
});
	$batches = $batch;
	if ($r->{sqlstate})
	{
		$err = $r;
		last;
	}
}
ok(defined $err, "writes stop before the disk is full (after $batches batches)");
is($err->{sqlstate}, '53100', 'with disk_full') or diag $err->{stderr};
like($err->{stderr}, qr/must stay free/, 'the message says how much room is kept');
cmp_ok(free_kb(), '>', 8 * 1024, 'RocksDB kept its room');
is(worker_pid($node), $worker, 'the state worker did not restart');
is($node->safe_psql('postgres', q{SELECT state.value_get('r', 7, '')}), 'first 7',
	'reads go on');
$node->safe_psql('postgres', q{SELECT state.create_state('h', 'value', 'int', 'int'); SELECT state.value_set('h', 1, 1)});
is($node->safe_psql('postgres', q{SELECT state.value_get('h', 1, 0)}), '1', 'heap states go on');

unlink $ballast or die "unlink $ballast: $!";
$node->safe_psql('postgres', q{SELECT state.value_set('r', 7, 'after')});
is($node->safe_psql('postgres', q{SELECT state.value_get('r', 7, '')}), 'after',
	'once there is room, writes go in again');

# A server started on the full disk: no crash loop; once there is room,
# its rocksdb states are served.
$node->stop;
fill(4 * 1024);
my $offset = -s $node->logfile;
$node->start;
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up on the full disk');
sleep 3;
is(join("\n", log_crashes($node, $offset)), '', 'no process crashed starting on the full disk');
ok($node->log_contains(qr/rocksdb states cannot be written: the file system .* has \d+ kB free/, $offset),
	'the log says why rocksdb states are not there');
unlink $ballast or die "unlink $ballast: $!";
ok(defined wait_for_worker($node), 'the state worker starts once there is room');
is($node->safe_psql('postgres', q{SELECT state.value_get('r', 7, '')}), 'after',
	'and serves the rocksdb state as it was');

is(join("\n", log_crashes($node, 0)), '', 'no process crashed');
$node->stop;
done_testing();
