# A mutation fuzzer of restore: real snapshots of every kind of state, on
# both backends, in both formats, are damaged at random and restored, and
# every state is then read back.  A mutation may be refused or, when it
# only changes what a datum says, accepted; it must never crash a process,
# hang, or be accepted when it broke a checksum.
#
# Mutations: bit flips, truncation and appended bytes anywhere in any file
# (checksums left as they are: every one must be refused); and edits that
# know the layouts and recompute every checksum: lengths, counts and bytes
# inside key and state images (inside jsonb, numeric and array datums and
# aggregates' transition states too), entries moved, dropped or repeated,
# MANIFEST lines changed, repeated or dropped, and RocksDB files changed
# with their listing in rocksdb/FILES made to match.  An edited snapshot is
# no longer signed, so its images are checked or refused; one edited under
# its signature (the MANIFEST left as it was) must be refused.
#
#   STATE_BACKEND_FUZZ_COUNT   mutations to try (default 120)
#   STATE_BACKEND_FUZZ_SEED    random seed (default: a fixed one; printed)
#
# scripts/fuzz.sh N runs this with N mutations.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use SnapshotFiles;

my $COUNT = $ENV{STATE_BACKEND_FUZZ_COUNT} // 120;
# A fixed seed in the suite, so that a run finds what the last one found;
# scripts/fuzz.sh runs other seeds.
my $SEED = $ENV{STATE_BACKEND_FUZZ_SEED} // 20261201;
my $TIMEOUT = 60;
srand($SEED);
note "fuzz seed $SEED, $COUNT mutations (STATE_BACKEND_FUZZ_SEED=$SEED reproduces them)";

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node('fuzz', conf => "state_backend.max_parallelism = 16\n");
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;

# Every kind, on both backends, with fixed-length, variable-length,
# composite, array and jsonb datums; read_all() reads every state back,
# through every datum's output function, and returns how many it read.
$node->safe_psql(
	'postgres', q{
CREATE TYPE pt AS (x int, label text);
DO $$
DECLARE
    b text;
BEGIN
    FOREACH b IN ARRAY ARRAY['memory', 'rocksdb'] LOOP
        PERFORM state.create_state('v_' || b, 'value', 'int', 'text', backend => b);
        PERFORM state.create_state('j_' || b, 'value', 'text', 'jsonb', backend => b);
        PERFORM state.create_state('c_' || b, 'value', 'bigint', 'pt', backend => b);
        PERFORM state.create_state('a_' || b, 'value', 'int', 'int[]', backend => b);
        PERFORM state.create_state('n_' || b, 'value', 'int', 'numeric', backend => b);
        PERFORM state.create_state('l_' || b, 'list', 'int', 'text', backend => b);
        PERFORM state.create_state('m_' || b, 'map', 'int', 'text', map_key_type => 'bigint', backend => b);
        PERFORM state.create_state('r_' || b, 'reducing', 'text', 'bigint', reducer => 'sum', backend => b);
        PERFORM state.create_state('g_' || b, 'aggregating', 'int', 'numeric', aggregate => 'sum(numeric)', backend => b);
        PERFORM state.create_state('f_' || b, 'aggregating', 'int', 'float8', aggregate => 'avg(float8)', backend => b);
        FOR i IN 1 .. 20 LOOP
            PERFORM state.value_set('v_' || b, i, repeat('v', i));
            PERFORM state.value_set('j_' || b, 'k' || i, jsonb_build_object('i', i, 'a', jsonb_build_array(i, 'x')));
            PERFORM state.value_set('c_' || b, i::bigint, ROW(i, 'p' || i)::pt);
            PERFORM state.value_set('a_' || b, i, ARRAY[i, i + 1, NULL]);
            PERFORM state.value_set('n_' || b, i, (i * 1.5)::numeric);
            PERFORM state.list_add('l_' || b, i % 4, 'e' || i);
            PERFORM state.map_put('m_' || b, i % 3, i::bigint, CASE WHEN i % 5 = 0 THEN NULL ELSE 'm' || i END);
            PERFORM state.reduce('r_' || b, 'k' || (i % 6), i::bigint);
            PERFORM state.aggregate('g_' || b, i % 5, (i * 0.25)::numeric);
            PERFORM state.aggregate('f_' || b, i % 5, i * 0.5);
        END LOOP;
    END LOOP;
END
$$;
CREATE FUNCTION read_all() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    s record;
    t text;
    n bigint := 0;
BEGIN
    FOR s IN SELECT name FROM state.states ORDER BY name LOOP
        CASE left(s.name, 1)
            WHEN 'v' THEN SELECT string_agg(state.value_get(s.name, k, NULL::text), ',') INTO t
                          FROM state.keys(s.name, NULL::int) k;
            WHEN 'j' THEN SELECT string_agg(state.value_get(s.name, k, NULL::jsonb)::text, ',') INTO t
                          FROM state.keys(s.name, NULL::text) k;
            WHEN 'c' THEN SELECT string_agg(state.value_get(s.name, k, NULL::pt)::text, ',') INTO t
                          FROM state.keys(s.name, NULL::bigint) k;
            WHEN 'a' THEN SELECT string_agg(state.value_get(s.name, k, NULL::int[])::text, ',') INTO t
                          FROM state.keys(s.name, NULL::int) k;
            WHEN 'n' THEN SELECT string_agg(state.value_get(s.name, k, NULL::numeric)::text, ',') INTO t
                          FROM state.keys(s.name, NULL::int) k;
            WHEN 'g' THEN SELECT string_agg(state.value_get(s.name, k, NULL::numeric)::text, ',') INTO t
                          FROM state.keys(s.name, NULL::int) k;
            WHEN 'f' THEN SELECT string_agg(state.value_get(s.name, k, NULL::float8)::text, ',') INTO t
                          FROM state.keys(s.name, NULL::int) k;
            WHEN 'l' THEN SELECT string_agg(state.list_get(s.name, k, NULL::text[])::text
                                            || state.list_length(s.name, k), ',') INTO t
                          FROM state.keys(s.name, NULL::int) k;
            WHEN 'm' THEN SELECT string_agg(e::text || state.map_size(s.name, k), ',') INTO t
                          FROM state.keys(s.name, NULL::int) k,
                               state.map_entries(s.name, k, NULL::bigint, NULL::text) e;
            ELSE SELECT string_agg(state.value_get(s.name, k, NULL::bigint)::text, ',') INTO t
                 FROM state.keys(s.name, NULL::text) k;
        END CASE;
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
});
my $read_all = 'SELECT read_all()';

