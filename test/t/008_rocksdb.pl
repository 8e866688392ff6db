# rocksdb states: durability, size, incremental checkpoints, retention,
# a stopped worker, and the canonical round trip across backends.
#
# Node "rocks" (no checkpoint_dir, rocksdb_sync = on, memory_limit = 8MB):
# - One pgbench client writes w[n] = n and w[0] = n for n = 1, 2, ...; the
#   per-transaction log says which n were acknowledged.  kill -9 of the
#   state worker while it writes (a crash restart of the whole cluster),
#   then kill -9 of the writer's backend: after each restart every
#   acknowledged write is there, w[0] is the last acknowledged n (or the one
#   in flight), and the other rocksdb states are unchanged.  A clean restart
#   keeps everything too.  With no checkpoint_dir this is RocksDB's own data.
# - A rocksdb state of 300000 entries of ~100 bytes (far beyond
#   memory_limit) works; a heap state of that size fails with 54000.
# - A SIGSTOPped worker: a cached key is still read; a read of a key not in
#   the shared cache, or a write, on a rocksdb state fails after
#   request_timeout with an error naming the worker, heap states still work,
#   sessions waiting without a timeout (a read, and a write larger than the
#   request ring) can be cancelled, and after SIGCONT the same sessions work
#   again.
# - A rocksdb state dropped just before a crash stays dropped.
# - A canonical snapshot of memory states restored into rocksdb, then a
#   canonical snapshot of that restored into memory, gives the same
#   contents (values, lists, maps with NULL values, reducing states).
#
# Node "chk" (checkpoint_dir, checkpoints_retained = 2):
# - 1M keys, a checkpoint, 1% of the keys changed, another checkpoint: the
#   second writes a small fraction of the first (state.snapshots.bytes and
#   new files in shared/), is marked incremental, and restoring either
#   checkpoint gives its own values.
# - Retention: after each of several checkpoints, every file the retained
#   checkpoints list exists with its size, and shared/ holds no file that
#   they do not list.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use File::Basename qw(basename);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $TIMEOUT = $PostgreSQL::Test::Utils::timeout_default;

# A worker we SIGSTOPped is continued whatever happens to the test.
my $stopped_pid;
END { kill('CONT', $stopped_pid) if $stopped_pid; }

