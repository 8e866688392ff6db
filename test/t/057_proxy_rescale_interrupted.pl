# A proxy's rescale is all or nothing, even when its session dies.
#
# state.rescale_proxy restores the new parts on their servers (each restore
# commits there at once) before its own transaction switches the proxy to
# them.  Here the rescaling session is made to fail or die (the fault
# points of state_backend.fault_points: error, exit = FATAL, crash =
# SIGKILL, which restarts the proxy's server) at each of its steps, one
# way (2 parts to 1) or the other (1 to 2).  After each:
#
# - a proxy call either serves every key with the value it had, or refuses
#   with 55000 naming state.repair_proxy (an interrupted rescale that was
#   not put right yet), never a wrong or missing key;
# - once put right (state.repair_proxy, or the next rescale_proxy or
#   alter_proxy, which repair first) every key has its value through the
#   proxy, the parts the proxy names hold each key once, and the proxy is
#   on the old parts (undone) or, if the rescale had passed its point of no
#   return, on the new ones (finished);
# - the next rescale works (the parts' key groups do not overlap).
#
# Also: a rescale whose transaction is rolled back after it returned is
# finished by the repair, and its transaction cannot be prepared; a rescale
# that fails in the transaction of an earlier switch (the repair it ran
# first finished a killed rescale, or an earlier rescale) leaves a journal
# that puts the proxy on the parts holding the keys; a damaged journal is
# data_corrupted and a superuser discards it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

if (!-e '/usr/lib/postgresql/15/lib/plproxy.so')
{
	plan skip_all => 'PL/Proxy (postgresql-15-plproxy) is not installed';
}

my $dir = PostgreSQL::Test::Utils::tempdir();
my $NKEYS = 200;
my @servers = map { new_state_node("part$_") } 0, 1;
my $proxy = new_state_node('proxy', conf => "max_prepared_transactions = 2\nrestart_after_crash = on\n");

sub connstr
{
	my ($node) = @_;
	return 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
}

sub parts_array
{
	return 'ARRAY[' . join(', ', map { "'" . connstr($_) . "'" } @_) . ']';
}

$servers[0]->safe_psql('postgres', qq{SELECT state.create_state('v', 'value', 'int', 'bigint');
SELECT state.wait_snapshot(state.snapshot('$dir/empty'));});
$servers[$_]->safe_psql('postgres', "SELECT state.restore('$dir/empty', parallelism => 2, part => $_)")
  for 0, 1;
$proxy->safe_psql('postgres', 'CREATE EXTENSION plproxy');
$proxy->safe_psql('postgres', "SELECT state.create_proxy('pc', " . parts_array(@servers) . ')');
$proxy->safe_psql('postgres',
	"SELECT count(state_proxy.value_set('v', k, k * 10::bigint)) FROM generate_series(1, $NKEYS) k");
mkdir "$dir/snapshots";

# How many parts the proxy names.
sub nparts
{
	return $proxy->safe_psql('postgres', q{SELECT cardinality(parts) FROM state.proxies WHERE cluster = 'pc'});
}

# Reads every key through the proxy: '' when each has its value, else what
# is wrong; a refusal is returned as 'refused: SQLSTATE message'.
sub read_through
{
	my $r = sql_error($proxy, qq{SELECT count(*) FROM generate_series(1, $NKEYS) k
		WHERE state_proxy.value_get('v', k, 0::bigint) IS DISTINCT FROM k * 10});
	return "refused: $r->{sqlstate} $r->{message} / $r->{stderr}" if $r->{ret} != 0;
	chomp(my $wrong = $r->{stdout});
	return $wrong eq '0' ? '' : "$wrong of $NKEYS keys wrong or missing";
}

# The keys held by the parts the proxy names, together.
sub held
{
	my $n = nparts();
	my $held = 0;
	$held += $servers[$_]->safe_psql('postgres', q{SELECT count(*) FROM state.keys('v', NULL::int)})
	  for 0 .. $n - 1;
	return $held;
}

# Waits for the proxy's server to answer again (after a crash it restarts).
sub proxy_back
{
	return $proxy->poll_query_until('postgres', 'SELECT true');
}

