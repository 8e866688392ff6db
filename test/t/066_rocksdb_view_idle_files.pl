# A session's view of the rocksdb instance (state_backend.rocksdb_session_reads)
# does not keep the worker's deleted files past the session's next
# transaction: the file system gets their room back.
#
# - A session reads a state in its view, then stays idle in an open
#   connection (as in a connection pool).
# - Another session writes enough to flush memtables, and compacts the
#   state: the worker deletes the files the idle view opened.
# - Once the idle session has run one more statement, its open files
#   (/proc/PID/fd) name no deleted file of the instance.  (An idle backend
#   runs no code of ours until its next command: like PostgreSQL's own
#   backends with the files of a dropped table, it holds them till then.)

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

plan skip_all => 'needs /proc' unless -d '/proc/self/fd';

# No shared entry cache: it holds the entries just written (these compress
# to a few dozen bytes), and a read it answers opens none of the view's
# files.  Each checkpoint (a snapshot to checkpoint_dir) is waited for: it
# flushes the memtables, and until it has, a view answers from the
# memtables it replays from the worker's log, opening no table file either.
my $chkdir = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node('idle_view', conf => <<"EOF");
state_backend.checkpoint_dir = '$chkdir'
state_backend.checkpoint_interval = 0
state_backend.backend = 'rocksdb'
state_backend.rocksdb_session_reads_after = 0
state_backend.rocksdb_write_buffer_size = '4MB'
state_backend.rocksdb_shared_cache_size = 0
EOF

$node->safe_psql('postgres', q{
SELECT state.create_state('iv', 'value', 'int', 'text');
SELECT count(state.value_set('iv', i, repeat(md5(i::text), 20))) FROM generate_series(1, 20000) i;
SELECT state.wait_snapshot(state.snapshot());
});

# The idle session: reads in its view, then waits.
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start([ 'psql', '-XAtq', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(120));
$in .= "SELECT pg_backend_pid();\n";
$h->pump until $out =~ /^(\d+)$/m;
my $pid = $1;
$in .= "SELECT 'read', count(state.value_get('iv', i, ''::text)) FROM generate_series(1, 2000) i;\n";
$h->pump until $out =~ /read\|2000/;
my $views = $node->safe_psql('postgres',
	"SELECT value FROM state.worker WHERE name = 'rocksdb_session_views'");
cmp_ok($views, '>', 0, 'the session opened its view');

# Written over and compacted: the files the view opened are deleted.
$node->safe_psql('postgres', q{
SELECT count(state.value_set('iv', i, repeat(md5((i + 1)::text), 20))) FROM generate_series(1, 20000) i;
SELECT state.wait_snapshot(state.snapshot());
SELECT state.compact('iv');
});
my $dir = $node->data_dir . '/pg_state_backend/rocksdb';
sub held
{
	return grep { /\Q$dir\E.*\(deleted\)/ }
	  map { readlink($_) // '' } glob("/proc/$pid/fd/*");
}
# (RocksDB deletes the files a compaction replaced in the background.)
my @held;
foreach my $try (1 .. 60)
{
	@held = held();
	last if @held;
	sleep 1;
}
cmp_ok(scalar(@held), '>', 0, 'idle, the session still holds deleted files ('
	  . scalar(@held) . ')');
# The worker looks at its files twice a second; the session lets them go at
# the end of its next statement after that (polled: no fixed sleep).
foreach my $try (1 .. 60)
{
	$out = '';
	$in .= "SELECT 'next';\n";
	$h->pump until $out =~ /next/;
	@held = held();
	last unless @held;
	sleep 1;
}
is(scalar(@held), 0, 'after a next statement the session holds no deleted file of the instance')
  or diag join("\n", @held);
$out = '';
$in .= "SELECT 'again', count(state.value_get('iv', i, ''::text)) FROM generate_series(1, 2000) i;\n";
$h->pump until $out =~ /again\|2000/;
pass('and it reads again');

$in .= "\\q\n";
$h->finish;
done_testing();