# fp(pattern): one line describing every state of the current database
# whose name is LIKE pattern (text keys): name, kind, entries and a digest
# of its contents, NULLs included.
my $fp_function = q{
CREATE FUNCTION fp(pattern text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  c text;
  res text := '';
BEGIN
  FOR r IN SELECT name, kind, entries, value_type::text AS vt, map_key_type::text AS mt
           FROM state.states WHERE name LIKE pattern ORDER BY name LOOP
    IF r.kind IN ('value', 'reducing') THEN
      EXECUTE format($q$SELECT md5(coalesce(string_agg(k || '=' || coalesce(state.value_get(%L, k, NULL::%s)::text, '<null>'), ',' ORDER BY k), ''))
                        FROM state.keys(%L, ''::text) k$q$, r.name, r.vt, r.name) INTO c;
    ELSIF r.kind = 'list' THEN
      EXECUTE format($q$SELECT md5(coalesce(string_agg(k || '=' || coalesce(state.list_get(%L, k, NULL::%s[])::text, '<null>'), ',' ORDER BY k), ''))
                        FROM state.keys(%L, ''::text) k$q$, r.name, r.vt, r.name) INTO c;
    ELSE
      EXECUTE format($q$SELECT md5(coalesce(string_agg(k || '=' ||
                          (SELECT string_agg(e.map_key::text || ':' || coalesce(e.value::text, '<null>'), '/' ORDER BY e.map_key)
                           FROM state.map_entries(%L, k, NULL::%s, NULL::%s) e), ',' ORDER BY k), ''))
                        FROM state.keys(%L, ''::text) k$q$, r.name, r.mt, r.vt, r.name) INTO c;
    END IF;
    res := res || r.name || ':' || r.kind || ':' || r.entries || ':' || c || ' ';
  END LOOP;
  RETURN res;
END $$;
};

# fill(node, db, prefix): a few states of every kind named <prefix>_*,
# in the current default backend, with NULL map values.
sub fill
{
	my ($node, $db, $p) = @_;
	$node->safe_psql(
		$db, qq{
SELECT state.create_state('${p}_v', 'value', 'text', 'bigint');
SELECT state.create_state('${p}_t', 'value', 'text', 'text');
SELECT state.create_state('${p}_l', 'list', 'text', 'text');
SELECT state.create_state('${p}_m', 'map', 'text', 'numeric', map_key_type => 'integer');
SELECT state.create_state('${p}_r', 'reducing', 'text', 'bigint', reducer => 'sum');
SELECT state.create_state('${p}_x', 'reducing', 'text', 'bigint', reducer => 'max');
SELECT count(state.value_set('${p}_v', 'k' || i, i * 7)) FROM generate_series(1, 2000) i;
SELECT count(state.value_set('${p}_t', 't' || i, repeat(chr(65 + i % 26), i % 50) || 'é')) FROM generate_series(1, 500) i;
SELECT count(state.list_add('${p}_l', 'k' || (i % 37), 'e' || i)) FROM generate_series(1, 1000) i;
SELECT state.list_add('${p}_l', 'empty-string', '');
SELECT count(state.map_put('${p}_m', 'k' || (i % 11), i, CASE WHEN i % 5 = 0 THEN NULL ELSE i / 3.0 END)) FROM generate_series(1, 600) i;
SELECT state.map_put('${p}_m', 'only-null', 1, NULL::numeric);
SELECT count(state.reduce('${p}_r', 'k' || (i % 13), i::bigint)) FROM generate_series(1, 1000) i;
SELECT count(state.reduce('${p}_x', 'k' || (i % 7), (i * 7919 % 1000)::bigint)) FROM generate_series(1, 1000) i;
});
}

# Files under a directory (names only, no dot files).
sub dir_files
{
	my ($dir) = @_;
	opendir(my $dh, $dir) or return ();
	my @f = grep { !/^\./ && -f "$dir/$_" } readdir $dh;
	closedir $dh;
	return sort @f;
}

############################################################ node rocks

my $node = new_state_node(
	'rocks',
	conf => "state_backend.rocksdb_sync = on\n"
	  . "state_backend.memory_limit = '8MB'\n"
	  . "restart_after_crash = on\n"
	  . "jit = off\n");
ok(defined wait_for_worker($node), 'state worker running');
is($node->safe_psql('postgres', 'SHOW state_backend.checkpoint_dir'),
	'', 'no checkpoint_dir: rocksdb states survive on RocksDB\'s own data');
$node->safe_psql('postgres', $fp_function);

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('w', 'value', 'integer', 'bigint', backend => 'rocksdb');
SELECT state.create_state('w2', 'value', 'integer', 'bigint', backend => 'rocksdb');
});
$node->safe_psql('postgres', q{ALTER DATABASE postgres SET state_backend.backend = 'rocksdb'});
fill($node, 'postgres', 'd');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT backend, ',') FROM state.states}),
	'rocksdb', 'the durability states are rocksdb states');
my $fp_before = $node->safe_psql('postgres', q{SELECT fp('d\_%')});
like($fp_before,
	qr/^d_l:list:38:\w+ d_m:map:12:\w+ d_r:reducing:13:\w+ d_t:value:500:\w+ d_v:value:2000:\w+ d_x:reducing:7:\w+ $/,
	'the rocksdb states hold what was written');

############################################################ kill -9 while writing

