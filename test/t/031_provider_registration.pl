# Registering backends through the provider API: a provider of another
# library (test/modules/test_provider, built here and preloaded by absolute
# path) registers with the name, id and API version its settings give.
#
# - A valid one is a registered backend: state_backend.backend accepts its
#   name, and the error for an unknown backend lists it.
# - A duplicate name, a duplicate id, an id of the host's range, a bad name,
#   another API version (the message names the library and both versions)
#   or a struct of another size than the host's, as a build against another
#   release of the header has (the message names the struct and both sizes),
#   stops the server's start with a message naming what is wrong; LOAD of a
#   provider in a session refuses.
# - After each refused start, the server starts again as it was, with every
#   state it had: nothing stored is lost.

use strict;
use warnings;

use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

# Build the test provider in a directory of this test's.
my $build = build_test_module('test_provider');
ok(-f "$build/test_provider.so", 'the test provider builds against the installed API header');

my $chk = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $base = "state_backend.checkpoint_dir = '$chk'\n";
my $libs = "state_backend,state_backend_lmdb,$build/test_provider.so";

my $node = new_state_node('registration', conf => $base . "shared_preload_libraries = '$libs'\n");
ok(defined wait_for_worker($node), 'the server starts with a third provider');
my $r = sql_error($node, "SELECT state.create_state('x', 'value', backend => 'nosuch')");
is($r->{sqlstate}, '22023', 'an unknown backend: 22023');
my ($ret, $stdout, $stderr) = $node->psql('postgres', q{
DO $$ BEGIN PERFORM state.create_state('x', 'value', backend => 'nosuch');
EXCEPTION WHEN invalid_parameter_value THEN
  DECLARE h text; BEGIN GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT; RAISE NOTICE '%', h; END;
END $$});
like($stderr, qr/memory, filesystem, rocksdb, lmdb, and test_provider/,
	'the registered backends are listed, the test provider among them');
is($node->safe_psql('postgres', q{SET state_backend.backend = 'test_provider'; SHOW state_backend.backend}),
	'test_provider', 'state_backend.backend accepts its name');
$r = sql_error($node, q{SET state_backend.backend = 'nosuch'});
is($r->{sqlstate}, '22023', 'and refuses a name nobody registered');

# What must survive every refused start.
$node->safe_psql('postgres', q{
SELECT state.create_state('kept', 'value', 'int', 'text');
SELECT state.create_state('kept_lmdb', 'value', 'int', 'text', backend => 'lmdb');
SELECT count(state.value_set('kept', i, 'v' || i)) FROM generate_series(1, 1000) i;
SELECT count(state.value_set('kept_lmdb', i, 'l' || i)) FROM generate_series(1, 1000) i;
});
my $fp = q{SELECT string_agg(name || '=' || entries, ',' ORDER BY name) FROM state.states};
my $before = $node->safe_psql('postgres', $fp);
is($before, 'kept=1000,kept_lmdb=1000', 'states in memory and lmdb');

$node->stop;

for my $case (
	[ 'a duplicate name', "test_provider.name = 'rocksdb'", qr/state backend "rocksdb" is already registered/ ],
	[ 'the alias of memory', "test_provider.name = 'jobmanager'", qr/state backend "jobmanager" is already registered/ ],
	[ 'a duplicate id', "test_provider.id = 16", qr/state backend id 16 of "test_provider" is already registered by backend "lmdb"/ ],
	[ 'an id of the host', "test_provider.id = 2", qr/state backend "test_provider" has id 2, outside 16\.\.32767/ ],
	[ 'a bad name', "test_provider.name = 'Bad-Name'", qr/invalid state backend name "Bad-Name"/ ],
	[ 'another API version', "test_provider.api_version = 3",
	  qr/state backend "test_provider" was built for provider API version 3, this server offers version \d+/ ],
	[ 'a StateInfo of another size', "test_provider.info_short = 8",
	  qr/state backend "test_provider" was built with another layout of provider API version \d+\n.*DETAIL:  Its StateInfo has (\d+) bytes, this server's has (\d+)\./ ])
{
	my ($what, $setting, $message) = @$case;
	my $conf = $node->data_dir . '/postgresql.conf';
	my $offset = -s $node->logfile;
	$node->append_conf('postgresql.conf', "$setting\n");
	ok(!$node->start(fail_ok => 1), "$what: the server does not start");
	ok($node->log_contains($message, $offset), "$what: the log says why");
	# Take the setting out again.
	my $text = PostgreSQL::Test::Utils::slurp_file($conf);
	$text =~ s/^\Q$setting\E\n//m;
	open(my $fh, '>', $conf) or die "$conf: $!";
	print $fh $text;
	close $fh;
}

$node->start;
wait_for_worker($node);
$node->poll_query_until('postgres', "SELECT count(*) = 2 FROM state.states") or die 'states not back';
is($node->safe_psql('postgres', $fp), $before, 'after the refused starts every state is back');
is($node->safe_psql('postgres', "SELECT state.value_get('kept_lmdb', 500, ''::text)"), 'l500',
	'with its values');
$node->stop;

# A provider not in shared_preload_libraries: LOAD in a session refuses.
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'state_backend,state_backend_lmdb'\n");
$node->start;
wait_for_worker($node);
$r = sql_error($node, "LOAD '$build/test_provider.so'");
is($r->{sqlstate}, '55000', 'LOAD of a provider in a session: 55000');
like($r->{message}, qr/must be registered while shared_preload_libraries is loaded/, 'it says why');
is($node->safe_psql('postgres', $fp), $before, 'and changes nothing');
$node->stop;

done_testing();
