# State TTL: what expired goes away with no read of it, in both backends,
# stays out of snapshots taken after it expired, stays gone when an older
# snapshot is restored, and a restart keeps every state's TTL.
#
# Expiry is on the TTL clock, which the test moves forward
# (state._advance_ttl_clock) instead of waiting for it, so that no check
# depends on how fast the machine is.
#
#  - heap: 100k expired keys are removed by the state worker's background
#    cleanup, and state.states.bytes falls, within 20 s of expiry (with the
#    default state_backend.ttl_cleanup_key_groups = 8, one pass over the 128
#    key groups takes 1.6 s);
#  - lmdb (contrib/lmdb): the same background cleanup, through its data
#    operations, removes expired keys and map entries;
#  - rocksdb: state.compact() runs a compaction whose filter drops expired
#    values, maps and list elements, and the state's bytes fall;
#  - snapshots (native and canonical, both backends) taken after expiry
#    hold none of it; a snapshot taken before, restored after, shows none.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $chkroot = "$tmp/checkpoints";
my $node = new_state_node('ttl', lmdb => 1, conf => "state_backend.checkpoint_dir = '$chkroot'\n");
ok(defined wait_for_worker($node), 'state worker running');

sub run_sql { return $node->safe_psql('postgres', $_[0]); }

# poll($sql, $want, $seconds): runs $sql until it returns $want; returns
# the seconds it took, or undef when it never did.
sub poll
{
	my ($sql, $want, $seconds) = @_;
	my $start = time;
	while (time - $start < $seconds)
	{
		return time - $start if run_sql($sql) eq $want;
		usleep(100_000);
	}
	return undef;
}

# ---------------------------------------------------------------- heap
run_sql(q{
SELECT state.create_state('bg', 'value', 'int', 'int', ttl => '1 hour');
SELECT state.create_state('bg_list', 'list', 'int', 'int', ttl => '2 hours');
SELECT state.create_state('lbg', 'value', 'int', 'int', ttl => '1 hour', backend => 'lmdb');
SELECT state.create_state('lbg_map', 'map', 'int', 'int', map_key_type => 'int', ttl => '2 hours',
                          backend => 'lmdb');
SELECT count(state.value_set('lbg', i, i)) FROM generate_series(1, 20000) i;
SELECT count(state.map_put('lbg_map', i % 100, i, i)) FROM generate_series(1, 1000) i;
SELECT count(state.value_set('bg', i, i)) FROM generate_series(1, 100000) i;
SELECT count(state.list_add_all('bg_list', i, ARRAY[1, 2, 3])) FROM generate_series(1, 1000) i;
});
my ($bytes0) = run_sql(q{SELECT bytes FROM state.states WHERE name = 'bg'});
cmp_ok($bytes0, '>', 100000 * 20, "heap: 100k keys hold $bytes0 bytes");
# bg expired: a fresh element in 10 of the lists (until 181 minutes), then
# the lists' old elements expire too (at 120 minutes).
run_sql(q{SELECT state._advance_ttl_clock('61 minutes')});
run_sql(q{SELECT count(state.list_add('bg_list', i, 4)) FROM generate_series(1, 10) i});
run_sql(q{SELECT count(state.map_put('lbg_map', i, -1, 0)) FROM generate_series(1, 10) i});
run_sql(q{SELECT state._advance_ttl_clock('60 minutes')});
my $written = time;

# Only the view's bytes are read: never the keys.
my $took = poll(q{SELECT bytes < 1000 FROM state.states WHERE name = 'bg'}, 't', 20);
ok(defined $took, 'heap: background cleanup gave back the memory of 100k expired keys');
note(sprintf('cleanup done %.1f s after expiry', time - $written));
is(run_sql(q{SELECT entries FROM state.states WHERE name = 'bg'}), '0', 'heap: no key left');
ok(defined poll(q{SELECT bytes < 5000 FROM state.states WHERE name = 'bg_list'}, 't', 20),
	'heap: background cleanup shrank the lists');
is( run_sql(q{SELECT count(*), sum(state.list_length('bg_list', k))
        FROM state.keys('bg_list', NULL::int) k}),
	'10|10',
	'heap: lists keep only the element written after the others');

# The same sweep over a backend of another library (contrib/lmdb), key by
# key through its data operations.
ok(defined poll(q{SELECT entries FROM state.states WHERE name = 'lbg'}, '0', $PostgreSQL::Test::Utils::timeout_default),
	'lmdb: background cleanup removed 20k expired keys');
ok(defined poll(q{SELECT entries FROM state.states WHERE name = 'lbg_map'}, '10', $PostgreSQL::Test::Utils::timeout_default),
	'lmdb: maps whose entries all expired are gone');
