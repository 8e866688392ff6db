# Native snapshots whose images were tampered with, every checksum made to
# match: restore checks each record's shape before anything is published,
# and refuses a bad one with data_corrupted, leaving every state as it was.
#
# - Lengths inside images: a list element's length of 0xFFFFFFFC, a map
#   pair's key length of 0xFFFFFFF8, 256 MB or 2,000 bytes (past its image);
#   a map key twice in one map.
# - Fixed-length types: a 3-byte bigint image.
# - The same bad map image restored into the rocksdb backend: refused in
#   the session, and the worker lives on.
# - A MANIFEST with two states of one name, or a state without a type.
# - Who may restore: an unsigned native snapshot from a path only a
#   superuser; a member of pg_read_server_files a canonical one, and the
#   server's own checkpoints under state_backend.checkpoint_dir (signed
#   snapshots: test/t/025_snapshot_trust.pl).
# - Roles: by OID from this cluster's snapshots (renames change nothing),
#   by name and without grants from another cluster's, and never a state
#   owned by a role the restoring role is not.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use SnapshotFiles;

my $TIMEOUT = 120;
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $chkroot = "$tmp/checkpoints";

my $node = new_state_node('native_images',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n");
ok(defined wait_for_worker($node), 'state worker running');
my $worker = worker_pid($node);
my $log_offset = -s $node->logfile;

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('big', 'value', 'int', 'bigint');
SELECT state.value_set('big', 1, 10::bigint);
SELECT state.create_state('lst', 'list', 'int', 'text');
SELECT state.list_add_all('lst', 1, ARRAY['a', 'b', 'c']);
SELECT state.create_state('mp', 'map', 'int', 'text', map_key_type => 'text');
SELECT state.map_put('mp', 1, 'k1', 'v1');
SELECT state.map_put('mp', 1, 'k2', 'v2');
CREATE ROLE reader LOGIN;
GRANT pg_read_server_files TO reader;
GRANT USAGE ON SCHEMA state TO reader;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA state TO reader;
});
my $base = "$tmp/base";
$node->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('$base'))");

my $expected = q{10|3|2};
my $read_all = q{SELECT state.value_get('big', 1, 0::bigint) || '|' ||
  state.list_length('lst', 1) || '|' || state.map_size('mp', 1)};
is($node->safe_psql('postgres', $read_all), $expected, 'states as written');

my $copies = 0;

# A copy of the base snapshot with one state's only entry's image changed
# by $edit (given the image, returns the new one).
sub tampered
{
	my ($state, $edit) = @_;
	my $dir = "$tmp/tampered_" . ++$copies;
	copy_dir($base, $dir);
	my $file = manifest_state($dir, $state)->{file};
	my $kg = read_kg("$dir/$file");
	my ($block) = grep { @{ $_->{pairs} } } @{ $kg->{blocks} };
	$block->{pairs}[0][1] = $edit->($block->{pairs}[0][1]);
	set_manifest_size($dir, $file, write_kg("$dir/$file", $kg));
	return $dir;
}

sub refused
{
	my ($dir, $what, $extra) = @_;
	my $r = sql_error($node,
		"SELECT state.restore('$dir'" . ($extra // '') . ")",
		timeout => $TIMEOUT);
	is($r->{sqlstate}, 'XX001', "$what: refused as data_corrupted")
	  or diag $r->{stderr};
	is($node->safe_psql('postgres', $read_all, timeout => $TIMEOUT),
		$expected, "$what: every state as it was");
	return;
}

# An unchanged rewrite restores: the tampering below is all that differs.
my $same = tampered('lst', sub { $_[0] });
$node->safe_psql('postgres', "SELECT state.restore('$same')");
is($node->safe_psql('postgres', $read_all), $expected, 'rewritten snapshot restores');

refused(
	tampered('lst', sub { my $i = shift; substr($i, 0, 4, pack('L<', 0xFFFFFFFC)); $i }),
	'list element length 0xFFFFFFFC');
refused(
	tampered('lst', sub { $_[0] . pack('L<', 10) . 'ab' }),
	'list element running past its image');
refused(
	tampered('mp', sub { my $i = shift; substr($i, 0, 4, pack('L<', 0xFFFFFFF8)); $i }),
	'map key length 0xFFFFFFF8');
refused(
	tampered('mp', sub { my $i = shift; substr($i, 0, 4, pack('L<', 256 << 20)); $i }),
	'map key length 256 MB');
refused(
	tampered('mp', sub { my $i = shift; substr($i, 0, 4, pack('L<', 2000)); $i }),
	'map key length 2000');
refused(
	tampered('mp', sub { my $i = shift; substr($i, 0, 4, pack('L<', 2000)); $i }),
	'map key length 2000 into rocksdb', ", backend => 'rocksdb'");
refused(
	tampered('mp', sub { my ($first) = parse_map($_[0]); $_[0] . map_image($first) }),
	'a map key twice in one map');
refused(tampered('big', sub { substr($_[0], 0, 3) }), '3-byte bigint');
refused(tampered('big', sub { $_[0] . "\0" }), '9-byte bigint');
is(worker_pid($node), $worker, 'the state worker lives on');

# MANIFEST lines that contradict each other
{
	my $dir = "$tmp/dup_name";
	copy_dir($base, $dir);
	write_manifest($dir,
		map { /^state .*name=mp / ? ($_, s/\bid=(\d+)/'id=' . ($1 + 1000)/er) : $_ }
		  read_manifest($dir));
	refused($dir, 'two states of one name');

	$dir = "$tmp/no_type";
	copy_dir($base, $dir);
	write_manifest($dir,
		map { /^state .*name=big / ? s/ value=\S+/ value=-/r : $_ } read_manifest($dir));
	refused($dir, 'a state without a value type');
}

# Checksum lines are checked byte for byte: the same checksum written
# another way (here with two spaces) is a change.
{
	my $dir = "$tmp/crc_case";
	copy_dir($base, $dir);
	my $m = slurp_bytes("$dir/MANIFEST");
	$m =~ s/^crc32c ([0-9A-F]{8})$/crc32c  $1/m;
	spew_bytes("$dir/MANIFEST", $m);
	refused($dir, 'a MANIFEST checksum line written another way');
}

# A canonical MANIFEST cannot smuggle in a backend's native files, which
# are loaded without the receive functions.
{
	my $canon = "$tmp/canonical_native";
	$node->safe_psql('postgres',
		"SELECT state.wait_snapshot(state.snapshot('$canon', 'canonical'))");
	write_manifest($canon,
		map { /^state .*name=mp / ? s/ file=(\S+)\.kg / file=$1.sst.lst /r : $_ }
		  read_manifest($canon));
	refused($canon, 'a canonical MANIFEST listing native files');
}

# Who may restore what.
my $canonical = "$tmp/canonical";
$node->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('$canonical', 'canonical'))");
$node->safe_psql('postgres', 'SELECT state.wait_snapshot(state.snapshot())');
$node->safe_psql('postgres', q{
SELECT state.grant_access(n, 'reader', 'write') FROM unnest(ARRAY['big', 'lst', 'mp']) n;
});

