# Logged states can be read on a hot standby.
#
# A primary and a streaming hot standby made with pg_basebackup share a
# checkpoint directory.  Logged states of every kind (value, list, map,
# reducing, and a transactional value state), heap and rocksdb, some made
# before the base backup and some after the standby started, are written
# by eight clients on the primary while four clients read them on the
# standby.  Every read on the standby is one the primary could have given
# at some moment: a writer's value never goes back nor passes what the
# writer wrote last, a list is always exactly 1..n and a map {1..n}, and
# every scan of the transactional state sees each committed transaction
# whole (its sum never changes).  What the standby's state worker has
# applied is never ahead of what the standby has replayed.  Once the
# standby has applied the primary's WAL, every logged state on it equals
# the primary's, and its lag is small.  On the standby every write fails
# with 25006, and so does any call on an unlogged state, saying that it is
# not logged.  Values with a TTL expire on the standby by the primary's TTL
# clock, which WAL carries.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Handle;
use POSIX ();
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $timeout = $PostgreSQL::Test::Utils::timeout_default;
my $dir = PostgreSQL::Test::Utils::tempdir();
my $chkroot = "$dir/checkpoints";
my $nwriters = 8;
my $nreaders = 4;
my $tsum = 1000 * $nwriters;    # the transactional states' constant sum

