# Helpers shared by the TAP tests of state_backend (test/t/*.pl).
#
# The tests load this with
#   use FindBin;
#   use lib "$FindBin::RealBin/../perl";
#   use StateBackendTAP;

package StateBackendTAP;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use Time::HiRes qw(usleep);
use File::Path ();
use FindBin;
use Test::More;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

our @EXPORT = qw(
  new_state_node
  sql_error
  worker_pids
  worker_pid
  wait_for_worker
  reload_worker
  log_crashes
  run_pgbench
  install_release
  psql_nodie
  build_test_module
);

our $WORKER_TYPE = 'state_backend worker';

# Under scripts/sanitize.sh (STATE_BACKEND_SANITIZE set), a node's restart
# is a stop and a start: "pg_ctl restart" starts the binary postmaster.opts
# names, which is the real postgres, not the wrapper that runs it under
# Valgrind, so a test would go on without Valgrind after its first restart.
if ($ENV{STATE_BACKEND_SANITIZE})
{
	no warnings 'redefine';
	*PostgreSQL::Test::Cluster::restart = sub {
		my ($self) = @_;
		$self->stop('fast');
		$self->start;
		return;
	};
}

# new_state_node($name, preload => 1, conf => "extra lines", extension => 1,
#                init => { allows_streaming => 1 })
#
# A fresh cluster that preloads the library (unless preload => 0), started,
# with the extension created in database "postgres" (unless extension => 0).
sub new_state_node
{
	my ($name, %opts) = @_;
	my $preload = exists $opts{preload} ? $opts{preload} : 1;
	my $extension = exists $opts{extension} ? $opts{extension} : $preload;

	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opts{init} // {} });
	# lmdb => 1: the lmdb provider too (contrib/lmdb), a backend of another library.
	my $libraries = $opts{lmdb} ? 'state_backend,state_backend_lmdb' : 'state_backend';
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = '$libraries'\n")
	  if $preload;
	# Keep logs readable: pgbench runs thousands of statements.
	$node->append_conf('postgresql.conf', "log_statement = none\n");
	# Under Valgrind the state worker takes many times as long for each
	# request: a session waits for it up to 10 minutes, not 30 s (a test's
	# own setting, after this, still applies).
	$node->append_conf('postgresql.conf', "state_backend.request_timeout = '10min'\n")
	  if $preload && $ENV{STATE_BACKEND_SANITIZE};
	$node->append_conf('postgresql.conf', $opts{conf}) if defined $opts{conf};
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION state_backend')
	  if $extension;
	return $node;
}

# sql_error($node, $sql, %psql_params)
#
# Runs $sql expecting it to fail and returns a hash reference:
#   { ret, stdout, stderr, sqlstate, message }
# taken from the first ERROR of psql's verbose error report.
sub sql_error
{
	my ($node, $sql, %params) = @_;
	my $dbname = delete $params{dbname} // 'postgres';
	my ($ret, $stdout, $stderr) =
	  $node->psql($dbname, "\\set VERBOSITY verbose\n" . $sql, %params);
	my %r = (ret => $ret, stdout => $stdout, stderr => $stderr);
	if ($stderr =~ /^(?:psql:[^\n]*?)?ERROR:\s+([0-9A-Z]{5}):\s+([^\n]*)/m)
	{
		$r{sqlstate} = $1;
		$r{message} = $2;
	}
	else
	{
		$r{sqlstate} = '';
		$r{message} = '';
	}
	return \%r;
}

# PIDs of the state worker(s), as a list (sorted).
sub worker_pids
{
	my ($node) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = '$WORKER_TYPE' ORDER BY pid"
	);
	return grep { $_ ne '' } split /\n/, $out;
}

# The state worker's PID, or undef when there is none.
sub worker_pid
{
	my @p = worker_pids(@_);
	return $p[0];
}

# wait_for_worker($node, not => $old_pid, timeout => 60)
#
# Polls until exactly one state worker runs (and its PID differs from
# $old_pid, when given) and returns its PID; undef on timeout.  Connection
# failures (server restarting) are retried.
sub wait_for_worker
{
	my ($node, %opts) = @_;
	my $old = $opts{not};
	my $timeout = $opts{timeout} // 60;
	my $deadline = time() + $timeout;
	my $query =
	  "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = '$WORKER_TYPE'";
	while (time() < $deadline)
	{
		my ($ret, $out, $err) = $node->psql('postgres', $query);
		if ($ret == 0 && $out =~ /^(\d+)$/)
		{
			my $pid = $1;
			return $pid if !defined $old || $pid != $old;
		}
		usleep(100_000);
	}
	return undef;
}