# crash_writer($name, $state, $victim): one pgbench client writes
# $state[n] = n and $state[0] = n, n = 1, 2, ... (one statement per
# transaction); once 200 are in, $victim->() returns the PID to kill -9.
# Returns the last n pgbench saw acknowledged.
my $seq = 0;
sub crash_writer
{
	my ($name, $state, $victim) = @_;
	$seq++;
	my $logprefix = $node->basedir . "/writer$seq";
	my $offset = -s $node->logfile;
	my $old_worker = worker_pid($node);
	my $h = start_pgbench(
		$node,
		"-n -c 1 -T $TIMEOUT -D n=0 -l --log-prefix=$logprefix",
		{
			"writer$seq.sql" => qq{
\\set n :n + 1
SELECT state.value_set('$state', :n, :n::bigint), state.value_set('$state', 0, :n::bigint);
}
		},
		timeout => $TIMEOUT + 60);
	ok( $node->poll_query_until(
			'postgres', qq{SELECT state.value_get('$state', 0, 0::bigint) >= 200}),
		"$name: the writer is writing");
	my $pid = $victim->();
	ok(kill('KILL', $pid), "$name: SIGKILL sent to $pid");
	my $wpid = wait_for_crash_restart($node, $offset);
	ok(defined $wpid && $wpid != $old_worker, "$name: crash restart, a new state worker runs");
	my $r = finish_pgbench($h);
	isnt($r->{ret}, -1, "$name: the writer ended (its connection was lost)");
	isnt($r->{ret}, 0, "$name: ... with an error") or diag $r->{stdout};

	# The per-transaction log: "client transaction_no ...", one line per
	# acknowledged transaction, numbered from 1; transaction k wrote n = k.
	my $acked = 0;
	my $lines = 0;
	for my $f (glob("$logprefix.*"))
	{
		for my $l (split /\n/, slurp_file($f))
		{
			next unless $l =~ /^0 (\d+) /;
			$lines++;
			$acked = $1 if $1 > $acked;
		}
	}
	cmp_ok($acked, '>=', 199, "$name: $acked writes were acknowledged");
	is($lines, $acked, "$name: ... numbered 1..$acked in the pgbench log");
	my @crashes = log_crashes($node, $offset);
	ok((grep { /terminated by signal 9/ } @crashes), "$name: the log shows the kill")
	  or diag join("\n", @crashes);
	return $acked;
}

# Every acknowledged write of the writer is there: $state[i] = i for
# i in 1..$acked, and $state[0] is $acked or $acked + 1 (the write in
# flight when the connection was lost may or may not have been applied).
sub check_writes
{
	my ($name, $state, $acked) = @_;
	my $got = $node->safe_psql(
		'postgres', qq{
SELECT count(*) FILTER (WHERE state.value_get('$state', i, -1::bigint) = i)
  || ',' || state.value_get('$state', 0, -1::bigint)
FROM generate_series(1, $acked) i});
	my ($present, $last) = split /,/, $got;
	is($present, $acked, "$name: all $acked acknowledged keys are present with their values");
	ok($last == $acked || $last == $acked + 1,
		"$name: the counter is the last acknowledged value ($acked) or the one in flight (got $last)");
	my $beyond = $node->safe_psql('postgres',
		qq{SELECT count(*) FROM generate_series($acked + 2, $acked + 50) i WHERE state.value_get('$state', i, -1::bigint) <> -1});
	is($beyond, '0', "$name: nothing beyond what was written");
}

my $acked_w = crash_writer('kill -9 of the worker', 'w', sub { worker_pid($node) });
check_writes('kill -9 of the worker', 'w', $acked_w);
is($node->safe_psql('postgres', q{SELECT fp('d\_%')}), $fp_before,
	'kill -9 of the worker: the other rocksdb states are unchanged');

