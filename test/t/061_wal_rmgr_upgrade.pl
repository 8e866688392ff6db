# Upgrading from a release that logged under WAL resource manager id 128
# (RM_EXPERIMENTAL_ID, releases up to 1.6.0) to this one, which logs under
# its own id: no logged write is lost on the way.
#
# - A primary runs the 1.6.0 release (built from STATE_BACKEND_RELEASE_1_6_SOURCE,
#   which scripts/test.sh exports from the repository's history; without it
#   the test is skipped), with a logged heap state and a logged rocksdb state.
# - A hot standby runs this build with state_backend.wal_rmgr_128 = on, as a
#   standby upgraded before its primary: it follows the old primary, and its
#   logged states read what the primary wrote.
# - The primary crashes with logged writes since its last checkpoint, and
#   this build's library replaces the old one.  Without the setting the
#   start is refused (PostgreSQL cannot replay the old records: the log says
#   which id); with it every acknowledged write is back, new writes go under
#   the new id, and the standby follows those too.  Once a checkpoint has
#   passed, the setting goes and a restart keeps everything.

use strict;
use warnings;

use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $old_source = $ENV{STATE_BACKEND_RELEASE_1_6_SOURCE};
plan skip_all => 'STATE_BACKEND_RELEASE_1_6_SOURCE (the 1.6.0 release source) is not set'
  unless defined $old_source && -f "$old_source/Makefile";

my ($root, $bindir, @current) = install_release($old_source, 'v1.6.0');

my $chk = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $primary = PostgreSQL::Test::Cluster->new('old_primary', install_path => "$root$bindir/..");
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'state_backend'
state_backend.checkpoint_dir = '$chk'
});
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION state_backend;
SELECT state.create_state('lh', 'list', 'int', 'int', logged => true);
SELECT state.create_state('lr', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
});

# Appends $from..$to to both lists on $node (10 keys).
sub append_range
{
	my ($node, $from, $to) = @_;
	$node->safe_psql('postgres', qq{
SELECT count(state.list_add(s, i % 10, i)) FROM generate_series($from, $to) i, unnest(ARRAY['lh', 'lr']) s});
	return;
}

# Per list, the number of elements and their sum.
my $read = q{SELECT string_agg(s || ' ' || n || ' ' || t, ', ' ORDER BY s) FROM (
  SELECT s, count(e) AS n, coalesce(sum(e), 0) AS t
    FROM unnest(ARRAY['lh', 'lr']) s, generate_series(0, 9) k,
         unnest(state.list_get(s, k, '{}'::int[])) e GROUP BY s) x};

sub expected
{
	my ($n) = @_;
	my $sum = $n * ($n + 1) / 2;
	return "lh $n $sum, lr $n $sum";
}

# Polls $node until it reads what $n appends give (true), or times out.
sub reads
{
	my ($node, $n) = @_;
	my $want = expected($n);
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	my $out = '';
	while (time() < $deadline)
	{
		my ($ret, $o) = $node->psql('postgres', $read);
		$out = $o;
		return 1 if $ret == 0 && $o eq $want;
		sleep 1;
	}
	diag($node->name . " reads '$out', not '$want'");
	return 0;
}

append_range($primary, 1, 100);
$primary->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
$primary->backup('b');

############################################################ a new standby of the old primary

my $standby = PostgreSQL::Test::Cluster->new('new_standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf', "state_backend.wal_rmgr_128 = on\n");
$standby->start;
# The standby serves from a checkpoint taken since its base backup.
$primary->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
append_range($primary, 101, 200);
ok(reads($standby, 200), 'a standby of this build follows the 1.6.0 primary (id 128 registered)');
like(slurp_file($standby->logfile),
	qr/registered custom resource manager "state_backend_1_6" with ID 128/,
	'the standby registered the old id beside its own');

############################################################ the primary crashes, then is upgraded

append_range($primary, 201, 300);
$primary->stop('immediate');
for my $f (@current)
{
	copy($f, "$root$f") or die "copy of $f failed: $!";
}
my $log_at = -s $primary->logfile;
ok(!$primary->start(fail_ok => 1), 'without state_backend.wal_rmgr_128 the start is refused');
like(slurp_file($primary->logfile, $log_at), qr/resource manager with ID 128 not registered/,
	'the log names the old id');

$primary->append_conf('postgresql.conf', "state_backend.wal_rmgr_128 = on\n");
$log_at = -s $primary->logfile;
$primary->start;
ok(reads($primary, 300), 'with it, every logged write of the old release is back');
append_range($primary, 301, 400);
ok(reads($primary, 400), 'new writes go on');
ok(reads($standby, 400), 'and the standby follows them');

# The new writes are under this build's id.
my $lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
append_range($primary, 401, 410);
my $wal = $primary->data_dir . '/pg_wal';
my $end = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my ($out, $err) = ('', '');
IPC::Run::run([ "$bindir/pg_waldump", '-p', $wal, '-s', $lsn, '-e', $end ],
	'>', \$out, '2>', \$err);
my %rmgr = map { $_ => 1 } $out =~ /rmgr: (custom\d+)/g;
is(join(' ', sort keys %rmgr), 'custom213', 'records of logged states are written under id 213 only');

############################################################ the setting goes

$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
$primary->adjust_conf('postgresql.conf', 'state_backend.wal_rmgr_128', 'off');
$primary->restart;
ok(reads($primary, 410), 'after a checkpoint the old id is no longer needed: a restart keeps every write');
$primary->stop('immediate');
$primary->start;
ok(reads($primary, 410), 'and so does a crash');
is_deeply([ log_crashes($primary, $log_at), log_crashes($standby) ], [],
	'no process crashed since the refused start');

$standby->stop;
$primary->stop;
done_testing();
