# The reservation of a transactional commit to a heap state is the apply's
# alone.  It was given back to the area just before the apply's writes, so
# a plain write running at the same moment took the memory and the
# committed value was lost ("the committed writes ... could not all be
# applied: out of state memory"), its table row kept.  Now the apply draws
# on the reservation and no other write takes it.
#
# With state_backend.memory_limit = 2MB, a transaction writes a value of
# about 190 kB to a transactional state and a table row; its apply sleeps
# (apply.key) while another session fills the area with plain writes until
# one fails.  The commit then ends without a warning, with its row and its
# value.

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

my $node = new_state_node('heap_reserve_race', conf => "state_backend.memory_limit = '2MB'\n");
$node->safe_psql('postgres', q{
CREATE TABLE t (k int);
SELECT state.create_state('tx', 'value', 'int', 'text', transactional => true);
SELECT state.create_state('nt', 'value', 'int', 'text');
});

my ($out, $err) = ('', '');
my $script = PostgreSQL::Test::Utils::tempdir() . '/commit.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
SET state_backend.fault_points = 'apply.key:sleep:3000';
BEGIN;
SELECT state.value_set('tx', 1, repeat(md5('1'), 6000));
INSERT INTO t VALUES (1);
COMMIT;
});
my $offset = -s $node->logfile;
my $h = IPC::Run::start(
	[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
	'>', \$out, '2>', \$err);
ok($node->wait_for_log(qr/fault point "apply.key" reached/, $offset),
	'the commit is in its apply');

# Fill the area with plain writes while the apply waits.
my ($ret, $fout, $ferr) = $node->psql('postgres', q{
DO $$ BEGIN
  FOR g IN 1..400 LOOP
    BEGIN
      PERFORM state.value_set('nt', g, repeat(md5(g::text), 1000 + g));
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'filled at %: % %', g, SQLSTATE, SQLERRM;
      EXIT;
    END;
  END LOOP;
END $$;
});
like($ferr, qr/filled at \d+: 54000/, 'the plain writes fill the area');

my $ended = 0;
for (my $i = 0; $i < 300 && !$ended; $i++)
{
	$h->pump_nb;
	$ended = !$h->pumpable;
	usleep(100_000) unless $ended;
}
ok($ended, 'the commit returns');
$h->kill_kill unless $ended;
$h->finish;
unlike($err, qr/could not all be applied/, 'no write of the commit is reported lost');
is($node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM t) || '/' || coalesce(length(state.value_get('tx', 1, NULL::text)), 0)"),
	'1/192000', 'the row and the whole value of the commit are there');

$node->stop;
done_testing();
