# Which snapshots a server trusts, and what it does with the others.
#
# A server trusts what it wrote where only it writes (its checkpoint_dir,
# shared memory) and any snapshot signed with its key
# (state_backend.signing_key_file).  The images of any other snapshot
# reach a type's own functions only when they can be checked first:
#
# - native images of jsonb, numeric, arrays: refused (0A000), whoever
#   restores, even a superuser; of bigint and text: checked, restored;
# - serialized transition states of an aggregate (sum(numeric), whose
#   deserialization function trusts its input): refused in both formats;
# - a backend's own native files (rocksdb SST files): refused;
# - canonical images of other types: through the types' receive functions.
#
# A signed snapshot whose files changed after it was signed is
# data_corrupted, whatever their checksums say.  A second server that
# shares the key file trusts the first's snapshots.  No process crashes.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use SnapshotFiles;

my $tmp = PostgreSQL::Test::Utils::tempdir();

my $node = new_state_node('trust',
	conf => "state_backend.checkpoint_dir = '$tmp/checkpoints'\n");
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('doc', 'value', 'int', 'jsonb');
SELECT state.value_set('doc', 1, '{"a": [1, 2, {"b": "c"}]}'::jsonb);
SELECT state.create_state('num', 'value', 'int', 'numeric');
SELECT state.value_set('num', 1, 12345.6789::numeric);
SELECT state.create_state('total', 'aggregating', 'int', 'numeric', aggregate => 'sum(numeric)');
SELECT state.aggregate('total', 1, 1.5);
SELECT state.aggregate('total', 1, 2.25);
SELECT state.create_state('txt', 'value', 'int', 'text');
SELECT state.value_set('txt', 1, 'hello');
SELECT state.create_state('big', 'value', 'int', 'bigint');
SELECT state.value_set('big', 1, 42::bigint);
CREATE ROLE reader LOGIN;
GRANT pg_read_server_files TO reader;
GRANT USAGE ON SCHEMA state TO reader;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA state TO reader;
});
$node->safe_psql('postgres',
	"SELECT state.grant_access(n, 'reader', 'write') FROM unnest(ARRAY['doc', 'num', 'total', 'txt', 'big']) n");

my $read_all = q{SELECT state.value_get('doc', 1, 'null'::jsonb)::text || '|' ||
  state.value_get('num', 1, 0::numeric) || '|' || state.value_get('total', 1, 0::numeric) || '|' ||
  state.value_get('txt', 1, '') || '|' || state.value_get('big', 1, 0::bigint)};
my $expected = q{{"a": [1, 2, {"b": "c"}]}|12345.6789|3.75|hello|42};
is($node->safe_psql('postgres', $read_all), $expected, 'states as written');

# The key file: made by the worker, readable by the server's user only.
my $keyfile = $node->data_dir . '/state_backend.key';
ok(-f $keyfile, 'the signing key file exists');
is((stat $keyfile)[2] & 07777, 0600, 'the key file is mode 0600');

my $native = "$tmp/native";
my $canonical = "$tmp/canonical";
$node->safe_psql('postgres', "SELECT state.wait_snapshot(state.snapshot('$native'))");
$node->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('$canonical', 'canonical'))");
ok((grep { /^signature hmac-sha256 [0-9a-f]{64}$/ } read_manifest($native)),
	'the MANIFEST is signed');
like(manifest_state($native, 'doc')->{sha256}, qr/^[0-9a-f]{64}$/,
	'the MANIFEST gives each file its digest');

my $copies = 0;

# A copy of $from with state $state's only value image changed by $edit,
# every checksum made to match; $keep_manifest leaves the MANIFEST's bytes
# (and so its signature) as they were.
sub tampered
{
	my ($from, $state, $edit, $keep_manifest) = @_;
	my $dir = "$tmp/tampered_" . ++$copies;
	copy_dir($from, $dir);
	my $file = manifest_state($dir, $state)->{file};
	my $kg = read_kg("$dir/$file");
	my ($block) = grep { @{ $_->{pairs} } } @{ $kg->{blocks} };
	$block->{pairs}[0][1] = $edit->($block->{pairs}[0][1]);
	my $size = write_kg("$dir/$file", $kg);
	set_manifest_size($dir, $file, $size) unless $keep_manifest;
	return $dir;
}

# A copy of $from without its signature (another server's, or an old one).
sub unsigned
{
	my ($from) = @_;
	my $dir = "$tmp/unsigned_" . ++$copies;
	copy_dir($from, $dir);
	write_manifest($dir, grep { !/^signature / } read_manifest($dir));
	return $dir;
}