# reload_worker($node, timeout => 60)
#
# Reloads the configuration and waits until the state worker has applied it
# (state.worker's "reloads" counts one more): from then on its settings,
# fault points included, are the file's.  True once it has, false on
# timeout (a worker that serves from inside a snapshot or a checkpoint
# applies it only after).  Should another worker run meanwhile (a crash
# restart zeroes the count), it reloads again and waits for that one.
sub reload_worker
{
	my ($node, %opts) = @_;
	my $q = q{SELECT string_agg(coalesce(value::text, '0'), ' ' ORDER BY name) FROM state.worker
 WHERE name IN ('pid', 'reloads')};
	my ($pid, $before) = split / /, $node->safe_psql('postgres', $q);
	$node->reload;
	my $deadline = time() + ($opts{timeout} // 60);
	while (time() < $deadline)
	{
		my ($ret, $out) = $node->psql('postgres', $q);
		if ($ret == 0 && $out =~ /^(\d+) (\d+)$/)
		{
			return 1 if $1 == $pid && $2 > $before;
			if ($1 != $pid && $1 != 0)
			{
				($pid, $before) = ($1, $2);
				$node->reload;
			}
		}
		usleep(50_000);
	}
	return 0;
}

# Lines of the server log (from byte $offset on) that show a process dying
# by a signal or with an exit code that forces a crash restart, or a PANIC.
sub log_crashes
{
	my ($node, $offset) = @_;
	my $log = slurp_file($node->logfile, $offset // 0);
	my @bad = grep {
		/terminated by signal|exited with exit code [2-9]|exited with exit code \d\d|\bPANIC:|TRAP:|terminating any other active server processes/
	} split /\n/, $log;
	return @bad;
}

# run_pgbench($node, $opts, \%files, timeout => 120)
#
# Like $node->pgbench, but bounded in time (a hang in the server must fail
# the test, not block it) and returning what happened instead of asserting:
#   { ret (exit status, -1 on timeout), stdout, stderr, processed, total }
# %files maps script names (made unique under the node's base directory) to
# their contents.
my $script_seq = 0;

# pgbench_command: the pgbench command line for a node, options and
# scripts (written under the node's base directory).
sub pgbench_command
{
	my ($node, $opts, $files) = @_;
	my @cmd = ('pgbench', '-h', $node->host, '-p', $node->port,
		split(/\s+/, $opts));
	for my $fn (sort keys %$files)
	{
		$script_seq++;
		my $path = $node->basedir . "/pgbench_${script_seq}_$fn";
		unlink $path;
		append_to_file($path, $files->{$fn});
		push @cmd, '-f', $path;
	}
	push @cmd, 'postgres';
	return @cmd;
}

sub run_pgbench
{
	my ($node, $opts, $files, %params) = @_;
	my $timeout = $params{timeout} // 120;
	my @cmd = pgbench_command($node, $opts, $files);

	my ($stdout, $stderr) = ('', '');
	my $ret;
	my $timer = IPC::Run::timeout($timeout, exception => 'pgbench timed out');
	eval {
		IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr, $timer);
		$ret = $? >> 8;
		1;
	} or do {
		my $e = $@;
		die $e unless $e =~ /pgbench timed out/;
		$ret = -1;
		diag "pgbench did not finish within $timeout s: @cmd";
	};
	my %r = (ret => $ret, stdout => $stdout, stderr => $stderr);
	if ($stdout =~ m{number of transactions actually processed: (\d+)(?:/(\d+))?})
	{
		$r{processed} = $1;
		$r{total} = $2;
	}
	else
	{
		$r{processed} = 0;
	}
	return \%r;
}

# start_pgbench: the same, in the background.  Returns a handle for
# finish_pgbench.
sub start_pgbench
{
	my ($node, $opts, $files, %params) = @_;
	my $timeout = $params{timeout} // 120;
	my @cmd = pgbench_command($node, $opts, $files);
	my $h = {
		stdout => '',
		stderr => '',
		timer => IPC::Run::timeout($timeout, exception => 'pgbench timed out'),
		cmd => \@cmd,
	};
	$h->{run} = IPC::Run::start(\@cmd, '>', \$h->{stdout}, '2>', \$h->{stderr},
		$h->{timer});
	return $h;
}

sub finish_pgbench
{
	my ($h) = @_;
	my $ret;
	eval {
		$h->{run}->finish;
		$ret = $h->{run}->result(0);
		1;
	} or do {
		my $e = $@;
		die $e unless $e =~ /pgbench timed out/;
		eval { $h->{run}->kill_kill; };
		$ret = -1;
		diag "pgbench did not finish in time: @{$h->{cmd}}";
	};
	my %r = (ret => $ret, stdout => $h->{stdout}, stderr => $h->{stderr});
	if ($h->{stdout} =~ m{number of transactions actually processed: (\d+)(?:/(\d+))?})
	{
		$r{processed} = $1;
		$r{total} = $2;
	}
	else
	{
		$r{processed} = 0;
	}
	return \%r;
}

# bg_error($session, $sql): runs $sql in a background_psql session (opened
# with on_error_stop => 0) expecting an error; returns the SQLSTATE (or '')
# and the whole stderr, and clears the session's stderr so that later
# query_safe calls work.
sub bg_error
{
	my ($bg, $sql) = @_;
	$bg->{stderr} = '';
	$bg->query("\\set VERBOSITY verbose\n" . $sql);
	my $stderr = $bg->{stderr};
	$bg->{stderr} = '';
	my $sqlstate = $stderr =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : '';
	return wantarray ? ($sqlstate, $stderr) : $sqlstate;
}

push @EXPORT, qw(start_pgbench finish_pgbench bg_error);

############################################################ snapshots

# checkpoint_dirs($root): hash reference { id => 1 if complete (has a
# MANIFEST), 0 if not } of the chk-<id> directories under $root.
sub checkpoint_dirs
{
	my ($root) = @_;
	my %r;
	opendir(my $dh, $root) or return \%r;
	for my $e (readdir $dh)
	{
		next unless $e =~ /^chk-(\d+)$/ && -d "$root/$e";
		$r{$1} = -f "$root/$e/MANIFEST" ? 1 : 0;
	}
	closedir $dh;
	return \%r;
}

# Sorted ids of the complete checkpoints under $root.
sub complete_checkpoints
{
	my ($root) = @_;
	my $d = checkpoint_dirs($root);
	return sort { $a <=> $b } grep { $d->{$_} } keys %$d;
}

# wait_snapshot_status($node, $id, dbname => 'postgres'): waits (bounded
# by the test timeout) for snapshot $id to finish; returns its status, or
# the error text if wait_snapshot raised one.
sub wait_snapshot_status
{
	my ($node, $id, %opts) = @_;
	my $dbname = $opts{dbname} // 'postgres';
	my $t = $PostgreSQL::Test::Utils::timeout_default;
	my ($ret, $out, $err) = $node->psql($dbname,
		"SELECT state.wait_snapshot($id, '$t s')");
	return $ret == 0 ? $out : "error: $err";
}

# checkpoint_now($node, dbname => 'postgres'): a checkpoint
# (state.snapshot() with no path), taken once no other snapshot runs (one
# that another session asked for refuses it with 55006; a checkpoint of
# the worker's own is waited for), and waited for: "completed", or the
# test dies with the error.
sub checkpoint_now
{
	my ($node, %opts) = @_;
	my $dbname = $opts{dbname} // 'postgres';
	my $t = $PostgreSQL::Test::Utils::timeout_default;
	return $node->safe_psql($dbname, qq{
DO \$\$
BEGIN
	FOR i IN 1 .. $t * 10 LOOP
		BEGIN
			PERFORM state.wait_snapshot(state.snapshot(), '$t s');
			RETURN;
		EXCEPTION WHEN object_in_use THEN
			PERFORM pg_sleep(0.1);
		END;
	END LOOP;
	RAISE EXCEPTION 'no checkpoint could start in % s', $t;
END \$\$;
SELECT 'completed';});
}

# wait_for_crash_restart($node, $log_offset): waits until the postmaster
# has reinitialised after a crash (log line after $log_offset), the server
# accepts connections and a state worker runs.  Returns the worker's PID
# (undef if none came up).
sub wait_for_crash_restart
{
	my ($node, $offset) = @_;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/,
		$offset);
	$node->poll_query_until('postgres', 'SELECT 1', '1')
	  or return undef;
	return wait_for_worker($node,
		timeout => $PostgreSQL::Test::Utils::timeout_default);
}