my $primary = new_state_node(
	'primary',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "synchronous_commit = on\nmax_connections = 30\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($primary), 'primary: state worker running');

# The states: <kind>_<backend>, h for heap, r for rocksdb.  Each writer
# (pgbench's client k) owns key k of v, l, m and r, and keys 2k and 2k+1 of
# t, between which its transactions move amounts.
my %create = (
	v => q{'value', 'int', 'bigint'},
	l => q{'list', 'int', 'int'},
	m => q{'map', 'int', 'text', map_key_type => 'int'},
	r => q{'reducing', 'int', 'bigint', reducer => 'sum'},
	t => q{'value', 'int', 'bigint', transactional => true},);

sub create_sql
{
	my ($name) = @_;
	my ($kind, $b) = split /_/, $name;
	my $backend = $b eq 'r' ? q{, backend => 'rocksdb'} : '';
	return "SELECT state.create_state('$name', $create{$kind}$backend, logged => true);\n";
}

# The pairs of a transactional state: 1000 on the even key, 0 on the odd
# one, in one transaction.
sub init_transactional
{
	my ($name) = @_;
	$primary->safe_psql('postgres',
		"BEGIN;\n"
		  . join('',
			map { "SELECT state.value_set('$name', " . (2 * $_) . ", 1000::bigint), state.value_set('$name', " . (2 * $_ + 1) . ", 0::bigint);\n" }
			  0 .. $nwriters - 1)
		  . "COMMIT;\n");
}

# Before the base backup: half of the states, with some data, an unlogged
# state on each backend and two logged states with a TTL.
my @before = qw(v_h l_r m_h r_r t_h);
my @after = qw(v_r l_h m_r r_h t_r);
my @logged = sort(@before, @after);
my $w = $nwriters - 1;
$primary->safe_psql('postgres',
	join('', map { create_sql($_) } @before) . qq{
SELECT state.create_state('ttl_h', 'value', 'int', 'text', ttl => interval '1 hour', logged => true);
SELECT state.create_state('ttl_r', 'value', 'int', 'text', backend => 'rocksdb', ttl => interval '1 hour', logged => true);
SELECT state.create_state('u_h', 'value', 'int', 'text');
SELECT state.create_state('u_r', 'value', 'int', 'text', backend => 'rocksdb');
SELECT state.value_set('u_h', 1, 'unlogged'), state.value_set('u_r', 1, 'unlogged');
SELECT count(state.value_set('v_h', k, 100::bigint)) FROM generate_series(0, $w) k;
SELECT count(state.reduce('r_r', k, 100::bigint)) FROM generate_series(0, $w) k;
SELECT count(state.list_add('l_r', k, i))
  FROM (SELECT k, i FROM generate_series(0, $w) k, generate_series(1, 100) i ORDER BY k, i) s;
SELECT count(state.map_put('m_h', k, i, 'v' || i)) FROM generate_series(0, $w) k, generate_series(1, 100) i;
});
init_transactional('t_h');

$primary->backup('b');
# A checkpoint taken after the backup: the standby has the WAL from its cut.
$primary->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

# The primary's WAL position now, as a number.
sub primary_lsn
{
	return $primary->safe_psql('postgres', q{SELECT pg_current_wal_lsn() - '0/0'::pg_lsn});
}

# wait_applied: until the standby has replayed the primary's WAL up to now
# and its state worker has applied it.
sub wait_applied
{
	my $target = primary_lsn();
	$primary->wait_for_catchup($standby, 'replay');
	return $standby->poll_query_until('postgres',
		"SELECT value >= $target FROM state.worker WHERE name = 'standby_applied_lsn'");
}

ok(wait_applied(), 'standby: its state worker applied the primary\'s WAL');
is($standby->safe_psql('postgres',
		qq{SELECT sum(state.value_get('v_h', k, 0::bigint)) FROM generate_series(0, $w) k}),
	100 * $nwriters, 'standby: reads a state of the checkpoint');

# After the standby started: the other half, made on the standby by their
# WAL records.
$primary->safe_psql('postgres', join('', map { create_sql($_) } @after));
init_transactional('t_r');
ok(wait_applied(), 'standby: applied the states created after it started');
is($standby->safe_psql('postgres',
		q{SELECT string_agg(name || ':' || kind || ':' || backend || ':' || transactional, ' ' ORDER BY name)
		  FROM state.states WHERE logged AND ttl IS NULL}),
	$primary->safe_psql('postgres',
		q{SELECT string_agg(name || ':' || kind || ':' || backend || ':' || transactional, ' ' ORDER BY name)
		  FROM state.states WHERE logged AND ttl IS NULL}),
	'standby: state.states lists the logged states as the primary does');
is($standby->safe_psql('postgres',
		q{SELECT sum(value) || ' ' || count(*) FROM state.entries('t_r', NULL::int, NULL::bigint)}),
	"$tsum " . (2 * $nwriters), 'standby: a transactional state created after it started');

############################################################ readers

# One read of a reader: for each backend, every writer's key of v, l, m and
# r (P lines), a scan of t (T), a scan of l (LE), the keys of v (K); then
# what the worker has applied and the standby replayed (A), and the views
# (S).
sub reader_sql
{
	my $sql = '';
	for my $b ('h', 'r')
	{
		$sql .= qq{
SELECT 'P', '$b', k, v, lc, ll, mc, ms, r,
       CASE WHEN ms = 0 THEN 'ok'
            WHEN state.map_contains('m_$b', k, ms::int)
             AND state.map_get('m_$b', k, ms::int, ''::text) = 'v' || ms THEN 'ok'
            ELSE 'bad' END
  FROM (SELECT k,
               state.value_get('v_$b', k, 0::bigint) AS v,
               (SELECT CASE WHEN l IS NULL THEN 0
                            WHEN l = ARRAY(SELECT generate_series(1, cardinality(l))) THEN cardinality(l)
                            ELSE -1 END
                  FROM state.list_get('l_$b', k, NULL::int[]) l) AS lc,
               coalesce(state.list_length('l_$b', k), 0) AS ll,
               (SELECT CASE WHEN count(*) = 0 THEN 0
                            WHEN count(*) = max(mk) AND min(mk) = 1 AND bool_and(mv = 'v' || mk) THEN count(*)
                            ELSE -1 END
                  FROM state.map_entries('m_$b', k, NULL::int, NULL::text) e(mk, mv)) AS mc,
               coalesce(state.map_size('m_$b', k), 0) AS ms,
               state.value_get('r_$b', k, 0::bigint) AS r
          FROM generate_series(0, $w) k OFFSET 0) s;
SELECT 'T', '$b', coalesce(sum(value), 0), count(*) FROM state.entries('t_$b', NULL::int, NULL::bigint);
SELECT 'LE', '$b', count(*),
       coalesce(sum(CASE WHEN value = ARRAY(SELECT generate_series(1, cardinality(value))) THEN 0 ELSE 1 END), 0)
  FROM state.entries('l_$b', NULL::int, NULL::int[]);
SELECT 'K', '$b', count(*) FROM state.keys('v_$b', NULL::int) k;
};
	}
	$sql .= q{
SELECT 'A', value, pg_last_wal_replay_lsn() - '0/0'::pg_lsn FROM state.worker WHERE name = 'standby_applied_lsn';
SELECT 'S', (SELECT count(*) FROM state.states WHERE logged), (SELECT count(*) FROM state.stats);
};
	return $sql;
}

my $stop = "$dir/stop_readers";
my @fields = qw(v lc ll mc ms r);
my $nlogged = scalar(@logged) + 2;

# A reader: one session on the standby reading in a loop until the stop
# file appears.  Its file gets "R" for every read, "V ..." for a read that
# breaks a rule, "X" for a read that failed (and "E ..." with the error,
# for the first ones); at the end the highest value it saw of each
# writer's key ("MAX b field k value") and "END".
sub reader
{
	my ($id) = @_;
	my $sql = reader_sql();
	open(my $log, '>>', "$dir/reader_$id") or die "reader $id: $!";
	$log->autoflush(1);
	my (%last, %max);
	my $printed = 0;
	my $report = sub {
		my ($line) = @_;
		print $log ($printed++ < 50 ? "$line\n" : substr($line, 0, 1) . "\n");
	};
	my $s = $standby->background_psql('postgres', on_error_stop => 0);
	$s->set_query_timer_restart;
	my $see = sub {
		my ($what, $value) = @_;
		$report->("V $what went back from $last{$what} to $value")
		  if defined $last{$what} && $value < $last{$what};
		$last{$what} = $value;
		$max{$what} = $value if !defined $max{$what} || $value > $max{$what};
	};
	until (-e $stop)
	{
		$s->{stderr} = '';
		my $out = $s->query($sql);
		if ($s->{stderr} ne '')
		{
			(my $e = $s->{stderr}) =~ s/\n/ /g;
			print $log "X\n";
			print $log "E $e\n" if $printed++ < 50;
			$s->{stderr} = '';
			next;
		}
		my $lines = 0;
		for my $line (split /\n/, $out)
		{
			my @f = split /\|/, $line, -1;
			$lines++;
			if ($f[0] eq 'P')
			{
				my ($b, $k, %v) = ($f[1], $f[2]);
				@v{@fields} = @f[3 .. 8];
				$report->("V list l_$b\[$k] is not 1..n") if $v{lc} < 0;
				$report->("V map m_$b\[$k] is not {1..n}") if $v{mc} < 0;
				$report->("V map m_$b\[$k] has no entry $v{ms} or not v$v{ms} ($f[9])")
				  if $f[9] ne 'ok';
				$see->("$b $_ $k", $v{$_}) for @fields;
			}
			elsif ($f[0] eq 'T')
			{
				$report->("V t_$f[1]: sum $f[2] over $f[3] keys, not $tsum over " . 2 * $nwriters)
				  if $f[2] != $tsum || $f[3] != 2 * $nwriters;
			}
			elsif ($f[0] eq 'LE')
			{
				$report->("V entries of l_$f[1]: $f[3] of $f[2] lists are not 1..n") if $f[3] != 0;
				$report->("V entries of l_$f[1]: $f[2] keys") if $f[2] > $nwriters;
			}
			elsif ($f[0] eq 'K')
			{
				$report->("V keys of v_$f[1]: $f[2]") if $f[2] > $nwriters;
				$see->("keys $f[1]", $f[2]);
			}
			elsif ($f[0] eq 'A')
			{
				$report->("V applied $f[1] is ahead of replayed $f[2]") if $f[1] > $f[2];
				$see->('applied', $f[1]);
			}
			elsif ($f[0] eq 'S')
			{
				$report->("V state.states: $f[1] logged states, not $nlogged") if $f[1] != $nlogged;
				$report->("V state.stats: $f[2] rows") if $f[2] < $nlogged;
			}
			else
			{
				$report->("V unexpected line: $line");
			}
		}
		# 2 x (16 P, T, LE, K) + A + S
		$report->("V a read gave $lines lines, not " . (2 * ($nwriters + 3) + 2))
		  if $lines != 2 * ($nwriters + 3) + 2;
		print $log "R\n";
	}
	$s->quit;
	print $log "MAX $_ $max{$_}\n" for sort grep { /^[hr] / } keys %max;
	print $log "END\n";
	close $log;
}

my %readers;
for my $id (1 .. $nreaders)
{
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		# The reader's sessions note every query: not in the test's output.
		Test::More->builder->output('/dev/null');
		Test::More->builder->failure_output('/dev/null');
		my $ok = eval { reader($id); 1 };
		if (!$ok)
		{
			append_to_file("$dir/reader_$id", "DIED $@\n");
		}
		POSIX::_exit($ok ? 0 : 1);
	}
	$readers{$id} = $pid;
}