sub refused
{
	my ($sql, $state, $what, %opts) = @_;
	my $r = sql_error($node, ($opts{role} ? "SET ROLE $opts{role};\n" : '') . $sql);
	is($r->{sqlstate}, $state, "$what: $state") or diag $r->{stderr};
	like($r->{stderr}, $opts{like}, "$what: the message says why") if $opts{like};
	is($node->safe_psql('postgres', $read_all), $expected, "$what: every state as it was");
	return $r;
}

# Signed: restored as the server's own, by a superuser and by a member of
# pg_read_server_files.
$node->safe_psql('postgres', "SELECT state.restore('$native')");
is($node->safe_psql('postgres', $read_all), $expected, 'a signed native snapshot restores');
$node->safe_psql('postgres', "SET ROLE reader; SELECT state.restore('$native')");
is($node->safe_psql('postgres', $read_all), $expected,
	'a signed native snapshot restores for pg_read_server_files');
$node->safe_psql('postgres', "SET ROLE reader; SELECT state.restore('$canonical')");
is($node->safe_psql('postgres', $read_all), $expected,
	'a signed canonical snapshot restores for pg_read_server_files');

# A truncated jsonb image (the crash of a crafted native snapshot).
my $bad_json = tampered($native, 'doc', sub { substr($_[0], 0, 6) });
refused("SELECT state.restore('$bad_json')", '0A000',
	'a crafted jsonb image, restored by a superuser',
	like => qr/not trusted, and state "doc" holds native images of type jsonb/);
refused("SELECT count(*) FROM state.snapshot_entries('$bad_json', 'doc', 0, 'null'::jsonb)",
	'0A000', 'the same read with snapshot_entries');
refused("SELECT state.restore('$bad_json')", '42501',
	'the same snapshot restored by a role that is not a superuser', role => 'reader');

# The same damage under an intact signature: the file's digest gives it away.
my $resigned = tampered($native, 'doc', sub { my $i = shift; substr($i, 4, 1, "\x7f"); $i }, 1);
refused("SELECT state.restore('$resigned')", 'XX001',
	'a signed snapshot whose file changed', like => qr/was changed after its snapshot was signed/);

# Unsigned, of types whose images can be checked: restored by a superuser.
my $plain = unsigned($native);
refused("SELECT state.restore('$plain')", '0A000', 'an unsigned snapshot with jsonb',
	like => qr/type jsonb/);
my $plain_only = "$tmp/plain_only";
$node->safe_psql('postgres', q{CREATE DATABASE plain});
$node->safe_psql('plain', q{
CREATE EXTENSION state_backend;
SELECT state.create_state('t', 'value', 'int', 'text');
SELECT state.value_set('t', 1, 'one');
SELECT state.create_state('b', 'list', 'int', 'bigint');
SELECT state.list_add_all('b', 1, ARRAY[1, 2, 3]::bigint[]);
});
$node->safe_psql('plain', "SELECT state.wait_snapshot(state.snapshot('$plain_only'))");
my $plain_unsigned = unsigned($plain_only);
$node->safe_psql('plain', "SELECT state.restore('$plain_unsigned', from_database => 'plain')");
is($node->safe_psql('plain', q{SELECT state.value_get('t', 1, '') || state.list_length('b', 1)}),
	'one3', 'an unsigned native snapshot of text and bigint restores, checked');
my $bad_text = unsigned(tampered($plain_only, 't', sub { "\xff\xfe" }));
my $r = sql_error($node, "SELECT state.restore('$bad_text', from_database => 'plain')",
	dbname => 'plain');
is($r->{sqlstate}, 'XX001', 'a text image not in the server encoding is refused')
  or diag $r->{stderr};

# Serialized transition states: refused when unsigned, in either format.
my $bad_agg = tampered($canonical, 'total', sub { pack('l>', -2147483648) x 8 });
refused("SELECT state.restore('$bad_agg')", '0A000',
	'a crafted sum(numeric) transition state, restored by pg_read_server_files',
	role => 'reader', like => qr/serialized transition states of aggregate sum\(numeric\)/);
refused("SELECT state.restore('$bad_agg')", '0A000', 'the same restored by a superuser');
refused("SELECT count(*) FROM state.snapshot_entries('$bad_agg', 'total', 0, 0::numeric)",
	'0A000', 'the same read with snapshot_entries');