push @EXPORT, qw(checkpoint_dirs complete_checkpoints wait_snapshot_status checkpoint_now
  wait_for_crash_restart);

# standby_applied($primary, $standby): waits until $standby has replayed
# the WAL $primary has written so far and its state worker has applied it
# to its logged states.  Returns whether it did in the default timeout.
sub standby_applied
{
	my ($primary, $standby) = @_;
	my $target = $primary->safe_psql('postgres', q{SELECT pg_current_wal_lsn() - '0/0'::pg_lsn});
	$primary->wait_for_catchup($standby, 'replay');
	return $standby->poll_query_until('postgres',
		"SELECT value >= $target FROM state.worker WHERE name = 'standby_applied_lsn'");
}

push @EXPORT, qw(standby_applied);

# install_release($source, $name): a copy of the PostgreSQL installation
# (PostgreSQL finds its library and share directories relative to its
# binaries) with the release in $source built and installed into it.
# Returns ($root, $bindir, @current): the copy's root, where a node's
# install_path is "$root$bindir/..", and this build's installed files,
# which an upgrade copies over the old ones at "$root$file".
sub install_release
{
	my ($source, $name) = @_;
	my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
	chomp(my $bindir = `$pg_config --bindir`);
	chomp(my $libdir = `$pg_config --pkglibdir`);
	chomp(my $sharedir = `$pg_config --sharedir`);
	BAIL_OUT("$pg_config gave no installation directories")
	  unless $bindir =~ m{^/.+} && -d $bindir && -d $libdir && -d $sharedir;

	my $root = PostgreSQL::Test::Utils::tempdir() . "/install-$name";
	File::Path::make_path("$root$bindir", "$root$libdir", "$root$sharedir/extension");
	system('cp', '-a', "$bindir/.", "$root$bindir/") == 0 or die "copy of $bindir failed";
	system("cp -a $libdir/*.so $root$libdir/") == 0 or die "copy of $libdir failed";
	system('cp', '-a', "$sharedir/.", "$root$sharedir/") == 0 or die "copy of $sharedir failed";
	my @current = ("$libdir/state_backend.so", glob("$sharedir/extension/state_backend*"));

	my $build = PostgreSQL::Test::Utils::tempdir() . "/$name";
	system('cp', '-a', "$source/.", $build) == 0 or die "copy of $source failed";
	my $make = "make -s -j2 -C $build with_llvm=no PG_CONFIG=$pg_config";
	is(system("$make >$build/build.log 2>&1 && $make install DESTDIR=$root >>$build/build.log 2>&1"),
		0, "$name builds and installs into a copy of the installation")
	  or diag(slurp_file("$build/build.log"));
	return ($root, $bindir, @current);
}