# A rescale to the other shape, failing or dying at $point with $action.
sub rescale_with_fault
{
	my ($point, $action) = @_;
	my $to = nparts() == 2 ? [ $servers[0] ] : \@servers;
	my ($ret, $out, $err) = $proxy->psql('postgres',
		"SET state_backend.fault_points = 'rescale.proxy_$point:$action'; "
		  . "SELECT state.rescale_proxy('pc', " . parts_array(@$to) . ", '$dir/snapshots')");
	return ($ret, $err, scalar(@$to));
}

my @cases = (
	# point, action, how it is put right, what the proxy is on then
	[ 'part_restored', 'exit', 'repair_proxy', 'old' ],
	[ 'part_restored', 'crash', 'rescale_proxy', 'old' ],
	[ 'journal_written', 'exit', 'repair_proxy', 'old' ],
	[ 'journal_written', 'error', 'none', 'old' ],
	[ 'switched', 'exit', 'alter_proxy', 'old' ],
	[ 'switched', 'crash', 'repair_proxy', 'old' ],
	[ 'switched', 'error', 'none', 'old' ],
	[ 'switch_durable', 'crash', 'repair_proxy', 'new' ],
	[ 'switch_durable', 'exit', 'rescale_proxy', 'new' ],
	[ 'timers_resumed', 'error', 'repair_proxy', 'new' ],
	[ 'timers_resumed', 'exit', 'alter_proxy', 'new' ],
);
for my $case (@cases)
{
	my ($point, $action, $how, $outcome) = @$case;
	my $from = nparts();
	my $name = "rescale $from -> " . (3 - $from) . " with $action at $point";
	my ($ret, $err, $to) = rescale_with_fault($point, $action);
	isnt($ret, 0, "$name: the rescale did not succeed");
	like($err, qr/fault point "rescale.proxy_$point" reached|terminating connection|server closed the connection/,
		"$name: it stopped at its fault point");
	ok(proxy_back(), "$name: the proxy's server answers");

	# Right now: every key right, or refused until repaired.
	my $now = read_through();
	ok($now eq '' || $now =~ /^refused: 55000 a rescale of cluster "pc" was interrupted.*state\.repair_proxy\('pc'\)/s,
		"$name: through the proxy every key has its value, or the call refuses naming repair_proxy")
	  or diag($now);
	# An error before the point of no return is undone by the rescale itself.
	is($now, '', "$name: the failed rescale put the old parts back itself")
	  if $action eq 'error' && $outcome eq 'old';

	my $expect = $outcome eq 'old' ? $from : $to;
	if ($how eq 'repair_proxy')
	{
		my $r = $proxy->safe_psql('postgres', q{SELECT coalesce(state.repair_proxy('pc'), 'nothing')});
		like($r, $outcome eq 'old' ? qr/^(undone|nothing)$/ : qr/^finished$/, "$name: repair_proxy says $r");
	}
	elsif ($how eq 'alter_proxy')
	{
		# alter_proxy to the parts the outcome has: it repairs first.
		my @to = $expect == 2 ? @servers : ($servers[0]);
		$proxy->safe_psql('postgres', "SELECT state.alter_proxy('pc', " . parts_array(@to) . ')');
	}
	elsif ($how eq 'rescale_proxy')
	{
		# The next rescale repairs first, then rescales to the other shape.
		my @to = $expect == 2 ? ($servers[0]) : @servers;
		$proxy->safe_psql('postgres',
			"SELECT state.rescale_proxy('pc', " . parts_array(@to) . ", '$dir/snapshots')");
		$expect = scalar(@to);
	}
	is(nparts(), $expect, "$name: the proxy is on $expect part(s) after $how");
	is(read_through(), '', "$name: every key has its value through the proxy");
	is(held(), $NKEYS, "$name: the parts the proxy names hold each key once");
	is($proxy->safe_psql('postgres', q{SELECT state._proxy_journal_read('pc') IS NULL}), 't',
		"$name: no rescale journal is left");
}