my %base;
for my $format ('native', 'canonical')
{
	$base{$format} = "$tmp/base_$format";
	$node->safe_psql('postgres',
		"SELECT state.wait_snapshot(state.snapshot('$base{$format}', '$format'))");
}
my $baseline = $node->safe_psql('postgres', $read_all);
is($baseline, '20', 'every state readable before fuzzing');

sub files_under
{
	my ($dir) = @_;
	my @out;
	my @todo = ($dir);
	while (my $d = shift @todo)
	{
		opendir(my $h, $d) or die "opendir $d: $!";
		for my $e (grep { !/^\.\.?$/ } readdir $h)
		{
			my $p = "$d/$e";
			if (-d $p) { push @todo, $p; }
			else { push @out, $p; }
		}
		closedir $h;
	}
	return sort @out;
}

sub pick { return $_[ int(rand(scalar @_)) ]; }

sub random_bytes { return join('', map { chr(int(rand(256))) } 1 .. $_[0]); }

my @INTERESTING = (0, 1, 2, 3, 4, 7, 8, 0x7F, 0xFF, 0x100, 2000, 0x7FFF, 0xFFFF,
	256 << 20, 0x3FFFFFFF, 0x7FFFFFFF, 0xFFFFFFF8, 0xFFFFFFFC, 0xFFFFFFFF);

# Change a byte string: its bytes, a 32-bit field in it, or its length.
sub mutate_image
{
	my ($img) = @_;
	my $len = length($img);
	my $how = int(rand(5));
	if ($how == 0 && $len > 0)
	{
		substr($img, int(rand($len)), 1) = chr(int(rand(256)));
	}
	elsif ($how == 1 && $len >= 4)
	{
		my $at = int(rand($len - 3));
		$at -= $at % 4 if rand() < 0.7;
		my $v = rand() < 0.5 ? pick(@INTERESTING) : ($len - $at + int(rand(9)) - 4) & 0xFFFFFFFF;
		substr($img, $at, 4) = pack('L<', $v);
	}
	elsif ($how == 2 && $len > 0)
	{
		$img = substr($img, 0, int(rand($len)));
	}
	elsif ($how == 3)
	{
		$img .= random_bytes(1 + int(rand(12)));
	}
	else
	{
		$img = rand() < 0.5 ? '' : pack('L<', pick(@INTERESTING)) . $img;
	}
	return $img;
}

