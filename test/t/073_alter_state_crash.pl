# state.alter_state is all or nothing across a crash, on the primary and,
# for logged states, on a streaming standby.
#
# For each step of a change (its fault points, and the two of the
# publication it shares with restore) and each kind of state below, a
# change that renames the state, gives it another value type through a
# USING expression and (for two of them) another backend is killed at that
# point (action crash: the cluster restarts):
#
#   alter.create_hidden      the hidden state that takes the entries is made
#   alter.copy               the first batch of entries is copied
#   alter.log_entries        the copied entries are in WAL (logged states)
#   alter.before_publish     everything ready, not published
#   restore.publish_logged   the publication is in WAL, not yet flushed
#   restore.publish_durable  the publication is flushed: the change holds
#   alter.after_publish      all done, before alter_state returns
#
# The states: "lg" logged, memory -> rocksdb; "ll" logged, lmdb -> memory;
# "ul" unlogged, memory, type only; "ur" unlogged, rocksdb -> memory.  Each holds keys 1..N with value
# k, and a checkpoint is taken before the change (unlogged memory states
# come back from it after a crash).  After the restart the state is wholly
# before the change (its old name only, integer values k, its old backend,
# version 1) or wholly after it (its new name only, bigint values 10 k, its
# new backend, version 2), never a mix; before it for the points before
# the publication; after it for a logged state once the publication was
# flushed.  The state takes writes after the restart.  For the logged
# state, a hot standby that follows the primary (and reconnects after each
# crash) shows the same side once it has applied the primary's WAL.  Then
# each kind of state is changed (the change returns) and the server is
# stopped in immediate mode before any checkpoint: each comes back wholly
# before or after the change, logged ones after, on the standby too.
# Without a crash: a logged state made unlogged leaves the standby, an
# unlogged one made logged comes to it with its entries, a logged list
# renamed with another value type reaches it converted.  A
# point that a change of an unlogged state does not pass (its WAL) lets the
# change through; it is then after it.  On the
# standby alter_state is refused (25006).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $N = 3000;
my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'alter_crash',
	lmdb => 1,
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints'\n"
	  . "restart_after_crash = on\n"
	  # The WAL writer does not flush the change's records by itself: a
	  # crash before the publication's flush finds them unflushed.
	  . "wal_writer_delay = '10s'\n");
ok(defined wait_for_worker($node), 'state worker running');