# A repair killed half way (at the first part it puts back) is done again
# by the next one.
{
	my $from = nparts();
	rescale_with_fault('part_restored', 'exit');
	ok(proxy_back(), 'a rescale killed after its first restore, to be repaired');
	my ($ret, $out, $err) = $proxy->psql('postgres',
		q{SET state_backend.fault_points = 'rescale.proxy_part_put_back:exit'; SELECT state.repair_proxy('pc')});
	like($err, qr/fault point "rescale.proxy_part_put_back" reached|terminating connection|server closed the connection/,
		'the repair was killed after putting its first part back');
	ok(proxy_back(), 'the proxy\'s server answers after the repair was killed');
	like(read_through(), qr/^refused: 55000 /, 'after a repair killed half way the calls still refuse');
	is($proxy->safe_psql('postgres', q{SELECT state.repair_proxy('pc')}), 'undone', 'the next repair undoes the rescale');
	is(nparts(), $from, 'after the second repair the proxy is on its old parts');
	is(read_through(), '', 'after the second repair every key has its value');
	is(held(), $NKEYS, 'after the second repair the parts hold each key once');
}

# The next rescales work, both ways.
for my $i (1, 2)
{
	my @to = nparts() == 2 ? ($servers[0]) : @servers;
	$proxy->safe_psql('postgres', "SELECT state.rescale_proxy('pc', " . parts_array(@to) . ", '$dir/snapshots')");
	is(read_through(), '', "a later rescale to " . scalar(@to) . " part(s): every key has its value");
	is(held(), $NKEYS, "a later rescale to " . scalar(@to) . " part(s): the parts hold each key once");
}

# A rescale whose transaction is rolled back after it returned: the servers
# hold the new parts, so the repair finishes it.
my $from = nparts();
my @to = $from == 2 ? ($servers[0]) : @servers;
$proxy->safe_psql('postgres', "BEGIN; SELECT state.rescale_proxy('pc', " . parts_array(@to)
	  . ", '$dir/snapshots'); ROLLBACK;");
is(nparts(), $from, 'a rescale rolled back: state.proxies keeps the old parts');
like(read_through(), qr/^refused: 55000 /, 'a rescale rolled back: proxy calls refuse until it is put right');
is($proxy->safe_psql('postgres', q{SELECT state.repair_proxy('pc')}), 'finished',
	'a rescale rolled back: repair_proxy finishes it');
is(nparts(), scalar(@to), 'a rescale rolled back, then repaired: the proxy is on the new parts');
is(read_through(), '', 'a rescale rolled back, then repaired: every key has its value');
is(held(), $NKEYS, 'a rescale rolled back, then repaired: the parts hold each key once');

# Rolled back to a savepoint, its transaction committed: the same.
$from = nparts();
@to = $from == 2 ? ($servers[0]) : @servers;
$proxy->safe_psql('postgres', "BEGIN; SAVEPOINT s; SELECT state.rescale_proxy('pc', " . parts_array(@to)
	  . ", '$dir/snapshots'); ROLLBACK TO s; COMMIT;");
like(read_through(), qr/^refused: 55000 /, 'a rescale rolled back to a savepoint: proxy calls refuse');
is($proxy->safe_psql('postgres', q{SELECT state.repair_proxy('pc')}), 'finished',
	'a rescale rolled back to a savepoint: repair_proxy finishes it');
is(read_through(), '', 'a rescale rolled back to a savepoint, then repaired: every key has its value');

# Its transaction cannot be prepared.
@to = nparts() == 2 ? ($servers[0]) : @servers;
my $r = sql_error($proxy, "BEGIN; SELECT state.rescale_proxy('pc', " . parts_array(@to)
	  . ", '$dir/snapshots'); PREPARE TRANSACTION 'r';");
is($r->{sqlstate}, '0A000', 'a transaction that rescaled a proxy cannot be prepared')
  or diag($r->{stderr});
is($proxy->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts}), '0', 'nothing was prepared');
is($proxy->safe_psql('postgres', q{SELECT coalesce(state.repair_proxy('pc'), 'nothing')}), 'finished',
	'the rescale of the refused PREPARE is finished by repair_proxy');