# A .kg file edited at the level of its entries, every checksum recomputed:
# the insides of datums too (jsonb, numeric and array images, aggregates'
# serialized transition states), which the snapshot's trust decides about
# (docs/operations.md).  With $keep_manifest, the MANIFEST is left as it
# was, its signature valid: the file's digest must give the change away.
sub mutate_kg
{
	my ($file, $manifest_dir, $relpath, $keep_manifest) = @_;
	my $kg = read_kg($file);
	my @blocks = grep { @{ $_->{pairs} } } @{ $kg->{blocks} };
	return 'kg: no entries' unless @blocks;
	my $b = pick(@blocks);
	my $i = int(rand(scalar @{ $b->{pairs} }));
	my $how = int(rand(7));
	my $what;
	if ($how <= 2)
	{
		$b->{pairs}[$i][1] = mutate_image($b->{pairs}[$i][1]);
		$what = 'state image';
	}
	elsif ($how == 3)
	{
		$b->{pairs}[$i][0] = mutate_image($b->{pairs}[$i][0]);
		$what = 'key image';
	}
	elsif ($how == 4)
	{
		my $other = pick(@{ $kg->{blocks} });
		push @{ $other->{pairs} }, splice(@{ $b->{pairs} }, $i, 1);
		$what = 'entry moved to another key group';
	}
	elsif ($how == 5)
	{
		push @{ $b->{pairs} }, [ @{ $b->{pairs}[$i] } ];
		$what = 'entry repeated';
	}
	else
	{
		splice(@{ $b->{pairs} }, $i, 1);
		$what = 'entry dropped';
	}
	my $size = write_kg($file, $kg);
	return "kg under a valid signature: $what" if $keep_manifest;
	set_manifest_size($manifest_dir, $relpath, $size);
	return "kg: $what";
}

# A MANIFEST edited line by line, its checksum recomputed.
sub mutate_manifest
{
	my ($dir) = @_;
	my @lines = read_manifest($dir);
	my $i = int(rand(scalar @lines));
	my $how = int(rand(4));
	if ($how == 0)
	{
		splice(@lines, $i, 0, $lines[$i]);
		write_manifest($dir, @lines);
		return 'manifest: line repeated';
	}
	if ($how == 1)
	{
		splice(@lines, $i, 1);
		write_manifest($dir, @lines);
		return 'manifest: line dropped';
	}
	my @fields = split / /, $lines[$i];
	my $f = 1 + int(rand(scalar(@fields) - 1 || 1));
	$f = $#fields if $f > $#fields;
	if ($fields[$f] =~ /^([a-z_]+)=(.*)$/)
	{
		my ($k, $v) = ($1, $2);
		$v = pick('-', '0', '1', '4294967295', '', 'x/y/1/-1/0', 'pg_catalog/int8/20/3/1',
			'pg_catalog/text/25/-1/0', 'value', 'map', 'sum', 'rocksdb', 'db-1/1.kg',
			'../x', $v . '0', int(rand(1 << 20)));
		$fields[$f] = "$k=$v";
	}
	else
	{
		$fields[$f] = pick('0', '-1', '1', '4294967295', '999999', 'x', '');
	}
	$lines[$i] = join(' ', @fields);
	write_manifest($dir, @lines);
	return 'manifest: field changed';
}

# A file listed in rocksdb/FILES changed, its size and checksum there made
# to match (and FILES's own checksum).  The snapshot stays signed: it must
# be refused.
sub mutate_rocksdb_file
{
	my ($dir) = @_;
	my $files = "$dir/rocksdb/FILES";
	return 'rocksdb: none' unless -f $files;
	my @lines = split /\n/, slurp_bytes($files);
	pop @lines if $lines[-1] =~ /^crc32c /;
	my $i = int(rand(scalar @lines));
	my @f = split / /, $lines[$i];
	my $path = "$dir/$f[2]";
	return 'rocksdb: listed file absent' unless -f $path;
	my $data = mutate_image(slurp_bytes($path));
	spew_bytes($path, $data);
	$f[3] = length($data);
	$f[4] = sprintf('%08X', crc32c($data));
	# Its digest dropped too, or left stale: FILES's own digest, named by
	# the signed state lists, gives the change away either way.
	splice(@f, 5) if rand() < 0.5;
	$lines[$i] = join(' ', @f);
	my $body = join("\n", @lines) . "\n";
	spew_bytes($files, $body . sprintf("crc32c %08X\n", crc32c($body)));
	return "rocksdb: $f[0] file changed";
}

my %stats = (tried => 0, refused => 0, accepted => 0, crashes => 0, hangs => 0,
	wrong_accepts => 0, read_errors => 0, internal_errors => 0);
