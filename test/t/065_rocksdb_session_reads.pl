# Sessions that read rocksdb states in views of their own
# (state_backend.rocksdb_session_reads): a read never returns less than a
# write acknowledged before it began, whoever wrote it.
#
# - Two writer clients own ten keys each; for each key in turn they take
#   the next number of a sequence, write it to a map entry, a list and a
#   value of that key, and once that statement returned, record it in a
#   table.  Two reader clients read a key's recorded number first, then
#   the key's map entry, list and value: each must be at least that
#   number.  A third reader reads the unchanged keys of another state
#   (rocksdb_shared_cache_size = 0 here: no shared entry cache in front of
#   the views),
#   flushed to table files by a snapshot first: views read those in place
#   (state.worker's rocksdb_session_* figures), the keys written since the
#   last flush through the worker, and no reader ever fails.
# - Once nothing is written for a few seconds, the worker flushes its
#   memtables (rocksdb_memtable_bytes falls to a few kB).
# - The worker runs with the hard limit of open files (RocksDB keeps a
#   directory handle per column family).
# - After a crash restart of the cluster (kill -9 of the state worker),
#   new sessions read in their views what was written before it.
# - The worker stopped (SIGSTOP): a session whose view holds a key reads
#   it without the worker.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $stopped_pid;
END { kill('CONT', $stopped_pid) if $stopped_pid; }

# A read the stopped worker would have to answer fails after the request
# timeout (2 s; under Valgrind's slowness, which every request pays, a
# minute).
my $request_timeout = $ENV{STATE_BACKEND_SANITIZE} ? '60s' : '2s';
my $node = new_state_node('views', conf => <<"EOF");
state_backend.backend = 'rocksdb'
state_backend.rocksdb_session_reads_after = 0
state_backend.request_timeout = '$request_timeout'
state_backend.rocksdb_shared_cache_size = 0
restart_after_crash = on
EOF

$node->safe_psql('postgres', q{
SELECT state.create_state('c', 'value', 'int', 'bigint');
SELECT state.create_state('cm', 'map', 'int', 'bigint', map_key_type => 'text');
SELECT state.create_state('cl', 'list', 'int', 'bigint');
SELECT state.create_state('still', 'map', 'int', 'bigint', map_key_type => 'text');
SELECT count(state.map_put('still', i, 'x', i * 10)) FROM generate_series(1, 50000) i;
-- Table files for the views: a snapshot flushes the memtables.
SELECT state.wait_snapshot(state.snapshot(current_setting('data_directory') || '/flushed'));
CREATE TABLE ack (k int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO ack SELECT k, 0 FROM generate_series(0, 19) k;
CREATE SEQUENCE s;
});

my $writer = <<'EOF';
\set k random(0, 9) * 2 + :client_id
SELECT nextval('s') AS n \gset
SELECT state.value_set('c', :k, :n), state.map_put('cm', :k, 'x', :n), state.list_add('cl', :k, :n);
UPDATE ack SET n = :n WHERE k = :k;
EOF
my $reader = <<'EOF';
\set k random(0, 19)
SELECT n AS a FROM ack WHERE k = :k \gset
SELECT 1 / (state.map_get('cm', :k, 'x', 0::bigint) >= :a)::int AS map_ok,
       1 / ((SELECT coalesce(max(x), 0) FROM unnest(state.list_get('cl', :k, '{}'::bigint[])) x) >= :a)::int AS list_ok,
       1 / (state.value_get('c', :k, 0::bigint) >= :a)::int AS value_ok;
EOF
my $still = <<'EOF';
\set k random(1, 50000)
SELECT 1 / (state.map_get('still', :k, 'x', 0::bigint) = :k * 10)::int;
EOF

my $w = start_pgbench($node, '-n -c 2 -j 2 -T 15', { 'writer.sql' => $writer }, timeout => 120);
my $r = start_pgbench($node, '-n -c 2 -j 2 -T 15', { 'reader.sql' => $reader }, timeout => 120);
my $s = start_pgbench($node, '-n -c 1 -T 15', { 'still.sql' => $still }, timeout => 120);
my $wr = finish_pgbench($w);
my $rr = finish_pgbench($r);
my $sr = finish_pgbench($s);
is($wr->{ret}, 0, 'writers ran') or diag $wr->{stderr};
is($rr->{ret}, 0, 'no read returned less than a write acknowledged before it')
  or diag $rr->{stderr};
is($sr->{ret}, 0, 'unchanged keys read right') or diag $sr->{stderr};
# (Under Valgrind, 15 s hold a few calls only.)
my $many = $ENV{STATE_BACKEND_SANITIZE} ? 0 : 100;
cmp_ok($wr->{processed}, '>', $many, "writers wrote ($wr->{processed})");
cmp_ok($rr->{processed}, '>', $many, "readers read ($rr->{processed})");

my %fig = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	"SELECT name, value FROM state.worker WHERE name LIKE 'rocksdb_session%'");
cmp_ok($fig{rocksdb_session_reads}, '>', $many, "reads made in views ($fig{rocksdb_session_reads})");
cmp_ok($fig{rocksdb_session_views}, '>', 0, "views opened ($fig{rocksdb_session_views})");