is(read_through(), '', 'then every key has its value');
is(held(), $NKEYS, 'then the parts hold each key once');

# repair_proxy is not for PUBLIC.
$proxy->safe_psql('postgres', 'CREATE ROLE nobody LOGIN');
$r = sql_error($proxy, q{SET ROLE nobody; SELECT state.repair_proxy('pc')});
is($r->{sqlstate}, '42501', 'repair_proxy is not executable by PUBLIC');

# A clean rescale after all that.
@to = nparts() == 2 ? ($servers[0]) : @servers;
$proxy->safe_psql('postgres', "SELECT state.rescale_proxy('pc', " . parts_array(@to) . ", '$dir/snapshots')");
is(read_through(), '', 'a last rescale: every key has its value');
is(held(), $NKEYS, 'a last rescale: the parts hold each key once');

# A rescale that fails after the repair it ran first finished an earlier
# rescale: that repair's switch is in the failing transaction, so its
# abort undoes it, and the journal must still say where the keys are (the
# earlier rescale's new parts), or the proxy stays on parts that do not
# hold them.
{
	$proxy->safe_psql('postgres', "SELECT state.rescale_proxy('pc', " . parts_array($servers[0]) . ", '$dir/snapshots')")
	  if nparts() == 2;
	my ($ret, $out, $err) = $proxy->psql('postgres',
		q{SET state_backend.fault_points = 'rescale.proxy_switch_durable:exit'; }
		  . "SELECT state.rescale_proxy('pc', " . parts_array(@servers) . ", '$dir/snapshots')");
	ok(proxy_back(), 'a rescale 1 -> 2 killed after its point of no return');
	($ret, $out, $err) = $proxy->psql('postgres',
		q{SET state_backend.fault_points = 'rescale.proxy_journal_written:error'; }
		  . "SELECT state.rescale_proxy('pc', " . parts_array($servers[0]) . ", '$dir/snapshots')");
	like($err, qr/fault point "rescale.proxy_journal_written" reached/,
		'the next rescale, which finished it first, failed after writing its journal');
	my $now = read_through();
	ok($now eq '' || $now =~ /^refused: 55000 /,
		'after a rescale failed behind the repair it ran: every key, or the calls refuse')
	  or diag($now);
	isnt($proxy->safe_psql('postgres', q{SELECT state._proxy_journal_read('pc') IS NULL}), 't',
		'after a rescale failed behind the repair it ran: a journal is left');
	is($proxy->safe_psql('postgres', q{SELECT coalesce(state.repair_proxy('pc'), 'nothing')}), 'undone',
		'repair_proxy undoes the failed rescale');
	is(nparts(), 2, 'then the proxy is on the parts of the rescale killed after its point of no return');
	is(read_through(), '', 'then every key has its value');
	is(held(), $NKEYS, 'then the parts hold each key once');
	is($proxy->safe_psql('postgres', q{SELECT state._proxy_journal_read('pc') IS NULL}), 't',
		'then no rescale journal is left');

	# Two rescales in one transaction, the second failing: the abort undoes
	# the first one's switch too, which its restores made real.
	($ret, $out, $err) = $proxy->psql('postgres',
		"BEGIN; SELECT state.rescale_proxy('pc', " . parts_array($servers[0]) . ", '$dir/snapshots'); "
		  . q{SET state_backend.fault_points = 'rescale.proxy_journal_written:error'; }
		  . "SELECT state.rescale_proxy('pc', " . parts_array(@servers) . ", '$dir/snapshots'); COMMIT;");
	like($err, qr/fault point "rescale.proxy_journal_written" reached/,
		'a second rescale in the transaction of a first one failed');
	$now = read_through();
	ok($now eq '' || $now =~ /^refused: 55000 /,
		'after two rescales in one aborted transaction: every key, or the calls refuse')
	  or diag($now);
	$proxy->safe_psql('postgres', q{SELECT state.repair_proxy('pc')});
	is(nparts(), 1, 'repaired, the proxy is on the parts the first rescale restored');
	is(read_through(), '', 'repaired, every key has its value');
	is(held(), $NKEYS, 'repaired, the parts hold each key once');
}

