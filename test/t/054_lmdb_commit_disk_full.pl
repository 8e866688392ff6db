# A transactional commit of an lmdb state on a full file system fails
# before its commit record, with disk_full (53100), and nothing of it stays.
# The reservation counted LMDB's map space only: the commit was
# acknowledged with "could not all be applied: LMDB failed to commit a
# write: Input/output error", its table row there and its value lost.  The
# reservation now also checks that the file system of the environment's
# directory holds the pages past the data file's end that the commit may
# write.  A plain write that LMDB cannot make on the full disk (LMDB
# reports a short write as EIO) fails with 53100 or 58030, not XX000.
#
# Needs a small filesystem: STATE_BACKEND_LMDB_FS names a directory on one
# of about 4 MB (scripts/test.sh mounts a tmpfs when it runs as root).

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Path ();
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $fs = $ENV{STATE_BACKEND_LMDB_FS};
plan skip_all => 'no small filesystem: STATE_BACKEND_LMDB_FS is not set (scripts/test.sh sets it when run as root)'
  unless defined $fs && -d $fs && -w $fs;

my $dir = "$fs/lmdb_" . $$;
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'lmdb_disk_full',
	lmdb => 1,
	conf => "state_backend_lmdb.dir = '$dir'\n"
	  . "state_backend_lmdb.map_size = 64\n"
	  . "state_backend.checkpoint_dir = '$tmp'\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres', q{
CREATE TABLE ack (k int);
SELECT state.create_state('ll', 'value', 'int', 'text', backend => 'lmdb');
SELECT state.create_state('ln', 'value', 'int', 'text', backend => 'lmdb', transactional => true);
});

# Fill the file system with plain writes until one fails.
my ($ret, $out, $err) = $node->psql('postgres', q{
DO $$ BEGIN
  FOR g IN 1..2000 LOOP
    BEGIN
      PERFORM state.value_set('ll', g, repeat(md5(g::text), 200));
      INSERT INTO ack VALUES (g);
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'stopped at %: % %', g, SQLSTATE, SQLERRM;
      EXIT;
    END;
  END LOOP;
END $$;
});
my ($state, $msg) = $err =~ /stopped at \d+: (\w{5}) ([^\n]*)/ ? ($1, $2) : ('', '');
ok($state ne '', 'a plain write fails once the file system is full');
like($state, qr/^(53100|58030)$/,
	"that write fails with 53100 or 58030, not an internal error ($state: $msg)");
my $acked = $node->safe_psql('postgres', 'SELECT count(*) FROM ack');
cmp_ok($acked, '>', 0, "some plain writes went in first ($acked)");

# A transactional commit larger than what is left.
my $r = sql_error($node, q{
BEGIN;
SELECT state.value_set('ln', 1, repeat('x', 200000));
INSERT INTO ack VALUES (-2);
COMMIT;
});
is($r->{sqlstate}, '53100', "the commit fails with 53100 ($r->{message})");
unlike($r->{stderr}, qr/could not all be applied/, 'nothing is reported lost after a commit record');
is($node->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM ack WHERE k = -2) || '/' || coalesce(length(state.value_get('ln', 1, NULL::text)), 0)"),
	'0/0', 'neither the row nor the value of the refused commit is there');

# Every acknowledged plain write is there.
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM ack a WHERE a.k > 0 AND state.value_get('ll', a.k, NULL::text) IS NULL}),
	'0', 'every acknowledged plain write is there');

$node->stop;
File::Path::rmtree($dir);    # the file system is for the next test too
done_testing();