my %by_kind;

for my $n (1 .. $COUNT)
{
	my $format = rand() < 0.5 ? 'native' : 'canonical';
	my $dir = "$tmp/m$n";
	system('cp', '-a', $base{$format}, $dir) == 0 or die 'cp';
	my @files = files_under($dir);
	my $r = rand();
	my ($what, $checked);
	if ($r < 0.3)
	{
		my $file = pick(@files);
		my $data = slurp_bytes($file);
		my $kind = int(rand(3));
		if ($kind == 0 && length $data)
		{
			my $at = int(rand(length $data));
			substr($data, $at, 1) = chr(ord(substr($data, $at, 1)) ^ (1 << int(rand(8))));
			$what = 'bit flip';
		}
		elsif ($kind == 1 && length $data)
		{
			$data = substr($data, 0, int(rand(length $data)));
			$what = 'truncation';
		}
		else
		{
			$data .= random_bytes(1 + int(rand(64)));
			$what = 'appended bytes';
		}
		spew_bytes($file, $data);
		$what .= ' in ' . substr($file, length($dir) + 1);
		# Every byte of a snapshot is under a checksum: all must be refused.
		$checked = 1;
	}
	elsif ($r < 0.75)
	{
		my @kg = grep { /\.kg$/ } @files;
		my $file = pick(@kg);
		my $rel = substr($file, length($dir) + 1);
		# A signed file changed: refused whatever it holds (an edit that
		# gave the same bytes back changed nothing).
		my $keep = rand() < 0.25;
		my $before = slurp_bytes($file);
		$what = mutate_kg($file, $dir, $rel, $keep);
		$checked = $keep && slurp_bytes($file) ne $before;
	}
	elsif ($r < 0.9)
	{
		$what = mutate_manifest($dir);
	}
	else
	{
		$what = mutate_rocksdb_file($dir);
		$checked = $what =~ /file changed$/;
	}
	(my $kind = $what) =~ s/ in .*//;
	$by_kind{$kind}++;
	$stats{tried}++;

	my $backend = pick('', '', ", backend => 'memory'", ", backend => 'rocksdb'");
	my $timed_out;
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT state.restore('$dir'$backend)",
		timeout => $TIMEOUT, timed_out => \$timed_out);
	if ($timed_out)
	{
		$stats{hangs}++;
		diag "mutation $n ($what, $format$backend): restore did not return";
	}
	elsif ($ret == 0)
	{
		$stats{accepted}++;
		if ($checked)
		{
			$stats{wrong_accepts}++;
			diag "mutation $n ($what, $format$backend): accepted";
		}
	}
	else
	{
		$stats{refused}++;
	}
	if (!defined wait_for_worker($node, timeout => 30)
		|| $node->psql('postgres', 'SELECT 1') != 0)
	{
		$stats{crashes}++;
		diag "mutation $n ($what, $format$backend): server or worker down";
		last;
	}
	my ($rret, $rout, $rerr) = $node->psql('postgres', "\\set VERBOSITY verbose\n$read_all",
		timeout => $TIMEOUT, timed_out => \$timed_out);
	if ($timed_out)
	{
		$stats{hangs}++;
		diag "mutation $n ($what): reading the states back hangs";
	}
	elsif ($rret != 0)
	{
		$stats{read_errors}++;
		if ($rerr =~ /ERROR:  XX000/)
		{
			$stats{internal_errors}++;
			diag "mutation $n ($what, $format$backend): internal error reading back: $rerr";
		}
	}
	system('rm', '-rf', $dir);
	# Back to the untouched states every few rounds.
	$node->safe_psql('postgres', "SELECT state.restore('$base{native}')") if $n % 10 == 0;
}

note join(', ', map { "$_ $stats{$_}" } sort keys %stats);
note join(', ', map { "$_: $by_kind{$_}" } sort keys %by_kind);
is($stats{crashes}, 0, "$stats{tried} mutations: no crash");
is($stats{hangs}, 0, "$stats{tried} mutations: no hang");
is($stats{wrong_accepts}, 0, "$stats{tried} mutations: no damage past a checksum accepted");
is($stats{internal_errors}, 0, "$stats{tried} mutations: no internal error reading states back");
cmp_ok($stats{refused}, '>', 0, 'some mutations were refused');
$node->safe_psql('postgres', "SELECT state.restore('$base{native}')");
is($node->safe_psql('postgres', $read_all), $baseline, 'the untouched snapshot restores as before');
is(join("\n", log_crashes($node, $log_offset)), '', 'no process crashed');
$node->stop;
done_testing();
