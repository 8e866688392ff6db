# drop_state of a transactional state while a commit of it is under way
# (past its pre-commit, before its commit record): the drop waits for the
# commit, which applies whole with no WARNING; then the state is gone.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('drop_during_commit');
ok(defined wait_for_worker($node), 'state worker running');

foreach my $backend ('memory', 'rocksdb')
{
	$node->safe_psql('postgres',
		"SELECT state.create_state('dx', 'value', 'int', 'text', backend => '$backend', transactional => true)");
	my $offset = -s $node->logfile;
	my ($stdout, $stderr) = ('', '');
	my $script = PostgreSQL::Test::Utils::tempdir() . "/commit_$backend.sql";
	PostgreSQL::Test::Utils::append_to_file($script, q{
SET state_backend.fault_points = 'commit.before_commit_record:sleep:3000';
BEGIN;
SELECT state.value_set('dx', 1, 'kept');
COMMIT;
});
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
		'>', \$stdout, '2>', \$stderr);
	$node->wait_for_log(qr/fault point "commit.before_commit_record" reached/, $offset);
	my $t0 = [ Time::HiRes::gettimeofday() ];
	$node->safe_psql('postgres', q{SELECT state.drop_state('dx')});
	my $waited = Time::HiRes::tv_interval($t0);
	$h->finish;
	is($h->result(0), 0, "$backend: the commit under way succeeded");
	unlike($stderr, qr/WARNING/, "$backend: with no warning after its commit record");
	ok($waited > 1, "$backend: the drop waited for it (${waited}s)");
	is($node->safe_psql('postgres', q{SELECT count(*) FROM state.states WHERE name = 'dx'}), '0',
		"$backend: then the state is gone");
}

$node->stop;
done_testing();