my $unsigned = "$tmp/unsigned";
copy_dir($base, $unsigned);
write_manifest($unsigned, grep { !/^signature / } read_manifest($unsigned));
my $r = sql_error($node, "SET ROLE reader; SELECT state.restore('$unsigned')");
is($r->{sqlstate}, '42501', 'an unsigned native snapshot from a path needs a superuser')
  or diag $r->{stderr};
like($r->{stderr}, qr/canonical/, 'the hint points to a canonical snapshot');
$node->safe_psql('postgres', "SET ROLE reader; SELECT state.restore('$canonical')");
is($node->safe_psql('postgres', $read_all), $expected,
	'a canonical snapshot restores for pg_read_server_files');
$node->safe_psql('postgres', "SET ROLE reader; SELECT state.restore('$chkroot')");
is($node->safe_psql('postgres', $read_all), $expected,
	'a checkpoint of this server restores for pg_read_server_files');
$r = sql_error($node, "SET ROLE reader; SELECT state.restore('$chkroot/../unsigned')");
is($r->{sqlstate}, '42501', 'a path that climbs out of the checkpoint directory is not one');

# Roles on restore.  A snapshot of this cluster names roles by OID, so a
# rename changes nothing; one of another cluster by name, without grants.
# No restore makes a state owned by a role the restoring role is not.
$node->safe_psql(
	'postgres', q{
CREATE ROLE old;
CREATE ROLE other;
GRANT USAGE ON SCHEMA state TO old, other;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA state TO old, other;
SET ROLE old;
SELECT state.create_state('owned', 'value', 'int', 'int');
SELECT state.value_set('owned', 1, 7);
SELECT state.grant_access('owned', 'other', 'read');
});
my $owner_of = q{SELECT owner FROM state.states WHERE name = 'owned'};
my $before = "$tmp/roles_before";
$node->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('$before', 'canonical'))");
$node->safe_psql('postgres', 'ALTER ROLE old RENAME TO new; CREATE ROLE old;');
is($node->safe_psql('postgres', $owner_of), 'new', 'the owner is renamed');
$node->safe_psql('postgres', "SELECT state.restore('$before')");
is($node->safe_psql('postgres', $owner_of), 'new',
	'same cluster: the owner is the role, not whoever took its old name');
is($node->safe_psql('postgres', q{SET ROLE other; SELECT state.value_get('owned', 1, 0)}),
	'7', 'same cluster: the grant is kept');

my $after = "$tmp/roles_after";
$node->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('$after', 'canonical'))");
is(manifest_state($after, 'owned')->{owner}, 'new', 'a snapshot names the owner as it is called now');

# The same snapshot, as another cluster's.
my $foreign = "$tmp/roles_foreign";
copy_dir($after, $foreign);
write_manifest($foreign,
	map { s/^system_identifier \d+/system_identifier 1/r } read_manifest($foreign));
my ($ret, $out, $err) = $node->psql('postgres', "SELECT state.restore('$foreign')");
is($ret, 0, 'another cluster\'s snapshot restores');
like($err, qr/1 grants of state "owned" were not restored/, 'a notice says its grants were left out');
is($node->safe_psql('postgres', $owner_of), 'new', 'another cluster: the owner found by name');
is(sql_error($node, q{SET ROLE other; SELECT state.value_get('owned', 1, 0)})->{sqlstate},
	'42501', 'another cluster: no grant by a meaningless OID');

# A MANIFEST crafted to hand a state to the bootstrap superuser, with a
# grant to another role, restored by a role that is neither.
my $crafted = "$tmp/roles_crafted";
copy_dir($before, $crafted);
write_manifest($crafted,
	map { /^state .*name=owned / ? s/ owner=\S+ owner_oid=\d+/ owner=postgres owner_oid=10/r : $_ }
	  read_manifest($crafted));
$node->safe_psql('postgres', "SET ROLE reader; SELECT state.restore('$crafted')");
is($node->safe_psql('postgres', $owner_of), 'reader',
	'a restore by a role that is not the owner makes the state its own');
$node->safe_psql('postgres', 'SELECT state.restore(\'' . $before . '\')');

is(join("\n", log_crashes($node, $log_offset)), '', 'no process crashed');
$node->stop;
done_testing();
