# Concurrent writers on one key never lose an update: reduce and list_add
# from several pgbench clients, in simple protocol and with -M prepared and
# untyped bind parameters (as drivers send them).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $CLIENTS = 8;
my $TX = 400;    # transactions per client
my $TOTAL = $CLIENTS * $TX;

my $node = new_state_node('concurrency');
my $wpid = wait_for_worker($node);
ok(defined $wpid, 'state worker running');
my $log_offset = -s $node->logfile;

# Run pgbench and check that every transaction of every client went through.
sub pgbench_all_ok
{
	my ($mode, $files, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $r = run_pgbench($node, "-n -c $CLIENTS -j 2 -t $TX -M $mode", $files);
	my $ok = is($r->{ret}, 0, "$name: pgbench exits 0");
	$ok &&= is($r->{processed}, $TOTAL, "$name: all $TOTAL transactions processed");
	$ok &&= unlike($r->{stderr}, qr/error|abort/i, "$name: no error reported");
	diag "stdout:\n$r->{stdout}\nstderr:\n$r->{stderr}" unless $ok;
	return $r;
}

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('hot', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.create_state('hot2', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.create_state('hotmax', 'reducing', 'integer', 'bigint', reducer => 'max');
SELECT state.create_state('hotlist', 'list', 'text', 'bigint');
CREATE SEQUENCE lseq;
CREATE SEQUENCE maxseq;
CREATE TABLE seen(v bigint);
});

############################################################ simple protocol

# One hot key, increment 3, with concurrent reads of the same key.
pgbench_all_ok(
	'simple',
	{
		'reduce_hot.sql' => q{
SELECT state.reduce('hot', 1::bigint, 3::bigint);
SELECT state.value_get('hot', 1::bigint, 0::bigint);
SELECT state.reduce('hotmax', 1, nextval('maxseq'));
}
	},
	'reduce sum on one hot key');
is($node->safe_psql('postgres', q{SELECT state.value_get('hot', 1::bigint, 0::bigint)}),
	$TOTAL * 3, "reduce: the hot key holds exactly clients*transactions*3");
is($node->safe_psql('postgres', q{SELECT state.value_get('hotmax', 1, 0::bigint)}),
	$TOTAL, 'reduce max: the hot key holds the largest value folded in');

# reduce returns the new result atomically: with increment 1 every call
# sees a distinct result, and together they are exactly 1..N.
pgbench_all_ok(
	'simple',
	{
		'reduce_seen.sql' =>
		  q{INSERT INTO seen SELECT state.reduce('hot2', 1::bigint, 1::bigint);}
	},
	'reduce returning its result');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) || ',' || count(DISTINCT v) || ',' || min(v) || ',' || max(v) FROM seen}),
	"$TOTAL,$TOTAL,1,$TOTAL",
	'reduce: every call returned a distinct new sum, 1..N');
is($node->safe_psql('postgres', q{SELECT state.value_get('hot2', 1::bigint, 0::bigint)}),
	$TOTAL, 'reduce: final sum equals the number of calls');

# Concurrent list_add of distinct values to one list.
pgbench_all_ok(
	'simple',
	{
		'list_add.sql' =>
		  q{SELECT state.list_add('hotlist', 'k'::text, nextval('lseq'));}
	},
	'list_add on one hot key');
is($node->safe_psql('postgres', q{SELECT state.list_length('hotlist', 'k'::text)}),
	$TOTAL, 'list_add: list_length equals the number of appends');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) || ',' || count(DISTINCT v) || ',' || min(v) || ',' || max(v)
		  FROM unnest(state.list_get('hotlist', 'k'::text, NULL::bigint[])) v}),
	"$TOTAL,$TOTAL,1,$TOTAL",
	'list_add: no element lost or duplicated');

############################################################ -M prepared, untyped parameters

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('psum', 'reducing', 'integer', 'bigint', reducer => 'sum');
SELECT state.create_state('plist', 'list', 'integer', 'bigint');
SELECT state.create_state('pval', 'value', 'integer', 'bigint');
SELECT state.create_state('pmap', 'map', 'integer', 'numeric', map_key_type => 'bigint');
CREATE SEQUENCE pseq;
CREATE SEQUENCE vseq;
CREATE SEQUENCE mseq;
});

# Key and value are pgbench variables, bound as parameters of unspecified
# type (OID 0); the state reads them with its declared types.
pgbench_all_ok(
	'prepared',
	{
		'p_reduce.sql' => q{
\set k random(1, 10)
\set inc 2
SELECT state.reduce('psum', :k, :inc);
}
	},
	'prepared reduce with untyped parameters');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) || ',' || sum(state.value_get('psum', k, 0::bigint))
		  FROM state.keys('psum', 0::integer) k}),
	# random() over 1..10 with 3200 draws: all ten keys are hit (p(miss) ~ 1e-145)
	'10,' . ($TOTAL * 2),
	'prepared reduce: the sums over all keys equal clients*transactions*2');

pgbench_all_ok(
	'prepared',
	{
		'p_list.sql' => q{
SELECT nextval('pseq') AS v \gset
\set k random(1, 4)
SELECT state.list_add('plist', :k, :v);
}
	},
	'prepared list_add with untyped parameters');
is( $node->safe_psql(
		'postgres',
		q{SELECT sum(state.list_length('plist', k)) FROM generate_series(1, 4) k}),
	$TOTAL,
	'prepared list_add: the list lengths add up to the number of appends');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) || ',' || count(DISTINCT v) || ',' || min(v) || ',' || max(v)
		  FROM generate_series(1, 4) k,
		       unnest(state.list_get('plist', k, NULL::bigint[])) v}),
	"$TOTAL,$TOTAL,1,$TOTAL",
	'prepared list_add: no element lost or duplicated');

pgbench_all_ok(
	'prepared',
	{
		'p_value.sql' => q{
SELECT nextval('vseq') % 100 + 1 AS k \gset
\set v :k * 7
SELECT state.value_set('pval', :k, :v);
SELECT state.value_get('pval', :k, 0::bigint);
}
	},
	'prepared value_set with untyped parameters');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) || ',' || count(*) FILTER (WHERE state.value_get('pval', k, 0::bigint) = k * 7)
		  FROM state.keys('pval', 0::integer) k}),
	'100,100',
	'prepared value_set: 100 keys, each with its value');

pgbench_all_ok(
	'prepared',
	{
		'p_map.sql' => q{
SELECT nextval('mseq') AS mk \gset
\set key 1
\set mv :mk * 10
SELECT state.map_put('pmap', :key, :mk, :mv);
}
	},
	'prepared map_put with untyped parameters');
is($node->safe_psql('postgres', q{SELECT state.map_size('pmap', 1)}),
	$TOTAL, 'prepared map_put: map_size equals the number of puts');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) || ',' || count(DISTINCT map_key) || ',' || min(map_key) || ',' || max(map_key)
		         || ',' || bool_and(value = map_key * 10)
		  FROM state.map_entries('pmap', 1, 0::bigint, 0::numeric)}),
	"$TOTAL,$TOTAL,1,$TOTAL,true",
	'prepared map_put: every map key present once with its value');

############################################################ the server

is(worker_pid($node), $wpid, 'the worker kept running');
is_deeply([ log_crashes($node, $log_offset) ], [], 'no process crashed');

$node->stop;
done_testing();