# The last recorded numbers are what every state holds.
is($node->safe_psql('postgres', q{
SELECT count(*) FROM ack
 WHERE state.map_get('cm', k, 'x', 0::bigint) <> n OR state.value_get('c', k, 0::bigint) <> n
    OR (SELECT max(x) FROM unnest(state.list_get('cl', k, '{}'::bigint[])) x) <> n}), '0',
	'every key holds its last acknowledged number');

# ---------------------------------------------------------------- idle flush
# Once nothing is written for a few seconds, the worker flushes its
# memtables: views then open without replaying its log.
$node->safe_psql('postgres',
	"SELECT count(state.map_put('still', i, 'x', i * 10)) FROM generate_series(1, 20000) i");
my $memtables;
foreach my $try (1 .. 30)
{
	$memtables = $node->safe_psql('postgres',
		"SELECT value FROM state.worker WHERE name = 'rocksdb_memtable_bytes'");
	last if $memtables < 65536;
	sleep 1;
}
cmp_ok($memtables, '<', 65536, "idle, the worker flushed its memtables ($memtables bytes left)");

# ---------------------------------------------------------------- open files
# RocksDB holds a directory handle per column family: the worker runs with
# the hard limit of open files, not the soft one.
SKIP:
{
	# (Valgrind keeps descriptors of its own below the limit it shows.)
	skip 'Valgrind shows its own limit of open files', 1 if $ENV{STATE_BACKEND_SANITIZE};
	my $limits = slurp_file('/proc/' . worker_pid($node) . '/limits');
	skip 'no limits in /proc', 1 unless $limits =~ /^Max open files\s+(\S+)\s+(\S+)/m;
	is($1, $2, "the worker's soft limit of open files is its hard limit ($1)");
}

# ---------------------------------------------------------------- crash restart
$node->safe_psql('postgres', "SELECT state.map_put('still', 7, 'x', -7)");
my $pid = worker_pid($node);
kill 'KILL', $pid;
ok(defined wait_for_worker($node, not => $pid), 'the worker is back after the crash restart');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM generate_series(1, 3000) k
 WHERE state.map_get('still', k, 'x', 0::bigint) <> CASE WHEN k = 7 THEN -7 ELSE k * 10 END}), '0',
	'after a crash restart, views read what was written before it');

# ---------------------------------------------------------------- worker stopped
# A session that has read the key in its view reads it again with the
# worker stopped (no shared entry cache in front of the view here).
$node->safe_psql('postgres', "SELECT state.map_put('cm', 100, 'x', 5)");
$node->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot(current_setting('data_directory') || '/flushed2'))");
sleep 1;
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start([ 'psql', '-XAtq', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout(60));
$in .= "SELECT 'first', state.map_get('cm', 100, 'x', 0::bigint);\n";
$h->pump until $out =~ /first\|5/;
$stopped_pid = worker_pid($node);
kill 'STOP', $stopped_pid;
$out = '';
$in .= "SELECT 'again', state.map_get('cm', 100, 'x', 0::bigint);\n";
$h->pump until $out =~ /again/ || $err =~ /ERROR/;
like($out, qr/again\|5/, 'a key in the view is read while the worker is stopped');
kill 'CONT', $stopped_pid;
$stopped_pid = undef;
$in .= "\\q\n";
$h->finish;

done_testing();