# A standby of the primary, serving logged states once a checkpoint taken
# after its base backup exists.
$node->backup('b');
checkpoint_now($node);
my $standby = PostgreSQL::Test::Cluster->new('alter_crash_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;


my @POINTS = qw(alter.create_hidden alter.copy alter.log_entries alter.before_publish
  restore.publish_logged restore.publish_durable alter.after_publish);
my %BEFORE_PUBLISH = map { $_ => 1 } qw(alter.create_hidden alter.copy alter.log_entries alter.before_publish);
my %DURABLE = map { $_ => 1 } qw(restore.publish_durable alter.after_publish);

# flavour => [ logged, backend before, backend after ]
my %FLAVOURS = (
	lg => [ 'true', 'memory', 'rocksdb' ],
	ll => [ 'true', 'lmdb', 'memory' ],
	ul => [ 'false', 'memory', 'memory' ],
	ur => [ 'false', 'rocksdb', 'memory' ],
);

# side($n, $old, $new, $flavour): 'before', 'after', or what was found.
sub side
{
	my ($n, $old, $new, $flavour) = @_;
	my ($logged, $b0, $b1) = @{ $FLAVOURS{$flavour} };
	$logged = $logged eq 'true' ? 't' : 'f';
	my $found = $n->safe_psql('postgres', qq{
SELECT coalesce(string_agg(format('%s %s %s %s v%s', name, backend, value_type, logged, version), '; ' ORDER BY name), 'none')
  FROM state.states WHERE name IN ('$old', '$new')});
	my $digest = sub {
		my ($name) = @_;
		return $n->safe_psql('postgres', qq{
SELECT count(*) || ' ' || md5(string_agg(k || '=' || v, ',' ORDER BY k))
  FROM state.entries('$name', NULL::int, NULL::bigint) e(k, v)});
	};
	my $expect = sub {
		my ($m) = @_;
		return $n->safe_psql('postgres', qq{
SELECT count(*) || ' ' || md5(string_agg(k || '=' || (k * $m), ',' ORDER BY k)) FROM generate_series(1, $N) k});
	};
	if ($found eq "$old $b0 integer $logged v1")
	{
		my $d = $digest->($old);
		return $d eq $expect->(1) ? 'before' : "before's descriptor with other entries ($d)";
	}
	if ($found eq "$new $b1 bigint $logged v2")
	{
		my $d = $digest->($new);
		return $d eq $expect->(10) ? 'after' : "after's descriptor with other entries ($d)";
	}
	return "neither: $found";
}

my $round = 0;
for my $point (@POINTS)
{
	for my $flavour (sort keys %FLAVOURS)
	{
		$round++;
		my ($logged, $b0, $b1) = @{ $FLAVOURS{$flavour} };
		my $old = "s${round}_$flavour";
		my $new = "${old}_new";
		my $what = "$point, $flavour ($b0 -> $b1, logged $logged)";
		$node->safe_psql('postgres', qq{
SELECT state.create_state('$old', 'value', 'int', 'int', backend => '$b0', logged => $logged);
SELECT count(state.value_set('$old', k, k)) FROM generate_series(1, $N) k;});
		checkpoint_now($node);
		is(side($node, $old, $new, $flavour), 'before', "$what: before the change");

		my $offset = -s $node->logfile;
		my ($ret, $out, $err) = psql_nodie($node, 'postgres', qq{
SET state_backend.fault_points = '$point:crash';
SELECT state.alter_state('$old', rename_to => '$new', value_type => 'bigint', value_using => 'value * 10',
                         backend => '$b1')}, timeout => 120);
		my $reached = $node->log_contains(qr/fault point "\Q$point\E" reached: crash/, $offset);
		if ($reached)
		{
			isnt($ret, 0, "$what: the change's session was killed");
			ok(defined wait_for_crash_restart($node, $offset), "$what: the server came back");
		}
		else
		{
			# A point a change of this state does not pass (the WAL of an
			# unlogged state): the change went through.
			ok($logged ne 'true', "$what: the point was reached")
			  or diag("ret $ret: $err");
			is($ret, 0, "$what: the point not reached, the change went through") or diag($err);
		}

		my $side = side($node, $old, $new, $flavour);
		like($side, qr/^(before|after)$/, "$what: the state is wholly before or wholly after the change")
		  or diag($side);
		if ($reached && $BEFORE_PUBLISH{$point})
		{
			is($side, 'before', "$what: killed before its publication, the change did not happen");
		}
		if ($reached && $DURABLE{$point} && $logged eq 'true')
		{
			is($side, 'after', "$what: killed after its publication was flushed, the change holds");
		}
		if (!$reached)
		{
			is($side, 'after', "$what: the change holds");
		}
		note("$what: $side");

		# It takes writes, under the name it has.
		my $name = $side eq 'after' ? $new : $old;
		my $type = $side eq 'after' ? 'bigint' : 'int';
		my ($wret, $wout, $werr) = $node->psql('postgres', qq{
SELECT count(*) FROM (SELECT state.value_set('$name', 0, 7::$type)) w; SELECT state.value_get('$name', 0, 0::$type)});
		is("$wret $wout", "0 1\n7", "$what: the state takes writes after the restart") or diag($werr);
		$node->psql('postgres', "SELECT state.clear('$name', 0)");

		if ($logged eq 'true')
		{
			ok(standby_applied($node, $standby), "$what: the standby applied the primary's WAL");
			is(side($standby, $old, $new, $flavour), $side, "$what: the standby shows the same side");
			is($standby->safe_psql('postgres', qq{SELECT count(*) FROM state.states WHERE name IN ('$old', '$new')}),
				'1', "$what: the standby has the state once");
		}
		else
		{
			# An unlogged state is not on the standby.
			ok(standby_applied($node, $standby), "$what: the standby applied the primary's WAL");
			is($standby->safe_psql('postgres', qq{SELECT count(*) FROM state.states WHERE name IN ('$old', '$new')}),
				'0', "$what: the standby does not list the unlogged state");
		}
	}
}

# A change that returned, then a crash (no fault point) before any
# checkpoint: each state comes back wholly before or after it (unlogged
# memory and lmdb states from the last checkpoint, as documented).
my @plain;
for my $flavour (sort keys %FLAVOURS)
{
	$round++;
	my ($logged, $b0, $b1) = @{ $FLAVOURS{$flavour} };
	my $old = "s${round}_$flavour";
	$node->safe_psql('postgres', qq{
SELECT state.create_state('$old', 'value', 'int', 'int', backend => '$b0', logged => $logged);
SELECT count(state.value_set('$old', k, k)) FROM generate_series(1, $N) k;});
	push @plain, [ $flavour, $old ];
}
checkpoint_now($node);
for my $p (@plain)
{
	my ($flavour, $old) = @$p;
	my ($logged, $b0, $b1) = @{ $FLAVOURS{$flavour} };
	$node->safe_psql('postgres', qq{
SELECT state.alter_state('$old', rename_to => '${old}_new', value_type => 'bigint', value_using => 'value * 10',
                         backend => '$b1')});
	is(side($node, $old, "${old}_new", $flavour), 'after', "plain crash, $flavour ($b0 -> $b1): changed");
}
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node), 'plain crash: the server came back');
for my $p (@plain)
{
	my ($flavour, $old) = @$p;
	my ($logged, $b0, $b1) = @{ $FLAVOURS{$flavour} };
	my $side = side($node, $old, "${old}_new", $flavour);
	like($side, qr/^(before|after)$/,
		"plain crash after the change, $flavour ($b0 -> $b1, logged $logged): the state is wholly before or after it")
	  or diag($side);
	is($side, 'after', "plain crash after the change, $flavour: a logged state is after it")
	  if $logged eq 'true';
	note("plain crash, $flavour: $side");
	if ($logged eq 'true')
	{
		ok(standby_applied($node, $standby), "plain crash, $flavour: the standby applied the primary's WAL");
		is(side($standby, $old, "${old}_new", $flavour), $side, "plain crash, $flavour: the standby shows the same side");
	}
}