# Unsigned canonical images go through the receive functions.
$node->safe_psql('postgres', q{SELECT state.drop_state('total')});
my $canon_plain = "$tmp/canon_plain";
$node->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('$canon_plain', 'canonical'))");
$node->safe_psql('postgres', q{
SELECT state.create_state('total', 'aggregating', 'int', 'numeric', aggregate => 'sum(numeric)');
SELECT state.aggregate('total', 1, 3.75);
});
my $canon_garbage = tampered($canon_plain, 'doc', sub { "\x01" . '{"a": [1, ' });
$r = sql_error($node, "SET ROLE reader; SELECT state.restore('$canon_garbage')");
like($r->{sqlstate}, qr/^22/, 'an unsigned canonical jsonb that jsonb_recv rejects is refused')
  or diag $r->{stderr};
is($node->safe_psql('postgres', $read_all), $expected, 'every state as it was');

# rocksdb native files of an unsigned snapshot are not read.
$node->safe_psql('postgres', q{
SELECT state.create_state('rk', 'value', 'int', 'bigint', backend => 'rocksdb');
SELECT state.value_set('rk', 1, 5::bigint);
});
my $with_rocks = "$tmp/with_rocks";
$node->safe_psql('postgres', "SELECT state.wait_snapshot(state.snapshot('$with_rocks'))");
$node->safe_psql('postgres', "SELECT state.restore('$with_rocks')");
is($node->safe_psql('postgres', q{SELECT state.value_get('rk', 1, 0::bigint)}), '5',
	'a signed snapshot with rocksdb files restores');
my $rocks_unsigned = unsigned($with_rocks);
refused("SELECT state.restore('$rocks_unsigned')", '0A000', 'an unsigned snapshot with rocksdb files');
refused("SELECT count(*) FROM state.snapshot_entries('$rocks_unsigned', 'rk', 0, 0::bigint)",
	'0A000', 'rocksdb files of an unsigned snapshot', like => qr/holds rocksdb native files/);

# A changed SST file, with FILES rewritten to match its checksum: FILES
# no longer has the digest its list (signed through the MANIFEST) names.
{
	my $dir = "$tmp/sst_changed";
	copy_dir($with_rocks, $dir);
	my @files = read_checked_lines("$dir/rocksdb/FILES");
	my ($sst) = grep { /^sst / } @files;
	my (undef, $name, $where) = split / /, $sst;
	# SST files are shared between snapshots: change a copy only.
	my $path = "$dir/$where";
	my $copy = "$dir/rocksdb/changed.sst";
	my $bytes = slurp_bytes($path);
	substr($bytes, 10, 1, chr(ord(substr($bytes, 10, 1)) ^ 1));
	spew_bytes($copy, $bytes);
	write_checked_lines("$dir/rocksdb/FILES",
		map {
			$_ eq $sst
			  ? sprintf('sst %s rocksdb/changed.sst %d %08X', $name, length $bytes, crc32c($bytes))
			  : $_
		} @files);
	refused("SELECT state.restore('$dir')", 'XX001', 'a changed SST file of a signed snapshot',
		like => qr/digest/);
}

# A second server: another key, so the first's snapshot is not trusted
# there, until it is given the first's key file.
my $other = new_state_node('trust_other');
ok(defined wait_for_worker($other), 'second server running');
$r = sql_error($other, "SELECT state.restore('$native')");
is($r->{sqlstate}, '0A000', "another server's snapshot is not trusted") or diag $r->{stderr};
copy_dir($keyfile, "$tmp/shared.key");
$other->append_conf('postgresql.conf', "state_backend.signing_key_file = '$tmp/shared.key'\n");
$other->reload;
$other->poll_query_until('postgres',
	q{SELECT current_setting('state_backend.signing_key_file') <> 'state_backend.key'})
  or die 'reload not seen';
$other->safe_psql('postgres', "SELECT state.restore('$with_rocks')");
is($other->safe_psql('postgres', q{SELECT state.value_get('doc', 1, 'null'::jsonb)::text || '|' ||
  state.value_get('rk', 1, 0::bigint)}), '{"a": [1, 2, {"b": "c"}]}|5',
	'a server that shares the key file trusts the snapshot, rocksdb files too');

is(join("\n", log_crashes($node, $log_offset)), '', 'no process crashed');
is(join("\n", log_crashes($other, 0)), '', 'no process crashed on the second server');
$other->stop;
$node->stop;
done_testing();
