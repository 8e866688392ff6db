# Rescaling across servers: one server's snapshot is split onto three
# (parallelism 3), each server holds exactly the keys part_for assigns it,
# operator state is shared out as Flink does, and the three servers'
# snapshots merge back into the original.  Heap and rocksdb states, native
# and canonical snapshots.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $nkeys = 100_000;
# One deployment: the servers share the key they sign snapshots with.
my $key = "state_backend.signing_key_file = '$dir/deployment.key'\n";
my $source = new_state_node('source', conf => $key);
my @parts = map {
	new_state_node("part$_", conf => "state_backend.checkpoint_dir = '$dir/checkpoints_$_'\n$key")
} 0 .. 2;
ok(defined wait_for_worker($_), $_->name . ': state worker running') for $source, @parts;

# The keyed states: a value, a map and a list state in each backend.
my @keyed = qw(hv hm hl rv rm rl);

$source->safe_psql(
	'postgres', qq{
SELECT state.create_state('hv', 'value', 'int', 'bigint', backend => 'memory');
SELECT state.create_state('hm', 'map', 'int', 'bigint', map_key_type => 'int', backend => 'memory');
SELECT state.create_state('hl', 'list', 'int', 'bigint', backend => 'memory');
SELECT state.create_state('rv', 'value', 'int', 'bigint', backend => 'rocksdb');
SELECT state.create_state('rm', 'map', 'int', 'bigint', map_key_type => 'int', backend => 'rocksdb');
SELECT state.create_state('rl', 'list', 'int', 'bigint', backend => 'rocksdb');
SELECT state.create_state('ol', 'operator_list', value_type => 'int');
SELECT state.create_state('ul', 'union_list', value_type => 'text');
SELECT state.create_state('bc', 'broadcast', value_type => 'text', map_key_type => 'text');
SELECT count(state.value_set(s, i, i::bigint)) FROM generate_series(1, $nkeys) i, unnest(ARRAY['hv', 'rv']) s;
SELECT count(state.map_put(s, i, i % 7, i::bigint)) FROM generate_series(1, $nkeys) i, unnest(ARRAY['hm', 'rm']) s;
SELECT count(state.list_add_all(s, i, ARRAY[i::bigint, 1])) FROM generate_series(1, $nkeys) i, unnest(ARRAY['hl', 'rl']) s;
SELECT state.operator_add_all('ol', ARRAY(SELECT generate_series(1, 10)));
SELECT state.operator_add_all('ul', ARRAY['u1', 'u2']);
SELECT state.broadcast_put('bc', 'mode', 'fast'), state.broadcast_put('bc', 'limit', '10');
});

# count|sum of every keyed state, and the operator states, on a node
sub fingerprint
{
	my ($node) = @_;
	my $sql = join(",\n", map {
		my $sum = /v$/ ? "sum(state.value_get('$_', k, 0::bigint))"
		  : /m$/ ? "sum((SELECT sum(value) FROM state.map_entries('$_', k, NULL::int, NULL::bigint)))"
		  : "sum((SELECT sum(x) FROM unnest(state.list_get('$_', k, NULL::bigint[])) x))";
		"(SELECT count(*) || '/' || coalesce($sum, 0) FROM state.keys('$_', NULL::int) k)"
	} @keyed);
	return $node->safe_psql(
		'postgres', "SELECT concat_ws(' ', $sql,
		state.operator_get('ol', '{}'::int[]),
		(SELECT string_agg(map_key || '=' || value, ',' ORDER BY map_key)
		   FROM state.broadcast_entries('bc', NULL::text, NULL::text)))");
}

# keys a node holds that part $p of 3 does not own, over every keyed state
sub misplaced
{
	my ($node, $p) = @_;
	return $node->safe_psql('postgres', 'SELECT ' . join(' + ', map {
		"(SELECT count(*) FROM state.keys('$_', NULL::int) k WHERE state.part_for('$_', k, 3) <> $p)"
	} @keyed) . ' AS misplaced');
}

my $original = fingerprint($source);
note("original: $original");
like($original, qr{^(100000/\d+ ){6}\{1,2,3,4,5,6,7,8,9,10\} limit=10,mode=fast$},
	'the source holds 100k keys in each keyed state');

