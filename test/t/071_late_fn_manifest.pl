# A MANIFEST names a window state's late function by its signature
# (late=), which a restore finds again on this server; the OID beside it
# (late_oid=) means nothing on another server.  A MANIFEST signed with the
# server's key, checksums and all, that gives the OID without the
# signature is refused as corrupted (XX001): restored, the state would
# hand its late values to whichever function has that OID here.  The
# untouched snapshot restores, and its late function gets the late values.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Digest::SHA qw(hmac_sha256_hex);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use SnapshotFiles;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $key = '0123456789abcdef' x 4;
spew_bytes("$dir/test.key", "$key\n");
chmod 0600, "$dir/test.key";

my $node = new_state_node('late_fn_manifest',
	conf => "state_backend.signing_key_file = '$dir/test.key'\n");

$node->safe_psql('postgres', q{
	CREATE TABLE late_seen (fn text, k text, v bigint);
	CREATE FUNCTION on_window(k text, ws timestamptz, we timestamptz, r bigint)
		RETURNS void LANGUAGE sql AS $$ SELECT $$;
	CREATE FUNCTION named_late(k text, t timestamptz, v bigint) RETURNS void
		LANGUAGE sql AS $$ INSERT INTO late_seen VALUES ('named_late', k, v) $$;
	CREATE FUNCTION other_late(k text, t timestamptz, v bigint) RETURNS void
		LANGUAGE sql AS $$ INSERT INTO late_seen VALUES ('other_late', k, v) $$;
	SELECT state.create_state('lw', 'window', 'text', 'bigint', assigner => 'tumbling',
		size => '1 minute', reducer => 'sum',
		emit => 'on_window(text,timestamptz,timestamptz,bigint)',
		out_of_orderness => '0', late => 'named_late(text,timestamptz,bigint)');
	SELECT state.window_add('lw', 'a', '2026-01-01 00:05:00+00', 1::bigint);
});
my $snap = "$dir/snap";
is( $node->safe_psql('postgres',
		"SELECT state.wait_snapshot(state.snapshot('$snap', 'canonical'))"),
	'completed',
	'snapshot of a window state with a late function');
my $other = $node->safe_psql('postgres',
	q{SELECT 'other_late(text,timestamptz,bigint)'::regprocedure::oid});

# The MANIFEST's lines, as SnapshotFiles reads them, rewritten by $edit,
# signed again with the key, and the checksum made to match.
sub resign
{
	my ($from, $to, $edit) = @_;
	copy_dir($from, $to);
	my @lines = grep { !/^signature / } read_manifest($from);
	@lines = map { $edit->($_) } @lines;
	my $body = join("\n", @lines) . "\n";
	write_manifest($to, @lines,
		'signature hmac-sha256 ' . hmac_sha256_hex($body, $key));
	return;
}

resign($snap, "$dir/same", sub { $_[0] });
resign(
	$snap,
	"$dir/oid_only",
	sub {
		my $l = shift;
		return $l unless $l =~ /^state .*\bname=lw\b/;
		$l =~ s/ late=\S+//;
		$l =~ s/\blate_oid=\d+/late_oid=$other/;
		return $l;
	});
unlike(
	join("\n", read_manifest("$dir/oid_only")),
	qr/ late=/,
	'the rewritten MANIFEST names no late function');

my ($ret, $out, $err) =
  $node->psql('postgres', "SELECT state.restore('$dir/oid_only')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'a late function given by OID alone is refused');
like($err, qr/ERROR:\s+XX001/, '... as corrupted data');

# Whatever the restore did, late values go to the function the state was
# created with.
$node->safe_psql('postgres',
	q{SELECT state.window_add('lw', 'b', '2026-01-01 00:00:00+00', 2::bigint)});
is($node->safe_psql('postgres', 'SELECT string_agg(fn, \',\') FROM late_seen'),
	'named_late', 'the state keeps its late function');

is($node->safe_psql('postgres', "SELECT state.restore('$dir/same')"),
	'1', 'the same MANIFEST signed again restores');
$node->safe_psql('postgres', q{
	SELECT state.window_add('lw', 'c', '2026-01-01 00:05:00+00', 3::bigint);
	SELECT state.window_add('lw', 'c', '2026-01-01 00:00:00+00', 3::bigint);
});
is( $node->safe_psql('postgres',
		q{SELECT string_agg(fn || ':' || k, ',' ORDER BY k) FROM late_seen}),
	'named_late:b,named_late:c',
	'the restored state hands late values to the function its MANIFEST names');

$node->stop;
done_testing();