# psql_nodie($node, @psql_args): $node->psql(@psql_args) in list context,
# that never dies.  PostgreSQL::Test::Cluster's psql rethrows what IPC::Run
# raises, and IPC::Run raises "Broken pipe" when psql exits before it has
# read its input, as it does against a server that is restarting; such a
# call returns (2, '', the error) instead.
sub psql_nodie
{
	my ($node, @args) = @_;
	my @r = eval { $node->psql(@args) };
	return @r if @r;
	my $e = $@ || 'psql returned nothing';
	return (2, '', "psql could not run: $e");
}

# build_test_module($name): test/modules/$name built with PGXS in a
# directory of the test's; returns that directory (the library is
# "$dir/$name.so").  A test checks that the library is there.
sub build_test_module
{
	my ($name) = @_;
	my $src = "$FindBin::RealBin/../modules/$name";
	my $build = PostgreSQL::Test::Utils::tempdir() . "/$name";
	system('cp', '-a', "$src/.", $build) == 0 or die "copy of $src failed";
	my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
	my ($out, $err) = run_command(
		[ 'make', '-s', '-C', $build, "PG_CONFIG=$pg_config", 'with_llvm=no' ]);
	diag("$out\n$err") unless -f "$build/$name.so";
	return $build;
}

# ------------------------------------------------------------ the rocksdb entry cache