my $acked_w2 = crash_writer(
	'kill -9 of a backend',
	'w2',
	sub {
		# The writer's backend: the one whose last query wrote w2.
		my $pid = $node->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%value_set(''w2''%'});
		die "no single writer backend: '$pid'" unless $pid =~ /^\d+$/;
		return $pid;
	});
check_writes('kill -9 of a backend', 'w2', $acked_w2);
check_writes('after the second crash', 'w', $acked_w);
is($node->safe_psql('postgres', q{SELECT fp('d\_%')}), $fp_before,
	'kill -9 of a backend: the other rocksdb states are unchanged');

# Writes go on after a crash restart.
$node->safe_psql('postgres', q{SELECT state.value_set('d_v', 'after-crash', 1::bigint)});
$fp_before = $node->safe_psql('postgres', q{SELECT fp('d\_%')});

############################################################ clean restart

my $log_offset = -s $node->logfile;
$node->restart;
ok(defined wait_for_worker($node), 'clean restart: the worker runs');
is($node->safe_psql('postgres', q{SELECT fp('d\_%')}), $fp_before,
	'clean restart: every rocksdb state is back, unchanged');
check_writes('clean restart', 'w', $acked_w);
check_writes('clean restart', 'w2', $acked_w2);
is($node->safe_psql('postgres', q{SELECT state.value_get('d_v', 'after-crash', 0::bigint)}),
	'1', 'clean restart: the write made after the crash restart is there');
is_deeply([ log_crashes($node, $log_offset) ], [], 'clean restart: no crash');

############################################################ larger than memory_limit

# ~100 bytes of incompressible text per entry: 300000 entries are ~30 MB,
# far beyond memory_limit = 8MB.
my $VAL = q{md5(i || 'a') || md5(i || 'b') || md5(i || 'c') || lpad(i::text, 7, '0')};
$node->safe_psql('postgres',
	q{SELECT state.create_state('big', 'value', 'integer', 'text', backend => 'rocksdb')});
is( $node->safe_psql('postgres',
		qq{SELECT count(state.value_set('big', i, $VAL)) FROM generate_series(1, 300000) i}),
	'300000', 'a rocksdb state takes 300000 entries of ~100 bytes (memory_limit = 8MB)');
my ($entries, $bytes) = split /\|/, $node->safe_psql('postgres',
	q{SELECT entries, bytes FROM state.states WHERE name = 'big'});
is($entries, '300000', 'state.states counts 300000 entries');
cmp_ok($bytes, '>', 8 * 1024 * 1024, "its size ($bytes bytes) is beyond memory_limit");
is( $node->safe_psql('postgres',
		qq{SELECT count(*) FROM generate_series(1, 300000, 997) i WHERE state.value_get('big', i, ''::text) IS DISTINCT FROM $VAL}),
	'0', 'a sample of its values reads back right');

$node->safe_psql('postgres',
	q{SELECT state.create_state('bigheap', 'value', 'integer', 'text', backend => 'memory')});
my $err = sql_error($node,
	qq{SELECT count(state.value_set('bigheap', i, $VAL)) FROM generate_series(1, 300000) i});
is($err->{sqlstate}, '54000', 'a heap state of the same size fails with 54000')
  or diag $err->{stderr};
like($err->{stderr}, qr/state_backend\.memory_limit/, '... naming state_backend.memory_limit');
is( $node->safe_psql('postgres',
		qq{SELECT state.value_get('big', 300000, ''::text) = (SELECT $VAL FROM (SELECT 300000 AS i) s)}),
	't', 'the rocksdb state is still fine after the heap state hit the limit');
$node->safe_psql('postgres',
	q{SELECT state.drop_state('big'); SELECT state.drop_state('bigheap');});

############################################################ stopped worker

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('heap1', 'value', 'text', 'bigint', backend => 'memory');
SELECT state.value_set('heap1', 'a', 1::bigint);
SELECT state.create_state('sw', 'value', 'text', 'text', backend => 'rocksdb');
SELECT state.value_set('sw', 'a', 'A');
SELECT state.create_state('sw_gone', 'value', 'text', 'int', backend => 'rocksdb');
});

# Sessions that will wait for the stopped worker with no timeout: one
# reading, one writing a value larger than the request ring (32 kB), which
# waits in the middle of sending its request.
my %waiters;
for my $w ('reader', 'writer')
{
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	$bg->query_safe(q{\set VERBOSITY verbose});
	$bg->query_safe(q{SET state_backend.request_timeout = 0});
	is($bg->query_safe(q{SELECT state.value_get('sw', 'a', ''::text)}),
		'A', "$w session: reads a rocksdb state");
	$waiters{$w} = { bg => $bg, pid => $bg->query_safe('SELECT pg_backend_pid()') };
}

my $wpid = worker_pid($node);
ok(kill('STOP', $wpid), 'SIGSTOP sent to the state worker');
$stopped_pid = $wpid;

# 'a' was read, so it is in the shared cache; 'c' was never read.
is($node->safe_psql('postgres', q{SET state_backend.request_timeout = '2s'; SELECT state.value_get('sw', 'a', ''::text)}),
	'A', 'stopped worker: a cached key is still read');
$err = sql_error($node,
	q{SET state_backend.request_timeout = '2s'; SELECT state.value_get('sw', 'c', ''::text);});
isnt($err->{ret}, 0, 'stopped worker: value_get of a key not cached fails (request_timeout = 2s)');
like($err->{message}, qr/worker/, "... with an error that names the worker: $err->{message}");
$err = sql_error($node,
	q{SET state_backend.request_timeout = '2s'; SELECT state.value_set('sw', 'b', 'B');});
isnt($err->{ret}, 0, 'stopped worker: value_set on a rocksdb state fails too');
like($err->{message}, qr/worker/, "... with an error that names the worker: $err->{message}");
is($node->safe_psql('postgres', q{SELECT state.value_get('heap1', 'a', 0::bigint)}),
	'1', 'stopped worker: heap states still work');
