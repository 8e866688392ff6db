# A transactional commit never fails after its commit record: what its
# apply needs is reserved before it, in every backend, or the commit fails
# with 54000 and nothing of the transaction stays (its table rows neither).
#
# - heap: an append to a key whose list entry must grow (a copy of the
#   whole entry) when state_backend.memory_limit has room only for the
#   elements appended;
# - lmdb: 500 map entries written to a key when the LMDB map has room for a
#   few of them;
# - heap: 90,000 elements appended to a list with a TTL, each of which
#   carries a deadline of its own, when about 1 MB is left;
# - then, with room made, the same commits apply whole.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node(
	'reserve',
	lmdb => 1,
	conf => "state_backend.memory_limit = '16MB'\n"
	  . "state_backend_lmdb.map_size = '16MB'\n");

$node->safe_psql('postgres', q{
CREATE TABLE rows (id int);
SELECT state.create_state('tl', 'list', 'int', 'text', transactional => true);
SELECT state.create_state('hfill', 'value', 'int', 'text');
SELECT state.create_state('tm', 'map', 'int', 'text', backend => 'lmdb', map_key_type => 'int',
                          transactional => true);
SELECT state.create_state('lfill', 'value', 'int', 'text', backend => 'lmdb');
});

# Fill a state until it is full (54000), then remove $free of its keys.
sub fill
{
	my ($state, $free) = @_;
	$node->safe_psql('postgres', qq{
DO \$\$
BEGIN
  FOR i IN 1..100000 LOOP
    PERFORM state.value_set('$state', i, repeat('y', 1000));
  END LOOP;
EXCEPTION WHEN program_limit_exceeded THEN NULL;
END \$\$;
SELECT count(*) FROM generate_series(1, $free) k WHERE state.clear('$state', k);
});
}

# ---------------------------------------------------------------- heap
# A list of about 1 MB under one key: an append to it copies the entry.
$node->safe_psql('postgres',
	"SELECT state.list_add_all('tl', 1, array_agg(repeat('x', 1000))) FROM generate_series(1, 1000)");
fill('hfill', 500);

my $r = sql_error($node, q{
BEGIN;
INSERT INTO rows VALUES (1);
SELECT state.list_add('tl', 1, 'tail');
COMMIT;
});
is($r->{sqlstate}, '54000', 'heap: a commit whose append cannot be held fails with 54000');
unlike($r->{stderr}, qr/could not all be applied/, 'heap: nothing is reported lost after the commit');
is($node->safe_psql('postgres', 'SELECT count(*) FROM rows WHERE id = 1'),
	'0', 'heap: the row of the refused commit is not there');
is($node->safe_psql('postgres', "SELECT state.list_length('tl', 1)"),
	'1000', 'heap: the list is as before');

$node->safe_psql('postgres', "SELECT state.truncate('hfill')");
$r = sql_error($node, q{
BEGIN;
INSERT INTO rows VALUES (1);
SELECT state.list_add('tl', 1, 'tail');
COMMIT;
});
is($r->{sqlstate}, '', 'heap: with room, the commit succeeds');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM rows WHERE id = 1 UNION ALL SELECT state.list_length('tl', 1)"),
	"1\n1001", 'heap: its row and its append are there');

# ---------------------------------------------------------------- lmdb
# Fill the map until about 600 kB are left (a full LMDB map cannot even
# remove, as every change copies pages).
my $at = 1;
for (my $i = 0; $i < 1000; $i++)
{
	$node->safe_psql('postgres',
		"SELECT count(state.value_set('lfill', i, repeat('y', 1000))) FROM generate_series($at, $at + 49) i");
	$at += 50;
	last
	  if $node->safe_psql('postgres',
		"SELECT max(value) FILTER (WHERE name = 'lmdb_map_bytes') - max(value) FILTER (WHERE name = 'lmdb_used_bytes') FROM state.worker"
	  ) < 600 * 1024;
}
my $commit_500 = q{
BEGIN;
INSERT INTO rows VALUES (2);
SELECT count(state.map_put('tm', 1, i, repeat('z', 1000))) FROM generate_series(1, 500) i;
COMMIT;
};
$r = sql_error($node, $commit_500);
is($r->{sqlstate}, '54000', 'lmdb: a commit the map cannot hold fails with 54000');
unlike($r->{stderr}, qr/could not all be applied/, 'lmdb: nothing is reported lost after the commit');
is($node->safe_psql('postgres', 'SELECT count(*) FROM rows WHERE id = 2'),
	'0', 'lmdb: the row of the refused commit is not there');
is($node->safe_psql('postgres', "SELECT state.map_size('tm', 1)"),
	'0', 'lmdb: no map entry of it was applied');

$node->safe_psql('postgres', "SELECT state.truncate('lfill')");
$r = sql_error($node, $commit_500);
is($r->{sqlstate}, '', 'lmdb: with room, the commit succeeds');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM rows WHERE id = 2 UNION ALL SELECT state.map_size('tm', 1)"),
	"1\n500", 'lmdb: its row and its 500 map entries are there');

# ------------------------------------------------------ heap, TTL list
# Every element of a list with a TTL carries its own deadline: 90,000
# booleans appended in one commit take 8 bytes more each than their image
# (about 1.2 MB in all), which the reservation must count.  With about 1 MB
# left, the commit is refused, not applied in part after its commit record.
$node->safe_psql('postgres', q{
SELECT state.create_state('ttll', 'list', 'int', 'bool', transactional => true, ttl => '1 hour');
SELECT state.create_state('hbig', 'value', 'int', 'text');
DO $$
BEGIN
  FOR i IN 1..1000 LOOP
    PERFORM state.value_set('hbig', i, repeat('y', 100000));
  END LOOP;
EXCEPTION WHEN program_limit_exceeded THEN NULL;
END $$;
SELECT count(*) FROM generate_series(1, 10) k WHERE state.clear('hbig', k);
});
my $commit_ttl = q{
BEGIN;
INSERT INTO rows VALUES (3);
SELECT state.list_add_all('ttll', 1, array_fill(true, ARRAY[90000]));
COMMIT;
};
$r = sql_error($node, $commit_ttl);
unlike($r->{stderr}, qr/could not all be applied/,
	'heap TTL list: nothing is reported lost after the commit');
is($r->{sqlstate}, '54000',
	'heap TTL list: a commit whose elements cannot be held with their deadlines fails with 54000');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM rows WHERE id = 3 UNION ALL SELECT state.list_length('ttll', 1)"),
	"0\n0", 'heap TTL list: neither its row nor its elements are there');

$node->safe_psql('postgres', "SELECT state.truncate('hbig')");
$r = sql_error($node, $commit_ttl);
is($r->{sqlstate}, '', 'heap TTL list: with room, the commit succeeds');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM rows WHERE id = 3 UNION ALL SELECT state.list_length('ttll', 1)"),
	"1\n90000", 'heap TTL list: its row and its 90,000 elements are there');

$node->stop;
done_testing();