is( run_sql(q{SELECT sum(state.map_size('lbg_map', k)), min(state.map_get('lbg_map', k, -1, 5))
        FROM state.keys('lbg_map', NULL::int) k}),
	'10|0',
	'lmdb: maps keep only the entry written after the others');

# ---------------------------------------------------------------- rocksdb
run_sql(q{
SELECT state.create_state('rv', 'value', 'int', 'text', backend => 'rocksdb', ttl => '1 hour');
SELECT state.create_state('rm', 'map', 'int', 'text', map_key_type => 'int', backend => 'rocksdb',
                          ttl => '1 hour');
SELECT state.create_state('rl', 'list', 'int', 'text', backend => 'rocksdb', ttl => '1 hour');
SELECT count(state.value_set('rv', i, repeat('v', 100))) FROM generate_series(1, 50000) i;
SELECT count(state.map_put('rm', i % 100, i, repeat('m', 100))) FROM generate_series(1, 20000) i;
SELECT count(state.list_add_all('rl', i, ARRAY[repeat('l', 100), repeat('l', 100)]))
  FROM generate_series(1, 2000) i;
SELECT state.compact('rv'), state.compact('rm'), state.compact('rl');
});
my %rbytes = map { split /\|/ } split /\n/,
  run_sql(q{SELECT name, bytes FROM state.states WHERE name IN ('rv', 'rm', 'rl')});
cmp_ok($rbytes{$_}, '>', 20_000, "rocksdb: $_ holds $rbytes{$_} bytes") for qw(rv rm rl);
run_sql(q{SELECT state._advance_ttl_clock('61 minutes')});
# One fresh list element in each of 5 lists, one fresh map entry.
run_sql(q{
SELECT count(state.list_add('rl', i, 'fresh')) FROM generate_series(1, 5) i;
SELECT state.map_put('rm', 7, -1, 'fresh');
SELECT state.compact('rv'), state.compact('rm'), state.compact('rl');
});
my %after = map { split /\|/ } split /\n/,
  run_sql(q{SELECT name, bytes FROM state.states WHERE name IN ('rv', 'rm', 'rl')});
cmp_ok($after{$_}, '<', $rbytes{$_} / 4,
	"rocksdb: after a compaction $_ holds $after{$_} bytes")
  for qw(rv rm rl);
is( run_sql(q{SELECT (SELECT entries FROM state.states WHERE name = 'rv'),
               state.map_size('rm', 7), state.map_get('rm', 7, -1, NULL::text),
               (SELECT sum(state.list_length('rl', k)) FROM state.keys('rl', NULL::int) k)}),
	'0|1|fresh|5',
	'rocksdb: what is left is what was written after the rest expired');

# A compaction runs beside other sessions' calls, and a drop of its state
# meanwhile waits for it, crashing nothing.
run_sql(q{
SELECT state.create_state('big', 'value', 'int', 'text', backend => 'rocksdb', ttl => '1 hour');
SELECT count(state.value_set('big', i, repeat('b', 200))) FROM generate_series(1, 200000) i;
});
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_until(qr/go/, q{\echo go
SELECT state.compact('big');
});
is(run_sql(q{SELECT state.value_get('rv', -5, 'none')}), 'none',
	'rocksdb calls go on while a compaction runs');
run_sql(q{SELECT state.drop_state('big')});
$bg->quit;
is(run_sql(q{SELECT count(*) FROM state.states WHERE name = 'big'}), '0',
	'a state dropped during its compaction is gone');