# A call that may run long (counting a state) waits only while the worker
# shows progress.
for my $call (q{SELECT entries FROM state.states WHERE name = 'sw'})
{
	$err = sql_error($node, qq{SET state_backend.request_timeout = '2s'; $call;});
	isnt($err->{ret}, 0, "stopped worker: '$call' fails (request_timeout = 2s)");
	like($err->{message}, qr/worker/, "... with an error that names the worker: $err->{message}");
}

# Waiting sessions (request_timeout = 0) can be cancelled.
$waiters{reader}{bg}->query_until(qr/waiting/,
	"\\echo waiting\nSELECT state.value_get('sw', 'd', ''::text);\n");
$waiters{writer}{bg}->query_until(qr/waiting/,
	"\\echo waiting\nSELECT state.value_set('sw', 'big', repeat('x', 100000));\n");
for my $w ('reader', 'writer')
{
	my $pid = $waiters{$w}{pid};
	ok( $node->poll_query_until(
			'postgres',
			qq{SELECT state = 'active' AND wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid}),
		"$w session: waits for the stopped worker");
	is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"),
		't', "$w session: pg_cancel_backend");
}
# Cancellation takes effect at once; 30 s is only a bound for a hang.
for my $w ('reader', 'writer')
{
	my $pid = $waiters{$w}{pid};
	my $done = 0;
	my $end = time() + 30;
	while (time() < $end)
	{
		last if $done = $node->safe_psql('postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid AND state = 'active'") eq 't';
		usleep(100_000);
	}
	ok($done, "$w session: the cancelled statement ends while the worker is still stopped");
}
# A write posted to a state, then a drop of it in the same statement: the
# drop marks the state before it waits for the stopped worker, so the worker
# finds it dropped before it takes the write, which fails in that statement.
my $dropper = $node->background_psql('postgres', on_error_stop => 0);
$dropper->query_safe(q{\set VERBOSITY verbose});
$dropper->query_safe(q{SET state_backend.request_timeout = 0});
my $dropper_pid = $dropper->query_safe('SELECT pg_backend_pid()');
$dropper->query_until(qr/waiting/,
	"\\echo waiting\nSELECT state.value_set('sw_gone', 'k', 1), state.drop_state('sw_gone');\n");
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT state = 'active' AND wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $dropper_pid}),
	'dropping session: waits for the stopped worker');
ok(kill('CONT', $wpid), 'SIGCONT sent to the state worker');
$stopped_pid = undef;
$dropper->{stderr} = '';
is($dropper->query(q{SELECT 'after-drop'}), 'after-drop', 'dropping session: its statement ended');
like($dropper->{stderr}, qr/42704.*state was dropped while this statement used it/,
	'a posted write to a state dropped in the same statement fails in it (42704)')
  or diag $dropper->{stderr};
$dropper->quit;
is($node->safe_psql('postgres', q{SELECT count(*) FROM state.states WHERE name = 'sw_gone'}),
	'0', 'the dropped state is gone');
for my $w ('reader', 'writer')
{
	my $bg = $waiters{$w}{bg};
	$bg->{stderr} = '';
	my $out = $bg->query(q{SELECT 'after-cancel'});
	like($bg->{stderr}, qr/57014/, "$w session: its statement was cancelled (57014)")
	  or diag $bg->{stderr};
	is($out, 'after-cancel', "$w session: goes on after the cancel");
	$bg->{stderr} = '';
}

is($node->safe_psql('postgres', q{SELECT state.value_get('sw', 'a', ''::text)}),
	'A', 'after SIGCONT a new session reads the rocksdb state');
for my $w ('reader', 'writer')
{
	my $bg = $waiters{$w}{bg};
	is($bg->query_safe(q{SELECT state.value_get('sw', 'a', ''::text)}),
		'A', "after SIGCONT the cancelled $w session reads the rocksdb state");
	$bg->query_safe(qq{SELECT state.value_set('sw', '$w', repeat('y', 50000))});
	is($node->safe_psql('postgres', qq{SELECT length(state.value_get('sw', '$w', ''::text))}),
		'50000', "after SIGCONT the cancelled $w session writes a large value");
	$bg->quit;
}
is(worker_pid($node), $wpid, 'the same worker still runs');
$node->safe_psql('postgres', q{SELECT state.drop_state('sw'); SELECT state.drop_state('heap1');});

############################################################ canonical round trip