# Reads made so far by each reader, failed ones too (or only those that
# succeeded, with $ok).
sub reads
{
	my ($ok) = @_;
	my $re = $ok ? qr/^R$/m : qr/^[RX]$/m;
	my %n;
	for my $id (1 .. $nreaders)
	{
		my $f = "$dir/reader_$id";
		$n{$id} = -f $f ? scalar(() = slurp_file($f) =~ /$re/g) : 0;
	}
	return \%n;
}

# Until every reader has tried to read at least once more than in $from.
sub wait_reads
{
	my ($from) = @_;
	my $deadline = time + $timeout;
	while (time < $deadline)
	{
		my $n = reads();
		return $n unless grep { $n->{$_} <= $from->{$_} } keys %$n;
		usleep(50_000);
	}
	return reads();
}

my $zero = { map { $_ => 0 } 1 .. $nreaders };
my $at_start = wait_reads($zero);
ok(!(grep { $at_start->{$_} == 0 } keys %$at_start), 'the readers are reading on the standby');

############################################################ writers

# Each client k: v[k] + 1, the next element n of l[k] and entry n of m[k],
# r[k] + 1, on both backends; then a transaction that moves an amount from
# t[2k] to t[2k+1] (or back) in two statements, on both backends.
my $script = q{
SELECT state.value_set('v_h', :client_id, state.value_get('v_h', :client_id, 0::bigint) + 1),
       state.value_set('v_r', :client_id, state.value_get('v_r', :client_id, 0::bigint) + 1);
SELECT state.list_add('l_h', :client_id, (state.list_length('l_h', :client_id) + 1)::int),
       state.list_add('l_r', :client_id, (state.list_length('l_r', :client_id) + 1)::int);
SELECT state.map_put('m_h', :client_id, n::int, 'v' || n)
  FROM (SELECT coalesce(state.map_size('m_h', :client_id), 0) + 1 AS n OFFSET 0) s;
SELECT state.map_put('m_r', :client_id, n::int, 'v' || n)
  FROM (SELECT coalesce(state.map_size('m_r', :client_id), 0) + 1 AS n OFFSET 0) s;
SELECT state.reduce('r_h', :client_id, 1::bigint), state.reduce('r_r', :client_id, 1::bigint);
\set a random(-50, 50)
BEGIN;
SELECT state.value_set('t_h', 2 * :client_id, state.value_get('t_h', 2 * :client_id, 0::bigint) - :a),
       state.value_set('t_r', 2 * :client_id, state.value_get('t_r', 2 * :client_id, 0::bigint) - :a);
SELECT state.value_set('t_h', 2 * :client_id + 1, state.value_get('t_h', 2 * :client_id + 1, 0::bigint) + :a),
       state.value_set('t_r', 2 * :client_id + 1, state.value_get('t_r', 2 * :client_id + 1, 0::bigint) + :a);
COMMIT;
};
my $before_writes = reads(1);
my $bench = start_pgbench($primary, "-n -c $nwriters -j 2 -T 15", { writers => $script },
	timeout => 120);