# Logging changed without a crash: a logged state made unlogged leaves the
# standby; an unlogged one made logged comes to it, with its entries; a
# rename and a type change of a logged state reach it.
$node->safe_psql('postgres', q{
SELECT state.create_state('to_unlogged', 'value', 'int', 'int', logged => true);
SELECT state.create_state('to_logged', 'value', 'int', 'int', backend => 'rocksdb');
SELECT state.create_state('renamed', 'list', 'int', 'int', backend => 'lmdb', logged => true);
SELECT count(state.value_set(s, k, k)) FROM unnest(ARRAY['to_unlogged', 'to_logged']) s, generate_series(1, 100) k;
SELECT count(state.list_add('renamed', k % 10, k)) FROM generate_series(1, 100) k;});
ok(standby_applied($node, $standby), 'the standby applied the states\' creation');
is($standby->safe_psql('postgres', q{SELECT string_agg(name, ' ' ORDER BY name) FROM state.states WHERE name IN ('to_unlogged', 'to_logged', 'renamed', 'renamed2')}),
	'renamed to_unlogged', 'the standby has the logged states');
$node->safe_psql('postgres', q{
SELECT state.alter_state('to_unlogged', logged => false);
SELECT state.alter_state('to_logged', logged => true);
SELECT state.alter_state('renamed', rename_to => 'renamed2', value_type => 'bigint', value_using => 'value * 10');});
ok(standby_applied($node, $standby), 'the standby applied the changes');
# A logged state made unlogged stays on the standby, as it was, until the
# checkpoint the change asks for: only then is its drop logged (a crash
# before brings it back, as the newest checkpoint and WAL hold it).
ok($standby->poll_query_until('postgres', q{SELECT count(*) = 0 FROM state.states WHERE name = 'to_unlogged'}),
	'the standby drops a state made unlogged once the primary has a checkpoint of the change');
