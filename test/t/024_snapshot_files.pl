# A native snapshot's rocksdb/FILES, crafted with valid checksums, cannot
# make a reader write through the snapshot's own files; and a native
# snapshot of rocksdb states, whose keys are stored under their key groups,
# is not restored where state_backend.max_parallelism differs (the keys
# would be unreachable), while a canonical one is.  A server restarted with
# another max_parallelism leaves its rocksdb states unused, with a warning,
# refuses to create rocksdb states, and has them all back once the setting
# is put back.  snapshot_entries
# lays the listed files out in a scratch directory (SST files linked, the
# others copied through "<name>.tmp"): a listed name that is one of those
# temporary names, or a name listed twice, is refused as damage (XX001),
# and every file of the snapshot stays byte for byte as it was.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use SnapshotFiles;

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $node = new_state_node('snapshot_files');
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('r', 'value', 'int', 'text', backend => 'rocksdb');
SELECT count(state.value_set('r', i, repeat('x', 50))) FROM generate_series(1, 2000) i;
});
my $id = $node->safe_psql('postgres', qq{SELECT state.snapshot('$tmp/base', 'native')});
is(wait_snapshot_status($node, $id), 'completed', 'a native snapshot of a rocksdb state');
my $read = q{SELECT count(*) FROM state.snapshot_entries(%s, 'r', 0, ''::text)};
is($node->safe_psql('postgres', sprintf($read, "'$tmp/base'")), '2000',
	'snapshot_entries reads it');

# FILES's lines ("kind name where size crc"), without its checksum line.
sub files_lines { return read_checked_lines("$_[0]/rocksdb/FILES"); }
sub write_files { my ($dir, @lines) = @_; write_checked_lines("$dir/rocksdb/FILES", @lines); }

# Every file of a snapshot with its contents.
sub contents
{
	my ($dir) = @_;
	my %c;
	for my $f (split /\n/, `find '$dir' -type f | sort`)
	{
		$c{$f} = slurp_bytes($f);
	}
	return \%c;
}

my @base = files_lines("$tmp/base");
my ($sst) = grep { /^sst / } @base;
my ($meta) = grep { /^meta / } @base;
ok(defined $sst && defined $meta, 'FILES lists SST and other files');
my @sst = split / /, $sst;
my @meta = split / /, $meta;

my %cases = (
	# an SST linked, first, under the name the copy of a listed file goes
	# through
	'tmp_name' => [ join(' ', 'sst', "$meta[1].tmp", @sst[ 2 .. 4 ]), @base ],
	# one name listed twice, for two different files
	'twice' => [ join(' ', 'sst', $meta[1], @sst[ 2 .. 4 ]), @base ],
);
for my $case (sort keys %cases)
{
	my $dir = "$tmp/$case";
	system('cp', '-a', "$tmp/base", $dir) == 0 or die "cp: $!";
	write_files($dir, @{ $cases{$case} });
	my $before = contents($dir);
	my $err = sql_error($node, sprintf($read, "'$dir'"));
	is($err->{sqlstate}, 'XX001', "$case: snapshot_entries refuses the FILES list (XX001)")
	  or diag $err->{message};
	$err = sql_error($node, "SELECT state.restore('$dir')");
	is($err->{sqlstate}, 'XX001', "$case: restore refuses it too");
	is_deeply(contents($dir), $before, "$case: every file of the snapshot is as it was");
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM state.entries('r', 0, ''::text)}),
	'2000', 'the state is untouched');

# Another server, with 256 key groups.
$id = $node->safe_psql('postgres', qq{SELECT state.snapshot('$tmp/canonical', 'canonical')});
is(wait_snapshot_status($node, $id), 'completed', 'a canonical snapshot of the same state');
my $other = new_state_node('other_key_groups', conf => "state_backend.max_parallelism = 256\n");
ok(defined wait_for_worker($other), 'a server with 256 key groups');
my $err = sql_error($other, "SELECT state.restore('$tmp/base')");
is($err->{sqlstate}, '22023', 'the native snapshot of 128 key groups is refused there (22023)')
  or diag $err->{message};
like($err->{message}, qr/128 key groups/, '... naming its key groups');
is($other->safe_psql('postgres', qq{SELECT state.restore('$tmp/canonical')}), '2000',
	'the canonical snapshot restores there');
is( $other->safe_psql('postgres',
		q{SELECT count(*) FROM generate_series(1, 2000) k WHERE state.value_get('r', k, '') = repeat('x', 50)}),
	'2000', 'and every key is found under 256 key groups');
$other->stop;

my $offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "state_backend.max_parallelism = 256\n");
$node->restart;
ok(defined wait_for_worker($node), 'restarted with 256 key groups');
is(sql_error($node, q{SELECT state.value_get('r', 1, ''::text)})->{sqlstate}, '42704',
	'the rocksdb state of 128 key groups is not served (42704)');
like(slurp_file($node->logfile, $offset),
	qr/WARNING:  1 rocksdb states are not loaded: their keys are stored under 128 key groups/,
	'the log says why');
is(sql_error($node, q{SELECT state.create_state('r2', 'value', 'int', 'int', backend => 'rocksdb')})->{sqlstate},
	'55000', 'no rocksdb state is created meanwhile (55000)');
$node->safe_psql('postgres', q{SELECT state.create_state('h', 'value', 'int', 'int', backend => 'memory')});
is($node->safe_psql('postgres', q{SELECT string_agg(name, ',') FROM state.states}),
	'h', 'heap states are');
$node->append_conf('postgresql.conf', "state_backend.max_parallelism = 128\n");
$node->restart;
ok(defined wait_for_worker($node), 'restarted with 128 key groups again');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM generate_series(1, 2000) k WHERE state.value_get('r', k, '') = repeat('x', 50)}),
	'2000', 'the rocksdb state is back with every key');
is(log_crashes($node), 0, 'no crash in the log');
is(log_crashes($other), 0, 'no crash in the other server\'s log');
$node->stop;
done_testing();