my $r = finish_pgbench($bench);
is($r->{ret}, 0, "the writers ran $r->{processed} transactions") or diag $r->{stderr};
cmp_ok($r->{processed}, '>', 0, 'the writers wrote');
my $after_writes = reads(1);
for my $id (1 .. $nreaders)
{
	cmp_ok($after_writes->{$id} - $before_writes->{$id}, '>', 0,
		"reader $id read while the writers wrote ("
		  . ($after_writes->{$id} - $before_writes->{$id}) . ' reads)');
}

############################################################ caught up

my $target = primary_lsn();
$primary->wait_for_catchup($standby, 'replay');
ok( $standby->poll_query_until('postgres',
		"SELECT value >= $target FROM state.worker WHERE name = 'standby_applied_lsn'"),
	'standby: applied the WAL of every write');

# Every logged state, as read on a server.
sub contents
{
	my ($node, $name) = @_;
	my ($kind) = split /_/, $name;
	my $sql =
	    $kind eq 'm'
	  ? "SELECT k, mk, mv FROM state.keys('$name', NULL::int) k,
	       LATERAL state.map_entries('$name', k, NULL::int, NULL::text) e(mk, mv) ORDER BY 1, 2"
	  : $kind eq 'l' ? "SELECT key, value FROM state.entries('$name', NULL::int, NULL::int[]) ORDER BY 1"
	  :                "SELECT key, value FROM state.entries('$name', NULL::int, NULL::bigint) ORDER BY 1";
	return $node->safe_psql('postgres', $sql);
}
for my $name (@logged)
{
	my $p = contents($primary, $name);
	isnt($p, '', "primary: $name holds entries");
	is(contents($standby, $name), $p, "standby: $name equals the primary's");
}
my $states_sql = q{SELECT string_agg(name || ' ' || entries, ', ' ORDER BY name)
  FROM state.states WHERE logged AND ttl IS NULL};