for my $format (qw(native canonical))
{
	my $full = "$dir/full_$format";
	my $id = $source->safe_psql('postgres', "SELECT state.snapshot('$full', '$format')");
	is(wait_snapshot_status($source, $id), 'completed', "$format: snapshot of the source");

	my %held;
	for my $p (0 .. 2)
	{
		my $node = $parts[$p];
		$node->safe_psql('postgres',
			"SELECT state.restore('$full', parallelism => 3, part => $p)");
		is(misplaced($node, $p), '0', "$format: part $p holds only its own keys");
		$held{$_} += $node->safe_psql('postgres',
			"SELECT count(*) FROM state.keys('$_', NULL::int)") for @keyed;
		is( $node->safe_psql('postgres', q{
			SELECT string_agg(name || ' ' || key_groups, ', ' ORDER BY name)
			  FROM state.states WHERE name IN ('hv', 'rv', 'ol')}),
			'hv ' . ('[0,43)', '[43,86)', '[86,128)')[$p] . ', ol [0,128), rv '
			  . ('[0,43)', '[43,86)', '[86,128)')[$p],
			"$format: part $p remembers its key groups");
		is( $node->safe_psql('postgres', q{
			SELECT state.operator_get('ol', '{}'::int[]), state.operator_get('ul', '{}'::text[]),
			       (SELECT string_agg(map_key || '=' || value, ',' ORDER BY map_key)
			          FROM state.broadcast_entries('bc', NULL::text, NULL::text))}),
			('{1,2,3,4}', '{5,6,7}', '{8,9,10}')[$p] . '|{u1,u2}|limit=10,mode=fast',
			"$format: part $p has its chunk of the operator list, and all of the rest");

		# A key of this part is written; one of the next part is refused.
		my ($mine, $other) = split /\|/, $node->safe_psql('postgres', qq{
			SELECT min(k) FILTER (WHERE state.part_for('hv', k, 3) = $p),
			       min(k) FILTER (WHERE state.part_for('hv', k, 3) = ($p + 1) % 3)
			  FROM generate_series(1, 100) k});
		$node->safe_psql('postgres',
			"SELECT state.value_set('hv', $mine, state.value_get('hv', $mine, 0::bigint)),
			        state.value_set('rv', $mine, state.value_get('rv', $mine, 0::bigint))");
		for my $s ('hv', 'rv')
		{
			my $e = sql_error($node, "SELECT state.value_set('$s', $other, 1::bigint)");
			is($e->{sqlstate}, '22023', "$format: a write of part $p to $s for another part's key fails");
			like($e->{message}, qr/which part @{[($p + 1) % 3]} of 3 holds/, '... naming that part');
		}
		my $pid = $node->safe_psql('postgres', "SELECT state.snapshot('$dir/${format}_part$p', '$format')");
		is(wait_snapshot_status($node, $pid), 'completed', "$format: snapshot of part $p");
	}
	is_deeply(\%held, { map { $_ => $nkeys } @keyed },
		"$format: the three parts hold every key once");

	# Scale in: the three snapshots merge onto the source.
	$source->safe_psql('postgres',
		"SELECT state.restore(ARRAY['$dir/${format}_part0', '$dir/${format}_part1', '$dir/${format}_part2'])");
	is(fingerprint($source), $original, "$format: the merge restores the original contents");
	is( $source->safe_psql('postgres', q{
		SELECT state.operator_get('ul', '{}'::text[]),
		       (SELECT count(*) FROM state.states WHERE key_groups <> '[0,128)')}),
		'{u1,u2,u1,u2,u1,u2}|0',
		"$format: union lists are concatenated, and every state holds every key group again");
	$source->safe_psql('postgres', "SELECT state.operator_update('ul', ARRAY['u1', 'u2'])");

	# Overlapping snapshots are refused, and nothing changes.
	my $e = sql_error($source,
		"SELECT state.restore(ARRAY['$dir/${format}_part0', '$dir/full_$format'])");
	is($e->{sqlstate}, '22023', "$format: overlapping snapshots are refused");
	is(fingerprint($source), $original, "$format: ... and nothing changed");
}

# A part's range survives its snapshot and a restart: heap and operator
# states come back from the checkpoint taken at shutdown, rocksdb states
# from their own files.
$parts[1]->restart;
ok(defined wait_for_worker($parts[1]), 'part 1 restarted');
is( $parts[1]->safe_psql('postgres', q{
		SELECT string_agg(name || ' ' || key_groups, ', ' ORDER BY name)
		  FROM state.states WHERE name IN ('hv', 'rv')}),
	'hv [43,86), rv [43,86)', 'heap and rocksdb states keep their key groups across a restart');
is( $parts[1]->safe_psql('postgres',
		"SELECT state.operator_get('ol', '{}'::int[]), state.broadcast_get('bc', 'mode', '')"),
	'{5,6,7}|fast', 'operator states come back from the checkpoint');
is(misplaced($parts[1], 1), '0', 'part 1 still holds only its own keys');

is(log_crashes($_), 0, $_->name . ': no crash in the log') for $source, @parts;
$_->stop for $source, @parts;
done_testing();