$node->safe_psql('postgres', 'CREATE DATABASE rt');
$node->safe_psql('rt', 'CREATE EXTENSION state_backend');
$node->safe_psql('rt', $fp_function);
$node->safe_psql('rt', q{ALTER DATABASE rt SET state_backend.backend = 'memory'});
fill($node, 'rt', 'c');
my $backends_sql = q{SELECT string_agg(DISTINCT backend, ',') FROM state.states};
is($node->safe_psql('rt', $backends_sql), 'memory', 'round trip: memory states to start with');
my $fp_mem = $node->safe_psql('rt', q{SELECT fp('c\_%')});
like($fp_mem, qr/c_m:map:12:/, 'round trip: the map has its keys, NULL values included');
is($node->safe_psql('rt', q{SELECT count(*) FROM state.map_entries('c_m', 'only-null', 0, 0::numeric) WHERE value IS NULL}),
	'1', 'round trip: a NULL map value is stored as NULL');

my $snaproot = $node->basedir . '/snapshots';
mkdir $snaproot or die "mkdir $snaproot: $!";
my $n = 0;
sub canonical_snapshot
{
	my ($db) = @_;
	$n++;
	my $path = "$snaproot/canonical$n";
	my $id = $node->safe_psql($db, qq{SELECT state.snapshot('$path', 'canonical')});
	is(wait_snapshot_status($node, $id, dbname => $db), 'completed',
		"canonical snapshot $id to $path completed");
	return $path;
}

my $p1 = canonical_snapshot('rt');
$node->safe_psql('rt', q{SELECT state.value_set('c_v', 'k1', -1::bigint)});    # changed, then replaced
my $restored = $node->safe_psql('rt', qq{SELECT state.restore('$p1', backend => 'rocksdb')});
cmp_ok($restored, '>', 0, "memory -> rocksdb: $restored entries restored");
is($node->safe_psql('rt', $backends_sql), 'rocksdb', 'memory -> rocksdb: the states are rocksdb states');
is($node->safe_psql('rt', q{SELECT fp('c\_%')}), $fp_mem, 'memory -> rocksdb: identical contents');

my $p2 = canonical_snapshot('rt');
$restored = $node->safe_psql('rt', qq{SELECT state.restore('$p2', backend => 'memory')});
cmp_ok($restored, '>', 0, "rocksdb -> memory: $restored entries restored");
is($node->safe_psql('rt', $backends_sql), 'memory', 'rocksdb -> memory: the states are memory states');
is($node->safe_psql('rt', q{SELECT fp('c\_%')}), $fp_mem, 'rocksdb -> memory: identical contents');

# The postgres database was not touched by the restores.
is($node->safe_psql('postgres', q{SELECT fp('d\_%')}), $fp_before,
	'the restores left the other database alone');

is_deeply([ log_crashes($node, $log_offset) ], [], 'node rocks: no crash since the clean restart');

############################################################ a drop survives a crash

# drop_state waits until the worker removed the state's stored descriptor,
# so a crash right after does not bring the state back.
$node->safe_psql('postgres', q{
SELECT state.create_state('dd', 'value', 'text', 'bigint', backend => 'rocksdb');
SELECT state.value_set('dd', 'a', 1::bigint);
SELECT state.drop_state('dd');
});
{
	my $offset = -s $node->logfile;
	my $old = worker_pid($node);
	ok(kill('KILL', $old), 'drop then crash: SIGKILL sent to the worker');
	my $wpid = wait_for_crash_restart($node, $offset);
	ok(defined $wpid && $wpid != $old, 'drop then crash: a new state worker runs');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM state.states WHERE name = 'dd'}),
		'0', 'drop then crash: the dropped rocksdb state stays dropped');
}

$node->stop('fast');

############################################################ node chk

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $shared = "$chkroot/shared";
my $cnode = new_state_node(
	'chk',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.checkpoints_retained = 2\n"
	  . "jit = off\n");
ok(defined wait_for_worker($cnode), 'node chk: state worker running');
my $clog_offset = -s $cnode->logfile;

sub checkpoint
{
	my ($name) = @_;
	my $id = $cnode->safe_psql('postgres', 'SELECT state.snapshot()');
	is(wait_snapshot_status($cnode, $id), 'completed', "$name: checkpoint $id completed");
	return $id;
}

sub snapshot_row
{
	my ($id) = @_;
	my ($bytes, $incr, $entries) = split /\|/, $cnode->safe_psql('postgres',
		"SELECT bytes, incremental, entries FROM state.snapshots WHERE id = $id");
	return ($bytes, $incr, $entries);
}

