# A configuration reload that the state worker takes while it waits outside
# its main loop (here: its start, held by state_backend.start_hold) is
# applied in full once the main loop runs: state_backend.memory_limit
# reaches the state area, and state.worker counts the reload only then.
# Before, such a wait read the file and cleared the reload, and the memory
# limit set in that reload never reached the area.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node('reload_start',
	conf => "state_backend.checkpoint_dir = '$dir'\nstate_backend.memory_limit = '256MB'\n");
$node->safe_psql('postgres', q{
SELECT state.create_state('m', 'value', 'int', 'text');
SELECT count(state.value_set('m', i, 'v' || i)) FROM generate_series(1, 100) i;});
checkpoint_now($node);

# Held after loading the checkpoint: the worker waits in worker_pause.
$node->stop;
$node->append_conf('postgresql.conf', "state_backend.start_hold = on\n");
my $offset = -s $node->logfile;
$node->start;
ok($node->wait_for_log(qr/state_backend start holds after loading the checkpoint/, $offset),
	'the start holds after loading the checkpoint');

# One reload, taken by the held start: a smaller limit, and the hold lifted.
$node->append_conf('postgresql.conf',
	"state_backend.memory_limit = '8MB'\nstate_backend.start_hold = off\n");
$node->reload;
ok(defined wait_for_worker($node), 'state worker running');
# The worker counts it at its first round (within a minute, else fails below).
for (my $deadline = time() + 60; time() < $deadline; select(undef, undef, undef, 0.1))
{
	last if $node->safe_psql('postgres', q{SELECT value FROM state.worker WHERE name = 'reloads'}) > 0;
}
is($node->safe_psql('postgres', q{SELECT value FROM state.worker WHERE name = 'reloads'}),
	'1', 'the worker counts the reload its start took, once applied');
is($node->safe_psql('postgres', q{SELECT state.value_get('m', 7, '')}), 'v7',
	'the states are back from the checkpoint');

# 20 MB of values do not fit in 8 MB.
my $r = sql_error($node, q{
SELECT count(state.value_set('m', i, repeat('x', 1000))) FROM generate_series(1, 20000) i});
is($r->{sqlstate}, '54000', 'the limit of the reload taken during the start holds: out of state memory')
  or diag($r->{stderr});

$node->stop;
done_testing();