is($standby->safe_psql('postgres', q{SELECT string_agg(name || ' ' || value_type || ' v' || version, ', ' ORDER BY name) FROM state.states WHERE name IN ('to_unlogged', 'to_logged', 'renamed', 'renamed2')}),
	'renamed2 bigint v2, to_logged integer v2', 'the standby lists the states logged now, as they are now');
is($standby->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(v) FROM state.entries('to_logged', NULL::int, NULL::int) e(k, v)}),
	'100 5050', 'a state made logged comes to the standby with its entries');
is($standby->safe_psql('postgres', q{SELECT sum(e) FROM state.keys('renamed2', NULL::int) k, unnest(state.list_get('renamed2', k, NULL::bigint[])) e}),
	'50500', 'a logged list renamed with another type: its elements converted on the standby');
my $gone = sql_error($standby, q{SELECT state.value_get('to_unlogged', 1, 0)});
ok($gone->{sqlstate} eq '25006' || $gone->{sqlstate} eq '42704',
	'a state made unlogged is no longer served by the standby (25006 or 42704)') or diag($gone->{stderr});
# A write to each on the primary after the change reaches the standby
# for the logged ones.
$node->safe_psql('postgres', q{
SELECT state.value_set('to_logged', 1000, 1);
SELECT state.list_add('renamed2', 1000, 1::bigint);});
ok(standby_applied($node, $standby), 'the standby applied the writes after the changes');
is($standby->safe_psql('postgres', q{SELECT state.value_get('to_logged', 1000, 0) || ' ' || state.list_length('renamed2', 1000)}),
	'1 1', 'writes after the change reach the standby');

# Each state once, under one name.
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT regexp_replace(name, '_new$', '') FROM state.states GROUP BY 1 HAVING count(*) > 1) d}),
	'0', 'no state is there under both names');

# On the standby: read-only.
my ($lg) = grep { /_lg/ } split /\n/, $standby->safe_psql('postgres', 'SELECT name FROM state.states ORDER BY name');
my $e = sql_error($standby, "SELECT state.alter_state('$lg', rename_to => 'on_standby')");
is($e->{sqlstate}, '25006', 'alter_state on a hot standby: 25006') or diag($e->{stderr});
$e = sql_error($standby, "SELECT state.alter_state('$lg')");
is($e->{sqlstate}, '25006', 'even one that changes nothing') or diag($e->{stderr});

# A change of a logged state whose session exits after its copy went to
# WAL (CREATE_HIDDEN) and before the switch: its drop goes to WAL too, so
# that the standby drops the copy rather than keep it hidden under its id,
# which a start of the primary from a later checkpoint gives to a new
# state (the standby's apply would then stop at that state's creation).
$node->safe_psql('postgres', q{
SELECT state.create_state('gone_copy', 'value', 'int', 'int', logged => true);
SELECT count(state.value_set('gone_copy', k, k)) FROM generate_series(1, 10) k;});
my $exited = sql_error($node, q{SET state_backend.fault_points = 'alter.before_publish:exit';
SELECT state.alter_state('gone_copy', value_type => 'bigint')});
ok($exited->{ret} != 0, 'the change\'s session exits before its switch');
is($node->safe_psql('postgres', q{SELECT value_type || ' v' || version FROM state.states WHERE name = 'gone_copy'}),
	'integer v1', 'the state is as it was');
$node->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
$node->stop('immediate');
$node->start;
$node->poll_query_until('postgres', q{SELECT count(*) >= 0 FROM state.states}) or die;
$node->safe_psql('postgres', q{
SELECT state.create_state('after_gone', 'value', 'int', 'int', logged => true);
SELECT state.value_set('after_gone', 1, 42);});
ok(standby_applied($node, $standby), 'the standby applied what came after');
ok($standby->poll_query_until('postgres', q{SELECT state.value_get('after_gone', 1, 0) = 42}),
	'a state created after the primary restarted reaches the standby');

$standby->stop;
$node->stop;
done_testing();