sub sizes_of
{
	my ($dir, @names) = @_;
	my $s = 0;
	$s += -s "$dir/$_" for @names;
	return $s;
}

############################################################ incremental checkpoints

$cnode->safe_psql('postgres',
	q{SELECT state.create_state('big', 'value', 'integer', 'bigint', backend => 'rocksdb')});
is( $cnode->safe_psql('postgres',
		q{SELECT count(state.value_set('big', i, i)) FROM generate_series(1, 1000000) i}),
	'1000000', '1M keys written to a rocksdb state');

my $c1 = checkpoint('first');
my @shared1 = dir_files($shared);
my $shared1_bytes = sizes_of($shared, @shared1);
my ($b1, $i1, $e1) = snapshot_row($c1);
is($e1, '1000000', "checkpoint $c1 holds 1000000 entries");
is($i1, 'f', "checkpoint $c1 is not incremental (nothing to share yet)");
cmp_ok($shared1_bytes, '>', 0, "checkpoint $c1 put " . scalar(@shared1) . " files ($shared1_bytes bytes) in shared/");

# Change 1% of the keys.
is( $cnode->safe_psql('postgres',
		q{SELECT count(state.value_set('big', i, -i)) FROM generate_series(100, 1000000, 100) i}),
	'10000', '1% of the keys changed');
my $c2 = checkpoint('second');
my %had = map { $_ => 1 } @shared1;
my @new2 = grep { !$had{$_} } dir_files($shared);
my $new2_bytes = sizes_of($shared, @new2);
my ($b2, $i2, $e2) = snapshot_row($c2);
is($e2, '1000000', "checkpoint $c2 holds 1000000 entries");
is($i2, 't', "checkpoint $c2 is incremental");
cmp_ok($b2, '<', $b1 * 0.10,
	"checkpoint $c2 wrote $b2 bytes, under 10% of the $b1 of checkpoint $c1");
cmp_ok($new2_bytes, '<', $shared1_bytes * 0.10,
	"the files checkpoint $c2 added to shared/ (" . scalar(@new2) . ", $new2_bytes bytes) are under 10% of those of checkpoint $c1");
ok(scalar(@new2) <= scalar(@shared1) && scalar(@new2) >= 1,
	'... and few: ' . scalar(@new2) . ' new files, ' . scalar(@shared1) . ' before');

# Keys of a sample that do not have the expected value: the new ones
# (-i for every 100th key) or the old ones (i).
sub sample_bad
{
	my ($new) = @_;
	my $changed = $new ? 'i % 100 = 0' : 'false';
	return $cnode->safe_psql('postgres', qq{SELECT count(*) FROM generate_series(1, 1000000, 499) i
  WHERE state.value_get('big', i, 0::bigint) IS DISTINCT FROM (CASE WHEN $changed THEN -i ELSE i END)});
}
my $sample_changed = q{SELECT count(*) FROM generate_series(1, 1000000, 499) i WHERE i % 100 = 0};
cmp_ok($cnode->safe_psql('postgres', $sample_changed), '>', 10, 'the sample has changed keys');
is(sample_bad(1), '0', 'live values: the new ones');

is($cnode->safe_psql('postgres', "SELECT state.restore('$chkroot/chk-$c1')"),
	'1000000', "restore from the older checkpoint $c1: 1000000 entries");
is(sample_bad(0), '0', '... a sample has the old values');
is($cnode->safe_psql('postgres', q{SELECT entries FROM state.states WHERE name = 'big'}),
	'1000000', '... and 1000000 entries');
is($cnode->safe_psql('postgres', "SELECT state.restore('$chkroot/chk-$c2')"),
	'1000000', "restore from the newer checkpoint $c2: 1000000 entries");
is(sample_bad(1), '0', '... a sample has the new values');

############################################################ retention

# files_of($id): { shared => [names under shared/], all => [[path, size]] }
# from chk-<id>/rocksdb/FILES.
sub files_of
{
	my ($id) = @_;
	my $dir = "$chkroot/chk-$id";
	my (@shared, @all);
	for my $l (split /\n/, slurp_file("$dir/rocksdb/FILES"))
	{
		next unless $l =~ /^(sst|meta) (\S+) (\S+) (\d+) ([0-9A-F]+)(?: [0-9a-f]{64})?$/;
		my ($where, $size) = ($3, $4);
		push @all, [ "$dir/$where", $size ];
		push @shared, $1 if $where =~ m{^\.\./shared/([^/]+)$};
	}
	return { shared => \@shared, all => \@all };
}