# ---------------------------------------------------------------- snapshots
# No background cleanup here: the snapshot alone must leave expired out.
run_sql(q{ALTER SYSTEM SET state_backend.ttl_cleanup_key_groups = 0; SELECT pg_reload_conf()});
run_sql(q{
SELECT state.create_state('sh', 'map', 'int', 'int', map_key_type => 'int', ttl => '1 hour');
SELECT state.create_state('sr', 'value', 'int', 'int', backend => 'rocksdb', ttl => '1 hour');
SELECT state.create_state('keep', 'value', 'int', 'int');
SELECT count(state.map_put('sh', i % 10, i, i)) FROM generate_series(1, 1000) i;
SELECT count(state.value_set('sr', i, i)) FROM generate_series(1, 1000) i;
SELECT count(state.value_set('keep', i, i)) FROM generate_series(1, 10) i;
});
my %before;
for my $format (qw(native canonical))
{
	my $id = run_sql(qq{SELECT state.snapshot('$tmp/before_$format', '$format')});
	is(wait_snapshot_status($node, $id), 'completed', "snapshot before expiry ($format)");
}
run_sql(q{SELECT state._advance_ttl_clock('61 minutes')});
run_sql(q{
SELECT state.map_put('sh', 3, -3, 33), state.value_set('sr', -1, 11);
});
for my $format (qw(native canonical))
{
	my $id = run_sql(qq{SELECT state.snapshot('$tmp/after_$format', '$format')});
	is(wait_snapshot_status($node, $id), 'completed', "snapshot after expiry ($format)");
	# The MANIFEST counts each state's entries as written.
	my $manifest = slurp_file("$tmp/after_$format/MANIFEST");
	my ($sh) = $manifest =~ /^state .* name=sh .* entries=(\d+)\b/m;
	is($sh, 1, "$format snapshot after expiry: the heap map holds one key");
	if ($format eq 'canonical')
	{
		my ($sr) = $manifest =~ /^state .* name=sr .* entries=(\d+)\b/m;
		is($sr, 1, 'canonical snapshot after expiry: the rocksdb state holds one key');
	}
}

my $contents = q{SELECT (SELECT count(*) FROM state.keys('sh', NULL::int)),
       (SELECT coalesce(sum(state.map_size('sh', k)), 0) FROM state.keys('sh', NULL::int) k),
       (SELECT count(*) FROM state.keys('sr', NULL::int)),
       (SELECT sum(state.value_get('sr', k, 0)) FROM state.keys('sr', NULL::int) k),
       (SELECT sum(state.value_get('keep', k, 0)) FROM state.keys('keep', NULL::int) k)};
for my $format (qw(native canonical))
{
	run_sql(qq{SELECT state.restore('$tmp/after_$format')});
	is(run_sql($contents), '1|1|1|11|55', "restore of the $format snapshot after expiry");
	run_sql(qq{SELECT state.restore('$tmp/before_$format')});
	is(run_sql($contents), '0|0|0||55',
		"restore of the $format snapshot before expiry, after the TTL passed: nothing");
	is( run_sql(q{SELECT string_agg(name || ' ' || coalesce(ttl::text, '-'), ', ' ORDER BY name)
	        FROM state.states WHERE name IN ('sh', 'sr', 'keep')}),
		'keep -, sh 01:00:00, sr 01:00:00', "the $format restore kept the TTLs");
}

# ---------------------------------------------------------------- restart
run_sql(q{
ALTER SYSTEM RESET state_backend.ttl_cleanup_key_groups;
SELECT pg_reload_conf();
SELECT state.create_state('hour', 'value', 'int', 'int', ttl => '1 hour',
                          ttl_update => 'on_read_and_write');
SELECT state.create_state('hour_r', 'map', 'int', 'int', map_key_type => 'int',
                          backend => 'rocksdb', ttl => '1 hour');
SELECT state.create_state('short', 'value', 'int', 'int', ttl => '3 seconds');
SELECT state.create_state('short_r', 'value', 'int', 'int', backend => 'rocksdb',
                          ttl => '3 seconds');
SELECT state.value_set('hour', 1, 10), state.map_put('hour_r', 1, 1, 20),
       state.value_set('short', 1, 30), state.value_set('short_r', 1, 40);
});
$node->restart;
ok(defined wait_for_worker($node), 'worker back after the restart');
is( run_sql(q{SELECT string_agg(name || ' ' || ttl || ' ' || ttl_update, ', ' ORDER BY name)
        FROM state.states WHERE name IN ('hour', 'hour_r', 'short', 'short_r')}),
	'hour 01:00:00 on_read_and_write, hour_r 01:00:00 on_create_and_write, '
	  . 'short 00:00:03 on_create_and_write, short_r 00:00:03 on_create_and_write',
	'a restart keeps every TTL setting');
is( run_sql(q{SELECT state.value_get('hour', 1, 0), state.map_get('hour_r', 1, 1, 0)}),
	'10|20', 'values with an hour to live are back');
# The restart set the TTL clock back to the wall clock, which is behind the
# clock the values were written on: a day ahead is past their TTL anyway.
run_sql(q{SELECT state._advance_ttl_clock('1 day')});
is(run_sql(q{SELECT state.value_get('short', 1, 0), state.value_get('short_r', 1, 0)}),
	'0|0', 'values whose TTL passed after the restart are gone');
run_sql(q{SELECT state.compact('short_r')});
is(run_sql(q{SELECT entries FROM state.states WHERE name = 'short_r'}), '0',
	'the rocksdb state reopened with its compaction filter');

is(log_crashes($node), 0, 'no crash in the log');
$node->stop;
done_testing();
