# state_backend.rocksdb_compression: how RocksDB compresses the table
# files it writes (lz4, the default, none or zstd).  Under each, a state of
# compressible text values is flushed to table files; the files written
# under lz4 and zstd are under half the size of those written under none;
# sessions read every value back in their views and through the worker,
# after restarts under the other settings, and after a compaction rewrote
# the files a view had open.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_state_node('rocksdb_compression', conf => <<'EOF');
state_backend.backend = 'rocksdb'
state_backend.rocksdb_session_reads_after = 0
EOF
my $rocksdb = $node->data_dir . '/pg_state_backend/rocksdb';
my $snaps = $node->basedir . '/snaps';
mkdir $snaps or die "mkdir $snaps: $!";

is($node->safe_psql('postgres', 'SHOW state_backend.rocksdb_compression'),
	'lz4', 'table files are compressed with LZ4 by default');

# The bytes of the table files of the instance.
sub sst_bytes
{
	my $total = 0;
	return 0 unless -d $rocksdb;    # made at the first rocksdb state
	opendir(my $d, $rocksdb) or die "opendir $rocksdb: $!";
	for my $f (readdir $d)
	{
		$total += -s "$rocksdb/$f" if $f =~ /\.sst$/;
	}
	closedir $d;
	return $total;
}

my $n = 20000;
# The values of the states c_<setting> read right, counted.
sub sum_sql
{
	my $names = join(', ', map { "'c_$_'" } @_);
	return "SELECT count(*) FILTER (WHERE state.value_get(s, k, '') = repeat(k::text || s, 40))
              FROM unnest(ARRAY[$names]) s, generate_series(1::bigint, $n) k";
}
my %bytes;
for my $c ('none', 'lz4', 'zstd')
{
	$node->append_conf('postgresql.conf', "state_backend.rocksdb_compression = '$c'\n");
	$node->restart;
	is($node->safe_psql('postgres', 'SHOW state_backend.rocksdb_compression'), $c, "set to $c");
	my $before = sst_bytes();
	# A snapshot flushes the memtables into table files.
	$node->safe_psql('postgres', qq{
SELECT state.create_state('c_$c', 'value', 'bigint', 'text');
SELECT count(state.value_set('c_$c', k, repeat(k::text || 'c_$c', 40))) FROM generate_series(1::bigint, $n) k;
SELECT state.wait_snapshot(state.snapshot('$snaps/$c'));});
	$bytes{$c} = sst_bytes() - $before;
	note "table files written under $c: $bytes{$c} bytes";
	my $states = scalar(keys %bytes);
	my $sum_sql = sum_sql(keys %bytes);
	is($node->safe_psql('postgres', "SET state_backend.rocksdb_session_reads = off; $sum_sql"),
		$n * $states, "under $c, the worker reads every value written under each setting so far");
	is($node->safe_psql('postgres', $sum_sql), $n * $states,
		"under $c, a session's view reads them too");
}
cmp_ok($bytes{lz4}, '<', $bytes{none} / 2, 'lz4 files are under half the size of uncompressed ones');
cmp_ok($bytes{zstd}, '<', $bytes{none} / 2, 'zstd files are under half the size of uncompressed ones');

my $views = $node->safe_psql('postgres', "SELECT value FROM state.worker WHERE name = 'rocksdb_session_reads'");
cmp_ok($views, '>=', 3 * $n, 'the reads were made in views');

# A view that has the files open keeps reading right when a compaction
# replaces them: the session reads, the states are compacted (their files
# rewritten and the old ones deleted) and the same session reads again.
my $sum_sql = sum_sql('none', 'lz4', 'zstd');
my $s = $node->background_psql('postgres');
is($s->query_safe($sum_sql), 3 * $n, 'a session reads in its view');
$node->safe_psql('postgres', qq{
SELECT state.compact(s) FROM unnest(ARRAY['c_none', 'c_lz4', 'c_zstd']) s;
SELECT count(state.value_set('c_none', k, repeat(k::text || 'c_none', 40))) FROM generate_series(1::bigint, 10) k;
SELECT state.wait_snapshot(state.snapshot('$snaps/after'));});
is($s->query_safe($sum_sql), 3 * $n, 'and again after a compaction replaced the files it had open');
$s->quit;

$node->stop;
done_testing();