my $stopped_worker;
END { kill('CONT', $stopped_worker) if $stopped_worker; }

# cache_fills($node): entries sessions stored in the shared entry cache of
# what they read in their views (state.worker; 0 while the worker has not
# opened the instance yet and shows no rocksdb figures).
sub cache_fills
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(max(value), 0) FROM state.worker WHERE name = 'rocksdb_session_cache_fills'");
}

# with_worker_stopped($node, $sql): psql_nodie's ($ret, $out, $err) of $sql
# in a session that never reads in a view, with the state worker stopped
# (SIGSTOP): only the shared entry cache can answer, and a read asked of the
# worker fails after 2 s (the session's state_backend.request_timeout).
sub with_worker_stopped
{
	my ($node, $sql) = @_;
	my $pid = worker_pid($node);
	kill 'STOP', $pid;
	$stopped_worker = $pid;
	my @r = psql_nodie($node, 'postgres',
		"SET state_backend.rocksdb_session_reads = off; SET state_backend.request_timeout = '2s'; $sql");
	kill 'CONT', $pid;
	$stopped_worker = undef;
	return @r;
}

# cache_race($node, $writer, $reader): for 15 s, two clients run $writer
# (pgbench: a write, then its acknowledged number recorded in a table), two
# run $reader (the recorded number, then the state: an error when the state
# holds less) and one takes a checkpoint every half second, so that views
# read what was written before; checks that each ran and that no read
# failed, and returns how many entries readers stored in the cache.
sub cache_race
{
	my ($node, $writer, $reader) = @_;
	my $flusher = "SELECT state.wait_snapshot(state.snapshot());\n\\sleep 500 ms\n";
	my $before = cache_fills($node);
	my $w = start_pgbench($node, '-n -c 2 -j 2 -T 15', { 'writer.sql' => $writer }, timeout => 120);
	my $r = start_pgbench($node, '-n -c 2 -j 2 -T 15', { 'reader.sql' => $reader }, timeout => 120);
	my $f = start_pgbench($node, '-n -c 1 -T 15', { 'flusher.sql' => $flusher }, timeout => 120);
	my $wr = finish_pgbench($w);
	my $rr = finish_pgbench($r);
	my $fr = finish_pgbench($f);
	is($wr->{ret}, 0, 'writers ran') or diag $wr->{stderr};
	is($rr->{ret}, 0, 'no read returned less than a write acknowledged before it')
	  or diag $rr->{stderr};
	is($fr->{ret}, 0, 'checkpoints ran') or diag $fr->{stderr};
	# Under Valgrind (scripts/sanitize.sh) a few reads in 15 s are its pace.
	cmp_ok($rr->{processed}, '>', $ENV{STATE_BACKEND_SANITIZE} ? 0 : 100,
		"readers read ($rr->{processed})");
	return cache_fills($node) - $before;
}

push @EXPORT, qw(cache_fills with_worker_stopped cache_race);

# held_at_fault_point($node, $point, $sql): a psql session that runs
# $sql (with SET state_backend.fault_points first, e.g.
# 'write.rocksdb_cache_fill:sleep:3000'), returned once the server logs
# that it reached $point; finish_held($held) ends it and returns its
# ($stdout, $stderr).
sub held_at_fault_point
{
	my ($node, $point, $sql) = @_;
	my $held = { in => '', out => '', err => '' };
	my $log_at = -s $node->logfile;
	$held->{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port, 'postgres' ],
		'<', \$held->{in}, '>', \$held->{out}, '2>', \$held->{err}, IPC::Run::timeout(60));
	$held->{in} .= "$sql\n";
	my $deadline = time() + 60;
	until (slurp_file($node->logfile, $log_at) =~ /fault point "\Q$point\E" reached/)
	{
		die "the session did not reach $point: $held->{err}" if time() > $deadline;
		$held->{h}->pump_nb;
		usleep(50_000);
	}
	return $held;
}

sub finish_held
{
	my ($held) = @_;
	$held->{in} .= "\\q\n";
	$held->{h}->finish;
	chomp $held->{out};
	return ($held->{out}, $held->{err});
}

push @EXPORT, qw(held_at_fault_point finish_held);

1;