# A damaged journal, or one that cannot be repaired, is an error that says
# so (data_corrupted), and a superuser can discard it.
{
	my $db = $proxy->safe_psql('postgres', q{SELECT oid FROM pg_database WHERE datname = 'postgres'});
	my $file = $proxy->data_dir . "/pg_state_backend/proxy_rescale/${db}_pc";
	my $put = sub {
		open(my $fh, '>', $file) or die "could not write $file: $!";
		print $fh "state_backend proxy rescale journal 1\n" . $_[0];
		close($fh);
	};
	my $from = nparts();
	my %journals = (
		'cut short' => '{"old_parts": [',
		'of another shape' => '{"old_parts": "x", "switched": "yes"}',
		'of another version' => qq({"old_version": 0, "old_parts": ["host=nowhere"], "new_parts": ["host=nowhere"],
			"paths": ["$dir/snapshots/gone-part0"], "touched": ["host=nowhere"], "switched": false}),
	);
	for my $what (sort keys %journals)
	{
		$put->($journals{$what});
		like(read_through(), qr/^refused: 55000 /, "a journal $what: proxy calls refuse");
		for my $call ("state.repair_proxy('pc')", "state.drop_proxy('pc')",
			"state.alter_proxy('pc', " . parts_array(@servers[0 .. $from - 1]) . ')',
			"state.rescale_proxy('pc', " . parts_array(@servers) . ", '$dir/snapshots')")
		{
			my $r = sql_error($proxy, "SELECT $call");
			is($r->{sqlstate}, 'XX001', "a journal $what: $call is data_corrupted")
			  or diag($r->{stderr});
			like($r->{stderr}, qr/\Q${db}_pc\E.*HINT:.*discard => true/s,
				"a journal $what: $call names the file and the way out")
			  if $call =~ /repair/;
		}
		my $r = sql_error($proxy,
			q{GRANT EXECUTE ON FUNCTION state.repair_proxy(text, boolean) TO nobody; GRANT UPDATE ON state.proxies TO nobody;
			SET ROLE nobody; SELECT state.repair_proxy('pc', discard => true)});
		is($r->{sqlstate}, '42501', "a journal $what: only a superuser discards it");
		$proxy->safe_psql('postgres',
			q{REVOKE EXECUTE ON FUNCTION state.repair_proxy(text, boolean) FROM nobody; REVOKE UPDATE ON state.proxies FROM nobody});
		my ($ret, $out, $err) = $proxy->psql('postgres', q{SELECT state.repair_proxy('pc', discard => true)});
		is($out, 'discarded', "a journal $what: repair_proxy(discard => true) discards it");
		like($err, qr/WARNING:  the rescale journal of cluster "pc" is discarded/, "a journal $what: with a warning");
		like($err, qr/gone-part0/, "a journal $what: the warning names its snapshots")
		  if $what eq 'of another version';
		is($proxy->safe_psql('postgres', q{SELECT state._proxy_journal_read('pc') IS NULL}), 't',
			"a journal $what: discarded, it is gone");
		is(read_through(), '', "a journal $what: discarded, every key has its value through the proxy");
	}
	is($proxy->safe_psql('postgres', q{SELECT coalesce(state.repair_proxy('pc', discard => true), 'nothing')}),
		'nothing', 'repair_proxy(discard => true) without a journal does nothing');
}

# drop_proxy puts an interrupted rescale right before it drops the proxy.
{
	my $from = nparts();
	rescale_with_fault('part_restored', 'exit');
	ok(proxy_back(), 'a rescale killed after its first restore, then the proxy dropped');
	$proxy->safe_psql('postgres', q{SELECT state.drop_proxy('pc')});
	is($proxy->safe_psql('postgres', q{SELECT state._proxy_journal_read('pc') IS NULL}), 't',
		'drop_proxy: no rescale journal is left');
	my $held = 0;
	$held += $servers[$_]->safe_psql('postgres', q{SELECT count(*) FROM state.keys('v', NULL::int)})
	  for 0 .. $from - 1;
	is($held, $NKEYS, 'drop_proxy: the old parts were put back first (they hold each key once)');
}

done_testing();