is($standby->safe_psql('postgres', $states_sql), $primary->safe_psql('postgres', $states_sql),
	'standby: state.states counts the entries the primary does');
is($standby->safe_psql('postgres',
		q{SELECT count(*) FROM state.stats s JOIN state.states USING (name) WHERE logged}),
	$nlogged, 'standby: state.stats has a row per logged state');

my %worker = map { split /\|/ } split /\n/,
  $standby->safe_psql('postgres', q{SELECT name, coalesce(value::text, 'NULL') FROM state.worker
	WHERE name IN ('standby_applied_lsn', 'standby_lag_bytes', 'standby_lag_ms')});
like($worker{standby_lag_bytes} // '', qr/^\d+$/, 'standby: standby_lag_bytes is a count of bytes');
cmp_ok($worker{standby_lag_bytes} // -1, '<', 1024 * 1024, "standby: lag after catch-up is small ($worker{standby_lag_bytes} bytes)")
  if ($worker{standby_lag_bytes} // '') =~ /^\d+$/;
like($worker{standby_lag_ms} // '', qr/^\d+$/, 'standby: standby_lag_ms is a count of milliseconds');
is( $standby->safe_psql('postgres',
		q{SELECT value <= pg_last_wal_replay_lsn() - '0/0'::pg_lsn FROM state.worker WHERE name = 'standby_applied_lsn'}),
	't', 'standby: what is applied is not ahead of what is replayed');

# The readers read on after the catch-up, then stop.
wait_reads(reads());
append_to_file($stop, '');
for my $id (1 .. $nreaders)
{
	waitpid($readers{$id}, 0);
	is($? >> 8, 0, "reader $id ended cleanly");
}

# What the writers wrote last, by backend, field and key.
my %final;
for my $b ('h', 'r')
{
	for (split /\n/, $primary->safe_psql('postgres', qq{
SELECT k, state.value_get('v_$b', k, 0::bigint), coalesce(state.list_length('l_$b', k), 0),
       coalesce(state.map_size('m_$b', k), 0), state.value_get('r_$b', k, 0::bigint)
  FROM generate_series(0, $w) k}))
	{
		my ($k, $v, $l, $m, $rr) = split /\|/;
		@final{ map { "$b $_ $k" } @fields } = ($v, $l, $l, $m, $m, $rr);
	}
}
my ($total, $violations, $invented) = (0, 0, 0);
my @shown;
for my $id (1 .. $nreaders)
{
	my $log = slurp_file("$dir/reader_$id");
	my $n = () = $log =~ /^R$/mg;
	my $failed = () = $log =~ /^X$/mg;
	note "reader $id: $n reads, $failed failed";
	$total += $n;
	cmp_ok($n, '>', 0, "reader $id made $n reads");
	like($log, qr/^END$/m, "reader $id finished") or diag $log =~ /^(DIED.*)$/m;
	for my $line (split /\n/, $log)
	{
		$violations++ if $line =~ /^[VX]\b/;
		push @shown, "reader $id: $line" if $line =~ /^[VE] / && @shown < 20;
	}
	for (grep { /^MAX / } split /\n/, $log)
	{
		my (undef, $b, $field, $k, $max) = split / /;
		my $key = "$b $field $k";
		next if defined $final{$key} && $max <= $final{$key};
		$invented++;
		push @shown, "reader $id saw $key = $max, the writer's last is " . ($final{$key} // 'none')
		  if @shown < 20;
	}
}
note "the readers made $total reads on the standby";
is($violations, 0, 'every read on the standby kept the rules (lists 1..n, maps {1..n}, transactions whole, nothing back)')
  or diag join("\n", @shown);
is($invented, 0, 'no read on the standby saw a value the writers had not written')
  or diag join("\n", @shown);

############################################################ refusals

for my $sql (
	q{SELECT state.value_set('v_h', 0, 1::bigint)},
	q{SELECT state.value_set('v_r', 0, 1::bigint)},
	q{SELECT state.reduce('r_h', 0, 1::bigint)},
	q{SELECT state.reduce('r_r', 0, 1::bigint)},
	q{SELECT state.list_add('l_h', 0, 1)},
	q{SELECT state.list_add('l_r', 0, 1)},
	q{SELECT state.map_put('m_h', 0, 1, 'x')},
	q{SELECT state.map_put('m_r', 0, 1, 'x')},
	q{SELECT state.clear('v_h', 0)},
	q{SELECT state.truncate('m_r')},
	q{BEGIN; SELECT state.value_set('t_h', 0, 1::bigint); COMMIT},
	q{SELECT state.create_state('x', 'value', 'int', 'int', logged => true)},
	q{SELECT state.drop_state('v_h')},
	q{SELECT state.snapshot()},
	q{SELECT state.value_set('u_h', 1, 'x')})
{
	my $e = sql_error($standby, $sql);
	is($e->{sqlstate}, '25006', "standby: $sql fails with 25006") or diag $e->{stderr};
}
for my $sql (
	q{SELECT state.value_get('u_h', 1, ''::text)},
	q{SELECT state.value_get('u_r', 1, ''::text)},
	q{SELECT count(*) FROM state.keys('u_h', NULL::int)})
{
	my $e = sql_error($standby, $sql);
	is($e->{sqlstate}, '25006', "standby: $sql (an unlogged state) fails with 25006")
	  or diag $e->{stderr};
	like($e->{message}, qr/not logged/, '... saying the state is not logged');
}
is($standby->safe_psql('postgres', q{SELECT state.value_get('v_h', 0, 0::bigint) = }
		  . $final{'h v 0'}),
	't', 'standby: the refused writes changed nothing');

############################################################ TTL

$primary->safe_psql('postgres',
	q{SELECT state.value_set('ttl_h', 1, 'fresh'), state.value_set('ttl_r', 1, 'fresh')});
ok(wait_applied(), 'standby: applied the TTL states\' writes');
my $ttl_probe = q{SELECT state.value_get('ttl_h', 1, 'absent'::text) || ' ' || state.value_get('ttl_r', 1, 'absent'::text)};
is($standby->safe_psql('postgres', $ttl_probe), 'fresh fresh',
	'standby: values with a TTL are there before they expire');
my $e = sql_error($standby, q{SELECT state._advance_ttl_clock(interval '2 hours')});
is($e->{sqlstate}, '25006', 'standby: _advance_ttl_clock fails with 25006') or diag $e->{stderr};
$primary->safe_psql('postgres', q{SELECT state._advance_ttl_clock(interval '2 hours')});
is($primary->safe_psql('postgres', $ttl_probe), 'absent absent',
	'primary: the values expired by its TTL clock');
ok($standby->poll_query_until('postgres', $ttl_probe, 'absent absent'),
	'standby: the values expired by the primary\'s TTL clock');

is(join("\n", log_crashes($primary, 0)), '', 'primary: no process crashed');
is(join("\n", log_crashes($standby, 0)), '', 'standby: no process crashed');
$standby->stop;
$primary->stop;
done_testing();