# After each checkpoint: every file the complete checkpoints' FILES list
# exists with the listed size, and every SST a state's .sst.lst names is
# in FILES.  Retention runs right after a checkpoint is marked completed,
# so wait (bounded) until exactly the newest two remain and shared/ holds
# no file they do not list; the files they list must exist all along.
sub retention_state
{
	my @complete = complete_checkpoints($chkroot);
	my %ref;
	my @missing;
	my @badlst;
	for my $id (@complete)
	{
		my $f = files_of($id);
		push @missing, "chk-$id lists no rocksdb file" unless @{ $f->{all} };
		$ref{$_} = 1 for @{ $f->{shared} };
		for my $e (@{ $f->{all} })
		{
			my ($path, $size) = @$e;
			push @missing, "$path (want $size, has " . (-s $path // 'none') . ')'
			  unless -f $path && -s $path == $size;
		}
		my %in_files = map { $_->[0] => 1 } @{ $f->{all} };
		for my $lst (glob("$chkroot/chk-$id/db-*/*.sst.lst"))
		{
			for my $l (split /\n/, slurp_file($lst))
			{
				next unless $l =~ /^sst \S+ (\S+)$/;
				push @badlst, "$lst: $1"
				  unless $in_files{"$chkroot/chk-$id/$1"} && -f "$chkroot/chk-$id/$1";
			}
		}
	}
	my @unref = grep { !$ref{$_} } dir_files($shared);
	return (\@complete, \@missing, \@badlst, \@unref);
}

my %ever_shared;
sub check_retention
{
	my ($name, @expect) = @_;
	my ($complete, $missing, $badlst, $unref) = retention_state();
	my @missing_first = @$missing;
	my $end = time() + $TIMEOUT;
	while (time() < $end
		&& (join(',', @$complete) ne join(',', @expect) || @$unref || @$missing))
	{
		usleep(100_000);
		($complete, $missing, $badlst, $unref) = retention_state();
	}
	$ever_shared{$_} = 1 for dir_files($shared);
	is_deeply($complete, \@expect, "$name: the retained checkpoints are @expect");
	is_deeply([ @missing_first, @$missing ], [],
		"$name: every file the retained checkpoints list exists with its size");
	is_deeply($badlst, [], "$name: every SST a state list names is in FILES and exists");
	is_deeply($unref, [], "$name: no file in shared/ is unreferenced by the retained checkpoints")
	  or diag "shared/: " . join(' ', dir_files($shared));
}

check_retention('after the restores', $c1, $c2);
my @ids = ($c1, $c2);
for my $round (1 .. 5)
{
	# Overwrite 5% of the keys, add some, drop some: new SST files, and
	# with more L0 files, compactions that make older files obsolete.
	$cnode->safe_psql(
		'postgres', qq{
SELECT count(state.value_set('big', i, i * $round)) FROM generate_series($round, 1000000, 20) i;
SELECT count(state.value_set('big', 1000000 + $round * 1000 + i, i)) FROM generate_series(1, 1000) i;
SELECT count(state.value_set('big', i, NULL::bigint)) FROM generate_series($round * 1000, $round * 1000 + 99) i;
});
	my $id = checkpoint("round $round");
	push @ids, $id;
	check_retention("round $round", @ids[-2, -1]);
}
my @gone = grep { !-e "$shared/$_" } sort keys %ever_shared;
cmp_ok(scalar @gone, '>', 0,
	'files of checkpoints no longer retained were deleted from shared/ (' . scalar(@gone) . ' of ' . scalar(keys %ever_shared) . ')');

my $live = $cnode->safe_psql('postgres',
	q{SELECT (SELECT entries FROM state.states WHERE name = 'big') || ',' || state.value_get('big', 25, 0::bigint)});
like($live, qr/^\d+,125$/, "live after the rounds: $live (entries, big[25])");
my $restored_n = $cnode->safe_psql('postgres', "SELECT state.restore('$chkroot')");
is( $restored_n . ',' . $cnode->safe_psql('postgres', q{SELECT state.value_get('big', 25, 0::bigint)}),
	$live, "restore from the checkpoint root (chk-$ids[-1]): the same entries and values");

is_deeply([ log_crashes($cnode, $clog_offset) ], [], 'node chk: no crash');
$cnode->stop('fast');

done_testing();
